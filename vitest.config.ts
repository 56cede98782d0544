import { resolve } from 'node:path';
import { defineConfig, type ViteUserConfig } from 'vitest/config';

type Reporters = NonNullable<NonNullable<ViteUserConfig['test']>['reporters']>;

// In CI each run also writes a JSON report, which .ci/run totals into one closing line.
const reporters: Reporters = process.env['CI']
  ? ['default', ['json', { outputFile: `test-results/vitest-${process.pid}.json` }]]
  : ['default'];

const src = (path: string) => resolve(import.meta.dirname, 'src', path);

export default defineConfig({
  test: {
    reporters,
    projects: [
      {
        // The demo's modules import the library by its public names (as demo/vite.config.ts
        // serves them): from the sources here too, so their tests run on the code under test.
        resolve: {
          alias: [
            { find: /^fetch-pacer$/, replacement: src('index.ts') },
            { find: /^fetch-pacer\/react$/, replacement: src('react/index.ts') },
            { find: /^fetch-pacer\/offline$/, replacement: src('offline/index.ts') },
          ],
        },
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
          exclude: ['test/built/**', 'test/e2e/**'],
          environment: 'node',
          setupFiles: ['test/setup.ts'],
        },
      },
      {
        // Imports the built package the way a user would; runs after `npm run build`.
        test: {
          name: 'dist',
          include: ['test/built/**/*.test.ts'],
          environment: 'node',
        },
      },
    ],
  },
});
