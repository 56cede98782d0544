// express-rate-limit (its default memory store) at `limit` per `windowMs` per client, with
// draft-8 headers: a fixed window per client that opens at its first request.
// Headers: `RateLimit-Policy: "<limit>-in-<w>sec"; q=<limit>; w=<w>; pk=...` and
// `RateLimit: "<limit>-in-<w>sec"; r=<remaining>; t=<seconds to reset>` on every answer,
// `Retry-After: <seconds>` on a 429. Docs: https://github.com/express-rate-limit/express-rate-limit
// With `defaults`, its header options left as they come (v8: `standardHeaders: false`,
// `legacyHeaders: true`): `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset`
// (Unix seconds, rounded up: `setLegacyHeaders` in its dist/index.cjs) beside `Date` on every
// answer, `Retry-After: <seconds>` on a 429. What an app that names only its limit sends.
// A child process of `npm run bench:servers` (127.0.0.1 only; tells the parent its port).
import express from 'express';
import { rateLimit } from 'express-rate-limit';
import { childArgs } from '../lib/child.mjs';
import { serveUntilStopped } from '../lib/server-process.mjs';

const { limit, windowMs, defaults = false } = childArgs();
const headers = defaults ? {} : { standardHeaders: 'draft-8', legacyHeaders: false };

const app = express();
app.disable('x-powered-by');
app.use(
  rateLimit({
    windowMs,
    limit,
    ...headers,
    // Each library and run is its own client (a header), so no run inherits another's window.
    keyGenerator: (request) => request.get('x-bench-client') ?? 'anonymous',
  }),
);
app.get('/ok', (_request, response) => {
  response.type('text/plain').send('ok\n');
});

const server = app.listen(0, '127.0.0.1', () => serveUntilStopped(server));
