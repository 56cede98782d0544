import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { launchChromium } from './chromium.js';

const REPO = resolve(import.meta.dirname, '../..');

/** The server's limit: at most SERVER_LIMIT requests in any SERVER_WINDOW_MS (sliding log). */
const SERVER_LIMIT = 20;
const SERVER_WINDOW_MS = 1000;
/**
 * The client's pace: the same count over a window 25% longer. The server counts arrivals and the
 * client counts sends: a request that takes longer to arrive than the one a window after it
 * (fetch() to arrival measures 10 to 190 ms here, median under 20) makes one window hold one
 * request too many. The margin must exceed that jitter; with 5% we saw a 429 now and then.
 */
const CLIENT_WINDOW_MS = 1250;
const ENTRIES = 200;

/** The page: a paced fetch at the client's pace, an outbox, and hooks for the test. */
const PAGE_SCRIPT = `
import { createPacedFetch } from '@src/http/index.ts';
import { slidingLog } from '@src/index.ts';
import { createOutbox } from '@src/offline/index.ts';

const params = new URLSearchParams(location.search);
const pageId = params.get('page') ?? 'a';
const pacedFetch = createPacedFetch({
  limits: { limit: ${SERVER_LIMIT}, windowMs: ${CLIENT_WINDOW_MS}, algorithm: slidingLog },
  fetch: (request) => {
    request.headers.set('x-page', pageId);
    request.headers.set('x-sent-at', String(performance.timeOrigin + performance.now()));
    return fetch(request);
  },
});
const events = { rejected: 0, dropped: 0, errors: [] };
const outbox = createOutbox({
  name: 'e2e',
  fetch: pacedFetch,
  onRejected: () => { events.rejected++; },
  onDropped: () => { events.dropped++; },
  onError: (error) => { events.errors.push(error.message); },
});
window.harness = {
  async enqueue(from, count) {
    for (let n = from; n < from + count; n++) {
      await outbox.enqueue('/api/write', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ n }),
      });
    }
  },
  state() {
    const snapshot = outbox.getSnapshot();
    return { ...snapshot, lastError: snapshot.lastError?.message ?? null, ...events };
  },
};
`;

const PAGE_HTML =
  '<!doctype html><meta charset="utf-8"><title>outbox e2e</title><script type="module" src="/main.js"></script>';

interface Arrival {
  readonly at: number;
  /** fetch() in the page to arrival here, in ms (both clocks of this machine). */
  readonly latency: number;
  readonly n: number;
  readonly key: string | undefined;
  readonly page: string | undefined;
}

/** A write API that enforces its own limit, answers 429 + Retry-After beyond it, and counts. */
function writeApi() {
  const arrivals: Arrival[] = [];
  const accepted: number[] = [];
  let refused = 0;
  let mostInWindow = 0;
  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const at = performance.now();
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    while (accepted.length > 0 && (accepted[0] as number) <= at - SERVER_WINDOW_MS)
      accepted.shift();
    if (accepted.length >= SERVER_LIMIT) {
      refused++;
      const waitMs = (accepted[0] as number) + SERVER_WINDOW_MS - at;
      response.writeHead(429, { 'retry-after': String(Math.ceil(waitMs / 1000)) }).end();
      return;
    }
    accepted.push(at);
    mostInWindow = Math.max(mostInWindow, accepted.length);
    const { n } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { n: number };
    arrivals.push({
      at,
      latency: performance.timeOrigin + at - Number(request.headers['x-sent-at']),
      n,
      key: request.headers['idempotency-key'] as string | undefined,
      page: request.headers['x-page'] as string | undefined,
    });
    response.writeHead(201, { 'content-type': 'application/json' }).end('{"ok":true}');
  }
  return {
    arrivals,
    handle,
    get refused() {
      return refused;
    },
    get mostInWindow() {
      return mostInWindow;
    },
    reset() {
      arrivals.length = 0;
      accepted.length = 0;
      refused = 0;
      mostInWindow = 0;
    },
  };
}

