import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyInspection } from '../../src/pacer/index.js';
import { bundleForBrowser } from './bundle.js';
import { launchChromium } from './chromium.js';

const SRC = resolve(import.meta.dirname, '../../src');

/** The page: a paced fetch calling the API's origin, driven by the test through `window.harness`. */
const PAGE_SCRIPT = `
import { createPacedFetch } from '${SRC}/http/paced-fetch.ts';
import { isRateLimitError } from '${SRC}/pacer/errors.ts';

window.harness = {
  /**
   * Fires \`calls\` GETs at \`url\` at once through a paced fetch 10x too generous for the
   * server, and reports how they ended, what the script could read of the answers, and what
   * the key (the URL's origin, the default) learned.
   */
  async run(url, calls) {
    const pacedFetch = createPacedFetch({ limits: { limit: 50, windowMs: 1000 } });
    const outcomes = await Promise.allSettled(
      Array.from({ length: calls }, async () => {
        const response = await pacedFetch(url);
        await response.text();
        return {
          status: response.status,
          limit: response.headers.get('x-ratelimit-limit'),
          reset: response.headers.get('x-ratelimit-reset'),
        };
      }),
    );
    const inspection = pacedFetch.pacer.inspect(new URL(url).origin);
    pacedFetch.pacer.dispose();
    const answers = outcomes.filter((o) => o.status === 'fulfilled').map((o) => o.value);
    const ok = answers.filter((a) => a.status === 200);
    return {
      ok: ok.length,
      otherStatuses: answers.filter((a) => a.status !== 200).map((a) => a.status),
      rejections: outcomes
        .filter((o) => o.status === 'rejected')
        .map((o) => ({
          typeError: o.reason instanceof TypeError,
          rateLimitError: isRateLimitError(o.reason),
          message: String(o.reason?.message),
        })),
      // What the script could read of the 200s' headers: each value seen, once.
      limitHeaders: [...new Set(ok.map((a) => a.limit))],
      resetHeaders: [...new Set(ok.map((a) => a.reset))],
      inspection,
    };
  },
};
window.ready = true;
`;

const PAGE_HTML =
  '<!doctype html><meta charset="utf-8"><title>cross-origin e2e</title><script type="module" src="/main.js"></script>';

interface Run {
  ok: number;
  otherStatuses: number[];
  rejections: { typeError: boolean; rateLimitError: boolean; message: string }[];
  limitHeaders: (string | null)[];
  resetHeaders: (string | null)[];
  inspection: KeyInspection;
}

function run(page: Page, url: string, calls: number): Promise<Run> {
  return page.evaluate(
    ([target, count]) =>
      (
        window as unknown as { harness: { run(url: string, calls: number): Promise<Run> } }
      ).harness.run(target, count),
    [url, calls] as const,
  );
}

/** How the API answers across origins (see the docs' "What the server says"). */
type Mode = 'exposed' | 'hidden' | 'no-cors';

const LIMIT = 5;
const WINDOW_MS = 1_000;
const EXPOSED = 'Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Date';

interface Counts {
  requests: number;
  ok: number;
  refused: number;
  preflights: number;
}

/**
 * A fixed window of 5 requests a second per mode, every request counted; the window opens at
 * the first request after the last window ended. The mode is the path's first segment.
 */
function createApi() {
  const windows = new Map<Mode, { start: number; count: number }>();
  const counts = new Map<Mode, Counts>();
  const countsOf = (mode: Mode) => {
    let found = counts.get(mode);
    if (found === undefined) {
      found = { requests: 0, ok: 0, refused: 0, preflights: 0 };
      counts.set(mode, found);
    }
    return found;
  };
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const mode = new URL(request.url ?? '/', 'http://x').pathname.split('/')[1] as Mode;
    const seen = countsOf(mode);
    const cors: Record<string, string> = { 'access-control-allow-origin': '*' };
    if (mode === 'exposed') cors['access-control-expose-headers'] = EXPOSED;
    if (request.method === 'OPTIONS') {
      // Simple GETs need no preflight: answered (and counted) only in case one comes.
      seen.preflights++;
      response.writeHead(204, { ...cors, 'access-control-allow-methods': 'GET' }).end();
      return;
    }
    seen.requests++;
    const now = performance.now();
    let current = windows.get(mode);
    if (current === undefined || now >= current.start + WINDOW_MS) {
      current = { start: now, count: 0 };
      windows.set(mode, current);
    }
    current.count++;
    // Whole seconds to the window's end, as servers send them. Less a µs: the request that
    // opens the window is 1,000 ms from its end, which \`start + 1000 - now\` computes as
    // 1000.0000000000001 for about one start in ten, a reset of 2 s from which the page learned
    // a window of 2 s (a CI run on 8fb3da2).
    const seconds = String(
      Math.max(1, Math.ceil((current.start + WINDOW_MS - now - 1e-3) / 1_000)),
    );
    const headers: Record<string, string> = {
      'content-type': 'text/plain',
      'cache-control': 'no-store',
      'x-ratelimit-limit': String(LIMIT),
      'x-ratelimit-remaining': String(Math.max(0, LIMIT - current.count)),
      'x-ratelimit-reset': seconds,
    };
    if (current.count <= LIMIT) {
      seen.ok++;
      response.writeHead(200, { ...headers, ...cors }).end('ok');
    } else {
      seen.refused++;
      // no-cors: a refusal without CORS headers, as nginx's error pages without `always`.
      const refusalCors = mode === 'no-cors' ? {} : cors;
      response
        .writeHead(429, { ...headers, 'retry-after': seconds, ...refusalCors })
        .end('slow down');
    }
  });
  return { server, countsOf };
}

