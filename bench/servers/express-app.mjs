// The Express server of `npm run bench:servers`: express-rate-limit at 20 requests per second per
// client, with draft-8 RateLimit headers and Retry-After on its 429s. A child process of the
// bench: it listens on 127.0.0.1 only, tells the parent its port, and exits when told to.
import express from 'express';
import { rateLimit } from 'express-rate-limit';

export const LIMIT = 20;
export const WINDOW_MS = 1_000;

const app = express();
app.disable('x-powered-by');
app.use(
  rateLimit({
    windowMs: WINDOW_MS,
    limit: LIMIT,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    // Each library and run is its own client (a header), so no run inherits another's window.
    keyGenerator: (request) => request.get('x-bench-client') ?? 'anonymous',
  }),
);
app.get('/ok', (_request, response) => {
  response.type('text/plain').send('ok\n');
});

const server = app.listen(0, '127.0.0.1', () => {
  process.send?.({ port: server.address().port });
});

function stop() {
  server.closeAllConnections();
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 2_000).unref();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.on('disconnect', stop); // the bench went away: do not outlive it
