// Workload 2: the cost of going through a scheduler. n async tasks (what users schedule: a
// fetch, a promise) are handed over at once at an unlimited rate and awaited; ns per task from
// the first hand-over to the last settle, and the overhead above calling the task directly.
//
// Fair by construction: every library runs in one child process, on the same async task, with
// the same warm-up, in rounds whose order rotates, and the direct-call baseline is
// measured inside each round, next to the libraries it is subtracted from. A library too slow
// for n tasks in the time box runs at a smaller n, said in its row.
import v8 from 'node:v8';
import { AsyncQueuer, Queuer } from '@tanstack/pacer';
import Bottleneck from 'bottleneck';
import PQueue from 'p-queue';
import pThrottle from 'p-throttle';
import { createPacer, perSecond } from '../../dist/index.js';
import { isMain, runChild, serveChild } from '../lib/child.mjs';
import { median } from '../lib/stats.mjs';
import { num, printTable, ratio } from '../lib/table.mjs';
import { fullGc, nowNs } from '../lib/timing.mjs';

const UNLIMITED = 1_000_000_000; // per second: never the bottleneck

async function callDirect(task) {
  return task();
}

/** Per library: a factory returning `schedule(task) => Promise` on a fresh instance. */
const LIBRARIES = {
  direct: {
    label: 'calling the task directly',
    make: () => callDirect,
  },
  'fetch-pacer': {
    label: 'fetch-pacer `pacer.schedule`',
    make: () => {
      const pacer = createPacer({ limits: perSecond(UNLIMITED) });
      return (task) => pacer.schedule(task);
    },
  },
  'p-throttle': {
    label: 'p-throttle',
    make: () => {
      const throttled = pThrottle({ limit: UNLIMITED, interval: 1000 })((task) => task());
      return (task) => throttled(task);
    },
  },
  'p-queue': {
    label: 'p-queue `add`',
    make: () => {
      const queue = new PQueue();
      return (task) => queue.add(task);
    },
  },
  bottleneck: {
    label: 'bottleneck `schedule`',
    make: () => {
      const limiter = new Bottleneck();
      return (task) => limiter.schedule(task);
    },
  },
  'tanstack-queuer': {
    label: '@tanstack/pacer `Queuer` (wait 0)',
    make: () => {
      const queuer = new Queuer((item) => item(), { wait: 0 });
      // It has no promise per item: the item settles one, as a caller awaiting it needs.
      return (task) => new Promise((resolve) => queuer.addItem(() => resolve(task())));
    },
  },
  'tanstack-async-queuer': {
    label: '@tanstack/pacer `AsyncQueuer`',
    make: () => {
      const queuer = new AsyncQueuer(async (item) => item(), { wait: 0 });
      return (task) => new Promise((resolve) => queuer.addItem(async () => resolve(task())));
    },
  },
};

/** One measurement: n tasks through a fresh instance; ns per task and peak heap above start. */
async function measureOnce(make, n) {
  const schedule = make();
  const promises = new Array(n);
  fullGc();
  const base = v8.getHeapStatistics().used_heap_size;
  let peak = base;
  const sample = () => {
    const used = v8.getHeapStatistics().used_heap_size;
    if (used > peak) peak = used;
  };
  let ran = 0;
  // The task users hand a scheduler: async, settling on a later microtask (as fetch does).
  const task = async () => {
    if ((++ran & 1023) === 0) sample();
    return ran;
  };
  const start = nowNs();
  for (let i = 0; i < n; i++) {
    promises[i] = schedule(task);
    if ((i & 1023) === 0) sample();
  }
  await Promise.all(promises);
  const elapsed = nowNs() - start;
  sample();
  if (ran !== n) throw new Error(`ran ${ran} of ${n} tasks`);
  return { nsPerTask: elapsed / n, peakHeapBytes: peak - base };
}

/**
 * The order of round `round`: rotated by one library per round, and reversed on odd rounds, so
 * each library runs early and late, after each of the others, the same number of times.
 */
function orderOf(ids, round) {
  const shift = round % ids.length;
  const rotated = [...ids.slice(shift), ...ids.slice(0, shift)];
  return round % 2 === 1 ? rotated.reverse() : rotated;
}

/**
 * The child: sizes each library (the largest of `sizes` whose calibrated time fits the budget),
 * warms every library up the same way, then runs `rounds` rounds in a rotating order.
 */
