// One library against one server: a child process of `npm run bench:servers`. It hands all its
// requests to the library at once, the library paces them, and every response that comes back
// over the wire is counted (retries included), then it reports.
import { AsyncQueuer } from '@tanstack/pacer';
import Bottleneck from 'bottleneck';
import { RateLimiter, TokenBucket } from 'limiter';
import PQueue from 'p-queue';
import pThrottle from 'p-throttle';
import { createPacedFetch, perSecond, slidingLog } from '../../dist/index.js';
import { isMain, serveChild } from '../lib/child.mjs';

/** A queuer run as a paced call: TanStack's queue has no promise per item, the item settles one. */
function viaQueuer(queuer, send) {
  return () => new Promise((resolve, reject) => queuer.addItem(() => send().then(resolve, reject)));
}

/**
 * fetch-pacer the four ways of issue 12, for a server publishing `rate` per second (`burst`:
 * the leaky bucket's burst, nginx). `make(send, pacedFetchOf)` returns a call that sends one
 * request when the library lets it; `pacedFetchOf(options)` throws what `createPacedFetch` throws.
 */
function fetchPacerConfigs({ rate, burst }) {
  const published =
    burst === undefined ? `perSecond(${rate})` : `perSecond(${rate}, { burst: ${burst} })`;
  // The nearest sliding log to a leaky bucket: its burst per the time the bucket takes to drain.
  const logged =
    burst === undefined
      ? { limit: rate, windowMs: 1_000, algorithm: slidingLog }
      : { limit: burst, windowMs: (burst * 1_000) / rate, algorithm: slidingLog };
  return {
    'fetch-pacer, published limit': {
      config: `createPacedFetch({ limits: ${published} })`,
      make: (_send, pacedFetchOf) =>
        pacedFetchOf({ limits: perSecond(rate, burst === undefined ? {} : { burst }) }),
    },
    'fetch-pacer, sliding-log': {
      config: `createPacedFetch({ limits: { limit: ${logged.limit}, windowMs: ${logged.windowMs}, algorithm: slidingLog } })`,
      make: (_send, pacedFetchOf) => pacedFetchOf({ limits: logged }),
    },
    'fetch-pacer, 10x generous': {
      config: `createPacedFetch({ limits: perSecond(${10 * rate}) })`,
      make: (_send, pacedFetchOf) => pacedFetchOf({ limits: perSecond(10 * rate) }),
    },
    // No limits at all: slow start per origin, then what the server says (issue 12).
    'fetch-pacer, zero config': {
      config: 'createPacedFetch()',
      make: (_send, pacedFetchOf) => pacedFetchOf({}),
    },
  };
}

/**
 * The peer libraries, each set to "`count` per `intervalMs`", the nearest way it can say it:
 * the burst per the time it takes to drain for a leaky bucket (nginx), the limit per window for
 * a fixed window (express-rate-limit). `bucket` is limiter's TokenBucket's size (filled at the
 * start, as the server's bucket is); without it, limiter's RateLimiter per second.
 */
function peerConfigs({ count, intervalMs, rate, bucket }) {
  return {
    limiter:
      bucket === undefined
        ? {
            config: `RateLimiter({ tokensPerInterval: ${rate}, interval: "second" })`,
            make: (send) => {
              const limiter = new RateLimiter({ tokensPerInterval: rate, interval: 'second' });
              return () => limiter.removeTokens(1).then(send);
            },
          }
        : {
            config: `TokenBucket({ bucketSize: ${bucket}, tokensPerInterval: ${rate}, interval: "second" }), filled`,
            make: (send) => {
              const tokens = new TokenBucket({
                bucketSize: bucket,
                tokensPerInterval: rate,
                interval: 'second',
              });
              tokens.content = bucket;
              return () => tokens.removeTokens(1).then(send);
            },
          },
    // Its reservoir moves on a 250 ms heartbeat (its docs ask for multiples of 250).
    bottleneck: {
      config: `new Bottleneck({ reservoir: ${count}, reservoirRefreshAmount: ${count}, reservoirRefreshInterval: ${intervalMs} })`,
      make: (send) => {
        const limiter = new Bottleneck({
          reservoir: count,
          reservoirRefreshAmount: count,
          reservoirRefreshInterval: intervalMs,
        });
        return () => limiter.schedule(send);
      },
    },
    'p-throttle': {
      config: `pThrottle({ limit: ${count}, interval: ${intervalMs}, strict: true })`,
      make: (send) => pThrottle({ limit: count, interval: intervalMs, strict: true })(send),
    },
    'p-queue': {
      config: `new PQueue({ intervalCap: ${count}, interval: ${intervalMs}, strict: true })`,
      make: (send) => {
        const queue = new PQueue({ intervalCap: count, interval: intervalMs, strict: true });
        return () => queue.add(send);
      },
    },
    '@tanstack/pacer': {
      config: `new AsyncQueuer(run, { concurrency: ${count}, wait: ${intervalMs} })`,
      make: (send) =>
        viaQueuer(new AsyncQueuer((job) => job(), { concurrency: count, wait: intervalMs }), send),
    },
    '@tanstack/pacer (no burst)': {
      config: `new AsyncQueuer(run, { concurrency: 1, wait: ${1_000 / rate} })`,
      make: (send) =>
        viaQueuer(new AsyncQueuer((job) => job(), { concurrency: 1, wait: 1_000 / rate }), send),
    },
  };
}

