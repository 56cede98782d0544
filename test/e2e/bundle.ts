import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { build } from 'esbuild';

/**
 * Writes `source` to `dir/name.ts`, bundles it for the browser (ESM, es2022) with everything
 * it imports, and returns the bundle's text: a page script that imports `src/` directly.
 */
export async function bundleForBrowser(dir: string, name: string, source: string): Promise<string> {
  const entry = join(dir, `${name}.ts`);
  await writeFile(entry, source);
  await build({
    entryPoints: [entry],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    outfile: join(dir, `${name}.js`),
    logLevel: 'error',
  });
  return readFile(join(dir, `${name}.js`), 'utf8');
}
