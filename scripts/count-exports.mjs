// Counts the public names of each entry point (values and types), as a user's import sees them:
// `node scripts/count-exports.mjs [root]` (root: a checkout's directory, default this one).
import { resolve } from 'node:path';
import ts from 'typescript';

const root = resolve(process.argv[2] ?? '.');
const ENTRIES = {
  'fetch-pacer': 'src/index.ts',
  'fetch-pacer/react': 'src/react/index.ts',
  'fetch-pacer/offline': 'src/offline/index.ts',
  'fetch-pacer/testing': 'src/testing/index.ts',
  'fetch-pacer/cross-tab': 'src/stores/cross-tab/index.ts',
  'fetch-pacer/redis': 'src/stores/redis/index.ts',
};
const files = Object.values(ENTRIES).map((file) => resolve(root, file));
const program = ts.createProgram(files, {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  skipLibCheck: true,
  noEmit: true,
});
const checker = program.getTypeChecker();
let total = 0;
for (const [entry, file] of Object.entries(ENTRIES)) {
  const source = program.getSourceFile(resolve(root, file));
  const symbol = source && checker.getSymbolAtLocation(source);
  const names = symbol ? checker.getExportsOfModule(symbol).map((s) => s.getName()) : [];
  total += names.length;
  console.log(`${entry.padEnd(22)} ${String(names.length).padStart(3)}  ${names.sort().join(' ')}`);
}
console.log(`${'total'.padEnd(22)} ${String(total).padStart(3)}`);