/**
 * Every client configuration for a server publishing `rate` per second (`burst`: nginx's), by
 * row name. `peers`: whether the peer libraries run against it too.
 */
export function configsFor({ rate, burst, peers }) {
  const fetchPacer = fetchPacerConfigs({ rate, burst });
  if (!peers) return fetchPacer;
  const shape =
    burst === undefined
      ? { count: rate, intervalMs: 1_000, rate }
      : { count: burst, intervalMs: (burst * 1_000) / rate, rate, bucket: burst };
  return { ...fetchPacer, ...peerConfigs(shape) };
}

function refusalContext(wire) {
  const bySend = [...wire].sort((a, b) => a[2] - b[2]);
  const out = [];
  for (let i = 0; i < bySend.length && out.length < 5; i++) {
    if (bySend[i][0] !== 429 && bySend[i][0] !== 503) continue;
    out.push(
      bySend
        .slice(Math.max(0, i - 6), i + 1)
        .map(([status, , sentAt]) => `${status}@${sentAt.toFixed(1)}`),
    );
  }
  return out;
}

/** The longest time between two sends, and when it began (ms since the start). */
function longestPause(wire) {
  const sends = wire.map(([, , sentAt]) => sentAt).sort((a, b) => a - b);
  let longest = { ms: 0, fromMs: 0 };
  for (let i = 1; i < sends.length; i++) {
    const ms = sends[i] - sends[i - 1];
    if (ms > longest.ms) longest = { ms: Math.round(ms), fromMs: Math.round(sends[i - 1]) };
  }
  return longest;
}

async function runClient({ library, url, requests, client, limits, clockSkewMs = 0 }) {
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
  let pacer; // fetch-pacer's, for what it learned
  const pacedFetchOf = (options) => {
    const wallClock = () => Date.now() + clockSkewMs;
    const pacedFetch = createPacedFetch({ ...options, fetch: transport, wallClock });
    pacer = pacedFetch.pacer;
    return () => pacedFetch(url, { headers });
  };
  let call;
  try {
    call = configsFor(limits)[library].make(send, pacedFetchOf);
  } catch (error) {
    // A configuration the library does not take yet (zero configuration today).
    return { unsupported: error instanceof Error ? error.message : String(error) };
  }
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
  // Admitted after the first two windows, per second to the last answer, as a share of the
  // published rate: the "0.9x of the ideal throughput after two windows".
  const okAfter2s = wire.filter(([status, at]) => status === 200 && at > 2_000).length;
  const throughputAfter2s =
    makespanMs > 3_000 ? okAfter2s / ((makespanMs - 2_000) / 1_000) / limits.rate : null;
  const count = (list, status) => list.filter(([s]) => s === status).length;
  const isRefusal = ([status]) => status === 429 || status === 503;
  return {
    requests,
    sent: wire.length,
    ok: count(wire, 200),
    refused: wire.filter(isRefusal).length,
    // The target allows refusals in the first two windows (2 s) only.
    refusedAfter2s: wire.filter((entry) => isRefusal(entry) && entry[1] > 2_000).length,
    finalOk: count(finals, 200),
    failed: finals.filter(([s]) => s !== 200).length,
    errors: finals.filter(([s]) => typeof s === 'string').length,
    makespanMs,
    throughputAfter2s,
    // For a post-mortem: the send times (ms) of the 7 requests before each of the first 5 refusals,
    // the longest time nothing was sent (a stall), and what fetch-pacer learned by the end.
    refusalContext: refusalContext(wire),
    longestPause: longestPause(wire),
    ...(pacer === undefined ? {} : { learned: pacer.inspect(new URL(url).origin).learned ?? null }),
  };
}

if (isMain(import.meta.url)) serveChild(runClient);
