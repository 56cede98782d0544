import { resolve } from 'node:path';
import { defineConfig, type Plugin } from 'vite';
import { compactScriptModule } from './scripts/compact-lua.mjs';

// One entry per public export path; `tsc -p tsconfig.build.json` writes the matching .d.ts files.
const entries = {
  index: resolve(import.meta.dirname, 'src/index.ts'),
  react: resolve(import.meta.dirname, 'src/react/index.ts'),
  offline: resolve(import.meta.dirname, 'src/offline/index.ts'),
  'cross-tab': resolve(import.meta.dirname, 'src/stores/cross-tab/index.ts'),
  redis: resolve(import.meta.dirname, 'src/stores/redis/index.ts'),
  testing: resolve(import.meta.dirname, 'src/testing/index.ts'),
};

/** Ships the Redis store's Lua script without its comments and indentation (compact-lua.mjs). */
function compactRedisScript(): Plugin {
  return {
    name: 'fetch-pacer:compact-redis-script',
    transform(code, id) {
      if (!id.replaceAll('\\', '/').endsWith('/src/stores/redis/script.ts')) return null;
      // Lines keep their numbers: the source map stays right to the line.
      return { code: compactScriptModule(code), map: null };
    },
  };
}

export default defineConfig({
  plugins: [compactRedisScript()],
  build: {
    target: 'es2022',
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: true,
    // Ship readable code: the user's bundler minifies. The size budget measures minified + gzipped.
    minify: false,
    lib: {
      entry: entries,
      formats: ['es'],
      fileName: (_format, name) => `${name}.js`,
    },
    rollupOptions: {
      // Peer and runtime dependencies stay imports: the user's bundler resolves them once.
      external: [/^react($|\/)/, /^react-dom($|\/)/, /^idb($|\/)/],
      // React's 'use client' directive is kept on purpose (Next.js reads it); the bundler only warns.
      onwarn(warning, warn) {
        if (warning.code === 'MODULE_LEVEL_DIRECTIVE' && warning.message.includes('use client'))
          return;
        warn(warning);
      },
      // Stable names for code shared between entries, so a diff of dist/ stays readable.
      output: { chunkFileNames: 'shared/[name].js' },
    },
  },
});
