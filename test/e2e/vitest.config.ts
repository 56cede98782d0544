import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';
import rootConfig from '../../vitest.config.js';

// The end-to-end project on its own: `npx vitest run --config test/e2e/vitest.config.ts`.
// It builds the demo, serves it on 127.0.0.1 and drives Debian's chromium with playwright-core.
export default defineConfig({
  root: resolve(import.meta.dirname, '../..'),
  test: {
    name: 'e2e',
    // The root config's reporters: in CI a JSON report too, which .ci/run's closing line counts.
    reporters: rootConfig.test?.reporters ?? ['default'],
    include: ['test/e2e/**/*.e2e.test.ts'],
    environment: 'node',
    testTimeout: 60_000,
    // One browser test file at a time: they measure timing-sensitive things (429s against
    // counting servers, an outbox draining under a limit), and two at once on a small machine
    // turn each other's CPU contention into flakes.
    fileParallelism: false,
    hookTimeout: 120_000,
  },
});
