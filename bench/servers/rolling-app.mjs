// Express with rolling-rate-limiter's InMemoryRateLimiter at `maxInInterval` = `limit` per
// `interval` = `windowMs` per client: a sliding log (every request's time is kept for one
// interval, and a request is refused while the interval before it holds `limit` others).
// A refused request is logged too (its README: "if an action is blocked, it is still added to
// the set. This means that if a user is continually attempting actions more quickly than the
// allowed rate, all of their actions will be blocked until they pause or slow their requests":
// https://github.com/peterkhayes/rolling-rate-limiter#algorithm), so a client that keeps
// sending while refused stays refused.
// Headers: the library returns `millisecondsUntilAllowed` and leaves the answer to the app; this
// one sends what HTTP has for it, `Retry-After` in whole seconds (RFC 9110's delay-seconds,
// rounded up), on a 429 only, and no count: a server that says when to come back and nothing else.
// A child process of `npm run bench:servers` (127.0.0.1 only; tells the parent its port).
import express from 'express';
import { InMemoryRateLimiter } from 'rolling-rate-limiter';
import { childArgs } from '../lib/child.mjs';
import { serveUntilStopped } from '../lib/server-process.mjs';

const { limit, windowMs } = childArgs();
const limiter = new InMemoryRateLimiter({ interval: windowMs, maxInInterval: limit });

const app = express();
app.disable('x-powered-by');
app.use((request, response, next) => {
  // Each library and run is its own client (a header), so no run inherits another's log.
  const key = request.get('x-bench-client') ?? 'anonymous';
  limiter.limitWithInfo(key).then((info) => {
    if (!info.blocked) return next();
    response
      .set('Retry-After', String(Math.ceil(info.millisecondsUntilAllowed / 1_000)))
      .status(429)
      .type('text/plain')
      .send('Too Many Requests\n');
  }, next);
});
app.get('/ok', (_request, response) => {
  response.type('text/plain').send('ok\n');
});

const server = app.listen(0, '127.0.0.1', () => serveUntilStopped(server));
