// One of several processes sharing one Redis store against one real server: a child of
// `npm run bench:servers:store`. Every process of a row sends as the same client (the server's
// `x-bench-client` key), so the server counts them together, as it counts the processes of one
// app behind one API key; the store is what keeps them under the limit together.
import { createClient } from 'redis';
import { createPacedFetch, perSecond } from '../../dist/index.js';
import { redisStore } from '../../dist/redis.js';
import { isMain, serveChild } from '../lib/child.mjs';
import { sleep } from '../lib/timing.mjs';

/** The paced fetch of each configuration, for a server publishing `rate` per second. */
export const STORE_CONFIGS = {
  'published limit': (rate) => ({
    config: `createPacedFetch({ limits: perSecond(${rate}), store: redisStore({ client }) })`,
    limits: perSecond(rate),
  }),
  '10x generous': (rate) => ({
    config: `createPacedFetch({ limits: perSecond(${10 * rate}), store: redisStore({ client }) })`,
    limits: perSecond(10 * rate),
  }),
};

async function runStoreClient({ url, requests, client, config, rate, redisUrl, prefix, startAt }) {
  const redis = createClient({ url: redisUrl });
  redis.on('error', () => {});
  await redis.connect();
  const headers = { 'x-bench-client': client };
  const wire = []; // [status, ms since the common start]
  const transport = async (request) => {
    const response = await fetch(request);
    wire.push([response.status, Date.now() - startAt]);
    return response;
  };
  const pacedFetch = createPacedFetch({
    limits: STORE_CONFIGS[config](rate).limits,
    store: redisStore({ client: redis, prefix }),
    fetch: transport,
  });
  // Warm-up under another client name (undici's set-up, a first connection), then every
  // process of the row starts at the same wall-clock moment.
  for (let i = 0; i < 3; i++) {
    const response = await fetch(url, { headers: { 'x-bench-client': `${client}-warm-up` } });
    await response.arrayBuffer();
  }
  await sleep(Math.max(0, startAt - Date.now()));
  const finals = [];
  await Promise.all(
    Array.from({ length: requests }, async () => {
      try {
        const response = await pacedFetch(url, { headers });
        await response.arrayBuffer();
        finals.push([response.status, Date.now() - startAt]);
      } catch (error) {
        finals.push([`error: ${error?.name ?? error}`, Date.now() - startAt]);
      }
    }),
  );
  await redis.quit();
  const isRefusal = ([status]) => status === 429 || status === 503;
  return {
    sent: wire.length,
    refused: wire.filter(isRefusal).length,
    refusedAfter2s: wire.filter((entry) => isRefusal(entry) && entry[1] > 2_000).length,
    failed: finals.filter(([status]) => status !== 200).length,
    makespanMs: Math.max(...finals.map(([, at]) => at)),
    // Admitted more than two windows after the start, with the answer times, for the rate.
    okAfter2s: wire.filter(([status, at]) => status === 200 && at > 2_000).length,
    // Every answer on the wire, for --trace.
    wire,
  };
}

if (isMain(import.meta.url)) serveChild(runStoreClient);
