// Workload 2: the cost of going through a queue. 100,000 tasks are handed over at once at an
// unlimited rate and awaited; ns per task (first hand-over to last settle) and the peak heap
// over that time. Each library runs in a child process of its own, one warm-up run first.
import v8 from 'node:v8';
import { AsyncQueuer, Queuer } from '@tanstack/pacer';
import Bottleneck from 'bottleneck';
import PQueue from 'p-queue';
import pThrottle from 'p-throttle';
import { createPacer, perSecond } from '../../dist/index.js';
import { isMain, runChild, serveChild } from '../lib/child.mjs';
import { medianOfRuns } from '../lib/stats.mjs';
import { num, printTable, ratio } from '../lib/table.mjs';
import { fullGc, nowNs } from '../lib/timing.mjs';

const UNLIMITED = 1_000_000_000; // per second: never the bottleneck for 100,000 tasks

async function callDirect(task) {
  return task();
}

/** Per library: a factory returning `schedule(task) => Promise` on a fresh instance. */
const LIBRARIES = {
  direct: {
    label: 'calling the task directly (async function)',
    make: () => callDirect,
  },
  'fetch-pacer': {
    label: 'fetch-pacer pacer.schedule',
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
    label: 'p-queue add',
    make: () => {
      const queue = new PQueue();
      return (task) => queue.add(task);
    },
  },
  bottleneck: {
    label: 'bottleneck schedule',
    make: () => {
      const limiter = new Bottleneck();
      return (task) => limiter.schedule(task);
    },
  },
  'tanstack-queuer': {
    label: '@tanstack/pacer Queuer (sync, wait 0)',
    make: () => {
      const queuer = new Queuer((item) => item(), { wait: 0 });
      // It has no promise per item: the task settles one, as a caller awaiting it needs.
      return (task) => new Promise((resolve) => queuer.addItem(() => resolve(task())));
    },
  },
  'tanstack-async-queuer': {
    label: '@tanstack/pacer AsyncQueuer (concurrency 1)',
    make: () => {
      const queuer = new AsyncQueuer(async (item) => item(), { wait: 0 });
      return (task) => new Promise((resolve) => queuer.addItem(async () => resolve(task())));
    },
  },
};

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
  const task = () => {
    if ((++ran & 1023) === 0) sample();
    return ran;
  };
  const start = nowNs();
  for (let i = 0; i < n; i++) {
    promises[i] = schedule(task);
    if ((i & 1023) === 0) sample();
  }
  sample();
  await Promise.all(promises);
  const elapsed = nowNs() - start;
  sample();
  if (ran !== n) throw new Error(`ran ${ran} of ${n} tasks`);
  return { nsPerTask: elapsed / n, peakHeapBytes: peak - base };
}

async function measureChild({ library, n, runs }) {
  const { make } = LIBRARIES[library];
  await measureOnce(make, Math.ceil(n / 10)); // warm-up: JIT, and the heap grown once
  const results = [];
  for (let run = 0; run < runs; run++) results.push(await measureOnce(make, n));
  return { runs: results, ...medianOfRuns(results) };
}

export async function runScheduling({
  n = 100_000,
  runs = 2,
  timeoutMs = 10_000,
  fallbacks = [10_000, 1_000],
} = {}) {
  const results = {};
  for (const library of Object.keys(LIBRARIES)) {
    const answer = await runChild(import.meta.url, { library, n, runs }, { timeoutMs });
    if (answer.ok) {
      results[library] = { n, ...answer.result };
      continue;
    }
    // Too slow for the full size in the time box: say so, and measure a size it can do.
    const failure = answer.timedOut ? `timeout (${timeoutMs / 1000} s)` : answer.error;
    results[library] = { failure, error: failure };
    for (const size of fallbacks.filter((f) => f < n)) {
      const small = await runChild(
        import.meta.url,
        { library, n: size, runs: 1 },
        { timeoutMs: 15_000 },
      );
      if (small.ok) {
        results[library] = { n: size, failure, ...small.result };
        break;
      }
    }
  }
  const direct = results.direct.nsPerTask;
  const overhead = (r) => (r?.nsPerTask === undefined ? undefined : r.nsPerTask - direct);
  const fp = results['fetch-pacer'];
  const rows = Object.entries(LIBRARIES).map(([id, { label }]) => ({ id, label, ...results[id] }));
  const table = printTable(
    `2. Scheduling overhead: ${num(n)} tasks at an unlimited rate (median of ${runs} runs after a warm-up)`,
    [
      { label: 'library', value: (r) => r.label },
      { label: 'ns/task', value: (r) => (r.error ? r.error : num(r.nsPerTask, 0)) },
      {
        label: 'tasks',
        value: (r) => (r.failure ? `${num(r.n)} (${num(n)}: ${r.failure})` : num(r.n)),
      },
      { label: 'vs fetch-pacer', value: (r) => ratio(r.nsPerTask, fp.nsPerTask) },
      {
        label: 'overhead ns/task',
        value: (r) => (r.id === 'direct' || r.error ? '-' : num(overhead(r), 0)),
      },
      {
        label: 'overhead vs fetch-pacer',
        value: (r) => (r.id === 'direct' ? '-' : ratio(overhead(r), overhead(fp))),
      },
      { label: 'peak heap MB', value: (r) => num(r.peakHeapBytes / 1e6, 1) },
    ],
    rows,
    [
      `A library that cannot finish ${num(n)} tasks (warm-up at a tenth, then ${runs} runs) within ${timeoutMs / 1000} s is shown at the largest of ${fallbacks.map((f) => num(f)).join(' or ')} tasks it finishes in 15 s (warm-up at a tenth, one run), instead: a per-task figure at that size only.`,
      'ns/task: from the first hand-over to the last settled promise, divided by the task count. Overhead: minus calling the task directly. Peak heap: most V8 heap in use above the start (after a full GC), sampled every 1,024 tasks; the array of promises is the same for all.',
    ],
  );
  return { n, runs, results, table };
}

if (isMain(import.meta.url)) serveChild(measureChild);
