import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';

// Measurements on the manual clock, not tests: they print tables and assert only that every
// run finished. `npx vitest run --config test/measure/vitest.config.ts`
export default defineConfig({
  root: resolve(import.meta.dirname, '../..'),
  test: {
    name: 'measure',
    include: ['test/measure/**/*.measure.ts'],
    environment: 'node',
    setupFiles: ['test/setup.ts'],
    testTimeout: 600_000,
  },
});
