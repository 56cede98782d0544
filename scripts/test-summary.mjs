// Adds up the JSON reports vitest wrote under the given folder and prints
// "N passed, N failed" (", N skipped") on one line. Exits non-zero if nothing ran.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const folder = process.argv[2] ?? 'test-results';
let passed = 0;
let failed = 0;
let skipped = 0;
for (const file of readdirSync(folder).filter((name) => name.endsWith('.json'))) {
  const report = JSON.parse(readFileSync(join(folder, file), 'utf8'));
  passed += report.numPassedTests;
  failed += report.numFailedTests;
  skipped += report.numPendingTests + report.numTodoTests;
}
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
if (passed + failed === 0 || failed > 0) process.exit(1);
