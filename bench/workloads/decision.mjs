// Workload 1: the synchronous "may this request go now?" call on one hot key, allowed and denied,
// in ns/op, next to a bare performance.now() loop (every decision reads the ticker once, so that
// is the floor). Each library call runs in a child process of its own together with its own
// floor loop, interleaved round by round, so that drift (other processes, frequency) hits both
// alike; the ratio to the floor is taken within that process.
//
// Why a process per call: V8's type feedback is per call site, and two limiter instances that
// differ (another algorithm, another clock function) in one process make the library's own
// internal call sites polymorphic, which slows every one of them. An app has one kind; so does
// each child here. Every loop is also written out on its own, for the same reason.
import { RateLimiter as TanStackRateLimiter } from '@tanstack/pacer';
import { RateLimiter as LimiterRateLimiter, TokenBucket as LimiterTokenBucket } from 'limiter';
import {
  createPacer,
  createRateLimiter,
  createStrategy,
  gcra,
  perSecond,
} from '../../dist/index.js';
import { isMain, runChild, serveChild } from '../lib/child.mjs';
import { median } from '../lib/stats.mjs';
import { num, printTable, ratio } from '../lib/table.mjs';
import { nowNs } from '../lib/timing.mjs';

const ALWAYS = 1_000_000_000; // a rate no loop here can exhaust: every call is allowed
const HOUR = 3_600_000;

function noop() {}

