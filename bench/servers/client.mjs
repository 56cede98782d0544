// One library against one server: a child process of `npm run bench:servers`. It hands all its
// requests to the library at once, the library paces them, and every response that comes back
// over the wire is counted (retries included), then it reports.
import { AsyncQueuer } from '@tanstack/pacer';
import Bottleneck from 'bottleneck';
import { RateLimiter, TokenBucket } from 'limiter';
import PQueue from 'p-queue';
import pThrottle from 'p-throttle';
import { createPacedFetch, perSecond } from '../../dist/index.js';
import { isMain, serveChild } from '../lib/child.mjs';

/** A queuer run as a paced call: TanStack's queue has no promise per item, the item settles one. */
function viaQueuer(queuer, send) {
  return () => new Promise((resolve, reject) => queuer.addItem(() => send().then(resolve, reject)));
}

/** fetch-pacer knowing nothing of the limit, with and without learning: the same rows for both servers. */
const GENEROUS = {
  'fetch-pacer, generous': {
    config: 'createPacedFetch({ limits: perSecond(1000) }): knows nothing of the limit',
    make: (_send, pacedFetchOf) => pacedFetchOf({ limits: perSecond(1000) }),
  },
  'fetch-pacer, generous, probe': {
    config: 'createPacedFetch({ limits: perSecond(1000), learn: { probe: true } })',
    make: (_send, pacedFetchOf) =>
      pacedFetchOf({ limits: perSecond(1000), learn: { probe: true } }),
  },
  'fetch-pacer, generous, no learning': {
    config:
      'createPacedFetch({ limits: perSecond(1000), learn: false }): headers lower credit only',
    make: (_send, pacedFetchOf) => pacedFetchOf({ limits: perSecond(1000), learn: false }),
  },
};

/**
 * Each library set to the server's published limit, the nearest way it can say it.
 * `make(send, pacedFetchOf)` returns a call that sends one request when the library lets it.
 */
export const CONFIGS = {
  // nginx: limit_req rate=20r/s burst=5 nodelay (a leaky bucket: one every 50 ms, 5 ahead).
  nginx: {
    'fetch-pacer': {
      config: 'createPacedFetch({ limits: perSecond(20, { burst: 5 }) })',
      make: (_send, pacedFetchOf) => pacedFetchOf({ limits: perSecond(20, { burst: 5 }) }),
    },
    limiter: {
      config: 'TokenBucket({ bucketSize: 5, tokensPerInterval: 20, interval: "second" }), filled',
      make: (send) => {
        const bucket = new TokenBucket({
          bucketSize: 5,
          tokensPerInterval: 20,
          interval: 'second',
        });
        bucket.content = 5;
        return () => bucket.removeTokens(1).then(send);
      },
    },
    bottleneck: {
      config:
        'new Bottleneck({ reservoir: 5, reservoirIncreaseAmount: 5, reservoirIncreaseInterval: 250, reservoirIncreaseMaximum: 5 })',
      make: (send) => {
        const limiter = new Bottleneck({
          reservoir: 5,
          reservoirIncreaseAmount: 5,
          reservoirIncreaseInterval: 250,
          reservoirIncreaseMaximum: 5,
        });
        return () => limiter.schedule(send);
      },
    },
    'p-throttle': {
      config: 'pThrottle({ limit: 5, interval: 250, strict: true })',
      make: (send) => pThrottle({ limit: 5, interval: 250, strict: true })(send),
    },
    'p-queue': {
      config: 'new PQueue({ intervalCap: 5, interval: 250, strict: true })',
      make: (send) => {
        const queue = new PQueue({ intervalCap: 5, interval: 250, strict: true });
        return () => queue.add(send);
      },
    },
    '@tanstack/pacer': {
      config: 'new AsyncQueuer(run, { concurrency: 5, wait: 250 })',
      make: (send) =>
        viaQueuer(new AsyncQueuer((job) => job(), { concurrency: 5, wait: 250 }), send),
    },
    '@tanstack/pacer (no burst)': {
      config: 'new AsyncQueuer(run, { concurrency: 1, wait: 50 })',
      make: (send) =>
        viaQueuer(new AsyncQueuer((job) => job(), { concurrency: 1, wait: 50 }), send),
    },
    ...GENEROUS,
    'fetch-pacer, no learning': {
      config: 'createPacedFetch({ limits: perSecond(20, { burst: 5 }), learn: false })',
      make: (_send, pacedFetchOf) =>
        pacedFetchOf({ limits: perSecond(20, { burst: 5 }), learn: false }),
    },
  },
  // express-rate-limit: 20 per 1 s window per client (a window opens at a client's first hit).
  express: {
    'fetch-pacer': {
      config: 'createPacedFetch({ limits: perSecond(20) })',
      make: (_send, pacedFetchOf) => pacedFetchOf({ limits: perSecond(20) }),
    },
    limiter: {
      config: 'RateLimiter({ tokensPerInterval: 20, interval: "second" })',
      make: (send) => {
        const limiter = new RateLimiter({ tokensPerInterval: 20, interval: 'second' });
        return () => limiter.removeTokens(1).then(send);
      },
    },
    bottleneck: {
      config:
        'new Bottleneck({ reservoir: 20, reservoirRefreshAmount: 20, reservoirRefreshInterval: 1000 })',
      make: (send) => {
        const limiter = new Bottleneck({
          reservoir: 20,
          reservoirRefreshAmount: 20,
          reservoirRefreshInterval: 1000,
        });
        return () => limiter.schedule(send);
      },
    },
    'p-throttle': {
      config: 'pThrottle({ limit: 20, interval: 1000, strict: true })',
      make: (send) => pThrottle({ limit: 20, interval: 1000, strict: true })(send),
    },
    'p-queue': {
      config: 'new PQueue({ intervalCap: 20, interval: 1000, strict: true })',
      make: (send) => {
        const queue = new PQueue({ intervalCap: 20, interval: 1000, strict: true });
        return () => queue.add(send);
      },
    },
    '@tanstack/pacer': {
      config: 'new AsyncQueuer(run, { concurrency: 20, wait: 1000 })',
      make: (send) =>
        viaQueuer(new AsyncQueuer((job) => job(), { concurrency: 20, wait: 1000 }), send),
    },
    '@tanstack/pacer (no burst)': {
      config: 'new AsyncQueuer(run, { concurrency: 1, wait: 50 })',
      make: (send) =>
        viaQueuer(new AsyncQueuer((job) => job(), { concurrency: 1, wait: 50 }), send),
    },
    ...GENEROUS,
    'fetch-pacer, no learning': {
      config: 'createPacedFetch({ limits: perSecond(20), learn: false })',
      make: (_send, pacedFetchOf) => pacedFetchOf({ limits: perSecond(20), learn: false }),
    },
    'fetch-pacer, sliding-log': {
      config: "createPacedFetch({ limits: perSecond(20, { algorithm: 'sliding-log' }) })",
      make: (_send, pacedFetchOf) =>
        pacedFetchOf({ limits: perSecond(20, { algorithm: 'sliding-log' }) }),
    },
  },
};

