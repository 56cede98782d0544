import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { perSecond } from '../../src/core/policy.js';
import { arrivalSafe } from '../../src/index.js';
import {
  createPacer,
  type Pacer,
  type PacerOptions,
  type TaskProgress,
} from '../../src/pacer/index.js';
import { createManualClock } from '../../src/testing/index.js';
import { flushMicrotasks } from '../pacer/support.js';
import { fakeStore } from '../support/fake-store.js';

/** 10 requests and 2,000 tokens per second (as test/pacer/units.test.ts, in memory). */
const llm = { requests: perSecond(10), tokens: perSecond(2_000) };

/** Pacers on one manual clock sharing one fake store (the real shared-bucket arithmetic). */
function shared(
  options: Omit<PacerOptions, 'clock' | 'store'> = { limits: llm },
  storeOptions: { synchronous?: boolean; batches?: boolean } = {},
) {
  const clock = createManualClock();
  const fake = fakeStore({ now: clock.now, ...storeOptions });
  const starts: { label: string; at: number }[] = [];
  const pacer = () => createPacer({ ...options, clock, store: fake.store });
  const task = (label: string) => () => {
    starts.push({ label, at: clock.now() });
    return label;
  };
  const startsOf = (prefix = '') =>
    starts.filter((start) => start.label.startsWith(prefix)).map((start) => start.at);
  return { clock, fake, pacer, task, startsOf };
}

