import fc from 'fast-check';
import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { server } from '../support/msw.js';
import { harness } from './support.js';

type Outcome = 'ok' | '500' | '503' | '429' | '404' | 'net';

const STATUS: Record<Exclude<Outcome, 'net'>, number> = {
  ok: 201,
  '500': 500,
  '503': 503,
  '429': 429,
  '404': 404,
};

describe('createOutbox under any sequence of answers', () => {
  it('gives every entry exactly one definitive answer, in enqueue order per key', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom('a', 'b'), { minLength: 1, maxLength: 10 }),
        fc.array(fc.constantFrom<Outcome>('ok', '500', '503', '429', '404', 'net'), {
          maxLength: 25,
        }),
        async (keys, outcomes) => {
          const h = harness({
            online: false,
            limit: 3,
            retry: { limit: 1 },
            maxRetryDelayMs: 4000,
          });
          const log: Array<{ key: string; id: string; outcome: Outcome }> = [];
          let next = 0;
          server.use(
            http.all('https://:origin.test/*', ({ request }) => {
              const outcome = outcomes[next++] ?? 'ok';
              const key = new URL(request.url).hostname;
              log.push({ key, id: request.headers.get('idempotency-key') ?? '?', outcome });
              if (outcome === 'net') return HttpResponse.error();
              const status = STATUS[outcome];
              const headers: Record<string, string> =
                outcome === '429' || outcome === '503' ? { 'retry-after': '1' } : {};
              return new HttpResponse(null, { status, headers });
            }),
          );
          const ids: Record<string, string[]> = { 'a.test': [], 'b.test': [] };
          for (const key of keys) {
            const entry = await h.outbox.enqueue(`https://${key}.test/w`, { method: 'POST' });
            ids[`${key}.test`]?.push(entry.id);
          }
          h.network.set(true);
          await h.drive(600_000);

          const definitive = log.filter((line) => line.outcome === 'ok' || line.outcome === '404');
          // Exactly one definitive answer per entry: none lost, none twice.
          expect(definitive.map((line) => line.id).sort()).toEqual(
            Object.values(ids).flat().sort(),
          );
          for (const [key, order] of Object.entries(ids)) {
            // Per key, the entries were answered in enqueue order...
            expect(definitive.filter((line) => line.key === key).map((line) => line.id)).toEqual(
              order,
            );
            // ...and no entry was sent before the one ahead of it had its answer.
            const firstSend = order.map((id) => log.findIndex((line) => line.id === id));
            const answered = order.map((id) =>
              log.findIndex(
                (line) => line.id === id && (line.outcome === 'ok' || line.outcome === '404'),
              ),
            );
            for (let i = 1; i < order.length; i++) {
              expect(firstSend[i]).toBeGreaterThan(answered[i - 1] as number);
            }
          }
          expect(h.outbox.getSnapshot()).toMatchObject({
            pending: 0,
            sent: definitive.filter((line) => line.outcome === 'ok').length,
            rejected: definitive.filter((line) => line.outcome === '404').length,
            dropped: 0,
          });
          await h.outbox.close();
        },
      ),
      { numRuns: 50 },
    );
  }, 60_000);
});
