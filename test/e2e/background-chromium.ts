import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { CHROMIUM, CHROMIUM_FLAGS } from './chromium.js';

/**
 * Chromium's helper processes can still be writing into the profile when the browser is gone:
 * the removal is retried (ENOTEMPTY failed one CI run's teardown after every test had passed).
 */
const REMOVE_PROFILE = { recursive: true, force: true, maxRetries: 10, retryDelay: 100 } as const;

/**
 * Chromium as a user runs it, where a tab in the background is hidden and throttled.
 * `launchChromium()` cannot give that: Playwright launches with
 * `--disable-background-timer-throttling`, `--disable-renderer-backgrounding` and
 * `--disable-backgrounding-occluded-windows`, and turns on focus emulation for every page of
 * its own contexts, which keeps each page `visible`. So this starts the browser itself and
 * connects over CDP with `noDefaults`, using the browser's default context, whose pages are
 * tabs of one window: opening one hides the one before it.
 */
export interface BackgroundChromium {
  readonly browser: Browser;
  readonly context: BrowserContext;
  close(): Promise<void>;
}

/**
 * Starts chromium with `features` enabled (e.g. `IntensiveWakeUpThrottling:grace_period_seconds/10`
 * to have intensive wake-up throttling after 10 s hidden instead of 5 minutes).
 */
export async function launchBackgroundChromium(
  features: readonly string[] = [],
): Promise<BackgroundChromium> {
  const profile = await mkdtemp(join(tmpdir(), 'fetch-pacer-chromium-'));
  const args = [
    ...CHROMIUM_FLAGS,
    '--no-first-run',
    '--remote-debugging-port=0',
    `--user-data-dir=${profile}`,
  ];
  if (features.length > 0) args.push(`--enable-features=${features.join(',')}`);
  const child = spawn(CHROMIUM, [...args, 'about:blank'], { stdio: ['ignore', 'ignore', 'pipe'] });
  try {
    const endpoint = await devtoolsEndpoint(child);
    const browser = await chromium.connectOverCDP(endpoint, { noDefaults: true });
    const context = browser.contexts()[0];
    if (context === undefined) throw new Error('chromium has no default context');
    return {
      browser,
      context,
      async close() {
        await browser.close().catch(() => {});
        await stop(child);
        await rm(profile, REMOVE_PROFILE);
      },
    };
  } catch (error) {
    await stop(child);
    await rm(profile, REMOVE_PROFILE);
    throw error;
  }
}

/** The `ws://` address chromium prints once it listens (on 127.0.0.1, a port the OS chose). */
function devtoolsEndpoint(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`chromium did not start: ${output}`)), 30_000);
    child.once('error', reject); // not installed: ENOENT, with its path
    child.once('exit', (code) => reject(new Error(`chromium exited (${code}): ${output}`)));
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const found = /DevTools listening on (ws:\/\/\S+)/.exec(output);
      if (found?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(found[1]);
      }
    });
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  child.kill('SIGTERM');
  await exited;
}

/** Visibility as the page itself reads it. */
export const visibility = (page: Page): Promise<DocumentVisibilityState> =>
  page.evaluate(() => document.visibilityState);

/**
 * Hides `page` the way a user does, by opening another tab in front of it (returned), and
 * checks that the page now reads `document.visibilityState === 'hidden'`.
 */
export async function hideBehindNewTab(page: Page): Promise<Page> {
  const front = await page.context().newPage();
  const state = await visibility(page);
  if (state !== 'hidden') throw new Error(`the page should be hidden, it is ${state}`);
  return front;
}
