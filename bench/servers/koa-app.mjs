// koa-ratelimit with its memory driver at `max` per `duration` per client: a fixed window per
// client that opens at its first request (limiter/memory.js: `remaining` counts down, the window
// is reset once its end has passed).
// Headers (the defaults): `X-RateLimit-Limit`, `X-RateLimit-Remaining`, and `X-RateLimit-Reset`
// as fractional Unix seconds (`1764583200.123456`) on every answer; `Retry-After` on a 429 in
// whole seconds rounded down (so `0` within the last second of a 1 s window).
// Docs: https://github.com/koajs/ratelimit#options
// A child process of `npm run bench:servers` (127.0.0.1 only; tells the parent its port).
import Koa from 'koa';
import ratelimit from 'koa-ratelimit';
import { childArgs } from '../lib/child.mjs';
import { serveUntilStopped } from '../lib/server-process.mjs';

const { limit, windowMs } = childArgs();

const app = new Koa();
app.use(
  ratelimit({
    driver: 'memory',
    db: new Map(),
    duration: windowMs,
    max: limit,
    // Each library and run is its own client (a header), so no run inherits another's window.
    id: (ctx) => ctx.get('x-bench-client') || 'anonymous',
  }),
);
app.use((ctx) => {
  ctx.type = 'text/plain';
  ctx.body = 'ok\n';
});

const server = app.listen(0, '127.0.0.1', () => serveUntilStopped(server));
