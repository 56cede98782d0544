import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_BURST_429 } from '../../demo/src/components/outlook.js';
import type { Counting, Dialect } from '../../demo/src/mock/server.js';
import { launchChromium } from './chromium.js';
import { axeViolations, buildAndServeDemo, fireAndSettle, openDemo } from './demo-page.js';
import type { StaticServer } from './static-server.js';

let server: StaticServer;
let browser: Browser;

beforeAll(async () => {
  server = await buildAndServeDemo();
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

const COUNTINGS: readonly (readonly [Counting, string])[] = [
  ['sliding-log', 'Sliding log'],
  ['fixed-window', 'Fixed window'],
  ['gcra', 'Leaky bucket (GCRA)'],
];
const DIALECTS: readonly (readonly [Dialect, string])[] = [
  ['ietf', 'IETF RateLimit'],
  ['x-ratelimit', 'X-RateLimit-*'],
  ['retry-after', 'Only Retry-After'],
  ['none', 'Nothing'],
];

/**
 * The honest bound of today: what was measured (the figure the page shows), with room for a
 * loaded machine's timing. The learning issue (12) tightens these to 0; when it lands, lower
 * the figures in outlook.ts and this test holds the page to them.
 */
function boundOf(measured: number): number {
  return Math.ceil(measured * 1.5) + 5;
}

/**
 * Burst of 100 with the default client (token bucket, 10 / s, bursts of 10) against each
 * server the picker offers, each on a fresh page: the paced side's 429s, what it lost (calls
 * that ended as 429 after the paced fetch's retries), plain fetch's 429s.
 */
describe('the demo against each server of the picker', () => {
  for (const [counting, countingLabel] of COUNTINGS) {
    for (const [dialect, dialectLabel] of DIALECTS) {
      it(`${countingLabel} + ${dialectLabel}`, async () => {
        const { page, errors } = await openDemo(browser, server.url);
        await page.getByRole('radio', { name: countingLabel, exact: true }).check();
        await page.getByRole('radio', { name: dialectLabel, exact: true }).check();
        const measured = FIRST_BURST_429[counting][dialect];
        // The page says what to expect of this server, with the figure this test holds it to.
        expect(await page.getByTestId('outlook').textContent()).toContain(
          `up to ${measured} × 429`,
        );
        const numbers = await fireAndSettle(page, 100, 55_000);
        console.info(`e2e server ${countingLabel} + ${dialectLabel}: ${JSON.stringify(numbers)}`);
        expect(numbers.paced429).toBeLessThanOrEqual(boundOf(measured));
        // Refused calls are retried (Retry-After, backoff): hardly one is lost, even here.
        expect(Number.parseInt(numbers.pacedOk, 10)).toBeGreaterThanOrEqual(95);
        // Plain fetch gets what the server lets through at once and nothing more: at most two
        // windows' worth (20), when a fixed window's boundary falls inside the burst.
        expect(numbers.unpaced429).toBeGreaterThanOrEqual(80);
        expect(await axeViolations(page)).toEqual([]);
        expect(errors).toEqual([]);
        await page.close();
      }, 70_000);
    }
  }
});
