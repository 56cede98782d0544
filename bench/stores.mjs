// `node bench/stores.mjs`: decisions per second and latency per `take` of the three stores:
// memory (the pacer's own limiter, in-process), cross-tab (Web Locks + IndexedDB, in chromium)
// and Redis (one Lua script per decision). Bundles `src/` with esbuild, so it needs no build.
//
//   node bench/stores.mjs                      all three (Redis needs REDIS_URL)
//   node bench/stores.mjs --only memory,redis
//
// Latency: one take at a time, on one key (p50 / p99 over the runs). Throughput: sequential
// (one take at a time), concurrent (many keys in flight at once), and batched (one call
// deciding 64 requests, as the pacer asks for a line's head tasks).
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CACHE = join(ROOT, 'node_modules/.cache/fetch-pacer-bench');
const CHROMIUM = '/usr/bin/chromium';
const { values } = parseArgs({ options: { only: { type: 'string' } } });
const only = values.only?.split(',').map((name) => name.trim());

mkdirSync(CACHE, { recursive: true });

/** The sources, bundled for Node (`redis` stays an import, resolved from node_modules). */
async function nodeBundle() {
  const entry = join(CACHE, 'node-entry.ts');
  const { writeFileSync } = await import('node:fs');
  writeFileSync(
    entry,
    `export { RateLimiter } from '${ROOT}/src/core/limiter.ts';
export { resolvePolicy } from '${ROOT}/src/core/policy.ts';
export { createPacer } from '${ROOT}/src/pacer/index.ts';
export { redisStore } from '${ROOT}/src/stores/redis/index.ts';`,
  );
  const outfile = join(CACHE, 'node.mjs');
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile,
    external: ['redis'],
    logLevel: 'error',
  });
  return import(outfile);
}

function quantile(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** p50/p99 of `samples` ms, and decisions/s over `totalMs` for `count` decisions. */
function row(store, mode, samples, count, totalMs) {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    store,
    mode,
    perSecond: Math.round((count / totalMs) * 1_000),
    p50: sorted.length > 0 ? quantile(sorted, 0.5) : undefined,
    p99: sorted.length > 0 ? quantile(sorted, 0.99) : undefined,
  };
}

function fmtMs(ms) {
  if (ms === undefined) return '';
  if (ms < 0.001) return `${(ms * 1e6).toFixed(0)} ns`;
  if (ms < 1) return `${(ms * 1e3).toFixed(1)} µs`;
  return `${ms.toFixed(2)} ms`;
}

async function memory(lib) {
  const limits = [lib.resolvePolicy({ limit: 1_000_000_000, windowMs: 1_000 })];
  const limiter = new lib.RateLimiter({ policy: { limit: 1_000_000_000, windowMs: 1_000 } });
  const rows = [];
  // Sequential: the limiter's synchronous decision, timed in blocks (a single call is below the
  // clock's resolution).
  const block = 1_000;
  const samples = [];
  for (let i = 0; i < 20_000; i++) limiter.tryAcquire('hot');
  const started = performance.now();
  for (let run = 0; run < 500; run++) {
    const t = performance.now();
    for (let i = 0; i < block; i++) limiter.tryAcquire('hot');
    samples.push((performance.now() - t) / block);
  }
  rows.push(
    row(
      'memory',
      'sequential (limiter.tryAcquire)',
      samples,
      500 * block,
      performance.now() - started,
    ),
  );
  // Through the pacer: a task scheduled and started on the memory path.
  const pacer = lib.createPacer({ limits: limits[0] });
  const n = 50_000;
  const t = performance.now();
  await Promise.all(Array.from({ length: n }, () => pacer.schedule(() => undefined)));
  rows.push(row('memory', 'pacer.schedule, 50,000 at once', [], n, performance.now() - t));
  return rows;
}

async function redis(lib) {
  const url = process.env.REDIS_URL;
  if (url === undefined) {
    console.log('redis: skipped (set REDIS_URL=redis://127.0.0.1:6390 and start a redis-server)');
    return [];
  }
  const { createClient } = await import('redis');
  const client = createClient({ url });
  client.on('error', () => {});
  await client.connect();
  const prefix = `fetch-pacer-bench:${process.pid}:`;
  const store = lib.redisStore({ client, prefix });
  const call = {
    limits: Object.freeze([lib.resolvePolicy({ limit: 1_000_000_000, windowMs: 1_000 })]),
    signal: new AbortController().signal,
  };
  const rows = [];
  for (let i = 0; i < 500; i++) await store.take('warm', 1, call);
  // Sequential: one take at a time (a network round trip each, on loopback).
  const samples = [];
  const n = 5_000;
  let started = performance.now();
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await store.take('seq', 1, call);
    samples.push(performance.now() - t);
  }
  rows.push(row('redis', 'sequential take, one key', samples, n, performance.now() - started));
  // Concurrent: 64 keys in flight at once (node-redis pipelines them on one connection).
  const perKey = 300;
  started = performance.now();
  await Promise.all(
    Array.from({ length: 64 }, async (_, k) => {
      for (let i = 0; i < perKey; i++) await store.take(`c${k}`, 1, call);
    }),
  );
  rows.push(row('redis', 'concurrent take, 64 keys', [], 64 * perKey, performance.now() - started));
  // Batched: one script deciding 64 requests of one key.
  const costs = Array(64).fill(1);
  const batchSamples = [];
  started = performance.now();
  for (let i = 0; i < 300; i++) {
    const t = performance.now();
    await store.takeMany('batch', costs, false, call);
    batchSamples.push(performance.now() - t);
  }
  rows.push(
    row(
      'redis',
      'takeMany x 64, one key (latency per call)',
      batchSamples,
      300 * 64,
      performance.now() - started,
    ),
  );
  for await (const keys of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 1_000 })) {
    if (keys.length > 0) await client.del(keys);
  }
  client.destroy();
  return rows;
}

