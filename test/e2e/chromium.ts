import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/** Debian's chromium (`.ci/run` installs it), or CHROMIUM_PATH. Never a downloaded browser. */
export const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';

/**
 * The flags this machine needs (its network is closed: without the background-networking flags
 * chromium keeps trying to reach Google).
 */
export const CHROMIUM_FLAGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * Headless chromium with `CHROMIUM_FLAGS`. Fails loudly when the browser is missing, rather than
 * letting a browser test skip and pass unnoticed.
 */
export function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium not found at ${CHROMIUM}: install it (apt-get install chromium) or set CHROMIUM_PATH.`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [...CHROMIUM_FLAGS],
  });
}
