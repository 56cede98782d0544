// Workload 5: bundle size. What a user ships for "a fetch that waits its turn" with each library:
// the import and the few lines around it, bundled for the browser by esbuild (minified, tree
// shaken), then gzipped. No timing involved, so it runs in the bench process itself.
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { num, printTable, ratio } from '../lib/table.mjs';

const BENCH_DIR = new URL('..', import.meta.url).pathname;

/** The same thing written with each library: a paced fetch at 10 requests per second. */
const ENTRIES = [
  {
    id: 'fetch-pacer',
    label: 'fetch-pacer createPacedFetch + perSecond',
    source: `import { createPacedFetch, perSecond } from '../dist/index.js';
export const pacedFetch = createPacedFetch({ limits: perSecond(10) });`,
  },
  {
    id: 'fetch-pacer-pacer',
    label: 'fetch-pacer createPacer + perSecond, fetch by hand',
    source: `import { createPacer, perSecond } from '../dist/index.js';
const pacer = createPacer({ limits: perSecond(10) });
export const pacedFetch = (input, init) => pacer.schedule(() => fetch(input, init));`,
  },
  {
    id: 'fetch-pacer-core',
    label: 'fetch-pacer createRateLimiter + perSecond (no queue)',
    source: `import { createRateLimiter, perSecond } from '../dist/index.js';
export const limiter = createRateLimiter({ policy: perSecond(10) });`,
  },
  {
    id: 'bottleneck',
    label: 'bottleneck (wrap)',
    source: `import Bottleneck from 'bottleneck';
const limiter = new Bottleneck({ minTime: 100 });
export const pacedFetch = limiter.wrap((input, init) => fetch(input, init));`,
  },
  {
    id: 'bottleneck-light',
    label: 'bottleneck/light (wrap)',
    source: `import Bottleneck from 'bottleneck/light';
const limiter = new Bottleneck({ minTime: 100 });
export const pacedFetch = limiter.wrap((input, init) => fetch(input, init));`,
  },
  {
    id: 'p-queue',
    label: 'p-queue (intervalCap)',
    source: `import PQueue from 'p-queue';
const queue = new PQueue({ intervalCap: 10, interval: 1000 });
export const pacedFetch = (input, init) => queue.add(() => fetch(input, init));`,
  },
  {
    id: 'p-throttle',
    label: 'p-throttle',
    source: `import pThrottle from 'p-throttle';
export const pacedFetch = pThrottle({ limit: 10, interval: 1000 })((input, init) => fetch(input, init));`,
  },
  {
    id: 'limiter',
    label: 'limiter (RateLimiter.removeTokens)',
    source: `import { RateLimiter } from 'limiter';
const limiter = new RateLimiter({ tokensPerInterval: 10, interval: 'second' });
export const pacedFetch = async (input, init) => {
  await limiter.removeTokens(1);
  return fetch(input, init);
};`,
  },
  {
    id: '@tanstack/pacer',
    label: '@tanstack/pacer (AsyncQueuer)',
    source: `import { AsyncQueuer } from '@tanstack/pacer';
const queuer = new AsyncQueuer(async (job) => job(), { concurrency: 1, wait: 100 });
export const pacedFetch = (input, init) =>
  new Promise((resolve, reject) => queuer.addItem(() => fetch(input, init).then(resolve, reject)));`,
  },
];

async function measure(entry) {
  const result = await build({
    stdin: { contents: entry.source, resolveDir: BENCH_DIR, sourcefile: `${entry.id}.mjs` },
    bundle: true,
    minify: true,
    treeShaking: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    write: false,
    logLevel: 'silent',
  });
  const code = result.outputFiles[0].contents;
  return { minified: code.length, gzipped: gzipSync(code, { level: 9 }).length };
}

export async function runBundle() {
  const rows = [];
  for (const entry of ENTRIES) {
    try {
      rows.push({ ...entry, ...(await measure(entry)) });
    } catch (error) {
      rows.push({ ...entry, error: error.message.split('\n')[0] });
    }
  }
  const fp = rows.find((r) => r.id === 'fetch-pacer');
  const table = printTable(
    '5. Bundle size: a paced fetch (esbuild, minified, browser, then gzip -9)',
    [
      { label: 'what the user imports', value: (r) => r.label },
      { label: 'minified B', value: (r) => (r.error ? r.error : num(r.minified)) },
      { label: 'gzipped B', value: (r) => num(r.gzipped) },
      { label: 'vs fetch-pacer', value: (r) => ratio(r.gzipped, fp.gzipped) },
    ],
    rows,
    [
      "Only fetch-pacer's paced fetch reads Retry-After and RateLimit headers and retries a 429; the others pace calls and nothing more. Each entry is in bench/workloads/bundle.mjs.",
    ],
  );
  return { rows: rows.map(({ source, ...rest }) => rest), table };
}
