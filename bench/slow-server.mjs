// A bare-429 server slower than the paced fetch's backoffs: nginx `limit_req rate=12r/m burst=1 nodelay`
// (two at once, then one request per 5 s; a bare 429 otherwise), on 127.0.0.1, real time. Four calls at once from
// a client that does not know the limit (zero configuration) and one with a guess far too
// generous (`perSecond(1)`): refusals on the wire, calls that ended without a 200, and the time
// to the last answer (ideal: 10 s, two at once and the fourth 2 x 5 s after them).
//
//   npm run build && node bench/slow-server.mjs [path/to/dist/index.js]
//
// The argument runs another build (a checkout's dist) the same way, to compare.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureNginx, startNginx } from './servers/nginx.mjs';
import { freePort } from './lib/server-process.mjs';

const build = process.argv[2] ?? 'dist/index.js';
const { createPacedFetch, perSecond } = await import(pathToFileURL(resolve(build)).href);
const CALLS = 4;

await ensureNginx();
const server = await startNginx(await freePort(), { rate: '12r/m', burst: 1 });
try {
  const clients = { 'zero config': {}, 'perSecond(1)': { limits: perSecond(1) } };
  for (const [name, options] of Object.entries(clients)) {
    let refused = 0;
    const client = `slow-${name}-${Date.now()}`;
    const fetchCounted = async (input, init) => {
      const response = await fetch(input, init);
      if (response.status === 429) refused++;
      return response;
    };
    const pacedFetch = createPacedFetch({ ...options, fetch: fetchCounted });
    const start = performance.now();
    const statuses = await Promise.all(
      Array.from({ length: CALLS }, () =>
        pacedFetch(server.url, { headers: { 'x-bench-client': client } }).then(
          (response) => response.status,
          () => -1,
        ),
      ),
    );
    const seconds = ((performance.now() - start) / 1000).toFixed(1);
    const failed = statuses.filter((status) => status !== 200).length;
    console.log(`| ${name} | ${refused} | ${failed} | ${seconds} s |`);
  }
} finally {
  await server.stop();
}
