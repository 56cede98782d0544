// Two builds of fetch-pacer side by side in one process, interleaved round by round, so a busy
// machine slows both alike: the keyed `tryAcquire` on a hot key and 100,000 async tasks through
// `pacer.schedule`, the medians of each and their ratio (B over A). For a change's cost on the
// one-unit fast path, where the full bench's run-to-run noise on a shared machine (±20%) hides it.
//
//   git archive main | tar -x -C /tmp/base && (cd /tmp/base && npm ci && npm run build)
//   npm run build && node --expose-gc bench/ab.mjs /tmp/base/dist/index.js dist/index.js
//
// Each run starts after a full garbage collection (`--expose-gc`): without it, one build's
// promises were collected during the other's run, and two copies of one build (A/A) came out
// 0.86-1.20x apart on `schedule` over ten rounds; with it and 20 rounds, see bench/README.md.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [pathA, pathB] = process.argv.slice(2);
if (pathA === undefined || pathB === undefined) {
  console.error('usage: node bench/ab.mjs <a/dist/index.js> <b/dist/index.js>');
  process.exit(2);
}
const load = (path) => import(pathToFileURL(resolve(path)).href);
const [a, b] = [await load(pathA), await load(pathB)];

const DECISIONS = 2_000_000;
const TASKS = 100_000;
const ROUNDS = Number(process.env.ROUNDS ?? 20);
if (typeof globalThis.gc !== 'function') {
  console.error(
    "run with node --expose-gc: a collection before each run keeps one build's garbage out of the other's time",
  );
  process.exit(2);
}

function decisions(lib) {
  const limiter = lib.createRateLimiter({ limits: { limit: 1e9, windowMs: 1000 } });
  const start = performance.now();
  for (let i = 0; i < DECISIONS; i++) limiter.tryAcquire('key');
  return ((performance.now() - start) * 1e6) / DECISIONS;
}

async function tasks(lib) {
  const pacer = lib.createPacer({ limits: lib.perSecond(1e9) });
  let ran = 0;
  const task = async () => ++ran;
  const start = performance.now();
  const all = [];
  for (let i = 0; i < TASKS; i++) all.push(pacer.schedule(task));
  await Promise.all(all);
  return ((performance.now() - start) * 1e6) / TASKS;
}

const median = (values) => values.toSorted((x, y) => x - y)[values.length >> 1];

for (const [name, run] of [
  ['tryAcquire ns/op', decisions],
  ['schedule ns/task', tasks],
]) {
  const timesA = [];
  const timesB = [];
  for (let round = 0; round < ROUNDS; round++) {
    // The order alternates, so neither build always runs on the warmer machine.
    for (const [lib, times] of round % 2 === 0
      ? [
          [a, timesA],
          [b, timesB],
        ]
      : [
          [b, timesB],
          [a, timesA],
        ]) {
      globalThis.gc();
      times.push(await run(lib));
    }
  }
  const [ma, mb] = [median(timesA), median(timesB)];
  console.log(`${name}: A ${ma.toFixed(1)}, B ${mb.toFixed(1)}, B/A ${(mb / ma).toFixed(3)}`);
}
