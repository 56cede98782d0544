// Workload 5: bundle size. What a user ships for "a fetch that waits its turn" with each library:
// the import and the few lines around it, bundled for the browser by esbuild (minified, tree
// shaken), then gzipped. No timing involved, so it runs in the bench process itself.
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { num, printTable, ratio } from '../lib/table.mjs';

const BENCH_DIR = new URL('..', import.meta.url).pathname;
const ROOT = new URL('../..', import.meta.url).pathname;
/** Modules below this many minified bytes are summed into one row of the breakdown. */
const SMALL_MODULE = 500;

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
export const limiter = createRateLimiter({ limits: perSecond(10) });`,
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

/** The esbuild options of every measure: what a user's browser bundle gets. */
function bundle(contents, sourcefile, metafile = false) {
  return build({
    // Paths in the metafile are relative to it: `src/core/limiter.ts`.
    absWorkingDir: ROOT,
    stdin: { contents, resolveDir: BENCH_DIR, sourcefile },
    bundle: true,
    minify: true,
    treeShaking: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    write: false,
    logLevel: 'silent',
    metafile,
  });
}

async function measure(entry) {
  const result = await bundle(entry.source, `${entry.id}.mjs`);
  const code = result.outputFiles[0].contents;
  return { minified: code.length, gzipped: gzipSync(code, { level: 9 }).length };
}

/**
 * Where the paced fetch's bytes go: the same import bundled from the sources, so esbuild's
 * metafile can say how many minified bytes each module leaves in the output (gzip cannot be
 * split by module; minified bytes are what a change to one module moves).
 */
async function breakdown() {
  const source = `export { createPacedFetch, perSecond } from ${JSON.stringify(`${ROOT}src/index.ts`)};`;
  const result = await bundle(source, 'breakdown.mjs', true);
  const [output] = Object.values(result.metafile.outputs);
  const modules = Object.entries(output.inputs)
    .map(([module, { bytesInOutput: bytes }]) => ({ module, bytes }))
    .filter((row) => row.bytes > 0)
    .sort((a, b) => b.bytes - a.bytes);
  const total = modules.reduce((sum, row) => sum + row.bytes, 0);
  const small = modules.filter((row) => row.bytes < SMALL_MODULE);
  const rows = modules.filter((row) => row.bytes >= SMALL_MODULE);
  if (small.length > 0) {
    const bytes = small.reduce((sum, row) => sum + row.bytes, 0);
    rows.push({ module: `${small.length} modules under ${SMALL_MODULE} B`, bytes });
  }
  return { total, rows };
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
  const modules = await breakdown();
  const split = printTable(
    "5b. Where a paced fetch's bytes go (createPacedFetch + perSecond from src/, by module)",
    [
      { label: 'module', value: (r) => r.module },
      { label: 'minified B', value: (r) => num(r.bytes) },
      { label: 'share', value: (r) => `${num((100 * r.bytes) / modules.total, 1)} %` },
    ],
    modules.rows,
    [
      `${num(modules.total)} B minified in all, from esbuild's metafile (bytesInOutput). Table 5 bundles the built dist, which vite has bundled once already: its count differs a little.`,
    ],
  );
  return {
    rows: rows.map(({ source, ...rest }) => rest),
    breakdown: modules,
    table: `${table}\n\n${split}`,
  };
}
