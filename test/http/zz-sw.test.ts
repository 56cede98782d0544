import { it } from 'vitest';
import { createPacedFetch } from '../../src/http/paced-fetch.js';
import { createManualClock } from '../../src/testing/index.js';
import { countingServer, driveNetwork, network } from '../support/counting-servers.js';
import { server } from '../support/msw.js';
it('sw', async () => {
  const clock = createManualClock();
  const limit = 10;
  const backend = countingServer({
    clock,
    scheme: 'sliding-window',
    limit,
    windowMs: 1000,
    dialect: 'x-ratelimit-fractional',
  });
  server.use(backend.handler);
  const net = network({ clock, delayMs: [5, 60], seed: 3 });
  const seen: string[] = [];
  const pacedFetch = createPacedFetch({
    limits: { limit, windowMs: 1000 },
    clock,
    wallClock: backend.wallClock,
    fetch: async (r) => {
      const s = clock.now() | 0;
      const res = await net.fetch(r);
      seen.push(
        `${s} ${clock.now() | 0} ${res.status} rem=${res.headers.get('x-ratelimit-remaining')} reset=${(Number(res.headers.get('x-ratelimit-reset')) * 1000 - backend.wallClock()) | 0} ${JSON.stringify(pacedFetch.pacer.inspect('https://api.test'))}`,
      );
      return res;
    },
  });
  let settled = 0;
  const calls = Array.from({ length: 60 }, (_, i) =>
    pacedFetch(`https://api.test/n/${i}`).finally(() => settled++),
  );
  await driveNetwork(clock, net, () => settled === 60, 120_000);
  await Promise.all(calls);
  console.log(seen.join('\n'));
});