describe('limits per unit through a store', () => {
  it('starts each task once every unit has its amount, as the pacer in memory does', async () => {
    const { clock, fake, pacer, task, startsOf } = shared();
    const one = pacer();
    for (const tokens of [1_500, 1_000, 100, 1_000]) {
      one.schedule(task(`t${tokens}`), { cost: { requests: 1, tokens } });
    }
    await clock.advanceAsync(2_000);
    expect(startsOf()).toEqual([0, 250, 300, 800]);
    // The store got one amount per policy: the requests', then the tokens'.
    expect(fake.grants.map((grant) => grant.amounts)).toEqual([
      [1, 1_500],
      [1, 1_000],
      [1, 100],
      [1, 1_000],
    ]);
  });

  it('counts the tokens every client of the store spent: a second pacer waits for them', async () => {
    const { clock, pacer, task, startsOf } = shared();
    const [a, b] = [pacer(), pacer()];
    a.schedule(task('a'), { cost: { requests: 1, tokens: 1_800 } });
    await flushMicrotasks();
    // Alone, b's first call would start at once; the store holds 200 tokens of 2,000.
    b.schedule(task('b'), { cost: { requests: 1, tokens: 1_000 } });
    await clock.advanceAsync(1_000);
    expect(startsOf('a')).toEqual([0]);
    expect(startsOf('b')).toEqual([400]);
  });

  it('gives back through the store: a task of another pacer starts at once', async () => {
    const { clock, fake, pacer, task, startsOf } = shared();
    const [a, b] = [pacer(), pacer()];
    a.schedule(task('big'), { cost: { requests: 1, tokens: 1_800 } });
    await flushMicrotasks();
    b.schedule(task('next'), { cost: { requests: 1, tokens: 1_000 } });
    await clock.advanceAsync(10);
    expect(startsOf('next')).toEqual([]);
    a.adjust('default', { tokens: -1_300 }); // the big one used 500
    expect(fake.adjusted).toEqual([{ key: 'default', amounts: [0, -1_300] }]);
    // b hears of it from the store (a credit change), and asks again at once.
    await flushMicrotasks();
    expect(startsOf('next')).toEqual([10]);
  });

  it("gives back no more than the store's bucket could not refill since the reserve", async () => {
    const { clock, fake, pacer, task, startsOf } = shared();
    const [a, b] = [pacer(), pacer()];
    a.schedule(task('big'), { cost: { requests: 1, tokens: 1_800 } });
    await flushMicrotasks();
    // Full again by 900 ms: the 1,500 the big one reserved beyond its use are absorbed (the
    // server's bucket, charged 300, was full long before), and a take at 1 s found it so.
    await clock.advanceAsync(1_000);
    a.schedule(task('second'), { cost: { requests: 1, tokens: 1_500 } });
    await flushMicrotasks();
    a.adjust('default', { tokens: -1_500 }, { startedAt: 0 });
    expect(fake.adjusted).toEqual([{ key: 'default', amounts: [0, -1_500] }]);
    b.schedule(task('next'), { cost: { requests: 1, tokens: 1_000 } });
    await clock.advanceAsync(1_000);
    // 500 left, 500 more refill in 250 ms: not at once, as the 1,500 credited would have let it.
    expect(startsOf('next')).toEqual([1_250]);
    // One reserved after the bucket was last full (empty at 1,250 ms, full at 2,250) is given
    // back whole.
    await clock.advanceAsync(250);
    a.schedule(task('last'), { cost: { requests: 1, tokens: 2_000 } });
    await flushMicrotasks();
    expect(startsOf('last')).toEqual([2_250]);
    a.adjust('default', { tokens: -1_000 }, { startedAt: 2_250 });
    b.schedule(task('after'), { cost: { requests: 1, tokens: 1_000 } });
    await flushMicrotasks();
    expect(startsOf('after')).toEqual([2_250]);
  });

  it('charges more through the store and holds the next task until the debt is paid', async () => {
    const { clock, pacer, task, startsOf } = shared();
    const one = pacer();
    one.schedule(task('first'), { cost: { requests: 1, tokens: 1_000 } });
    one.schedule(task('second'), { cost: { requests: 1, tokens: 1_000 } });
    await flushMicrotasks();
    expect(startsOf()).toEqual([0, 0]);
    one.adjust('default', { tokens: 500 }); // the first used 1,500
    one.schedule(task('third'), { cost: { requests: 1, tokens: 1_000 } });
    await clock.advanceAsync(2_000);
    expect(startsOf('third')).toEqual([750]);
  });

  it('takes a count in a unit for that unit alone, and one in a unit it lacks for nothing', async () => {
    const { clock, fake, pacer, task, startsOf } = shared();
    const one = pacer();
    one.observe('default', { kind: 'quota', remaining: 0, resetMs: 500, unit: 'tokens' });
    one.schedule(task('no tokens'), { cost: { requests: 1, tokens: 0 } });
    one.schedule(task('tokens'), { cost: { requests: 1, tokens: 100 } });
    await clock.advanceAsync(1_000);
    // A count of 0 blocks the key until its reset (as in memory): both wait for it; the
    // requests' credit was not lowered, so they go together then.
    expect(startsOf()).toEqual([500, 500]);
    // A pacer whose key counts requests only is not blocked by a count of tokens.
    const plain = createPacer({ limits: perSecond(2), clock, store: fake.store });
    plain.observe('p', { kind: 'quota', remaining: 0, resetMs: 5_000, unit: 'tokens' });
    plain.schedule(task('plain'), { key: 'p' });
    await flushMicrotasks();
    expect(startsOf('plain')).toEqual([clock.now()]);
  });

  it('paces every client by the tokens policy one of them heard the server advertise', async () => {
    // Both configured ten times too generously on tokens; only `a` heard the server: 2,000 a
    // second. `b`'s calls are then spread at that rate: 1,000 tokens every 500.25 ms (a window
    // and a late client's credit, at most a token's time, per 2,000), at the next whole ms.
    const generous = { requests: perSecond(10), tokens: perSecond(20_000) };
    const { pacer, clock, task, startsOf } = shared({ limits: generous });
    const [a, b] = [pacer(), pacer()];
    a.observe('default', { kind: 'policy', limit: 2_000, windowMs: 1_000, unit: 'tokens' });
    await flushMicrotasks();
    for (let i = 0; i < 3; i++) {
      b.schedule(task(`b${i}`), { cost: { requests: 1, tokens: 1_000 } });
    }
    await clock.advanceAsync(2_000);
    expect(startsOf('b')).toEqual([0, 501, 1_002]);
  });

  it('judges maxWaitMs by the slowest unit, from the store', async () => {
    const { clock, pacer, task, startsOf } = shared({ limits: llm, maxWaitMs: 1_000 });
    const one = pacer();
    const outcomes: string[] = [];
    for (let i = 0; i < 4; i++) {
      one.schedule(task(`t${i}`), { cost: { requests: 1, tokens: 1_600 } }).then(
        () => outcomes.push(`t${i} ran`),
        (error: Error) => outcomes.push(`t${i} ${error.name}`),
      );
    }
    await clock.advanceAsync(2_000);
    expect(startsOf()).toEqual([0, 600]);
    expect(outcomes.sort()).toEqual(['t0 ran', 't1 ran', 't2 RateLimitError', 't3 RateLimitError']);
  });

  it("projects no start for a store's key (its state is the store's), and reports the start", async () => {
    const { clock, pacer, task } = shared();
    const one = pacer();
    one.schedule(task('big'), { cost: { requests: 1, tokens: 2_000 } });
    const reports: TaskProgress[] = [];
    one.schedule(task('next'), {
      cost: { requests: 1, tokens: 100 },
      onProgress: (progress) => reports.push(progress),
    });
    await clock.advanceAsync(1_000);
    expect(reports).toEqual([{ state: 'queued', startAt: undefined }, { state: 'started' }]);
  });

  it('refuses `arrivalSafe` in a unit (it counts until each answer, in memory only)', () => {
    const { fake, clock } = shared();
    const limits = {
      requests: perSecond(10),
      tokens: { ...perSecond(2_000), algorithm: arrivalSafe },
    };
    expect(() => createPacer({ limits, clock, store: fake.store })).toThrow(
      '`limits.tokens` counts with `arrivalSafe`',
    );
  });

  it('never lets the pacers of one store spend more of any unit than it allows', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            client: fc.integer({ min: 0, max: 2 }),
            tokens: fc.integer({ min: 0, max: 1_500 }),
            afterMs: fc.integer({ min: 0, max: 300 }),
          }),
          { minLength: 1, maxLength: 40 },
        ),
        fc.boolean(),
        async (calls, synchronous) => {
          const { clock, fake, pacer } = shared({ limits: llm }, { synchronous });
          const pacers = [pacer(), pacer(), pacer()];
          const done: Promise<unknown>[] = [];
          for (const { client, tokens, afterMs } of calls) {
            const cost = { requests: 1, tokens };
            done.push((pacers[client] as Pacer).schedule(() => {}, { cost }));
            await clock.advanceAsync(afterMs);
          }
          await clock.advanceAsync(60_000);
          await Promise.all(done);
          expect(fake.grants).toHaveLength(calls.length);
          // A token bucket of 2,000 refilled at 2 a ms, and one of 10 requests at 1 per 100 ms:
          // whatever started in any span took at most a full bucket plus the span's refill.
          const grants = fake.grants.map(({ at, amounts }) => ({
            at,
            amounts: amounts as readonly number[],
          }));
          for (const from of grants) {
            let requests = 0;
            let tokens = 0;
            for (const grant of grants) {
              if (grant.at < from.at) continue;
              requests += grant.amounts[0] ?? 0;
              tokens += grant.amounts[1] ?? 0;
              const span = grant.at - from.at;
              expect(requests).toBeLessThanOrEqual(10 + span / 100 + 1e-6);
              expect(tokens).toBeLessThanOrEqual(2_000 + span * 2 + 1e-6);
            }
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
