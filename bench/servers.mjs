// `npm run bench:servers`: fetch-pacer (and, on nginx and express, the peer libraries) against
// eight real rate-limiting servers on 127.0.0.1, each publishing the same "N per second" and each
// counting its own way: nginx limit_req (leaky bucket), express-rate-limit, @fastify/rate-limit,
// koa-ratelimit and express + rate-limiter-flexible (fixed windows, four header dialects),
// HAProxy's stick-table http_req_rate (a sliding-window counter), express +
// rolling-rate-limiter (a sliding log that logs refusals too, saying only `Retry-After`) and
// express + redis-gcra (a GCRA on Redis naming its burst, throttled's headers); and
// @fastify/rate-limit once more, sending nothing but `retry-after` (`fastify-retry-after`).
// bench/servers/catalog.mjs lists them; each server's file says how it counts and which headers
// it sends.
//
// Every row runs twice: straight to the server (loopback: a request arrives the instant it is
// sent), and through a delaying proxy (bench/lib/delay-proxy.mjs: a seeded random 5-60 ms each
// way per chunk), where network jitter bunches arrivals that were sent correctly spaced.
//
//   npm run bench:servers [-- --runs 2] [-- --requests 300] [-- --rate 60]
//     [-- --only fetch-pacer] [-- --servers nginx,haproxy] [-- --network direct|jitter|both]
//     [-- --delay 5-60] [-- --seed 12] [-- --clock-skew=-900]
//
// `--only` keeps the client rows whose name contains it. Nginx and HAProxy are installed with
// apt-get when missing; the Node servers are devDependencies. Everything started (servers,
// proxies, one child per client run) is stopped on the way out, also on an error or Ctrl-C.
// Requests are bounded (at most 3 sends per call: fetch-pacer retries a refusal twice) and so
// is time (40 s per client run, or four times the ideal for more than 600 requests).
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { killChildren, runChild } from './lib/child.mjs';
import { startDelayProxy } from './lib/delay-proxy.mjs';
import { num } from './lib/table.mjs';
import { serverCatalog } from './servers/catalog.mjs';
import { configsFor } from './servers/client.mjs';
import { renderReport } from './servers/report.mjs';
import { sampleAnswers } from './servers/sample.mjs';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '1' },
    requests: { type: 'string', default: '300' },
    rate: { type: 'string', default: '60' },
    only: { type: 'string', default: '' },
    servers: { type: 'string', default: '' },
    network: { type: 'string', default: 'both' },
    delay: { type: 'string', default: '5-60' },
    seed: { type: 'string', default: '12' },
    'clock-skew': { type: 'string', default: '0' },
  },
});
const clamp = (value, min, max) => Math.min(max, Math.max(min, Math.round(Number(value)) || min));
const RUNS = clamp(values.runs, 1, 5);
const REQUESTS = clamp(values.requests, 10, 10_000);
const RATE = clamp(values.rate, 4, 500);
const [DELAY_MIN, DELAY_MAX] = values.delay.split('-').map((ms) => clamp(ms, 0, 1_000));
const SEED = clamp(values.seed, 0, 2 ** 31);
// How far fetch-pacer's wall clock is set ahead of the machine's (negative: behind), as a client
// whose clock is off: absolute resets are read by the server's clock, which its `Date` tells.
const CLOCK_SKEW_MS = Math.round(Number(values['clock-skew']));
if (!(Math.abs(CLOCK_SKEW_MS) <= 86_400_000)) {
  throw new Error(`--clock-skew must be ms within a day, got ${values['clock-skew']}`);
}
// 40 s, or four times the ideal for more requests (at the published rate).
const CLIENT_TIMEOUT_MS = Math.max(40_000, (4 * REQUESTS * 1_000) / RATE);
const NETWORKS = {
  direct: 'loopback, no delay',
  jitter: `through the delaying proxy, ${DELAY_MIN}-${DELAY_MAX} ms each way (seed ${SEED})`,
};
const networks = values.network === 'both' ? Object.keys(NETWORKS) : [values.network];
if (!networks.every((network) => network in NETWORKS)) {
  throw new Error(`--network must be direct, jitter or both, got ${values.network}`);
}
const catalog = serverCatalog(RATE);
const wanted = values.servers === '' ? Object.keys(catalog) : values.servers.split(',');
const servers = Object.fromEntries(wanted.map((name) => [name, catalog[name]]));
for (const [name, spec] of Object.entries(servers)) {
  if (spec === undefined) throw new Error(`unknown server ${name}: ${Object.keys(catalog)}`);
}
/** The client rows of a server this run measures. */
const rowsOf = (spec) =>
  Object.keys(configsFor(spec.client)).filter((library) => library.includes(values.only));