/** Each case: a label, and for `allowed`/`denied` a setup returning `(n) => sink`. */
const CASES = [
  {
    id: 'floor',
    label: 'bare performance.now() (floor)',
    allowed: () => (n) => {
      let sink = 0;
      for (let i = 0; i < n; i++) sink += performance.now();
      return sink;
    },
  },
  {
    id: 'fp',
    label: 'fetch-pacer RateLimiter.tryAcquire(key)',
    allowed: () => {
      const limiter = createRateLimiter({ limits: perSecond(ALWAYS) });
      return (n) => {
        let sink = 0;
        for (let i = 0; i < n; i++) sink += limiter.tryAcquire('hot').remaining;
        return sink;
      };
    },
    denied: () => {
      const limiter = createRateLimiter({ limits: perSecond(1) });
      limiter.tryAcquire('hot');
      return (n) => {
        let sink = 0;
        for (let i = 0; i < n; i++) sink += limiter.tryAcquire('hot').retryAfterMs;
        return sink;
      };
    },
  },
  {
    id: 'fp-gcra',
    label: 'fetch-pacer tryAcquire(key), algorithm gcra',
    allowed: () => {
      const limiter = createRateLimiter({ limits: perSecond(ALWAYS, { algorithm: gcra }) });
      return (n) => {
        let sink = 0;
        for (let i = 0; i < n; i++) sink += limiter.tryAcquire('hot').remaining;
        return sink;
      };
    },
    denied: () => {
      const limiter = createRateLimiter({ limits: perSecond(1, { algorithm: gcra }) });
      limiter.tryAcquire('hot');
      return (n) => {
        let sink = 0;
        for (let i = 0; i < n; i++) sink += limiter.tryAcquire('hot').retryAfterMs;
        return sink;
      };
    },
  },
  {
    id: 'fp-strategy',
    label: 'fetch-pacer createStrategy (unkeyed) + performance.now()',
    allowed: () => {
      const state = createStrategy(perSecond(ALWAYS));
      return (n) => {
        let sink = 0;
        for (let i = 0; i < n; i++) sink += state.tryAcquire(performance.now(), 1).remaining;
        return sink;
      };
    },
    denied: () => {
      const state = createStrategy(perSecond(1));
      state.tryAcquire(performance.now(), 1);
      return (n) => {
        let sink = 0;
        for (let i = 0; i < n; i++) sink += state.tryAcquire(performance.now(), 1).retryAfterMs;
        return sink;
      };
    },
  },
  {
    id: 'fp-pacer',
    label: 'fetch-pacer pacer.tryAcquire(key)',
    allowed: () => {
      const pacer = createPacer({ limits: perSecond(ALWAYS) });
      return (n) => {
        let sink = 0;
        for (let i = 0; i < n; i++) sink += pacer.tryAcquire('hot').remaining;
        return sink;
      };
    },
    denied: () => {
      const pacer = createPacer({ limits: perSecond(1) });
      pacer.tryAcquire('hot');
      return (n) => {
        let sink = 0;
        for (let i = 0; i < n; i++) sink += pacer.tryAcquire('hot').retryAfterMs;
        return sink;
      };
    },
  },
  {
    id: 'limiter-bucket',
    label: 'limiter TokenBucket.tryRemoveTokens (unkeyed)',
    allowed: () => {
      const bucket = new LimiterTokenBucket({
        bucketSize: ALWAYS,
        tokensPerInterval: ALWAYS,
        interval: 'second',
      });
      bucket.content = ALWAYS; // a new limiter bucket starts empty
      return (n) => {
        let sink = 0;
        for (let i = 0; i < n; i++) if (bucket.tryRemoveTokens(1)) sink++;
        return sink;
      };
    },
    denied: () => {
      const bucket = new LimiterTokenBucket({
        bucketSize: 1,
        tokensPerInterval: 1,
        interval: 'second',
      });
      return (n) => {
        let sink = 0;
        for (let i = 0; i < n; i++) if (!bucket.tryRemoveTokens(1)) sink++;
        return sink;
      };
    },
  },
  {
    id: 'limiter-rate',
    label: 'limiter RateLimiter.tryRemoveTokens (unkeyed)',
    allowed: () => {
      const limiter = new LimiterRateLimiter({ tokensPerInterval: ALWAYS, interval: 'second' });
      return (n) => {
        let sink = 0;
        for (let i = 0; i < n; i++) if (limiter.tryRemoveTokens(1)) sink++;
        return sink;
      };
    },
    denied: () => {
      const limiter = new LimiterRateLimiter({ tokensPerInterval: 1, interval: 'second' });
      limiter.tryRemoveTokens(1);
      return (n) => {
        let sink = 0;
        for (let i = 0; i < n; i++) if (!limiter.tryRemoveTokens(1)) sink++;
        return sink;
      };
    },
  },
  {
    id: 'tanstack',
    label: '@tanstack/pacer RateLimiter.maybeExecute (unkeyed)',
    // Its window keeps one timestamp per execution and filters them on each call, so an
    // allowed call costs more the more calls the window holds. Measured as an app would see it
    // under a limit of 100: fresh limiters, each taking its 100 calls (the mean over 0..99 held).
    allowedIterations: 20_000,
    deniedIterations: 100_000,
    allowed: () => {
      const perLimiter = 100;
      return (n) => {
        const limiters = [];
        for (let k = 0; k < n / perLimiter; k++) {
          limiters.push(new TanStackRateLimiter(noop, { limit: perLimiter, window: HOUR }));
        }
        const start = nowNs();
        let sink = 0;
        for (const limiter of limiters) {
          for (let i = 0; i < perLimiter; i++) if (limiter.maybeExecute()) sink++;
        }
        return { sink, ns: nowNs() - start };
      };
    },
    denied: () => {
      const limiter = new TanStackRateLimiter(noop, { limit: 1, window: HOUR });
      limiter.maybeExecute();
      return (n) => {
        let sink = 0;
        for (let i = 0; i < n; i++) if (!limiter.maybeExecute()) sink++;
        return sink;
      };
    },
  },
];

/** Libraries without a synchronous try, and what they have instead. */
const WITHOUT_SYNC_TRY = [
  'bottleneck: none (`check()` answers through a Promise and takes nothing; `schedule()` queues)',
  'p-throttle: none (a throttled call always returns a Promise; it queues or runs)',
  'p-queue: none (a queue; `add()` returns a Promise)',
];

