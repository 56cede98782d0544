// Adds up every test report under the given folder and prints one closing line:
// "N passed, N failed (, N skipped) (unit N, docs N, dist N, e2e N, runtimes N, consumers N)".
// vitest's JSON reports are split by where their files live; the runtime and consumer checks
// write reports of the same shape with a `runner` field. `--expect a,b` names the runners that
// must have reported: one that wrote nothing (it crashed before its report) fails the line
// instead of shrinking it. Exits non-zero if a test failed, nothing ran, or a runner is missing.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

const args = process.argv.slice(2);
const expectAt = args.indexOf('--expect');
const expected = expectAt === -1 ? [] : (args[expectAt + 1] ?? '').split(',').filter(Boolean);
const folder = args.find((arg, i) => !arg.startsWith('--') && i !== expectAt + 1) ?? 'test-results';

/** The runner a vitest test file belongs to, from its folder. */
function runnerOf(file) {
  const parts = relative(process.cwd(), file).split(sep);
  if (parts[0] !== 'test') return 'unit';
  return { built: 'dist', e2e: 'e2e', docs: 'docs' }[parts[1]] ?? 'unit';
}

const ran = new Map(); // runner -> tests that passed or failed
let passed = 0;
let failed = 0;
let skipped = 0;
const count = (runner, n) => ran.set(runner, (ran.get(runner) ?? 0) + n);
for (const file of readdirSync(folder).filter((name) => name.endsWith('.json'))) {
  const report = JSON.parse(readFileSync(join(folder, file), 'utf8'));
  passed += report.numPassedTests;
  failed += report.numFailedTests;
  skipped += report.numPendingTests + report.numTodoTests;
  if (report.runner) {
    count(report.runner, report.numPassedTests + report.numFailedTests);
    continue;
  }
  for (const result of report.testResults ?? []) {
    const done = result.assertionResults.filter((test) =>
      ['passed', 'failed'].includes(test.status),
    );
    count(runnerOf(result.name), done.length);
  }
}
const missing = expected.filter((runner) => !ran.get(runner));
const order = ['unit', 'docs', 'dist', 'e2e', 'runtimes', 'consumers'];
const rank = (runner) => (order.includes(runner) ? order.indexOf(runner) : order.length);
const parts = [...ran].sort(([a], [b]) => rank(a) - rank(b)).map(([runner, n]) => `${runner} ${n}`);
if (missing.length > 0) parts.push(`missing: ${missing.join(', ')}`);
console.log(
  `${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''} (${parts.join(', ')})`,
);
if (passed + failed === 0 || failed > 0 || missing.length > 0) process.exit(1);
