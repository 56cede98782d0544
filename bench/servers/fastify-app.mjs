// @fastify/rate-limit (its default in-memory LocalStore) at `max` per `timeWindow` per client:
// a fixed window per client that opens at its first request (store/LocalStore.js: a counter and
// the window's start; a refused request is counted too but does not move the window).
// Headers (the defaults): `x-ratelimit-limit`, `x-ratelimit-remaining`, `x-ratelimit-reset`
// (whole seconds until the window ends, rounded up) on every answer, `retry-after` (the same
// whole seconds) on a 429. Docs: https://github.com/fastify/fastify-rate-limit#options
// With `onlyRetryAfter` (its `addHeaders` / `addHeadersOnExceeding` options, same docs): no count
// on any answer, only `retry-after` on a 429.
// A child process of `npm run bench:servers` (127.0.0.1 only; tells the parent its port).
import rateLimit from '@fastify/rate-limit';
import Fastify from 'fastify';
import { childArgs } from '../lib/child.mjs';
import { serveUntilStopped } from '../lib/server-process.mjs';

const { limit, windowMs, onlyRetryAfter = false } = childArgs();
const counts = !onlyRetryAfter;

const app = Fastify();
await app.register(rateLimit, {
  max: limit,
  timeWindow: windowMs,
  // Each library and run is its own client (a header), so no run inherits another's window.
  keyGenerator: (request) => request.headers['x-bench-client'] ?? 'anonymous',
  addHeadersOnExceeding: {
    'x-ratelimit-limit': counts,
    'x-ratelimit-remaining': counts,
    'x-ratelimit-reset': counts,
  },
  addHeaders: {
    'x-ratelimit-limit': counts,
    'x-ratelimit-remaining': counts,
    'x-ratelimit-reset': counts,
    'retry-after': true,
  },
});
app.get('/ok', (_request, reply) => {
  reply.type('text/plain').send('ok\n');
});

await app.listen({ host: '127.0.0.1', port: 0 });
serveUntilStopped(app.server, () => app.close());
