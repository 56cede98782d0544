// `npm run bench:servers:store`: several processes sharing one Redis store (fetch-pacer/redis)
// against the real rate limiters of `npm run bench:servers`. Each row runs PROCESSES client
// processes at once, each handing REQUESTS / PROCESSES calls to its own paced fetch, all sending
// as one client of the server (one key, as the processes of one app behind one API key), so
// only the store keeps them under the published limit together. Redis is Debian's
// redis-server, started on 127.0.0.1 by this script (its own port and folder) and stopped by it.
//
//   npm run bench:servers:store [-- --servers nginx,express] [-- --processes 3]
//     [-- --network direct|jitter|both] [-- --runs 2] [-- --trace <folder>]
//
// --trace writes each row's answers on the wire, per process, as [status, ms from the start]
// (`<server>-<client>-<network>.json` in that folder): where the refusals of a row came.
//
// Reported per row: refusals on the wire (every process's, retries included), of them after
// two windows, calls that finally failed, the makespan (the last call of any process settled)
// against the burst-every-window ideal for all the calls, and the rate admitted after two
// windows against the published one. Zero configuration is not a row: a store needs `limits`.
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { killChildren, runChild } from './lib/child.mjs';
import { startDelayProxy } from './lib/delay-proxy.mjs';
import { startRedisServer } from './lib/redis-server.mjs';
import { num, renderTable } from './lib/table.mjs';
import { serverCatalog } from './servers/catalog.mjs';
import { STORE_CONFIGS } from './servers/store-client.mjs';

const { values } = parseArgs({
  options: {
    servers: { type: 'string', default: '' },
    processes: { type: 'string', default: '3' },
    requests: { type: 'string', default: '300' },
    rate: { type: 'string', default: '60' },
    runs: { type: 'string', default: '1' },
    network: { type: 'string', default: 'both' },
    trace: { type: 'string', default: '' },
  },
});
const clamp = (value, min, max) => Math.min(max, Math.max(min, Math.round(Number(value)) || min));
const PROCESSES = clamp(values.processes, 1, 8);
const REQUESTS = clamp(values.requests, 10, 1_000);
const RATE = clamp(values.rate, 4, 500);
const RUNS = clamp(values.runs, 1, 5);
const PER_PROCESS = Math.ceil(REQUESTS / PROCESSES);
const NETWORKS = {
  direct: 'loopback, no delay',
  jitter: 'through the delaying proxy, 5-60 ms each way',
};
const networks = values.network === 'both' ? Object.keys(NETWORKS) : [values.network];
const catalog = serverCatalog(RATE);
const wanted = values.servers === '' ? Object.keys(catalog) : values.servers.split(',');
for (const name of wanted) if (!(name in catalog)) throw new Error(`unknown server ${name}`);

const cleanups = [];
async function cleanUp() {
  killChildren();
  for (const stop of cleanups.splice(0).reverse()) await stop().catch(() => {});
}
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => cleanUp().finally(() => process.exit(130)));
}

/** Debian's redis-server for the store, stopped with the rest. */
async function startRedis() {
  const { url, stop } = await startRedisServer();
  cleanups.push(stop);
  return url;
}