const PAGE = (src) => `
import { crossTabStore } from '${src}/stores/cross-tab/index.ts';
import { resolvePolicy } from '${src}/core/policy.ts';
const call = {
  limits: Object.freeze([resolvePolicy({ limit: 1_000_000_000, windowMs: 1_000 })]),
  signal: new AbortController().signal,
};
const store = crossTabStore({ name: 'bench' });
window.bench = {
  async sequential(key, n) {
    for (let i = 0; i < 50; i++) await store.take('warm', 1, call);
    const samples = [];
    const started = performance.now();
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      await store.take(key, 1, call);
      samples.push(performance.now() - t);
    }
    return { samples, ms: performance.now() - started };
  },
  async batched(key, n) {
    const costs = Array(64).fill(1);
    const samples = [];
    const started = performance.now();
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      await store.takeMany(key, costs, false, call);
      samples.push(performance.now() - t);
    }
    return { samples, ms: performance.now() - started };
  },
  async concurrentKeys(k, n) {
    const started = performance.now();
    await Promise.all(Array.from({ length: k }, async (_, j) => {
      for (let i = 0; i < n; i++) await store.take('key' + j, 1, call);
    }));
    return { ms: performance.now() - started };
  },
};
window.ready = true;
`;

async function crossTab() {
  if (!existsSync(CHROMIUM)) {
    console.log(`cross-tab: skipped (no chromium at ${CHROMIUM})`);
    return [];
  }
  const { writeFileSync } = await import('node:fs');
  const entry = join(CACHE, 'page.ts');
  writeFileSync(entry, PAGE(join(ROOT, 'src')));
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    outfile: join(CACHE, 'page.js'),
    logLevel: 'error',
  });
  const script = readFileSync(join(CACHE, 'page.js'), 'utf8');
  const server = createServer((request, response) => {
    if (request.url === '/page.js') {
      response.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
    } else {
      response
        .writeHead(200, { 'content-type': 'text/html' })
        .end('<!doctype html><script type="module" src="/page.js"></script>');
    }
  });
  await new Promise((listening) => server.listen(0, '127.0.0.1', listening));
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const rows = [];
  try {
    const context = await browser.newContext();
    const pages = [];
    for (let i = 0; i < 4; i++) {
      const page = await context.newPage();
      await page.goto(`http://127.0.0.1:${server.address().port}/`);
      await page.waitForFunction('window.ready === true');
      pages.push(page);
    }
    const [first] = pages;
    const n = 1_000;
    const seq = await first.evaluate(
      ([key, count]) => window.bench.sequential(key, count),
      ['seq', n],
    );
    rows.push(row('cross-tab', 'sequential take, one key, one tab', seq.samples, n, seq.ms));
    const started = performance.now();
    const four = await Promise.all(
      pages.map((page) =>
        page.evaluate(([key, count]) => window.bench.sequential(key, count), ['shared', 250]),
      ),
    );
    rows.push(
      row(
        'cross-tab',
        'sequential take, one key, 4 tabs contending',
        four.flatMap((r) => r.samples),
        1_000,
        performance.now() - started,
      ),
    );
    const keys = await first.evaluate(
      ([k, count]) => window.bench.concurrentKeys(k, count),
      [16, 60],
    );
    rows.push(row('cross-tab', 'concurrent take, 16 keys, one tab', [], 16 * 60, keys.ms));
    const batched = await first.evaluate(
      ([key, count]) => window.bench.batched(key, count),
      ['batch', 100],
    );
    rows.push(
      row(
        'cross-tab',
        'takeMany x 64, one key (latency per call)',
        batched.samples,
        100 * 64,
        batched.ms,
      ),
    );
  } finally {
    await browser.close();
    server.close();
  }
  return rows;
}

const load = os.loadavg();
console.log(
  `fetch-pacer store bench: node ${process.version}, ${os.cpus().length} x ${os.cpus()[0]?.model}, load average ${load.map((l) => l.toFixed(2)).join(' ')}`,
);
if (load[0] > os.cpus().length / 2)
  console.log('warning: the machine is busy: timings will be noisy');
const lib = await nodeBundle();
const rows = [];
if (!only || only.includes('memory')) rows.push(...(await memory(lib)));
if (!only || only.includes('redis')) rows.push(...(await redis(lib)));
if (!only || only.includes('cross-tab')) rows.push(...(await crossTab()));

const header = ['store', 'how', 'decisions/s', 'p50 per take', 'p99 per take'];
const lines = rows.map((r) => [
  r.store,
  r.mode,
  r.perSecond.toLocaleString('en-US'),
  fmtMs(r.p50),
  fmtMs(r.p99),
]);
const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
const fmt = (cells) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
console.log(fmt(header));
console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
for (const line of lines) console.log(fmt(line));
