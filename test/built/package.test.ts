import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * Imports the built package by its name, through the `exports` map, the way a user's code
 * does. Runs after `npm run build`; it proves the artifact (not the sources) works.
 */
describe('the built package', () => {
  it('exposes the core through its exports map and decides like the sources', async () => {
    const core = await import('fetch-pacer');
    const { createManualClock } = await import('fetch-pacer/testing');
    const clock = createManualClock();
    const limiter = core.createRateLimiter({ limits: core.perSecond(5), clock });
    const decisions = Array.from({ length: 6 }, () => limiter.tryAcquire('alice'));
    expect(decisions.map((d) => d.remaining)).toEqual([4, 3, 2, 1, 0, 0]);
    expect(decisions[5]).toMatchObject({ allowed: false, retryAfterMs: 200, reason: 'rate' });
    clock.set(200);
    expect(limiter.tryAcquire('alice').allowed).toBe(true);
  });

  it('paces fetch calls through the built entry', async () => {
    const { createPacedFetch, perSecond, isRateLimitError } = await import('fetch-pacer');
    const { createManualClock } = await import('fetch-pacer/testing');
    const clock = createManualClock();
    const seen: string[] = [];
    const pacedFetch = createPacedFetch({
      limits: perSecond(2),
      mode: 'reject',
      clock,
      fetch: async (request) => {
        seen.push(request.url);
        return new Response('ok');
      },
    });
    const results = await Promise.allSettled(
      [1, 2, 3].map((n) => pacedFetch(`https://api.test/${n}`)),
    );
    expect(seen).toEqual(['https://api.test/1', 'https://api.test/2']);
    const third = results[2];
    expect(third?.status === 'rejected' && isRateLimitError(third.reason)).toBe(true);
  });

  it('exposes exactly the React entry points from fetch-pacer/react', async () => {
    const react = await import('fetch-pacer/react');
    expect(Object.keys(react).sort()).toEqual([
      'HttpError',
      'IDLE_OUTBOX_SNAPSHOT',
      'IDLE_PACER_SNAPSHOT',
      'PacerProvider',
      'isAbortError',
      'isHttpError',
      'shallowEqual',
      'useBucketLevel',
      'useOutbox',
      'usePacedFetch',
      'usePacer',
      'usePacerState',
      'useRateLimitedFetch',
    ]);
  });

  it('resolves to dist/, with types beside every entry', async () => {
    const resolved = import.meta.resolve('fetch-pacer');
    expect(resolved).toMatch(/\/dist\/index\.js$/);
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    for (const entry of Object.values(pkg.exports) as Array<string | Record<string, string>>) {
      if (typeof entry === 'string') continue;
      const types = entry['types'] as string;
      expect(() => readFileSync(new URL(`../../${types}`, import.meta.url))).not.toThrow();
    }
  });

  it("ships the Redis store's Lua script without its comments", () => {
    const built = readFileSync(new URL('../../dist/redis.js', import.meta.url), 'utf8');
    expect(built).toContain('local key, op = KEYS[1], ARGV[1]');
    // Compacted by the build (scripts/compact-lua.mjs): a comment line of the source's script.
    expect(built).not.toContain('-- R: the rate refusals taught');
  });

  it.skipIf(process.env['REDIS_URL'] === undefined)(
    'paces through its Redis store on a real Redis (REDIS_URL)',
    async () => {
      const { createPacer, perSecond, isRateLimitError } = await import('fetch-pacer');
      const { redisStore } = await import('fetch-pacer/redis');
      const { createClient } = await import('redis');
      const client = createClient({ url: process.env['REDIS_URL'] as string });
      await client.connect();
      const prefix = `built-${process.pid}-${Date.now()}:`;
      const pacer = createPacer({
        limits: perSecond(2),
        mode: 'reject',
        store: redisStore({ client, prefix }),
      });
      try {
        const outcomes = await Promise.allSettled(
          [1, 2, 3].map((n) => pacer.schedule(() => n, { key: 'k' })),
        );
        expect(outcomes.slice(0, 2)).toEqual([
          { status: 'fulfilled', value: 1 },
          { status: 'fulfilled', value: 2 },
        ]);
        const third = outcomes[2];
        expect(third?.status === 'rejected' && isRateLimitError(third.reason)).toBe(true);
      } finally {
        pacer.dispose();
        await client.quit();
      }
    },
  );
});