async function main() {
  const loadavgBefore = os.loadavg();
  const redisUrl = await startRedis();
  const rows = [];
  for (const name of wanted) {
    const spec = catalog[name];
    spec.ensure?.();
    const server = await spec.start();
    cleanups.push(server.stop);
    const proxy = await startDelayProxy({
      targetPort: Number(new URL(server.url).port),
      minMs: 5,
      maxMs: 60,
      seed: 12,
    });
    cleanups.push(proxy.stop);
    const proxied = new URL(server.url);
    proxied.port = String(proxy.port);
    const urls = { direct: server.url, jitter: proxied.href };
    const idealMs = spec.idealMs(PER_PROCESS * PROCESSES);
    for (const config of Object.keys(STORE_CONFIGS)) {
      for (const network of networks) {
        const runs = [];
        for (let run = 0; run < RUNS; run++) {
          const client = `store-${config}-${network}-${run}-${Date.now()}`;
          // Far enough ahead for every process to start, connect and warm up.
          const startAt = Date.now() + 2_500;
          const answers = await Promise.all(
            Array.from({ length: PROCESSES }, () =>
              runChild(
                new URL('./servers/store-client.mjs', import.meta.url).href,
                {
                  url: urls[network],
                  requests: PER_PROCESS,
                  client,
                  config,
                  rate: RATE,
                  redisUrl,
                  prefix: `${client}:`,
                  startAt,
                },
                { execArgv: [], timeoutMs: 60_000 },
              ),
            ),
          );
          const failedToRun = answers.find((answer) => !answer.ok);
          if (failedToRun !== undefined) {
            runs.push({ error: String(failedToRun.error).split('\n')[0] });
            continue;
          }
          const results = answers.map((answer) => answer.result);
          if (values.trace !== '') {
            const file = `${name}-${config.replace(/ /g, '-')}-${network}.json`;
            mkdirSync(values.trace, { recursive: true });
            writeFileSync(join(values.trace, file), JSON.stringify(results.map((r) => r.wire)));
          }
          const sum = (pick) => results.reduce((total, result) => total + pick(result), 0);
          const makespanMs = Math.max(...results.map((result) => result.makespanMs));
          runs.push({
            refused: sum((r) => r.refused),
            refusedAfter2s: sum((r) => r.refusedAfter2s),
            failed: sum((r) => r.failed),
            makespanMs,
            rateAfter2s:
              makespanMs > 3_000
                ? sum((r) => r.okAfter2s) / ((makespanMs - 2_000) / 1_000) / RATE
                : NaN,
          });
        }
        const row = { name, config, network, runs, idealMs };
        rows.push(row);
        console.log(
          `${name.padEnd(8)} ${config.padEnd(16)} ${network.padEnd(6)} ${runs
            .map(
              (r) =>
                r.error ??
                `${r.refused} refused, ${r.failed} failed, ${num(r.makespanMs / 1000, 2)} s`,
            )
            .join(' | ')}`,
        );
      }
    }
    await cleanups.pop()(); // the proxy
    await cleanups.pop()(); // the server
  }
  const each = (runs, pick, digits = 0) =>
    runs.map((r) => (r.error === undefined ? num(pick(r), digits) : r.error)).join(', ');
  const table = renderTable(
    [
      { label: 'server', value: (r) => r.name },
      { label: 'client (each process)', value: (r) => r.config, right: false },
      { label: 'network', value: (r) => r.network, right: false },
      { label: 'refused', value: (r) => each(r.runs, (x) => x.refused) },
      { label: 'after 2 s', value: (r) => each(r.runs, (x) => x.refusedAfter2s) },
      { label: 'failed', value: (r) => each(r.runs, (x) => x.failed) },
      { label: 'x ideal', value: (r) => `${each(r.runs, (x) => x.makespanMs / r.idealMs, 2)}x` },
      { label: 'rate after 2 s', value: (r) => `${each(r.runs, (x) => x.rateAfter2s, 2)}x` },
    ],
    rows,
  );
  console.log(
    [
      '',
      `Measured ${new Date().toISOString()} on node ${process.version}, ${os.cpus().length} x ${os.cpus()[0]?.model}; load average ${loadavgBefore.map((l) => l.toFixed(2)).join(' ')} before.`,
      `${PROCESSES} processes per row sharing one Redis store, ${PER_PROCESS} calls each, handed over at once at one moment; every server publishes ${RATE} per second; ${RUNS === 1 ? 'one run per row' : `${RUNS} runs per row`}.`,
      '',
      table,
    ].join('\n'),
  );
}

main()
  .catch((error) => {
    console.error(error);
    process.exitCode = 1;
  })
  .finally(cleanUp);
