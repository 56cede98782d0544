// The report a check that is not vitest writes (the runtimes, the consumer projects), in the
// shape of vitest's JSON report, so scripts/test-summary.mjs counts it into CI's closing line.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/** The file after `--report` in this process's arguments, or undefined. */
export function reportFileArgument() {
  const at = process.argv.indexOf('--report');
  return at === -1 ? undefined : process.argv[at + 1];
}

/** Writes `{ runner, numPassedTests, numFailedTests, ..., results }` to `file`. */
export function writeReport(file, { runner, passed, failed, results }) {
  mkdirSync(dirname(file), { recursive: true });
  const report = { runner, numPassedTests: passed, numFailedTests: failed, numPendingTests: 0 };
  writeFileSync(file, JSON.stringify({ ...report, numTodoTests: 0, results }, null, 2));
}