function measureChild({ id, iterations, rounds }) {
  const floor = CASES.find((item) => item.id === 'floor');
  const item = CASES.find((candidate) => candidate.id === id);
  const entries = [{ kind: 'floor', n: iterations, loop: floor.allowed(), ns: [] }];
  if (id !== 'floor') {
    for (const kind of ['allowed', 'denied']) {
      if (item[kind] === undefined) continue;
      const n = item[`${kind}Iterations`] ?? iterations;
      entries.push({ kind, n, loop: item[kind](), ns: [] });
    }
  }
  let sink = 0;
  // Warm-up: every loop reaches optimised code before anything is recorded.
  for (const entry of entries) {
    for (let k = 0; k < 2; k++) {
      const out = entry.loop(entry.n);
      sink += typeof out === 'number' ? out : out.sink;
    }
  }
  for (let round = 0; round < rounds; round++) {
    // Alternate the order each round, so neither loop always runs first.
    for (let k = 0; k < entries.length; k++) {
      const entry = entries[(k + round) % entries.length];
      const start = nowNs();
      const out = entry.loop(entry.n);
      const elapsed = nowNs() - start;
      // A loop with setup of its own (fresh state) times its calls itself.
      if (typeof out === 'number') {
        sink += out;
        entry.ns.push(elapsed / entry.n);
      } else {
        sink += out.sink;
        entry.ns.push(out.ns / entry.n);
      }
    }
  }
  const result = { sink: Number.isFinite(sink) ? 1 : 0 };
  for (const entry of entries)
    result[entry.kind] = { n: entry.n, ns: entry.ns, median: median(entry.ns) };
  return result;
}

/** Parent side: one child per call, prints the table, returns the data for latest.json. */
export async function runDecision({ iterations = 500_000, rounds = 5 } = {}) {
  const measured = {};
  for (const item of CASES) {
    const answer = await runChild(
      import.meta.url,
      { id: item.id, iterations, rounds },
      { timeoutMs: 120_000 },
    );
    if (!answer.ok) throw new Error(`decision workload failed for ${item.id}: ${answer.error}`);
    measured[item.id] = answer.result;
  }
  const rows = CASES.map((item) => {
    const m = measured[item.id];
    return {
      id: item.id,
      label: item.label,
      floor: m.floor.median,
      allowed: item.id === 'floor' ? m.floor.median : m.allowed?.median,
      denied: m.denied?.median,
      runs: m,
    };
  });
  const fp = rows.find((r) => r.id === 'fp');
  const table = printTable(
    `1. Decision overhead: synchronous try on one hot key (ns/op, median of ${rounds} rounds; each call in its own process with its own floor)`,
    [
      { label: 'library / call', value: (r) => r.label },
      { label: 'allowed ns/op', value: (r) => num(r.allowed, 1) },
      { label: 'vs fetch-pacer', value: (r) => ratio(r.allowed, fp.allowed) },
      { label: 'vs floor', value: (r) => ratio(r.allowed, r.floor) },
      { label: 'denied ns/op', value: (r) => num(r.denied, 1) },
      { label: 'vs fetch-pacer', value: (r) => ratio(r.denied, fp.denied) },
      { label: 'vs floor', value: (r) => ratio(r.denied, r.floor) },
      { label: 'floor ns/op (same process)', value: (r) => num(r.floor, 1) },
    ],
    rows,
    [
      `Allowed: a policy of ${num(ALWAYS)} per second; denied: 1 per second after its one permit. "vs floor": against the bare performance.now() loop run in the same process, interleaved.`,
      '@tanstack/pacer keeps a timestamp per execution in its window and filters them on every call, so its allowed cost grows with the calls the window holds: shown for fresh limiters of limit 100 each taking 100 calls (20,000 calls per round, limiters made outside the timing).',
      `No synchronous try: ${WITHOUT_SYNC_TRY.join('; ')}.`,
    ],
  );
  return { iterations, rounds, rows, table };
}

if (isMain(import.meta.url)) serveChild(measureChild);
