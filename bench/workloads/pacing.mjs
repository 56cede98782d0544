// Workload 3: pacing accuracy under real timers. 200 tasks are handed over at once under
// "50 per second, burst 10"; each records when it starts. Ideal: the first 10 at once, then one
// every 20 ms, the last at 3.8 s. Each run is a child process of its own (no library's timers
// share an event loop with another's), and the runs go one after another.
import { AsyncQueuer } from '@tanstack/pacer';
import Bottleneck from 'bottleneck';
import { TokenBucket } from 'limiter';
import PQueue from 'p-queue';
import pThrottle from 'p-throttle';
import { createPacer, perSecond } from '../../dist/index.js';
import { isMain, runChild, serveChild } from '../lib/child.mjs';
import { max, median, min, p99, sorted } from '../lib/stats.mjs';
import { num, printTable, ratio } from '../lib/table.mjs';

const TASKS = 200;
const RATE = 50; // per second
const BURST = 10;
const SLOT_MS = 1000 / RATE;
const IDEAL_MS = (TASKS - BURST) * SLOT_MS; // 3,800
/** Most starts any 1 s window may hold under the policy: the burst plus a second of refill. */
const ALLOWED_PER_SECOND = BURST + RATE;

/** Each library configured to its nearest equivalent of 50/s with a burst of 10. */
const LIBRARIES = {
  'fetch-pacer': {
    config: 'createPacer({ limits: perSecond(50, { burst: 10 }) })',
    make: () => {
      const pacer = createPacer({ limits: perSecond(RATE, { burst: BURST }) });
      return (task) => pacer.schedule(task);
    },
  },
  limiter: {
    config: 'TokenBucket({ bucketSize: 10, tokensPerInterval: 50, interval: "second" }), filled',
    make: () => {
      const bucket = new TokenBucket({
        bucketSize: BURST,
        tokensPerInterval: RATE,
        interval: 'second',
      });
      bucket.content = BURST; // its buckets start empty; the policy's starts full
      return (task) => bucket.removeTokens(1).then(task);
    },
  },
  bottleneck: {
    config:
      'new Bottleneck({ minTime: 20 }) (its reservoir refills on a 250 ms heartbeat, too coarse for 50/s)',
    make: () => {
      const limiter = new Bottleneck({ minTime: SLOT_MS });
      return (task) => limiter.schedule(task);
    },
  },
  'p-throttle': {
    config: 'pThrottle({ limit: 10, interval: 200, strict: true })',
    make: () => {
      const throttled = pThrottle({ limit: BURST, interval: BURST * SLOT_MS, strict: true })(
        (task) => task(),
      );
      return (task) => throttled(task);
    },
  },
  'p-queue': {
    config: 'new PQueue({ intervalCap: 10, interval: 200, strict: true })',
    make: () => {
      const queue = new PQueue({ intervalCap: BURST, interval: BURST * SLOT_MS, strict: true });
      return (task) => queue.add(task);
    },
  },
  '@tanstack/pacer': {
    config:
      'new AsyncQueuer(run, { concurrency: 10, wait: 200 }) (each of 10 workers waits 200 ms after its task)',
    make: () => {
      const queuer = new AsyncQueuer(async (item) => item(), {
        concurrency: BURST,
        wait: BURST * SLOT_MS,
      });
      return (task) => new Promise((resolve) => queuer.addItem(async () => resolve(task())));
    },
  },
  '@tanstack/pacer (no burst)': {
    config: 'new AsyncQueuer(run, { concurrency: 1, wait: 20 })',
    make: () => {
      const queuer = new AsyncQueuer(async (item) => item(), { concurrency: 1, wait: SLOT_MS });
      return (task) => new Promise((resolve) => queuer.addItem(async () => resolve(task())));
    },
  },
};

/** Most starts in any half-open window [s, s + windowMs) that begins at a start. */
function mostInWindow(starts, windowMs) {
  let most = 0;
  let j = 0;
  for (let i = 0; i < starts.length; i++) {
    while (j < starts.length && starts[j] < starts[i] + windowMs) j++;
    if (j - i > most) most = j - i;
  }
  return most;
}

/**
 * How far the starts go beyond the token bucket: the most by which any run of consecutive
 * starts i..j exceeds what the policy grants over its span (burst + rate x elapsed), in permits.
 * 0 means a server counting the same policy on these start times would have refused nothing.
 */
function excessOverPolicy(starts) {
  let worst = 0;
  for (let i = 0; i < starts.length; i++) {
    for (let j = i; j < starts.length; j++) {
      const excess = j - i + 1 - (BURST + (RATE / 1000) * (starts[j] - starts[i]));
      if (excess > worst) worst = excess;
    }
  }
  return worst;
}