function refusalContext(wire) {
  const bySend = [...wire].sort((a, b) => a[2] - b[2]);
  const out = [];
  for (let i = 0; i < bySend.length && out.length < 5; i++) {
    if (bySend[i][0] !== 429) continue;
    out.push(
      bySend
        .slice(Math.max(0, i - 6), i + 1)
        .map(([status, , sentAt]) => `${status}@${sentAt.toFixed(1)}`),
    );
  }
  return out;
}

async function runClient({ server, library, url, requests, client }) {
  const headers = { 'x-bench-client': client };
  const wire = []; // every response that came back: [status, ms since start]
  let t0 = 0;
  const transport = async (request) => {
    const sentAt = performance.now() - t0;
    const response = await fetch(request);
    wire.push([response.status, performance.now() - t0, sentAt]);
    return response;
  };
  const send = () => transport(new Request(url, { headers }));
  const pacedFetchOf = (options) => {
    const pacedFetch = createPacedFetch({ ...options, fetch: transport });
    return () => pacedFetch(url, { headers });
  };
  const call = CONFIGS[server][library].make(send, pacedFetchOf);
  // Warm-up under another client name: the first fetch of a process pays for undici's set-up
  // and a new connection (tens of ms, more on a busy machine), and a slow first request moves
  // the server's window away from the client's.
  for (let i = 0; i < 3; i++) {
    const response = await fetch(url, { headers: { 'x-bench-client': `${client}-warm-up` } });
    await response.arrayBuffer();
  }
  const finals = [];
  t0 = performance.now();
  await Promise.all(
    Array.from({ length: requests }, async () => {
      try {
        const response = await call();
        await response.arrayBuffer();
        finals.push([response.status, performance.now() - t0]);
      } catch (error) {
        finals.push([`error: ${error?.name ?? error}`, performance.now() - t0]);
      }
    }),
  );
  const makespanMs = Math.max(...finals.map(([, at]) => at));
  const count = (list, status) => list.filter(([s]) => s === status).length;
  return {
    requests,
    sent: wire.length,
    ok: count(wire, 200),
    refused: count(wire, 429),
    finalOk: count(finals, 200),
    finalRefused: count(finals, 429),
    errors: finals.filter(([s]) => typeof s === 'string').length,
    makespanMs,
    // For a post-mortem: the send times (ms) of the 9 requests before each of the first 5 429s.
    refusalContext: refusalContext(wire),
  };
}

if (isMain(import.meta.url)) serveChild(runClient);
