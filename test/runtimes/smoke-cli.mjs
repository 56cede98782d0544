// One runtime's run of smoke.mjs: `<runtime> smoke-cli.mjs <baseUrl>` prints one JSON line.
import { smoke } from './smoke.mjs';

const deno = globalThis.Deno;
const bun = globalThis.Bun;
const baseUrl = deno ? deno.args[0] : process.argv[2];
const version = deno
  ? `deno ${deno.version.deno}`
  : bun
    ? `bun ${bun.version}`
    : `node ${process.version}`;
const result = await smoke(baseUrl);

// Node 20.19+ loads ESM with require(): a CommonJS project can use the package by its name.
if (!deno && !bun) {
  const name = 'require() of the ESM build works from CommonJS (require(esm))';
  try {
    const { createRequire } = await import('node:module');
    const { createPacer, perSecond } = createRequire(import.meta.url)('../../dist/index.js');
    const pacer = createPacer({ limits: perSecond(1) });
    if (pacer.tryAcquire().allowed !== true || pacer.tryAcquire().allowed !== false) {
      throw new Error('the required pacer did not decide 1 per second');
    }
    pacer.dispose();
    result.passed.push(name);
  } catch (error) {
    result.failed.push({ name, error: String(error?.stack ?? error) });
  }
}
console.log(JSON.stringify({ version, ...result }));