async function measureChild({ library }) {
  const schedule = LIBRARIES[library].make();
  const starts = [];
  const task = () => {
    starts.push(performance.now());
  };
  const t0 = performance.now();
  const pending = [];
  for (let i = 0; i < TASKS; i++) pending.push(schedule(task));
  await Promise.all(pending);
  const relative = sorted(starts.map((s) => s - t0));
  const lateness = relative.map((s, k) => s - Math.max(0, k - (BURST - 1)) * SLOT_MS);
  return {
    makespanMs: relative[relative.length - 1],
    lateMedianMs: median(lateness),
    lateP99Ms: p99(lateness),
    lateMaxMs: max(lateness),
    earliestMs: min(lateness),
    earlyStarts: lateness.filter((l) => l < 0).length,
    mostIn1s: mostInWindow(relative, 1000),
    excessPermits: excessOverPolicy(relative),
    starts: relative.map((s) => Math.round(s * 1000) / 1000),
  };
}

export async function runPacing({
  runs = 2,
  timeoutMs = 20_000,
  libraries = Object.keys(LIBRARIES),
} = {}) {
  const perLibrary = Object.fromEntries(libraries.map((id) => [id, []]));
  for (let run = 0; run < runs; run++) {
    for (const library of libraries) {
      const answer = await runChild(import.meta.url, { library }, { timeoutMs, execArgv: [] });
      perLibrary[library].push(
        answer.ok ? answer.result : { error: answer.timedOut ? 'timeout' : answer.error },
      );
    }
  }
  const rows = Object.entries(perLibrary).map(([id, results]) => {
    const ok = results.filter((r) => r.error === undefined);
    const pick = (field) => median(ok.map((r) => r[field]));
    const worst = (field) => max(ok.map((r) => r[field]));
    return {
      id,
      config: LIBRARIES[id].config,
      error: ok.length === 0 ? results[0]?.error : undefined,
      makespanMs: pick('makespanMs'),
      lateMedianMs: pick('lateMedianMs'),
      lateP99Ms: pick('lateP99Ms'),
      lateMaxMs: pick('lateMaxMs'),
      earliestMs: pick('earliestMs'),
      earlyStarts: pick('earlyStarts'),
      mostIn1s: worst('mostIn1s'),
      excessPermits: worst('excessPermits'),
      runs: results,
    };
  });
  const fp = rows.find((r) => r.id === 'fetch-pacer');
  const table = printTable(
    `3. Pacing accuracy: ${TASKS} tasks at ${RATE}/s, burst ${BURST}, real timers (median of ${runs} runs; window columns: worst run)`,
    [
      { label: 'library', value: (r) => r.id },
      { label: 'makespan ms', value: (r) => (r.error ? r.error : num(r.makespanMs, 0)) },
      { label: 'vs ideal 3,800', value: (r) => ratio(r.makespanMs, IDEAL_MS, 3) },
      { label: 'late median ms', value: (r) => num(r.lateMedianMs, 1) },
      { label: 'late p99 ms', value: (r) => num(r.lateP99Ms, 1) },
      { label: 'late max ms', value: (r) => num(r.lateMaxMs, 1) },
      { label: 'p99 vs fetch-pacer', value: (r) => ratio(r.lateP99Ms, fp.lateP99Ms) },
      { label: 'early starts', value: (r) => num(r.earlyStarts, 1) },
      { label: 'earliest ms', value: (r) => num(r.earliestMs, 1) },
      { label: `most in 1 s (allowed ${ALLOWED_PER_SECOND})`, value: (r) => num(r.mostIn1s) },
      { label: 'excess over policy (permits)', value: (r) => num(r.excessPermits, 2) },
    ],
    rows,
    [
      `Lateness: the k-th start minus the k-th ideal slot (0 for the first ${BURST}, then every ${SLOT_MS} ms from the moment the tasks were handed over); negative is early. "Most in 1 s": the most starts in any window [s, s + 1 s). "Excess over policy": the most by which any stretch of consecutive starts holds more than a ${RATE}/s bucket of ${BURST} grants over its span, in permits (0: a server counting this policy on these start times refuses nothing; below 1 it is timing jitter of whole starts, 1 or more is whole starts too many).`,
      '',
      'Configurations:',
      ...rows.map((r) => `- ${r.id}: \`${r.config}\``),
    ],
  );
  return { tasks: TASKS, rate: RATE, burst: BURST, idealMs: IDEAL_MS, runs, rows, table };
}

if (isMain(import.meta.url)) serveChild(measureChild);
