// Smokes the built package under every runtime CI checks: the machine's Node, Node 22, Bun and
// Deno (binaries from the npm registry, installed by `npm ci` in this folder) and edge-runtime
// (Vercel's Edge runtime, in-process). Each runs smoke.mjs against one loopback server started
// here. Prints each runtime's version and checks, and writes a vitest-shaped JSON report (for
// scripts/test-summary.mjs) when given `--report <file>`. Exits non-zero if any check failed or
// a runtime is missing: a runtime that cannot run is reported, never skipped.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { arch, platform } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { reportFileArgument, writeReport } from '../../scripts/test-report.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const run = promisify(execFile);
const reportFile = reportFileArgument();

/** Where a package's file is installed here, or undefined when it is not. */
function installed(file) {
  try {
    return require.resolve(file);
  } catch {
    return undefined;
  }
}

const smokeCli = join(here, 'smoke-cli.mjs');
const bunPlatform = `@oven/bun-${platform()}-${arch() === 'arm64' ? 'aarch64' : arch()}`;
const runtimes = [
  { name: 'node (this machine)', command: () => [process.execPath, [smokeCli]] },
  {
    name: 'node 22',
    command: () => {
      const node = installed(`node-${platform()}-${arch()}/bin/node`);
      return node && [node, [smokeCli]];
    },
  },
  {
    name: 'bun',
    command: () => {
      const bun = installed(`${bunPlatform}/bin/bun`);
      return bun && [bun, [smokeCli]];
    },
  },
  {
    name: 'deno',
    command: () => {
      const deno = installed('deno/bin.cjs');
      const args = ['run', '--quiet', '--no-config', '--allow-net=127.0.0.1', smokeCli];
      return deno && [process.execPath, [deno, ...args]];
    },
  },
  { name: 'edge-runtime', inProcess: runEdgeRuntime },
];

// The loopback API: /echo/<run>/<n> answers `echo <run>/<n>` and counts, /seen/<run> says how
// many echoes <run> got, /limited-once/<run> refuses its first request with a 429 and
// `Retry-After: 1` (RFC 9110 §10.2.3: delta-seconds), then answers 200.
const seen = new Map();
const refused = new Map();
const server = createServer((request, response) => {
  const [, route, run, n] = (request.url ?? '').split('/');
  if (route === 'echo') {
    seen.set(run, (seen.get(run) ?? 0) + 1);
    response.end(`echo ${run}/${n}`);
  } else if (route === 'seen') {
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify(seen.get(run) ?? 0));
  } else if (route === 'limited-once' && !refused.has(run)) {
    refused.set(run, 1);
    response.writeHead(429, { 'retry-after': '1' }).end('slow down');
  } else if (route === 'limited-once') {
    response.end(`ok after ${refused.get(run)}`);
  } else {
    response.writeHead(404).end();
  }
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const baseUrl = `http://127.0.0.1:${server.address().port}`;

async function runEdgeRuntime() {
  const { EdgeRuntime } = await import('edge-runtime');
  const { build } = await import('esbuild');
  // An Edge function is one bundled script (what Vercel and Next.js deploy): bundle the smoke
  // and the dist files it imports, then evaluate it in the Edge context.
  const bundle = await build({
    entryPoints: [join(here, 'smoke.mjs')],
    bundle: true,
    format: 'iife',
    globalName: 'fetchPacerSmoke',
    target: 'es2022',
    write: false,
  });
  const runtime = new EdgeRuntime();
  runtime.evaluate(bundle.outputFiles[0].text);
  const kind = runtime.evaluate('typeof EdgeRuntime');
  const version = JSON.parse(readFileSync(installed('edge-runtime/package.json'), 'utf8')).version;
  const result = await runtime.evaluate(`fetchPacerSmoke.smoke(${JSON.stringify(baseUrl)})`);
  return { version: `edge-runtime ${version} (EdgeRuntime global: ${kind})`, ...result };
}

async function runOne(runtime) {
  if (runtime.inProcess) return runtime.inProcess();
  const command = runtime.command();
  if (!command) throw new Error(`not installed: run \`npm ci\` in ${here}`);
  const [file, args] = command;
  const { stdout } = await run(file, [...args, baseUrl], { timeout: 60_000, cwd: here });
  return JSON.parse(stdout.trim().split('\n').at(-1));
}

let passed = 0;
let failed = 0;
const results = [];
try {
  for (const runtime of runtimes) {
    let result;
    try {
      result = await runOne(runtime);
    } catch (error) {
      result = { version: '?', passed: [], failed: [{ name: 'start', error: String(error) }] };
    }
    results.push({ runtime: runtime.name, ...result });
    passed += result.passed.length;
    failed += result.failed.length;
    console.log(`${runtime.name}: ${result.version}`);
    for (const name of result.passed) console.log(`  ✓ ${name}`);
    for (const { name, error } of result.failed) console.log(`  ✗ ${name}\n    ${error}`);
  }
} finally {
  server.close();
}
console.log(`runtimes: ${passed} passed, ${failed} failed`);
if (reportFile) writeReport(reportFile, { runner: 'runtimes', passed, failed, results });
if (failed > 0 || passed === 0) process.exitCode = 1;
