import { resolve } from 'node:path';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const src = (path: string) => resolve(import.meta.dirname, '../src', path);

// The demo imports the library by its public names, served from the sources so edits show live.
// Exact matches: `fetch-pacer` must not swallow `fetch-pacer/react`.
export default defineConfig({
  root: import.meta.dirname,
  // Relative URLs: the built site works from any path (a CI artifact, GitHub Pages, a test server).
  base: './',
  plugins: [react()],
  resolve: {
    alias: [
      { find: /^fetch-pacer$/, replacement: src('index.ts') },
      { find: /^fetch-pacer\/react$/, replacement: src('react/index.ts') },
      { find: /^fetch-pacer\/offline$/, replacement: src('offline/index.ts') },
      { find: /^fetch-pacer\/testing$/, replacement: src('testing/index.ts') },
    ],
  },
  server: { port: 5173, strictPort: false },
  preview: { port: 4173, strictPort: false },
  build: { outDir: resolve(import.meta.dirname, 'dist'), emptyOutDir: true },
});
