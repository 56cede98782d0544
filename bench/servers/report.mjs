// The markdown of a `npm run bench:servers` run: the servers (how each counts, what it says, a
// captured answer and refusal), then one table of every client row, straight and through the
// delaying proxy, then the configurations. Pasted as it is into bench/README.md.
import { readFileSync, writeFileSync } from 'node:fs';
import { isMain } from '../lib/child.mjs';
import { median } from '../lib/stats.mjs';
import { num, ratio, renderTable } from '../lib/table.mjs';
import { sampleLines } from './sample.mjs';

const loads = (values) => values.map((l) => l.toFixed(2)).join(' ');

/** A count over the runs: each run's value, in run order. */
function figure(runs, pick) {
  return runs.map((run) => num(pick(run))).join(', ');
}

const CELLS = 5;

/**
 * The cells of one network for a row: refusals, of them after 2 s, failed calls, x ideal, and
 * the throughput after 2 s as a share of the published rate (runs before it was kept: '-').
 */
function cells(runs, idealMs) {
  const none = Array(CELLS - 1).fill('-');
  if (runs === undefined) return ['-', ...none];
  if (runs.some((r) => r.unsupported !== undefined)) return ['not supported yet', ...none];
  const ok = runs.filter((r) => r.error === undefined);
  if (ok.length === 0) return [String(runs[0].error).split('\n')[0], ...none];
  const throughputs = ok.map((r) => r.throughputAfter2s).filter((t) => typeof t === 'number');
  return [
    figure(ok, (r) => r.refused),
    figure(ok, (r) => r.refusedAfter2s),
    figure(ok, (r) => r.failed),
    ratio(median(ok.map((r) => r.makespanMs)), idealMs, 2),
    throughputs.length === 0 ? '-' : `${num(median(throughputs), 2)}x`,
  ];
}

export function renderReport(out) {
  const networkNames = Object.keys(out.networks);
  const header = [
    `Measured ${out.when} on node ${out.node}, ${out.cpus} x ${out.cpu}; load average ${loads(out.loadavgBefore)} before, ${loads(out.loadavgAfter)} after; ${num(out.wallSeconds, 0)} s of client runs.`,
    `Every server publishes ${out.rate} per second; ${out.requests} calls per row, handed over at once; ${out.runs === 1 ? 'one run per row' : `${out.runs} runs per row (counts: each run's; x ideal: the median)`}. Networks: ${networkNames.map((n) => `**${n}**: ${out.networks[n]}`).join('; ')}.${out.clockSkewMs ? ` fetch-pacer's wall clock is set ${Math.abs(out.clockSkewMs)} ms ${out.clockSkewMs > 0 ? 'ahead of' : 'behind'} the machine's (\`--clock-skew\`).` : ''}`,
  ];
  const servers = Object.entries(out.servers);
  const serverTable = renderTable(
    [
      { label: 'server', value: ([name]) => name },
      { label: 'configuration', value: ([, s]) => s.title, right: false },
      { label: 'counts with', value: ([, s]) => s.scheme, right: false },
      { label: 'says', value: ([, s]) => s.headers, right: false },
      { label: 'ideal', value: ([, s]) => `${num(s.idealMs / 1000, 2)} s` },
    ],
    servers,
  );
  const samples = servers.flatMap(([name, s]) => [`- ${name}:`, ...sampleLines(s.sample)]);
  const rows = servers.flatMap(([name, s]) =>
    Object.keys(s.configs).map((library) => {
      const byNetwork = out.results[name]?.[library] ?? {};
      return { name, library, cells: networkNames.flatMap((n) => cells(byNetwork[n], s.idealMs)) };
    }),
  );
  const resultTable = renderTable(
    [
      { label: 'server', value: (r) => r.name },
      { label: 'client', value: (r) => r.library, right: false },
      ...networkNames.flatMap((n, i) => [
        { label: `${n}: refused`, value: (r) => r.cells[i * CELLS] },
        { label: 'after 2 s', value: (r) => r.cells[i * CELLS + 1] },
        { label: 'failed', value: (r) => r.cells[i * CELLS + 2] },
        { label: 'x ideal', value: (r) => r.cells[i * CELLS + 3] },
        { label: 'rate after 2 s', value: (r) => r.cells[i * CELLS + 4] },
      ]),
    ],
    rows,
  );
  const configs = servers.flatMap(([name, s]) => [
    `- ${name}: ${Object.entries(s.configs)
      .map(([library, config]) => `${library} \`${config}\``)
      .join('; ')}`,
  ]);
  return [
    ...header,
    '',
    '### The servers',
    '',
    serverTable,
    '',
    'One accepted and one refused answer of each (limit headers only):',
    '',
    ...samples,
    '',
    '### Refusals, failed calls and makespan',
    '',
    resultTable,
    '',
    'Refused: every 429 (or 503) on the wire, retries included; after 2 s: those of them answered more than two windows after the start (the issue allows refusals in the first two only). Failed: calls whose final answer was not a 200 (refused after the retries, or an error). x ideal: makespan (all calls handed over at once, to the last one settled) against the fastest schedule the published limit allows, network not included (through the proxy the last answer comes one round trip later, 65 ms on average). Rate after 2 s: the 200s answered more than two windows after the start, per second until the last answer, against the published rate (the issue asks 0.9x of it for a generous or unconfigured client); ' +
      '"-" for a run shorter than 3 s.',
    '',
    '### Configurations',
    '',
    ...configs,
  ].join('\n');
}

// `node bench/servers/report.mjs [results.json]`: the markdown again from a run's JSON (default
// bench/results/servers-latest.json), written next to it as servers-latest.md.
if (isMain(import.meta.url)) {
  const file = process.argv[2] ?? new URL('../results/servers-latest.json', import.meta.url);
  const markdown = renderReport(JSON.parse(readFileSync(file, 'utf8')));
  writeFileSync(new URL('../results/servers-latest.md', import.meta.url), `${markdown}\n`);
  console.log(markdown);
}
