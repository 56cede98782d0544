import { resolve } from 'node:path';
import { defineConfig } from 'vite';

// The demo imports the library by its public name, served from the sources so edits show live.
export default defineConfig({
  root: import.meta.dirname,
  resolve: {
    alias: {
      'fetch-pacer/testing': resolve(import.meta.dirname, '../src/testing/index.ts'),
      'fetch-pacer': resolve(import.meta.dirname, '../src/index.ts'),
    },
  },
  server: { port: 5173, strictPort: false },
  build: { outDir: resolve(import.meta.dirname, 'dist'), emptyOutDir: true },
});
