// `npm run bench`: fetch-pacer next to bottleneck, p-queue, p-throttle, limiter and
// @tanstack/pacer on five workloads; one markdown table each, ratios to fetch-pacer. Writes
// bench/results/latest.json (every run's numbers) and latest.md (the tables).
//
//   npm run bench                      the full bench (about 3 minutes)
//   npm run bench -- --quick           small sizes, fetch-pacer only where runs are long (CI smoke)
//   npm run bench -- --only decision,bundle
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { killChildren } from './lib/child.mjs';
import { runBundle } from './workloads/bundle.mjs';
import { runDecision } from './workloads/decision.mjs';
import { runManyKeys } from './workloads/many-keys.mjs';
import { runPacing } from './workloads/pacing.mjs';
import { runReact } from './workloads/react.mjs';
import { runScheduling } from './workloads/scheduling.mjs';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
  },
});
const quick = values.quick;

const WORKLOADS = {
  decision: () => runDecision(quick ? { iterations: 20_000, rounds: 2 } : {}),
  scheduling: () => runScheduling(quick ? { sizes: [2_000, 200], rounds: 1, budgetMs: 500 } : {}),
  pacing: () => runPacing(quick ? { runs: 1, libraries: ['fetch-pacer'] } : {}),
  'many-keys': () =>
    runManyKeys(quick ? { sizes: [10_000], libraries: ['fetch-pacer', 'limiter'] } : {}),
  bundle: () => runBundle(),
  react: () => runReact(quick ? { sizes: [200], runs: 1 } : {}),
};

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    killChildren();
    process.exit(130);
  });
}

const only = values.only?.split(',').map((name) => name.trim());
for (const name of only ?? []) {
  if (!(name in WORKLOADS)) {
    throw new Error(`unknown workload ${name}: pick from ${Object.keys(WORKLOADS).join(', ')}`);
  }
}
const machine = {
  when: new Date().toISOString(),
  node: process.version,
  platform: `${os.platform()} ${os.arch()}`,
  cpu: os.cpus()[0]?.model,
  cores: os.cpus().length,
  loadavgBefore: os.loadavg(),
  quick,
};
console.log(
  `fetch-pacer bench: node ${machine.node}, ${machine.cores} x ${machine.cpu}, load average ${machine.loadavgBefore.map((l) => l.toFixed(2)).join(' ')}`,
);
if (machine.loadavgBefore[0] > machine.cores / 2) {
  console.log(
    'warning: the machine is busy (load average above half its cores): timings will be noisy',
  );
}

const started = performance.now();
const results = {};
const tables = [];
for (const [name, run] of Object.entries(WORKLOADS)) {
  if (only && !only.includes(name)) continue;
  const t = performance.now();
  const { table, ...data } = await run();
  results[name] = { ...data, seconds: (performance.now() - t) / 1000 };
  tables.push(table);
}
machine.loadavgAfter = os.loadavg();
machine.seconds = (performance.now() - started) / 1000;

const dir = new URL('./results/', import.meta.url);
mkdirSync(dir, { recursive: true });
writeFileSync(new URL('latest.json', dir), `${JSON.stringify({ machine, results }, null, 2)}\n`);
writeFileSync(
  new URL('latest.md', dir),
  `Measured ${machine.when} on node ${machine.node}, ${machine.cores} x ${machine.cpu} (load average ${machine.loadavgBefore.map((l) => l.toFixed(2)).join(' ')} before, ${machine.loadavgAfter.map((l) => l.toFixed(2)).join(' ')} after).\n\n${tables.join('\n\n')}\n`,
);
console.log(
  `done in ${machine.seconds.toFixed(0)} s; wrote bench/results/latest.json and latest.md`,
);
