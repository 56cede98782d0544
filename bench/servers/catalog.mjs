// The real rate-limiting servers of `npm run bench:servers`, each at the same published rate
// ("`rate` per second"), each counting its own way. Every one keys its count on the
// `x-bench-client` header, so each client run starts fresh. The counting scheme and the headers
// of each are described (with the doc's address) at the top of its file.
import { startRedisServer } from '../lib/redis-server.mjs';
import { forkServer, freePort } from '../lib/server-process.mjs';
import { ensureHaproxy, startHaproxy } from './haproxy.mjs';
import { ensureNginx, startNginx } from './nginx.mjs';

/**
 * A Node app of this folder (forked, `limit` per 1 s) counting fixed windows that open at a
 * client's first request (the last of them opens ceil(n / rate) - 1 s in), or a sliding log
 * (`limit` at once, then each request's place frees a second after it: the same ideal).
 */
function fixedWindowApp(file, rate, { title, scheme, headers, peers = false, options = {} }) {
  return {
    title,
    scheme,
    headers,
    start: async () => {
      const args = { limit: rate, windowMs: 1_000, ...options };
      const { port, pid, stop } = await forkServer(new URL(file, import.meta.url), args);
      return { url: `http://127.0.0.1:${port}/ok`, pid, stop };
    },
    idealMs: (requests) => (Math.ceil(requests / rate) - 1) * 1_000,
    client: { rate, peers },
  };
}

/**
 * express + redis-gcra (forked, `rate` per 1 s, a bucket `burst` deep) on a redis-server of its
 * own, saying throttled's headers (see gcra-app.mjs).
 */
function gcraApp(rate, burst, { onlyRetryAfter = false } = {}) {
  return {
    title: `express + redis-gcra rate=${rate} period=1000 burst=${burst} (on redis-server)${onlyRetryAfter ? ', only retry-after' : ''}`,
    scheme: 'GCRA (refusals not counted)',
    headers: onlyRetryAfter
      ? 'Retry-After on 429 (whole seconds, rounded up), no counts'
      : "throttled's: X-RateLimit-Limit (the burst), -Remaining, -Reset (whole seconds until full, rounded up), Retry-After on 429",
    start: async () => {
      const redis = await startRedisServer();
      const args = { limit: rate, windowMs: 1_000, burst, redisUrl: redis.url, onlyRetryAfter };
      const app = await forkServer(new URL('./gcra-app.mjs', import.meta.url), args).catch(
        async (error) => {
          await redis.stop();
          throw error;
        },
      );
      const stop = () => app.stop().finally(redis.stop);
      return { url: `http://127.0.0.1:${app.port}/ok`, pid: app.pid, stop };
    },
    // The burst at once (the bucket starts full), then one every 1 / rate.
    idealMs: (requests) => ((requests - burst) * 1_000) / rate,
    client: { rate, burst, peers: false },
  };
}

/**
 * The servers for a published `rate` per second. Each: `title` (its configuration), `scheme`
 * (how it counts), `headers` (what it says), `start()` -> `{ url, pid, stop }`, `idealMs(n)`
 * (the fastest a client may finish n requests without a refusal), `client` (what the client
 * child needs to set itself up: the published limits and whether peer libraries run here).
 */
