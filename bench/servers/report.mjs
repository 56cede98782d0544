// The markdown of a `npm run bench:servers` run: the servers (how each counts, what it says, a
// captured answer and refusal), then one table of every client row, straight and through the
// delaying proxy, then the configurations. Pasted as it is into bench/README.md.
import { median } from '../lib/stats.mjs';
import { num, ratio, renderTable } from '../lib/table.mjs';
import { sampleLines } from './sample.mjs';

const loads = (values) => values.map((l) => l.toFixed(2)).join(' ');

/** One figure over the runs: the median, with each run's value after it when there are several. */
function figure(runs, pick, digits = 0) {
  const values = runs.map(pick);
  const text = num(median(values), digits);
  return values.length > 1 ? `${text} (${values.map((v) => num(v, digits)).join(', ')})` : text;
}

/** The three cells of one network for a row: refusals (after 2 s), failed calls, × ideal. */
function cells(runs, idealMs) {
  if (runs === undefined) return ['-', '-', '-'];
  if (runs.some((r) => r.unsupported !== undefined)) return ['not supported yet', '-', '-'];
  const ok = runs.filter((r) => r.error === undefined);
  if (ok.length === 0) return [String(runs[0].error).split('\n')[0], '-', '-'];
  return [
    `${figure(ok, (r) => r.refused)} (${figure(ok, (r) => r.refusedAfter2s)})`,
    figure(ok, (r) => r.failed),
    ratio(median(ok.map((r) => r.makespanMs)), idealMs, 2),
  ];
}

export function renderReport(out) {
  const networkNames = Object.keys(out.networks);
  const header = [
    `Measured ${out.when} on node ${out.node}, ${out.cpus} x ${out.cpu}; load average ${loads(out.loadavgBefore)} before, ${loads(out.loadavgAfter)} after; ${num(out.wallSeconds, 0)} s of client runs.`,
    `Every server publishes ${out.rate} per second; ${out.requests} calls per row, handed over at once; ${out.runs === 1 ? 'one run' : `median of ${out.runs} runs (each run in brackets)`} per row. Networks: ${networkNames.map((n) => `**${n}**: ${out.networks[n]}`).join('; ')}.`,
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
        { label: `${n}: refused (after 2 s)`, value: (r) => r.cells[i * 3] },
        { label: `${n}: failed`, value: (r) => r.cells[i * 3 + 1] },
        { label: `${n}: x ideal`, value: (r) => r.cells[i * 3 + 2] },
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
    'Refused: every 429 (or 503) on the wire, retries included; in brackets, those answered more than 2 s (two windows) after the start. Failed: calls whose final answer was not a 200 (refused after the retries, or an error). x ideal: makespan (all calls handed over at once, to the last one settled) against the fastest schedule the published limit allows.',
    '',
    '### Configurations',
    '',
    ...configs,
  ].join('\n');
}
