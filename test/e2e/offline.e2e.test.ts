import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleForBrowser } from './bundle.js';
import { launchChromium } from './chromium.js';

const SRC = resolve(import.meta.dirname, '../../src');

/**
 * The page: a paced fetch that retries no network error (`retry: { limit: 0 }`), so that a call
 * it did not lose while offline was kept by the offline wait alone. `window.harness` starts
 * calls, and tells how many sends failed and how the calls ended.
 */
const PAGE_SCRIPT = `
import { createPacedFetch } from '${SRC}/http/paced-fetch.ts';

let failures = 0;
const outcomes = [];
const pacedFetch = createPacedFetch({
  limits: { limit: 10, windowMs: 1000 },
  retry: { limit: 0 },
  fetch: (request) =>
    fetch(request).catch((error) => {
      failures++;
      throw error;
    }),
});

window.harness = {
  start(url, calls) {
    for (let i = 0; i < calls; i++) {
      pacedFetch(url + '/' + i).then(
        async (response) => outcomes.push({ status: response.status, body: await response.text() }),
        (error) => outcomes.push({ error: String(error) }),
      );
    }
  },
  failures: () => failures,
  ended: () => outcomes.length,
  onLine: () => navigator.onLine,
  /** How the calls ended so far, after a macrotask (a rejection has reached its handler). */
  settled: () => new Promise((done) => setTimeout(() => done(outcomes.slice()), 0)),
};
window.ready = true;
`;

const PAGE_HTML =
  '<!doctype html><meta charset="utf-8"><title>offline e2e</title><script type="module" src="/main.js"></script>';

interface Outcome {
  status?: number;
  body?: string;
  error?: string;
}

type Harness = {
  start(url: string, calls: number): void;
  failures(): number;
  ended(): number;
  onLine(): boolean;
  settled(): Promise<Outcome[]>;
};

/** The page's globals, as the functions given to `page.evaluate` (run in the page) see them. */
type PageWindow = { harness: Harness };

describe('a paced fetch in chromium going offline', () => {
  let dir: string;
  let server: Server;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let served = 0;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fetch-pacer-offline-e2e-'));
    const script = await bundleForBrowser(dir, 'main', PAGE_SCRIPT);
    server = createServer((request, response) => {
      if (request.url === '/main.js') {
        response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(script);
      } else if (request.url?.startsWith('/api/')) {
        served++;
        response.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'no-store' });
        response.end('ok');
      } else {
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE_HTML);
      }
    });
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    browser = await launchChromium();
    context = await browser.newContext();
    page = await context.newPage();
    await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    await page.waitForFunction('window.ready === true');
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    server?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('keeps every call whose send failed while offline, and sends it once back online', async () => {
    // Chromium's network emulation: every fetch fails with a TypeError, `navigator.onLine` is
    // false, and `online` fires when it ends, as when a laptop loses its Wi-Fi.
    await context.setOffline(true);
    expect(await page.evaluate(() => (window as unknown as PageWindow).harness.onLine())).toBe(
      false,
    );
    await page.evaluate(() => (window as unknown as PageWindow).harness.start('/api/items', 5));
    await page.waitForFunction(() => (window as unknown as PageWindow).harness.failures() >= 5);
    // Without the offline wait each of them rejected at once (no retry for a network error).
    expect(await page.evaluate(() => (window as unknown as PageWindow).harness.settled())).toEqual(
      [],
    );
    expect(served).toBe(0);
    await context.setOffline(false);
    await page.waitForFunction(() => (window as unknown as PageWindow).harness.ended() === 5);
    const outcomes = await page.evaluate(() => (window as unknown as PageWindow).harness.settled());
    expect(outcomes).toEqual(Array.from({ length: 5 }, () => ({ status: 200, body: 'ok' })));
    expect(await page.evaluate(() => (window as unknown as PageWindow).harness.failures())).toBe(5);
    expect(served).toBe(5);
  }, 60_000);
});
