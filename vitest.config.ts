import { defineConfig, type ViteUserConfig } from 'vitest/config';

type Reporters = NonNullable<NonNullable<ViteUserConfig['test']>['reporters']>;

// In CI each run also writes a JSON report, which .ci/run totals into one closing line.
const reporters: Reporters = process.env['CI']
  ? ['default', ['json', { outputFile: `test-results/vitest-${process.pid}.json` }]]
  : ['default'];

export default defineConfig({
  test: {
    reporters,
    projects: [
      {
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