const cleanups = [];
/** Set by Ctrl-C: the runs cut short must not be written over the last full results. */
let interrupted = false;
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
    interrupted = true;
    console.error(`\n${signal}: stopping everything the bench started`);
    cleanUp().finally(() => process.exit(130));
  });
}

/** Starts every server and its delaying proxy; resolves with their URLs and header samples. */
async function startServers() {
  const started = {};
  for (const [name, spec] of Object.entries(servers)) {
    spec.ensure?.();
    const server = await spec.start();
    cleanups.push(server.stop);
    const proxy = await startDelayProxy({
      targetPort: Number(new URL(server.url).port),
      minMs: DELAY_MIN,
      maxMs: DELAY_MAX,
      seed: SEED,
    });
    cleanups.push(proxy.stop);
    const proxied = new URL(server.url);
    proxied.port = String(proxy.port);
    const sample = await sampleAnswers(server.url, RATE, `sample-${name}`);
    started[name] = { urls: { direct: server.url, jitter: proxied.href }, proxy, sample };
    console.log(`${name} (pid ${server.pid}) at ${server.url}, proxied at ${proxied.href}`);
  }
  return started;
}

async function main() {
  const loadavgBefore = os.loadavg();
  const busy = loadavgBefore[0] > os.cpus().length / 2;
  console.log(
    `load average ${loadavgBefore.map((l) => l.toFixed(2)).join(' ')}${busy ? ' (busy: late timers and slow responses will earn refusals of their own)' : ''}`,
  );
  const started = await startServers();
  const results = {};
  const began = performance.now();
  // One client run at a time: a run is timing-sensitive, and two would share 2 cores.
  for (let run = 0; run < RUNS; run++) {
    for (const [name, spec] of Object.entries(servers)) {
      for (const library of rowsOf(spec)) {
        for (const network of networks) {
          if (interrupted) return;
          const answer = await runChild(
            new URL('./servers/client.mjs', import.meta.url).href,
            {
              library,
              url: started[name].urls[network],
              requests: REQUESTS,
              limits: spec.client,
              clockSkewMs: CLOCK_SKEW_MS,
              client: `${library}-${network}-${run}-${Date.now()}`,
            },
            { execArgv: [], timeoutMs: CLIENT_TIMEOUT_MS },
          );
          const result = answer.ok
            ? answer.result
            : { error: answer.timedOut ? `timeout (${CLIENT_TIMEOUT_MS / 1000} s)` : answer.error };
          results[name] ??= {};
          results[name][library] ??= {};
          results[name][library][network] ??= [];
          results[name][library][network].push(result);
          console.log(
            `run ${run + 1}/${RUNS} ${name.padEnd(8)} ${network.padEnd(6)} ${library.padEnd(30)} ${
              result.unsupported !== undefined
                ? 'not supported yet'
                : result.error === undefined
                  ? `${result.refused} refused, ${result.failed} failed, ${num(result.makespanMs / 1000, 2)} s`
                  : result.error
            }`,
          );
        }
      }
    }
  }
  if (interrupted) return;
  const loadavgAfter = os.loadavg();
  const out = {
    when: new Date().toISOString(),
    node: process.version,
    cpus: os.cpus().length,
    cpu: os.cpus()[0]?.model,
    loadavgBefore,
    loadavgAfter,
    runs: RUNS,
    requests: REQUESTS,
    rate: RATE,
    clockSkewMs: CLOCK_SKEW_MS,
    networks: Object.fromEntries(networks.map((network) => [network, NETWORKS[network]])),
    proxies: Object.fromEntries(Object.entries(started).map(([n, s]) => [n, s.proxy.stats()])),
    wallSeconds: (performance.now() - began) / 1000,
    servers: Object.fromEntries(
      Object.entries(servers).map(([name, spec]) => [
        name,
        {
          title: spec.title,
          scheme: spec.scheme,
          headers: spec.headers,
          idealMs: spec.idealMs(REQUESTS),
          sample: started[name].sample,
          configs: Object.fromEntries(
            rowsOf(spec).map((library) => [library, configsFor(spec.client)[library].config]),
          ),
        },
      ]),
    ),
    results,
  };
  const markdown = renderReport(out);
  console.log(`\n${markdown}`);
  const dir = new URL('./results/', import.meta.url);
  mkdirSync(dir, { recursive: true });
  writeFileSync(new URL('servers-latest.json', dir), `${JSON.stringify(out, null, 2)}\n`);
  writeFileSync(new URL('servers-latest.md', dir), `${markdown}\n`);
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
