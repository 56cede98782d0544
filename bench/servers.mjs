// `npm run bench:servers`: every library against two real rate-limited servers on 127.0.0.1,
// nginx (limit_req, no headers) and Express with express-rate-limit (draft-8 RateLimit headers,
// Retry-After). Each library is configured to the server's published limit; fetch-pacer also
// runs once with a generous policy, to show what reading the headers alone recovers.
//
//   npm run bench:servers [-- --runs 2] [-- --requests 300] [-- --only fetch-pacer]
//
// `--only` keeps the libraries whose name contains it (a quick look at a few rows).
//
// Everything it starts (nginx, the Express child, one child per client run) is stopped on the
// way out, also on an error or Ctrl-C. Requests are bounded (300 per run, retries included at
// most 3x for fetch-pacer) and so is time (60 s per client run).
import { fork } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { killChildren, runChild } from './lib/child.mjs';
import { median } from './lib/stats.mjs';
import { num, printTable, ratio } from './lib/table.mjs';
import { sleep } from './lib/timing.mjs';
import { CONFIGS } from './servers/client.mjs';
import {
  ensureNginx,
  BURST as NGINX_BURST,
  RATE as NGINX_RATE,
  startNginx,
} from './servers/nginx.mjs';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '2' },
    requests: { type: 'string', default: '300' },
    only: { type: 'string', default: '' },
  },
});
/** The libraries of a server this run measures. */
const librariesOf = (server) =>
  Object.keys(CONFIGS[server]).filter((library) => library.includes(values.only));
const RUNS = Math.min(5, Math.max(1, Number(values.runs)));
const REQUESTS = Math.min(1_000, Math.max(10, Number(values.requests)));
const CLIENT_TIMEOUT_MS = 60_000;

/** The published limits, and the fastest a client may finish REQUESTS without a refusal. */
const SERVERS = {
  nginx: {
    title: `nginx limit_req rate=${NGINX_RATE}r/s burst=${NGINX_BURST} nodelay (no Retry-After, no RateLimit headers)`,
    ratePerSecond: NGINX_RATE,
    // A bucket of 5 at 20/s: 5 at once, then one every 50 ms.
    idealMs: ((REQUESTS - NGINX_BURST) * 1000) / NGINX_RATE,
  },
  express: {
    title:
      "express-rate-limit 20 per 1 s window, standardHeaders 'draft-8' (Retry-After and RateLimit headers)",
    ratePerSecond: 20,
    // 20 per window; the last window opens (REQUESTS / 20 - 1) windows after the first.
    idealMs: (Math.ceil(REQUESTS / 20) - 1) * 1000,
  },
};

const cleanups = [];
async function cleanUp() {
  killChildren();
  while (cleanups.length > 0) {
    try {
      await cleanups.pop()();
    } catch (error) {
      console.error(error);
    }
  }
}
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    console.error(`\n${signal}: stopping everything the bench started`);
    cleanUp().finally(() => process.exit(130));
  });
}

