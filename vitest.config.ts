import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: ['test/dist/**'],
          environment: 'node',
        },
      },
      {
        // Imports the built package the way a user would; runs after `npm run build`.
        test: {
          name: 'dist',
          include: ['test/dist/**/*.test.ts'],
          environment: 'node',
        },
      },
    ],
  },
});