describe('a paced fetch in chromium calling another origin', () => {
  let dir: string;
  let pageServer: Server;
  let api: ReturnType<typeof createApi>;
  let apiOrigin: string;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fetch-pacer-cross-origin-e2e-'));
    const script = await bundleForBrowser(dir, 'main', PAGE_SCRIPT);
    pageServer = createServer((request, response) => {
      if (request.url === '/main.js') {
        response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(script);
      } else {
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE_HTML);
      }
    });
    await new Promise<void>((listening) => pageServer.listen(0, '127.0.0.1', listening));
    api = createApi();
    await new Promise<void>((listening) => api.server.listen(0, '127.0.0.1', listening));
    // Another port is another origin.
    apiOrigin = `http://127.0.0.1:${(api.server.address() as AddressInfo).port}`;
    browser = await launchChromium();
    page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${(pageServer.address() as AddressInfo).port}/`);
    await page.waitForFunction('window.ready === true');
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    pageServer?.close();
    api?.server.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  async function measure(mode: Mode) {
    const started = performance.now();
    const result = await run(page, `${apiOrigin}/${mode}/items`, 20);
    const counts = api.countsOf(mode);
    const { rejections, ...rest } = result;
    const messages = [...new Set(rejections.map((rejection) => rejection.message))];
    console.info(
      `[cross-origin] ${mode}: ${Math.round(performance.now() - started)} ms; page ${JSON.stringify(rest)}, ${rejections.length} rejections ${JSON.stringify(messages)}; server ${JSON.stringify(counts)}`,
    );
    return { result, counts };
  }

  it('exposed headers: every call ends 200, and the key learns the server’s policy', async () => {
    const { result } = await measure('exposed');
    expect(result.ok).toBe(20);
    expect(result.otherStatuses).toEqual([]);
    expect(result.rejections).toEqual([]);
    expect(result.limitHeaders).toEqual(['5']);
    expect(result.inspection.learned).toEqual({ limit: 5, windowMs: 1_000, source: 'server' });
  }, 60_000);

  it('hidden headers: the bare 429s are backed off from and retried, every call ends 200', async () => {
    const { result, counts } = await measure('hidden');
    expect(counts.refused).toBeGreaterThan(0);
    expect(result.ok).toBe(20);
    expect(result.otherStatuses).toEqual([]);
    expect(result.rejections).toEqual([]);
    expect(result.limitHeaders).toEqual([null]);
    expect(result.resetHeaders).toEqual([null]);
    // Nothing to read but the status: the rate comes from the refusals (AIMD).
    expect(result.inspection.learned?.source).toBe('rate');
  }, 60_000);

  it('a 429 without CORS headers: read as a network error, and the GETs are sent again', async () => {
    const { result, counts } = await measure('no-cors');
    expect(counts.refused).toBeGreaterThan(0);
    // The browser hides each refusal entirely (a TypeError, as for a network down): the paced
    // fetch backs off and sends an idempotent call again (`retry.limit`), where it lost one call
    // per refusal before. A call refused on every send would still end in the TypeError.
    expect(result.rejections.length).toBeLessThan(counts.refused);
    for (const rejection of result.rejections) {
      expect(rejection).toMatchObject({ typeError: true, rateLimitError: false });
    }
    expect(result.otherStatuses).toEqual([]);
    expect(result.ok + result.rejections.length).toBe(20);
    // Nothing was read, so nothing was learned beyond the slow start's growth.
    expect(result.inspection.learned?.source).toBe('start');
  }, 60_000);
});
