// Quick figures for the core (the real, side-by-side benchmark lives in bench/ later):
// decisions per second on one hot key, and heap bytes per key with 100,000 keys.
// Run: npm run build && node --expose-gc scripts/measure-core.mjs
import {
  createRateLimiter,
  fixedWindow,
  gcra,
  perSecond,
  slidingLog,
  slidingWindow,
  tokenBucket,
} from '../dist/index.js';

const gc = globalThis.gc;
if (!gc) throw new Error('run with node --expose-gc');

function nsPerOp(label, iterations, body) {
  body(Math.min(iterations, 200_000)); // warm up
  const runs = [];
  for (let run = 0; run < 5; run++) {
    const start = process.hrtime.bigint();
    body(iterations);
    runs.push(Number(process.hrtime.bigint() - start) / iterations);
  }
  runs.sort((a, b) => a - b);
  const median = runs[2];
  console.log(
    `${label.padEnd(44)} ${median.toFixed(1).padStart(7)} ns/op  ${(1e9 / median / 1e6).toFixed(2)} M/s`,
  );
  return median;
}

let sink = 0;
const floor = nsPerOp('bare performance.now()', 2_000_000, (n) => {
  for (let i = 0; i < n; i++) sink += performance.now();
});
const allowing = createRateLimiter({ limits: perSecond(1_000_000_000) });
const allowed = nsPerOp('tryAcquire, one hot key, allowed', 2_000_000, (n) => {
  for (let i = 0; i < n; i++) sink += allowing.tryAcquire('hot').remaining;
});
const denying = createRateLimiter({ limits: perSecond(1) });
denying.tryAcquire('hot');
const denied = nsPerOp('tryAcquire, one hot key, denied', 2_000_000, (n) => {
  for (let i = 0; i < n; i++) sink += denying.tryAcquire('hot').retryAfterMs;
});
console.log(
  `ratio to bare performance.now(): allowed ${(allowed / floor).toFixed(2)}x, denied ${(denied / floor).toFixed(2)}x`,
);

const keys = 100_000;
const names = Array.from({ length: keys }, (_, i) => `user-${i}`);
function bytesPerKey(algorithm) {
  gc();
  const before = process.memoryUsage().heapUsed;
  const limiter = createRateLimiter({ limits: { limit: 10, windowMs: 60_000, algorithm } });
  for (const name of names) limiter.tryAcquire(name);
  gc();
  const perKey = (process.memoryUsage().heapUsed - before) / keys;
  const busy = limiter.size;
  const dropped = limiter.evictIdle();
  return { perKey, busy, dropped };
}
for (const algorithm of [tokenBucket, gcra, slidingWindow, fixedWindow, slidingLog]) {
  const { perKey, busy } = bytesPerKey(algorithm);
  console.log(
    `${algorithm.name.padEnd(16)} ${busy} keys with live state: ${perKey.toFixed(0).padStart(4)} B/key (key strings excluded)`,
  );
}
if (sink === 42) console.log('');