export function serverCatalog(rate) {
  // nginx's burst: a quarter second of the rate (5 at 20 r/s), so that the peers, which count
  // "burst per drain time", run on bottleneck's 250 ms heartbeat.
  const burst = Math.max(1, Math.round(rate / 4));
  return {
    nginx: {
      title: `nginx limit_req rate=${rate}r/s burst=${burst} nodelay`,
      scheme: 'leaky bucket (refusals not counted)',
      headers: 'none (a bare 429)',
      ensure: ensureNginx,
      start: async () => startNginx(await freePort(), { rate, burst }),
      // burst + 1 at once (the first request finds the bucket empty), then one every 1 / rate.
      idealMs: (requests) => ((requests - burst - 1) * 1_000) / rate,
      client: { rate, burst, peers: true },
    },
    // The burst of nginx's own example (`limit_req zone=one burst=5;`), refusing at once: a
    // bucket whose burst is small against its rate, which AIMD measures worst.
    'nginx-burst5': {
      title: `nginx limit_req rate=${rate}r/s burst=5 nodelay`,
      scheme: 'leaky bucket (refusals not counted)',
      headers: 'none (a bare 429)',
      ensure: ensureNginx,
      start: async () => startNginx(await freePort(), { rate, burst: 5 }),
      idealMs: (requests) => ((requests - 5 - 1) * 1_000) / rate,
      client: { rate, burst: 5, peers: false },
    },
    express: fixedWindowApp('./express-app.mjs', rate, {
      title: `express-rate-limit limit=${rate} windowMs=1000, standardHeaders 'draft-8'`,
      scheme: 'fixed window from the first request',
      headers: 'RateLimit-Policy, RateLimit (draft-8), Retry-After on 429',
      peers: true,
    }),
    'express-defaults': fixedWindowApp('./express-app.mjs', rate, {
      title: `express-rate-limit limit=${rate} windowMs=1000, its header options by default`,
      scheme: 'fixed window from the first request',
      headers:
        'X-RateLimit-Limit/-Remaining/-Reset (whole Unix seconds, rounded up), Retry-After on 429',
      options: { defaults: true },
    }),
    haproxy: {
      title: `HAProxy stick-table http_req_rate(1s), deny_status 429 if above ${rate}`,
      scheme: 'sliding-window counter (refusals counted)',
      headers: 'none (a bare 429)',
      ensure: ensureHaproxy,
      start: async () => startHaproxy(await freePort(), { rate }),
      // `rate` at once, then the weighted previous second makes room at `rate` per second.
      idealMs: (requests) => ((requests - rate) * 1_000) / rate,
      client: { rate, peers: false },
    },
    fastify: fixedWindowApp('./fastify-app.mjs', rate, {
      title: `@fastify/rate-limit max=${rate} timeWindow=1000 (LocalStore)`,
      scheme: 'fixed window from the first request',
      headers: 'x-ratelimit-limit/-remaining/-reset (whole seconds to go), retry-after on 429',
    }),
    // The same middleware told to send nothing but `retry-after` (its `addHeaders` and
    // `addHeadersOnExceeding` options): a server that says when to come back and nothing else.
    'fastify-retry-after': fixedWindowApp('./fastify-app.mjs', rate, {
      title: `@fastify/rate-limit max=${rate} timeWindow=1000, only retry-after`,
      scheme: 'fixed window from the first request',
      headers: 'retry-after on 429 (whole seconds to go), no counts',
      options: { onlyRetryAfter: true },
    }),
    koa: fixedWindowApp('./koa-app.mjs', rate, {
      title: `koa-ratelimit driver=memory max=${rate} duration=1000`,
      scheme: 'fixed window from the first request',
      headers:
        'X-RateLimit-Limit/-Remaining/-Reset (fractional Unix seconds), Retry-After on 429 (rounded down: often 0)',
    }),
    flexible: fixedWindowApp('./flexible-app.mjs', rate, {
      title: `express + rate-limiter-flexible RateLimiterMemory points=${rate} duration=1`,
      scheme: 'fixed window from the first request (refusals counted, window not moved)',
      headers:
        "its README's: Retry-After (fractional seconds), X-RateLimit-Limit/-Remaining, X-RateLimit-Reset (whole Unix seconds, rounded up), on every answer",
    }),
    // A GCRA from the npm registry on Redis, stating its burst as its limit with whole-second
    // resets, as throttled does: nginx's burst, named; and nginx's example's, small against the
    // rate, so that little of it is left beside the requests on their way.
    gcra: gcraApp(rate, burst),
    'gcra-burst5': gcraApp(rate, 5),
    // The same bucket saying nothing but a whole-second `Retry-After` (an app's own answer): its
    // few ms of refill read as a second, so that its first refusal reads like a window's.
    'gcra-retry-after': gcraApp(rate, burst, { onlyRetryAfter: true }),
    // A sliding log from the npm registry (no middleware: the app answers), counting refusals.
    rolling: fixedWindowApp('./rolling-app.mjs', rate, {
      title: `express + rolling-rate-limiter InMemoryRateLimiter maxInInterval=${rate} interval=1000`,
      scheme: 'sliding log (refusals logged too)',
      headers: 'Retry-After on 429 (whole seconds, rounded up), no counts',
    }),
  };
}
