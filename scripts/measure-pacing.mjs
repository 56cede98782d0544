// How late the pacer starts tasks under real timers in Node, against each task's ideal slot.
// Run: npm run build && node scripts/measure-pacing.mjs [tasks=200] [ratePerSecond=50] [burst=10]
import { createPacer } from '../dist/index.js';

const [tasks = 200, rate = 50, burst = 10] = process.argv.slice(2).map(Number);
const interval = 1000 / rate;
const pacer = createPacer({ limits: { limit: rate, windowMs: 1000, burst } });
const starts = [];
const t0 = performance.now();
await Promise.all(
  Array.from({ length: tasks }, () => pacer.schedule(() => starts.push(performance.now() - t0))),
);
// Ideal: the first `burst` at 0, then one every `interval` ms.
const ideal = (i) => Math.max(0, i - burst + 1) * interval;
const lateness = starts.map((at, i) => at - ideal(i)).sort((a, b) => a - b);
const pick = (q) => lateness[Math.min(lateness.length - 1, Math.floor(q * lateness.length))];
const early = lateness.filter((ms) => ms < -0.001).length;
let worstWindow = 0;
for (let i = 0, j = 0; i < starts.length; i++) {
  while (starts[i] - starts[j] >= 1000) j++;
  worstWindow = Math.max(worstWindow, i - j + 1);
}
const makespan = starts[starts.length - 1];
const idealMakespan = ideal(tasks - 1);
console.log(
  JSON.stringify({
    tasks,
    rate,
    burst,
    makespanMs: +makespan.toFixed(2),
    idealMakespanMs: idealMakespan,
    makespanRatio: +(makespan / idealMakespan).toFixed(4),
    latenessMs: {
      median: +pick(0.5).toFixed(3),
      p99: +pick(0.99).toFixed(3),
      max: +lateness.at(-1).toFixed(3),
    },
    earlyStarts: early,
    mostStartsInAnySecond: worstWindow,
    policyAllowsPerSecond: burst + rate,
  }),
);
