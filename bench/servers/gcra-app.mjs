// Express with redis-gcra (https://github.com/Losant/redis-gcra: "an implementation of GCRA for
// rate limiting based on Redis") at `rate` = `limit` per `period` = `windowMs` and `burst` per
// client: a bucket `burst` deep refilled one permit per `windowMs / limit`, its state one
// theoretical arrival time in Redis (Debian's redis-server, which the bench starts for it). A
// refused request is not counted.
// Headers: the library returns `remaining`, `retryIn` and `resetIn` (ms) and leaves the answer
// to the app; this one answers as throttled's HTTPRateLimiter does (a Go GCRA, whose headers
// redis-cell's README and others copy; https://github.com/throttled/throttled, http.go): every answer
//   X-RateLimit-Limit: the burst (throttled's `Limit`, "the maximum number of requests that could
//                      be permitted instantaneously"; redis-cell's "max_burst + 1")
//   X-RateLimit-Remaining: remaining
//   X-RateLimit-Reset: ceil(resetIn / 1000)   (whole seconds until the bucket is full again)
// and a refusal `Retry-After: ceil(retryIn / 1000)` as well: a window of the burst per second is
// what the first answer seems to say. With `onlyRetryAfter`, nothing but that `Retry-After` (a
// bucket saying when to come back, as a Retry-After must, in whole seconds: a few ms of refill
// read as a second).
// A child process of `npm run bench:servers` (127.0.0.1 only; tells the parent its port).
import express from 'express';
import Redis from 'ioredis';
import RedisGCRA from 'redis-gcra';
import { childArgs } from '../lib/child.mjs';
import { serveUntilStopped } from '../lib/server-process.mjs';

const { limit, windowMs, burst, redisUrl, onlyRetryAfter } = childArgs();
const redis = new Redis(redisUrl);
const limiter = RedisGCRA({ redis, burst, rate: limit, period: windowMs });

const app = express();
app.disable('x-powered-by');
app.use((request, response, next) => {
  // Each library and run is its own client (a header), so no run inherits another's bucket.
  const key = request.get('x-bench-client') ?? 'anonymous';
  limiter.limit({ key }).then((result) => {
    if (!onlyRetryAfter) {
      response.set({
        'X-RateLimit-Limit': String(burst),
        'X-RateLimit-Remaining': String(result.remaining),
        'X-RateLimit-Reset': String(Math.ceil(result.resetIn / 1_000)),
      });
    }
    if (!result.limited) return next();
    response
      .set('Retry-After', String(Math.ceil(result.retryIn / 1_000)))
      .status(429)
      .type('text/plain')
      .send('Too Many Requests\n');
  }, next);
});
app.get('/ok', (_request, response) => {
  response.type('text/plain').send('ok\n');
});

const server = app.listen(0, '127.0.0.1', () =>
  serveUntilStopped(server, async () => {
    await new Promise((done) => server.close(done));
    await redis.quit();
  }),
);