/** Builds the page script from `src/` into a temporary folder; returns the page's files. */
async function buildPage(dir: string): Promise<Record<string, string>> {
  await writeFile(join(dir, 'main.ts'), PAGE_SCRIPT);
  await build({
    configFile: false,
    logLevel: 'error',
    root: dir,
    resolve: { alias: { '@src': join(REPO, 'src') } },
    build: {
      outDir: join(dir, 'dist'),
      emptyOutDir: true,
      minify: false,
      target: 'es2022',
      lib: { entry: join(dir, 'main.ts'), formats: ['es'], fileName: () => 'main.js' },
    },
  });
  return {
    '/': PAGE_HTML,
    '/main.js': await readFile(join(dir, 'dist', 'main.js'), 'utf8'),
  };
}

const CONTENT_TYPES: Record<string, string> = {
  '/': 'text/html; charset=utf-8',
  '/main.js': 'text/javascript; charset=utf-8',
};

interface PageState {
  readonly ready: boolean;
  readonly pending: number;
  readonly inFlight: number;
  readonly flushing: boolean;
  readonly online: boolean;
  readonly sent: number;
  readonly rejected: number;
  readonly dropped: number;
  readonly errors: string[];
  readonly lastError: string | null;
}

const state = (page: Page) =>
  page.evaluate(() => (window as unknown as { harness: { state(): PageState } }).harness.state());

const enqueue = (page: Page, from: number, count: number) =>
  page.evaluate(
    ([first, n]) =>
      (
        window as unknown as { harness: { enqueue(from: number, count: number): Promise<void> } }
      ).harness.enqueue(first, n),
    [from, count] as const,
  );

/** Waits until the page's outbox state satisfies `check` (polled in the page, no sleeps). */
const waitForState = (page: Page, check: string) =>
  page.waitForFunction(
    `(() => { const s = window.harness.state(); return ${check}; })()`,
    undefined,
    { polling: 20, timeout: 30_000 },
  );

