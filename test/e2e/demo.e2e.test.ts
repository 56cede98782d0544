import { execFile } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from './chromium.js';
import { type StaticServer, serveStatic } from './static-server.js';

const ROOT = resolve(import.meta.dirname, '../..');
const SCREENSHOT = resolve(ROOT, 'test-results/demo-e2e.png');
/** `UPDATE_SCREENSHOT=1` also refreshes the picture the README shows. */
const README_SCREENSHOT = resolve(ROOT, 'demo/screenshot.png');

let server: StaticServer;
let browser: Browser;

beforeAll(async () => {
  // `npm run demo:build`, in a process of its own: inside vitest NODE_ENV is 'test', and Vite
  // would build React's development runtime.
  await promisify(execFile)(
    process.execPath,
    [resolve(ROOT, 'node_modules/vite/bin/vite.js'), 'build', '--config', 'demo/vite.config.ts'],
    { cwd: ROOT, env: { ...process.env, NODE_ENV: 'production' } },
  );
  server = await serveStatic(resolve(ROOT, 'demo/dist'));
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

async function count(page: Page, testId: string): Promise<number> {
  return Number(await page.getByTestId(testId).textContent());
}

describe('the demo, built and served, in chromium', () => {
  it('fires 100 requests: the paced side gets no 429, plain fetch gets many', async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    // No automatic first burst: this test fires its own.
    await page.goto(`${server.url}?autoplay=0`);
    // The mock API (a Service Worker) is up once the app has rendered.
    await page.waitForSelector('html[data-ready="true"]');

    await page.getByRole('button', { name: 'Fire 100', exact: true }).click();
    const burst = page.getByTestId('latest-burst');
    await burst.waitFor();
    // Done when every request of both lanes has settled (the paced one takes ~10 s at 10/s).
    await page.waitForSelector('[data-testid="latest-burst"][data-state="done"]', {
      timeout: 45_000,
    });

    const paced429 = await count(page, 'paced-429');
    const unpaced429 = await count(page, 'unpaced-429');
    console.info(`e2e: paced 429s = ${paced429}, unpaced 429s = ${unpaced429} (of 100 each)`);
    expect(paced429).toBe(0);
    expect(unpaced429).toBeGreaterThan(50);
    expect(await page.getByTestId('paced-ok').textContent()).toBe('100 / 100');
    expect(errors).toEqual([]);

    await mkdir(resolve(ROOT, 'test-results'), { recursive: true });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    if (process.env['UPDATE_SCREENSHOT'] === '1') {
      // The comparison, the bucket and the timeline: from the top to the end of the timeline.
      const timeline = await page.locator('.timeline').boundingBox();
      const height = Math.ceil((timeline?.y ?? 1800) + (timeline?.height ?? 0) + 24);
      await page.screenshot({
        path: README_SCREENSHOT,
        fullPage: true,
        clip: { x: 0, y: 0, width: 1440, height },
      });
    }
    await page.close();
  });
});