/** A port free on 127.0.0.1 now (the OS picks it; nginx binds it a moment later). */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function startExpress() {
  return new Promise((resolve, reject) => {
    const child = fork(new URL('./servers/express-app.mjs', import.meta.url), [], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const stop = async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((done) => child.once('exit', done));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(3_000)]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    };
    const timer = setTimeout(() => {
      stop();
      reject(new Error('the Express server did not start in 10 s'));
    }, 10_000);
    child.once('message', ({ port }) => {
      clearTimeout(timer);
      resolve({ url: `http://127.0.0.1:${port}/ok`, stop, pid: child.pid });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the Express server exited (${code})`));
    });
  });
}

async function main() {
  const loadavgBefore = os.loadavg();
  console.log(
    `load average ${loadavgBefore.map((l) => l.toFixed(2)).join(' ')}${loadavgBefore[0] > os.cpus().length / 2 ? ' (busy: late timers and slow responses will earn 429s of their own)' : ''}`,
  );
  ensureNginx();
  const nginx = await startNginx(await freePort());
  cleanups.push(nginx.stop);
  const express = await startExpress();
  cleanups.push(express.stop);
  console.log(
    `nginx (pid ${nginx.pid}) at ${nginx.url}; Express (pid ${express.pid}) at ${express.url}`,
  );
  const urls = { nginx: nginx.url, express: express.url };
  const results = { nginx: {}, express: {} };
  // One client run at a time: a run is timing-sensitive, and two would share 2 cores.
  for (let run = 0; run < RUNS; run++) {
    for (const server of Object.keys(SERVERS)) {
      for (const library of librariesOf(server)) {
        const answer = await runChild(
          new URL('./servers/client.mjs', import.meta.url).href,
          {
            server,
            library,
            url: urls[server],
            requests: REQUESTS,
            client: `${library}-${run}-${Date.now()}`,
          },
          { execArgv: [], timeoutMs: CLIENT_TIMEOUT_MS },
        );
        results[server][library] ??= [];
        results[server][library].push(
          answer.ok ? answer.result : { error: answer.timedOut ? 'timeout (60 s)' : answer.error },
        );
        const r = answer.result;
        console.log(
          `run ${run + 1}/${RUNS} ${server.padEnd(7)} ${library.padEnd(26)} ${
            r ? `${r.refused} x 429, ${num(r.makespanMs / 1000, 2)} s` : answer.error
          }`,
        );
      }
    }
  }
  const tables = [];
  const rowsOf = {};
  for (const [server, spec] of Object.entries(SERVERS)) {
    const rows = librariesOf(server).map((library) => {
      const runs = results[server][library];
      const ok = runs.filter((r) => r.error === undefined);
      const pick = (field) => median(ok.map((r) => r[field]));
      const makespanMs = pick('makespanMs');
      return {
        library,
        config: CONFIGS[server][library].config,
        error: ok.length === 0 ? runs[0]?.error : undefined,
        refused: pick('refused'),
        refusedRuns: ok.map((r) => r.refused),
        sent: pick('sent'),
        finalOk: pick('finalOk'),
        makespanMs,
        okPerSecond: (pick('finalOk') * 1000) / makespanMs,
        runs,
      };
    });
    rowsOf[server] = rows;
    tables.push(
      printTable(
        `${server}: ${spec.title}; ${REQUESTS} requests (median of ${RUNS} runs)`,
        [
          { label: 'library', value: (r) => r.library },
          {
            label: '429s (each run)',
            value: (r) => (r.error ? r.error : `${num(r.refused)} (${r.refusedRuns.join(', ')})`),
          },
          { label: 'requests sent', value: (r) => num(r.sent) },
          { label: '200s in the end', value: (r) => num(r.finalOk) },
          { label: 'makespan s', value: (r) => num(r.makespanMs / 1000, 2) },
          {
            label: `vs ideal ${num(spec.idealMs / 1000, 2)} s`,
            value: (r) => ratio(r.makespanMs, spec.idealMs, 3),
          },
          { label: '200s per s', value: (r) => num(r.okPerSecond, 1) },
          {
            label: `vs limit ${spec.ratePerSecond}/s`,
            value: (r) => ratio(r.okPerSecond, spec.ratePerSecond),
          },
        ],
        rows,
        [
          `429s and requests sent count every response on the wire (fetch-pacer retries a 429, up to 2 times per call; the others never retry). Makespan: from handing over all ${REQUESTS} calls to the last one settled. Ideal: the fastest schedule the published limit allows.`,
          '',
          'Configurations:',
          ...rows.map((r) => `- ${r.library}: \`${r.config}\``),
        ],
      ),
    );
  }
  const out = {
    when: new Date().toISOString(),
    node: process.version,
    cpus: os.cpus().length,
    cpu: os.cpus()[0]?.model,
    loadavgBefore,
    loadavgAfter: os.loadavg(),
    runs: RUNS,
    requests: REQUESTS,
    servers: SERVERS,
    results: rowsOf,
  };
  const dir = new URL('./results/', import.meta.url);
  mkdirSync(dir, { recursive: true });
  writeFileSync(new URL('servers-latest.json', dir), `${JSON.stringify(out, null, 2)}\n`);
  const header = `Measured ${out.when} on node ${out.node}, ${out.cpus} x ${out.cpu} (load average ${loadavgBefore.map((l) => l.toFixed(2)).join(' ')} before, ${out.loadavgAfter.map((l) => l.toFixed(2)).join(' ')} after).`;
  writeFileSync(new URL('servers-latest.md', dir), `${header}\n\n${tables.join('\n\n')}\n`);
  console.log('wrote bench/results/servers-latest.json and servers-latest.md');
}

try {
  await main();
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await cleanUp();
}
