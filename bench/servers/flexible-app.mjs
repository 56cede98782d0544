// Express with rate-limiter-flexible's RateLimiterMemory at `points` per `duration` seconds per
// client: a fixed window per client that opens at its first request (a refused request still
// adds its point, but the window's end does not move; no `blockDuration`).
// Headers: the four its README recommends ("You may want to set HTTP headers for the
// response", https://github.com/animir/node-rate-limiter-flexible#ratelimiterres-object), on
// every answer as the README shows them:
//   Retry-After: msBeforeNext / 1000        (fractional seconds, "0.734")
//   X-RateLimit-Limit: points
//   X-RateLimit-Remaining: remainingPoints
//   X-RateLimit-Reset: Math.ceil((Date.now() + msBeforeNext) / 1000)   (whole Unix seconds)
// A child process of `npm run bench:servers` (127.0.0.1 only; tells the parent its port).
import express from 'express';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { childArgs } from '../lib/child.mjs';
import { serveUntilStopped } from '../lib/server-process.mjs';

const { limit, windowMs } = childArgs();
const opts = { points: limit, duration: windowMs / 1_000 };
const rateLimiter = new RateLimiterMemory(opts);

function headersOf(rateLimiterRes) {
  return {
    'Retry-After': String(rateLimiterRes.msBeforeNext / 1000),
    'X-RateLimit-Limit': String(opts.points),
    'X-RateLimit-Remaining': String(rateLimiterRes.remainingPoints),
    'X-RateLimit-Reset': String(Math.ceil((Date.now() + rateLimiterRes.msBeforeNext) / 1000)),
  };
}

const app = express();
app.disable('x-powered-by');
app.use((request, response, next) => {
  // Each library and run is its own client (a header), so no run inherits another's window.
  const key = request.get('x-bench-client') ?? 'anonymous';
  rateLimiter.consume(key).then(
    (rateLimiterRes) => {
      response.set(headersOf(rateLimiterRes));
      next();
    },
    (rejection) => {
      // A rejection is a RateLimiterRes when the points ran out, an Error when the store failed.
      if (rejection instanceof Error) return next(rejection);
      response.set(headersOf(rejection)).status(429).type('text/plain').send('Too Many Requests\n');
    },
  );
});
app.get('/ok', (_request, response) => {
  response.type('text/plain').send('ok\n');
});

const server = app.listen(0, '127.0.0.1', () => serveUntilStopped(server));