async function measureAll({ sizes, rounds, budgetMs }) {
  const ids = Object.keys(LIBRARIES);
  const sizeOf = {};
  const probe = Math.min(...sizes);
  for (const id of ids) {
    // Sized on warm code: the first runs of a library are its JIT's, not its steady cost.
    for (let warm = 0; warm < 3; warm++) await measureOnce(LIBRARIES[id].make, probe);
    // The fastest of three: one pass slowed by a collection sized fetch-pacer down to 10,000
    // tasks once (4.67x p-throttle's overhead in that run, 1.03x in the runs around it).
    let nsPerTask = Number.POSITIVE_INFINITY;
    for (let pass = 0; pass < 3; pass++) {
      nsPerTask = Math.min(nsPerTask, (await measureOnce(LIBRARIES[id].make, probe)).nsPerTask);
    }
    // Per-task cost can grow with n (a queue scanned per task): leave a factor of 4 of room.
    sizeOf[id] = sizes.find((n) => (n * nsPerTask * 4) / 1e6 <= budgetMs) ?? probe;
  }
  for (const id of ids) await measureOnce(LIBRARIES[id].make, sizeOf[id]); // the same warm-up
  const samples = Object.fromEntries(ids.map((id) => [id, []]));
  for (let round = 0; round < rounds; round++) {
    for (const id of orderOf(ids, round)) {
      samples[id].push({ ...(await measureOnce(LIBRARIES[id].make, sizeOf[id])), n: sizeOf[id] });
    }
    // The baseline of this round, at every size a library of it ran at.
    const direct = { [sizeOf.direct]: samples.direct.at(-1).nsPerTask };
    for (const n of new Set(Object.values(sizeOf))) {
      direct[n] ??= (await measureOnce(LIBRARIES.direct.make, n)).nsPerTask;
    }
    for (const id of ids) {
      const last = samples[id].at(-1);
      last.overheadNs = last.nsPerTask - direct[last.n];
    }
  }
  return { sizeOf, samples };
}

export async function runScheduling({
  sizes = [100_000, 10_000, 1_000],
  rounds = 5,
  budgetMs = 2_000,
  timeoutMs = 240_000,
} = {}) {
  const answer = await runChild(
    import.meta.url,
    { sizes: [...sizes].sort((a, b) => b - a), rounds, budgetMs },
    { timeoutMs },
  );
  if (!answer.ok) throw new Error(`scheduling workload: ${answer.error}`);
  const { sizeOf, samples } = answer.result;
  const results = Object.fromEntries(
    Object.entries(samples).map(([id, runs]) => [
      id,
      {
        n: sizeOf[id],
        nsPerTask: median(runs.map((r) => r.nsPerTask)),
        overheadNs: median(runs.map((r) => r.overheadNs)),
        peakHeapBytes: median(runs.map((r) => r.peakHeapBytes)),
        runs,
      },
    ]),
  );
  const fp = results['fetch-pacer'];
  const pt = results['p-throttle'];
  const largest = Math.max(...sizes);
  const rows = Object.entries(LIBRARIES).map(([id, { label }]) => ({ id, label, ...results[id] }));
  const table = printTable(
    `2. Scheduling overhead: ${num(largest)} async tasks at an unlimited rate, one process, ${rounds} interleaved rounds (medians)`,
    [
      { label: 'library', value: (r) => r.label },
      { label: 'tasks', value: (r) => num(r.n) },
      { label: 'ns/task', value: (r) => num(r.nsPerTask, 0) },
      { label: 'overhead ns/task', value: (r) => (r.id === 'direct' ? '-' : num(r.overheadNs, 0)) },
      {
        label: 'overhead vs p-throttle',
        value: (r) => (r.id === 'direct' ? '-' : ratio(r.overheadNs, pt.overheadNs)),
      },
      {
        label: 'overhead vs fetch-pacer',
        value: (r) => (r.id === 'direct' ? '-' : ratio(r.overheadNs, fp.overheadNs)),
      },
      { label: 'peak heap MB', value: (r) => num(r.peakHeapBytes / 1e6, 1) },
    ],
    rows,
    [
      'Task: `async () => ++ran` (settles on a later microtask, as a fetch does). ns/task: from the first hand-over to the last settled promise, divided by the task count. Overhead: minus calling the task directly, measured in the same round at the same size (a round runs every library once, in an order rotated each round, after one identical warm-up each).',
      `A library whose calibrated time for ${num(largest)} tasks exceeds ${budgetMs / 1000} s (with 4x room) runs at the largest of ${sizes.map((s) => num(s)).join(', ')} that fits: compare its per-task figures, not totals.`,
    ],
  );
  return { sizes, rounds, results, table };
}

if (isMain(import.meta.url)) serveChild(measureAll);