describe('the outbox in chromium', () => {
  const api = writeApi();
  let dir: string;
  let files: Record<string, string>;
  let server: Server;
  let origin: string;
  let browser: Browser;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fetch-pacer-outbox-e2e-'));
    files = await buildPage(dir);
    server = createServer((request, response) => {
      const path = new URL(request.url ?? '/', 'http://localhost').pathname;
      if (request.method === 'POST' && path === '/api/write') {
        api.handle(request, response).catch(() => response.writeHead(500).end());
        return;
      }
      const body = files[path];
      if (body === undefined) {
        response.writeHead(404).end();
        return;
      }
      response.writeHead(200, { 'content-type': CONTENT_TYPES[path] ?? 'text/plain' }).end(body);
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((done) => (server ? server.close(() => done()) : done()));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** While offline, the page itself comes from here, as a service worker's cache would serve it. */
  async function serveOfflineCopy(context: BrowserContext): Promise<void> {
    await context.route(
      (url) => url.origin === origin && url.pathname in files,
      (route) => {
        const path = new URL(route.request().url()).pathname;
        return route.fulfill({
          status: 200,
          contentType: CONTENT_TYPES[path] ?? 'text/plain',
          body: files[path] ?? '',
        });
      },
    );
  }

  it('keeps 200 writes made offline across a reload and drains them once, in order, under the limit', async () => {
    api.reset();
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${origin}/?page=a`);
      await waitForState(page, 's.ready');
      await context.setOffline(true);
      await waitForState(page, '!s.online');

      const enqueueStart = performance.now();
      await enqueue(page, 0, ENTRIES);
      const enqueueMs = performance.now() - enqueueStart;
      expect(await state(page)).toMatchObject({ pending: ENTRIES, sent: 0 });

      // Reload while offline: the new page finds the 200 entries in IndexedDB and waits.
      await serveOfflineCopy(context);
      await page.reload();
      await waitForState(page, 's.ready && !s.online');
      expect(await state(page)).toMatchObject({ pending: ENTRIES, inFlight: 0 });
      expect(api.arrivals).toHaveLength(0);
      await context.unroute(() => true);

      const online = performance.now();
      await context.setOffline(false);
      await waitForState(page, `s.online && s.pending === 0 && s.inFlight === 0 && !s.flushing`);
      const final = await state(page);

      const ns = api.arrivals.map((arrival) => arrival.n);
      const keys = new Set(api.arrivals.map((arrival) => arrival.key));
      const unique = new Set(ns).size;
      const first = api.arrivals[0]?.at ?? Number.NaN;
      const last = api.arrivals.at(-1)?.at ?? Number.NaN;
      const ideal = (Math.ceil(ENTRIES / SERVER_LIMIT) - 1) * CLIENT_WINDOW_MS;
      const latencies = api.arrivals.map((arrival) => arrival.latency).sort((x, y) => x - y);
      const figures = {
        entries: ENTRIES,
        received: api.arrivals.length,
        duplicates: api.arrivals.length - unique,
        losses: ENTRIES - unique,
        '429s': api.refused,
        mostInAnyWindow: `${api.mostInWindow} (limit ${SERVER_LIMIT}/${SERVER_WINDOW_MS} ms)`,
        makespanMs: Math.round(last - first),
        onlineToLastMs: Math.round(last - online),
        idealMs: ideal,
        overIdealMs: Math.round(last - first - ideal),
        enqueue200Ms: Math.round(enqueueMs),
        latencyMs: {
          median: Math.round(latencies[latencies.length >> 1] ?? Number.NaN),
          max: Math.round(latencies.at(-1) ?? Number.NaN),
        },
      };
      console.log(`[outbox e2e] reload + 200 offline writes: ${JSON.stringify(figures)}`);

      expect(ns).toEqual(Array.from({ length: ENTRIES }, (_, n) => n));
      expect(keys.size).toBe(ENTRIES);
      expect(api.refused).toBe(0);
      expect(api.mostInWindow).toBeLessThanOrEqual(SERVER_LIMIT);
      expect(final).toMatchObject({ sent: ENTRIES, rejected: 0, dropped: 0, errors: [] });
      // Paced, not faster than the configured rate, and not much slower either.
      expect(last - first).toBeGreaterThanOrEqual(ideal);
      expect(last - first).toBeLessThan(ideal + 3000);
    } finally {
      await context.close();
    }
  });

  it('lets exactly one of two pages of the origin flush, each write once, in enqueue order', async () => {
    api.reset();
    const context = await browser.newContext();
    try {
      const a = await context.newPage();
      const b = await context.newPage();
      await a.goto(`${origin}/?page=a`);
      await b.goto(`${origin}/?page=b`);
      await Promise.all([waitForState(a, 's.ready'), waitForState(b, 's.ready')]);
      await context.setOffline(true);
      await Promise.all([waitForState(a, '!s.online'), waitForState(b, '!s.online')]);
      // Interleaved writes from both pages into the one store.
      await enqueue(a, 0, 10);
      await enqueue(b, 10, 10);
      await enqueue(a, 20, 10);
      await enqueue(b, 30, 10);
      await waitForState(a, 's.pending === 40');
      await waitForState(b, 's.pending === 40');

      await context.setOffline(false);
      await vi.waitFor(() => expect(api.arrivals).toHaveLength(40), {
        timeout: 30_000,
        interval: 20,
      });
      await Promise.all([
        waitForState(a, 's.pending === 0 && s.inFlight === 0 && !s.flushing'),
        waitForState(b, 's.pending === 0 && s.inFlight === 0 && !s.flushing'),
      ]);
      const [stateA, stateB] = await Promise.all([state(a), state(b)]);
      const pages = new Set(api.arrivals.map((arrival) => arrival.page));
      console.log(
        `[outbox e2e] two pages: ${JSON.stringify({
          received: api.arrivals.length,
          flushedBy: [...pages],
          sentByA: stateA.sent,
          sentByB: stateB.sent,
          '429s': api.refused,
        })}`,
      );

      expect(api.arrivals.map((arrival) => arrival.n)).toEqual(
        Array.from({ length: 40 }, (_, n) => n),
      );
      expect(pages.size).toBe(1);
      expect([stateA.sent, stateB.sent].sort((x, y) => x - y)).toEqual([0, 40]);
      expect(new Set(api.arrivals.map((arrival) => arrival.key)).size).toBe(40);
      expect(api.refused).toBe(0);
    } finally {
      await context.close();
    }
  });
});
