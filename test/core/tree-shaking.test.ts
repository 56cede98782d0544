import { basename, resolve } from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
const ALGORITHM_FILES = new Set([
  'arrival-safe.ts',
  'fixed-window.ts',
  'gcra.ts',
  'sliding-log.ts',
  'sliding-window.ts',
  'token-bucket.ts',
]);

/** The algorithm files a minified bundle of `import { names } from 'fetch-pacer'` keeps. */
async function algorithmsIn(names: string): Promise<string[]> {
  const { metafile } = await build({
    stdin: {
      contents: `export { ${names} } from './src/index.ts';`,
      resolveDir: root,
      loader: 'ts',
    },
    bundle: true,
    minify: true,
    write: false,
    metafile: true,
    format: 'esm',
    platform: 'neutral',
    external: ['react', 'idb'],
    logLevel: 'silent',
  });
  const [output] = Object.values(metafile.outputs);
  return Object.entries(output?.inputs ?? {})
    .filter(([path, { bytesInOutput }]) => bytesInOutput > 0 && path.includes('core/algorithms/'))
    .map(([path]) => basename(path))
    .filter((file) => ALGORITHM_FILES.has(file))
    .sort();
}

// Issue #11: an algorithm an app does not import is not in its bundle.
describe('a bundle holds only the algorithms it imports', () => {
  it('an unkeyed state of the default policy: the token bucket alone', async () => {
    expect(await algorithmsIn('createStrategy, perSecond')).toEqual(['token-bucket.ts']);
  });

  it('and one more for each algorithm value imported', async () => {
    expect(await algorithmsIn('createStrategy, perSecond, slidingLog')).toEqual([
      'sliding-log.ts',
      'token-bucket.ts',
    ]);
    expect(await algorithmsIn('createStrategy, perSecond, gcra')).toEqual([
      'gcra.ts',
      'token-bucket.ts',
    ]);
  });

  it('a paced fetch: never the fixed window it does not name', async () => {
    // Its learning counts with the sliding log, the sliding-window counter and arrival-safe.
    expect(await algorithmsIn('createPacedFetch, perSecond')).not.toContain('fixed-window.ts');
  });
});
