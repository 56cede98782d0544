import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { type StaticServer, serveStatic } from './static-server.js';

/** What the demo's browser tests share: the built demo, a page of it, axe, a burst. */
export const ROOT = resolve(import.meta.dirname, '../..');

/**
 * `npm run demo:build`, in a process of its own (inside vitest NODE_ENV is 'test', and Vite
 * would build React's development runtime), then served on 127.0.0.1.
 */
export async function buildAndServeDemo(): Promise<StaticServer> {
  await promisify(execFile)(
    process.execPath,
    [resolve(ROOT, 'node_modules/vite/bin/vite.js'), 'build', '--config', 'demo/vite.config.ts'],
    { cwd: ROOT, env: { ...process.env, NODE_ENV: 'production' } },
  );
  return serveStatic(resolve(ROOT, 'demo/dist'));
}

export interface Screen {
  readonly width: number;
  readonly height: number;
  /** A phone: touch, and the page laid out as a mobile browser does. */
  readonly mobile?: boolean;
}

export const DESKTOP: Screen = { width: 1400, height: 1000 };
export const PHONE: Screen = { width: 390, height: 844, mobile: true };

export interface DemoPage {
  readonly page: Page;
  /** Uncaught errors in the page, to assert none. */
  readonly errors: string[];
}

/** A fresh page of the demo (no automatic first burst), once the mock API is up. */
export async function openDemo(
  browser: Browser,
  url: string,
  screen: Screen = DESKTOP,
): Promise<DemoPage> {
  const { width, height, mobile = false } = screen;
  const page = await browser.newPage({
    viewport: { width, height },
    hasTouch: mobile,
    isMobile: mobile,
  });
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(`${url}?autoplay=0`);
  await page.waitForSelector('html[data-ready="true"]');
  return { page, errors };
}

const require = createRequire(import.meta.url);

export interface AxeViolation {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly nodes: readonly { readonly target: readonly string[] }[];
}

/** axe-core run in the page, on the whole document: the violations, as id and targets. */
export async function axeViolations(page: Page): Promise<string[]> {
  const loaded = await page.evaluate(() => 'axe' in window);
  if (!loaded) await page.addScriptTag({ path: require.resolve('axe-core') });
  const violations = await page.evaluate(async () => {
    const { axe } = window as unknown as {
      axe: { run(context: Document): Promise<{ violations: AxeViolation[] }> };
    };
    return (await axe.run(document)).violations;
  });
  return violations.map(
    (v) =>
      `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
  );
}

/** The numbers of the latest burst, both sides. */
export interface BurstNumbers {
  readonly paced429: number;
  readonly unpaced429: number;
  readonly pacedOk: string;
  readonly unpacedOk: string;
  readonly pacedSent: number;
}

/** Clicks "Fire <size>" and waits until every request of both sides has settled. */
export async function fireAndSettle(
  page: Page,
  size: 1 | 10 | 100,
  timeout = 50_000,
): Promise<BurstNumbers> {
  await page.getByRole('button', { name: `Fire ${size}`, exact: true }).click();
  await page.getByTestId('latest-burst').waitFor();
  await page.waitForSelector('[data-testid="latest-burst"][data-state="done"]', { timeout });
  const text = async (id: string) => (await page.getByTestId(id).textContent()) ?? '';
  return {
    paced429: Number(await text('paced-429')),
    unpaced429: Number(await text('unpaced-429')),
    pacedOk: await text('paced-ok'),
    unpacedOk: await text('unpaced-ok'),
    pacedSent: Number(await text('paced-sent')),
  };
}
