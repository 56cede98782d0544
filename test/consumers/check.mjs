// Type-checks four consumer projects against the packed tarball, the way a user installs it:
// `npm pack`, then in a copy of each project `npm install <tarball>` and its own TypeScript
// (`tsc -p .`), all with `skipLibCheck: false`: no-dom (a Node service, `lib: ["es2022"]`,
// `@types/node`), node16 (`moduleResolution: node16`), bundler (`moduleResolution: bundler`,
// React) and commonjs (a CommonJS project whose imports become require()). Writes a
// vitest-shaped JSON report when given `--report <file>`; exits non-zero when one fails.
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { reportFileArgument, writeReport } from '../../scripts/test-report.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const run = promisify(execFile);
const reportFile = reportFileArgument();
const consumers = ['no-dom', 'node16', 'bundler', 'commonjs'];

const work = mkdtempSync(join(tmpdir(), 'fetch-pacer-consumers-'));
const results = [];
try {
  // --ignore-scripts: pack what is built (npm run build ran before), do not rebuild.
  const { stdout } = await run(
    'npm',
    ['pack', '--json', '--ignore-scripts', '--pack-destination', work],
    { cwd: root },
  );
  const tarball = join(work, JSON.parse(stdout)[0].filename);
  for (const name of consumers) {
    const project = join(work, name);
    cpSync(join(here, name), project, { recursive: true });
    try {
      await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], {
        cwd: project,
      });
      const { stdout: tscVersion } = await run('npx', ['tsc', '--version'], { cwd: project });
      await run('npx', ['tsc', '-p', '.'], { cwd: project });
      results.push({ name, ok: true, detail: tscVersion.trim() });
    } catch (error) {
      results.push({ name, ok: false, detail: `${error.stdout ?? ''}${error.stderr ?? error}` });
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

for (const { name, ok, detail } of results) {
  console.log(
    `${ok ? '✓' : '✗'} consumer ${name} type-checks against the tarball (${ok ? detail : 'failed'})`,
  );
  if (!ok) console.log(detail);
}
const passed = results.filter((result) => result.ok).length;
const failed = results.length - passed;
console.log(`consumers: ${passed} passed, ${failed} failed`);
if (reportFile) writeReport(reportFile, { runner: 'consumers', passed, failed, results });
if (failed > 0 || passed === 0) process.exitCode = 1;
