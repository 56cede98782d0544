import {
  createPacedFetch,
  createPacer,
  isRateLimitError,
  type PacedFetch,
  perMinute,
  perSecond,
} from 'fetch-pacer';
import { createOutbox, memoryStorage, type Outbox } from 'fetch-pacer/offline';
import { redisStore } from 'fetch-pacer/redis';
import { createManualClock } from 'fetch-pacer/testing';

const clock = createManualClock();
const pacedFetch: PacedFetch = createPacedFetch({
  limits: [perSecond(10), perMinute(100)],
  clock,
  key: (request) => request.headers.get('authorization') ?? 'anonymous',
});
const response: Promise<Response> = pacedFetch(new URL('https://api.example.com/items'), {
  pacing: { key: 'items', cost: 2 },
});
response.catch((error: unknown) => (isRateLimitError(error) ? error.retryAfterMs : 0));

const pacer = createPacer({
  limits: perSecond(50),
  store: redisStore({ client: { eval: async () => [1, 0, 0] } }),
});
const outbox: Outbox = createOutbox({
  name: 'orders',
  fetch: pacedFetch,
  storage: memoryStorage(),
});
export { outbox, pacer };
