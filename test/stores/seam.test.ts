import { describe, expect, it, vi } from 'vitest';
import { perSecond } from '../../src/core/policy.js';
import { createPacedFetch } from '../../src/http/index.js';
import { slidingLog, tokenBucket } from '../../src/index.js';
import {
  createPacer,
  defineStore,
  isRateLimitError,
  type PacerOptions,
} from '../../src/pacer/index.js';
import { isPacerDisposedError } from '../../src/pacer/errors.js';
import { createManualClock } from '../../src/testing/index.js';
import { gate, outcome, flushMicrotasks as settle } from '../pacer/support.js';
import { fakeStore } from '../support/fake-store.js';

/** A pacer on a manual clock with a fake async store on the same clock, answered by hand. */
function setup(
  options: Omit<PacerOptions, 'clock' | 'store'> = { limits: perSecond(2) },
  storeOptions: { answer?: 'manual' | 'auto'; batches?: boolean; synchronous?: boolean } = {},
) {
  const clock = createManualClock();
  const fake = fakeStore({ now: clock.now, answer: 'manual', ...storeOptions });
  const pacer = createPacer({ ...options, clock, store: fake.store });
  const starts: { label: string; at: number }[] = [];
  const task = (label: string) => () => {
    starts.push({ label, at: clock.now() });
    return label;
  };
  const startsOf = (prefix = '') =>
    starts.filter((start) => start.label.startsWith(prefix)).map((start) => start.at);
  return { clock, pacer, fake, starts, task, startsOf };
}

/** Answers the store's calls out, then the ones those answers made: the peeks, then a take. */
async function answerTwice(fake: ReturnType<typeof fakeStore>): Promise<void> {
  fake.answerAll();
  await settle();
  fake.answerAll();
  await settle();
}

/** Another client of the store blocks `default` for `ms`, the store's policy one per second. */
function blockElsewhere(fake: ReturnType<typeof fakeStore>, ms: number): void {
  fake.blockElsewhere('default', ms, [
    { limit: 1, windowMs: 1_000, algorithm: 'token-bucket', counting: tokenBucket, capacity: 1 },
  ]);
}

describe('the store seam: a pacer with an asynchronous store', () => {
  it("passes the server's signal to the store as it came, so its other clients share it", async () => {
    const { pacer, fake, clock } = setup();
    const signal = { kind: 'quota', remaining: 0, resetMs: 1_000 } as const;
    pacer.observe('k', signal);
    const refusal = { kind: 'refusal', retryAfterMs: 2_000 } as const;
    pacer.observe('r', refusal);
    expect(fake.observed).toEqual([
      { key: 'k', signal },
      { key: 'r', signal: refusal },
    ]);
    expect(fake.observed[0]?.signal).toBe(signal);
    // Another pacer on the same store finds both keys blocked.
    const other = createPacer({ limits: perSecond(2), clock, store: fake.store });
    const k = outcome(other.schedule(() => 'k', { key: 'k' }));
    const r = outcome(other.schedule(() => 'r', { key: 'r' }));
    fake.answerAll();
    await settle();
    expect([k.status, r.status]).toEqual(['pending', 'pending']);
    await clock.advanceAsync(2_000);
    fake.answerAll();
    await settle();
    expect([k.status, r.status]).toEqual(['resolved', 'resolved']);
  });

  it('starts a task only once the store granted it, and never before', async () => {
    const { pacer, fake, starts, task } = setup();
    const first = outcome(pacer.schedule(task('a')));
    expect(fake.pending).toHaveLength(1);
    expect(pacer.getSnapshot()).toMatchObject({ queued: 1, inFlight: 0, admitted: 0 });
    await settle();
    expect(starts).toHaveLength(0);
    fake.answerAll();
    await settle();
    expect(starts.map((s) => s.label)).toEqual(['a']);
    expect(first.status).toBe('resolved');
    expect(pacer.getSnapshot()).toMatchObject({ queued: 0, admitted: 1 });
  });

  it('keeps FIFO per key and asks for a key once at a time, batching its head tasks', async () => {
    const { pacer, fake, clock, startsOf, task } = setup({ limits: perSecond(2) });
    for (let i = 0; i < 5; i++) pacer.schedule(task(`t${i}`));
    // The first is asked for at once; the others wait for that answer, not five calls at once.
    expect(fake.pending.map((p) => p.costs)).toEqual([[1]]);
    fake.answerAll();
    await settle();
    // Then one call for the line's head tasks, which stops at the first denial (queue mode).
    expect(fake.pending.map((p) => [p.costs, p.stopAtDenial])).toEqual([[[1, 1, 1, 1], true]]);
    fake.answerAll();
    await settle();
    // Two permits: two started, the third was denied and the key waits 500 ms for it.
    expect(startsOf('t')).toEqual([0, 0]);
    expect(fake.pending).toHaveLength(0);
    expect(pacer.inspect().nextStartAt).toBe(500);
    for (let round = 0; round < 6; round++) {
      await clock.advanceAsync(
        clock.nextTimerAt === undefined ? 0 : clock.nextTimerAt - clock.now(),
      );
      fake.answerAll();
      await settle();
    }
    expect(startsOf('t')).toEqual([0, 0, 500, 1000, 1500]);
    expect(fake.overlaps).toBe(0);
  });

  it('takes one by one from a store without takeMany', async () => {
    const { pacer, fake, starts, task } = setup({ limits: perSecond(5) }, { batches: false });
    for (let i = 0; i < 3; i++) pacer.schedule(task(`t${i}`));
    for (let i = 0; i < 3; i++) {
      expect(fake.pending.map((p) => [p.kind, p.costs])).toEqual([['take', [1]]]);
      fake.answerAll();
      await settle();
    }
    expect(starts.map((s) => s.label)).toEqual(['t0', 't1', 't2']);
  });

  it('serves a higher priority first, and starts a task granted before it arrived', async () => {
    const { pacer, fake, starts, task } = setup({ limits: perSecond(10) }, { batches: false });
    pacer.schedule(task('low1'));
    pacer.schedule(task('low2'));
    // low1 is being asked for when high arrives: its grant is still its own.
    pacer.schedule(task('high'), { priority: 1 });
    await answerTwice(fake);
    fake.answerAll();
    await settle();
    expect(starts.map((s) => s.label)).toEqual(['low1', 'high', 'low2']);
  });

  it('rejects an aborted task at once while its take is out, and gives its grant to nobody', async () => {
    const { pacer, fake, starts, task } = setup({ limits: perSecond(1) }, { batches: false });
    const controller = new AbortController();
    const aborted = outcome(pacer.schedule(task('aborted'), { signal: controller.signal }));
    const next = outcome(pacer.schedule(task('next')));
    expect(fake.pending).toHaveLength(1);
    controller.abort();
    // Out of the queue synchronously, before the store answered.
    expect(pacer.getSnapshot().queued).toBe(1);
    await settle();
    expect(aborted.status).toBe('rejected');
    expect(aborted.reason).toBe(controller.signal.reason);
    // The store grants the aborted task's permit: it is used by nobody (stores give none back).
    fake.answerAll();
    await settle();
    expect(starts).toHaveLength(0);
    expect(fake.grants).toHaveLength(1);
    // The next task is asked for at once, and waits its turn.
    expect(fake.pending).toHaveLength(1);
    fake.answerAll();
    await settle();
    expect(next.status).toBe('pending');
    expect(pacer.inspect().nextStartAt).toBe(1000);
  });

  it('rejects everything on dispose while a take is out, aborts the call, and ignores its answer', async () => {
    const { pacer, fake, starts, task, clock } = setup({ limits: perSecond(5) });
    const tasks = [0, 1, 2].map((i) => outcome(pacer.schedule(task(`t${i}`))));
    const call = fake.pending[0];
    expect(call?.call.signal.aborted).toBe(false);
    pacer.dispose();
    await settle();
    for (const t of tasks) expect(isPacerDisposedError(t.reason)).toBe(true);
    expect(call?.call.signal.aborted).toBe(true);
    expect(fake.listeners).toBe(0);
    fake.answerAll();
    await settle();
    expect(starts).toHaveLength(0);
    expect(clock.pendingTimers).toBe(0);
    await expect(pacer.onIdle()).resolves.toBeUndefined();
  });

  it('rejects in reject mode once the store denied, with the decision', async () => {
    const { pacer, fake, starts, task } = setup({ limits: perSecond(2), mode: 'reject' });
    const results = [0, 1, 2, 3].map((i) => outcome(pacer.schedule(task(`t${i}`))));
    fake.answerAll();
    await settle();
    // Every task is decided on its own: a denial does not stop the call (reject mode).
    expect(fake.pending.map((p) => [p.costs, p.stopAtDenial])).toEqual([[[1, 1, 1], false]]);
    fake.answerAll();
    await settle();
    expect(starts.map((s) => s.label)).toEqual(['t0', 't1']);
    expect(results.map((r) => r.status)).toEqual(['resolved', 'resolved', 'rejected', 'rejected']);
    expect(isRateLimitError(results[2]?.reason)).toBe(true);
    expect(results[2]?.reason).toMatchObject({ retryAfterMs: 500 });
    expect(pacer.getSnapshot()).toMatchObject({ admitted: 2, denied: 2 });
  });

  it('holds a concurrency slot for each task being asked for', async () => {
    const { pacer, fake, task } = setup({ limits: perSecond(100), concurrency: 2 });
    const running = gate();
    for (let i = 0; i < 4; i++) pacer.schedule(() => running.promise);
    pacer.schedule(task('x'));
    // The first call holds one slot, so the next may ask for one task only.
    expect(fake.pending[0]?.costs).toEqual([1]);
    fake.answerAll();
    await settle();
    expect(fake.pending.map((p) => p.costs)).toEqual([[1]]);
    fake.answerAll();
    await settle();
    expect(pacer.getSnapshot()).toMatchObject({ inFlight: 2, queued: 3 });
    expect(fake.pending).toHaveLength(0);
    // The first to finish frees one slot: one task is asked for; the key's call is then out.
    running.open();
    await settle();
    expect(fake.pending.map((p) => p.costs)).toEqual([[1]]);
    fake.answerAll();
    await settle();
    expect(fake.pending.map((p) => p.costs)).toEqual([[1]]);
  });

  it('rejects the tasks of a call the store failed, and asks again for the next', async () => {
    const { pacer, fake, task } = setup({ limits: perSecond(5) }, { batches: false });
    const failed = outcome(pacer.schedule(task('a')));
    const next = outcome(pacer.schedule(task('b')));
    const error = new Error('store down');
    fake.pending[0]?.fail(error);
    await settle();
    expect(failed.reason).toBe(error);
    expect(fake.pending).toHaveLength(1);
    fake.answerAll();
    await settle();
    expect(next.status).toBe('resolved');
  });

  it('starts nothing granted while paused, and asks again after resume', async () => {
    const { pacer, fake, starts, task } = setup({ limits: perSecond(5) });
    pacer.schedule(task('a'));
    pacer.pause();
    fake.answerAll();
    await settle();
    expect(starts).toHaveLength(0);
    expect(fake.pending).toHaveLength(0);
    pacer.resume();
    fake.answerAll();
    await settle();
    expect(starts.map((s) => s.label)).toEqual(['a']);
  });

  it('shares a block through the store, and starts nothing granted once the key is blocked', async () => {
    const { pacer, fake, starts, task, clock } = setup({ limits: perSecond(5) });
    pacer.schedule(task('a'));
    pacer.blockUntil('default', clock.now() + 2_000);
    expect(fake.blocks).toEqual([{ key: 'default', ms: 2_000 }]);
    expect(pacer.getSnapshot().blockedKeys).toEqual(['default']);
    // The take was out before the block: its grant is not used.
    fake.answerAll();
    await settle();
    expect(starts).toHaveLength(0);
    expect(pacer.inspect().nextStartAt).toBe(2_000);
    await clock.advanceAsync(2_000);
    fake.answerAll();
    await settle();
    expect(starts).toEqual([{ label: 'a', at: 2_000 }]);
  });

  it('hears a block made elsewhere, and a reset that lets a waiting task ask again', async () => {
    const { pacer, fake, starts, task, clock } = setup({ limits: perSecond(1) });
    pacer.schedule(task('a'));
    pacer.schedule(task('b'));
    await answerTwice(fake);
    expect(pacer.inspect().nextStartAt).toBe(1_000);
    blockElsewhere(fake, 3_000);
    expect(pacer.getSnapshot().blockedKeys).toEqual(['default']);
    expect(pacer.inspect().nextStartAt).toBe(3_000);
    await clock.advanceAsync(3_000);
    fake.answerAll();
    await settle();
    expect(starts.map((s) => [s.label, s.at])).toEqual([
      ['a', 0],
      ['b', 3_000],
    ]);
    pacer.schedule(task('c'));
    fake.answerAll();
    await settle();
    expect(pacer.inspect().nextStartAt).toBe(4_000);
    fake.resetElsewhere('default');
    // Asked again at once, not at 4 s.
    expect(fake.pending).toHaveLength(1);
    fake.answerAll();
    await settle();
    expect(starts.at(-1)).toEqual({ label: 'c', at: 3_000 });
  });

  it('judges maxWaitMs on the store word, one round trip after schedule', async () => {
    const { pacer, fake } = setup({ limits: perSecond(1), maxWaitMs: 1_500 });
    const tasks = [0, 1, 2, 3].map(() => outcome(pacer.schedule(() => 'ok')));
    // Peeks for each task, plus the take for the head.
    await answerTwice(fake);
    // One permit a second: the second waits 1 s, the third 2 s and the fourth 3 s.
    expect(tasks.map((t) => t.status)).toEqual(['resolved', 'pending', 'rejected', 'rejected']);
    expect(tasks[3]?.reason).toMatchObject({ maxWaitMs: 1_500 });
  });

  it('rejects a waiting task at once when a block made elsewhere ends past its maxWaitMs', async () => {
    const { pacer, fake, starts, task } = setup({ limits: perSecond(1), maxWaitMs: 2_000 });
    pacer.schedule(task('a'));
    const b = outcome(pacer.schedule(task('b')));
    await answerTwice(fake);
    // Due at 1 s, it may start by 2 s: another client's block until 3 s is past that.
    expect(pacer.inspect().nextStartAt).toBe(1_000);
    blockElsewhere(fake, 3_000);
    await settle();
    expect(b.status).toBe('rejected');
    expect(b.reason).toMatchObject({ maxWaitMs: 2_000, decision: { reason: 'blocked' } });
    expect(starts.map((s) => s.label)).toEqual(['a']);
    expect(pacer.getSnapshot()).toMatchObject({ queued: 0, denied: 1 });
  });

  it('throws from tryAcquire with an asynchronous store, and answers with a synchronous one', () => {
    const { pacer } = setup();
    expect(() => pacer.tryAcquire()).toThrow(/acquire/);
    const sync = setup({ limits: perSecond(1) }, { synchronous: true });
    expect(sync.pacer.tryAcquire().allowed).toBe(true);
    expect(sync.pacer.tryAcquire()).toMatchObject({ allowed: false, retryAfterMs: 1_000 });
    expect(sync.pacer.getSnapshot()).toMatchObject({ admitted: 1, denied: 1 });
  });

  it('runs a synchronous store inline: a task starts within schedule', () => {
    const { pacer, starts, task } = setup({ limits: perSecond(2) }, { synchronous: true });
    pacer.schedule(task('a'));
    pacer.schedule(task('b'));
    pacer.schedule(task('c'));
    expect(starts.map((s) => s.label)).toEqual(['a', 'b']);
    expect(pacer.inspect()).toMatchObject({ queued: 1, nextStartAt: 500, level: 0 });
  });

  it('refuses a policy the store cannot count when the pacer is made', () => {
    const clock = createManualClock();
    const { store } = fakeStore({ now: clock.now });
    expect(() =>
      createPacer({ limits: { limit: 5, windowMs: 1_000, algorithm: slidingLog }, store }),
    ).toThrow(/`tokenBucket` or `gcra`, got `slidingLog`/);
    expect(() => createPacer({ limits: perSecond(1), store: {} as never })).toThrow(TypeError);
    // A store of one's own goes through defineStore, which brings the code for stores.
    const bare = { take: store.take, peek: store.peek, block: store.block };
    expect(() => createPacer({ limits: perSecond(1), store: bare })).toThrow(/defineStore/);
    expect(() => createPacer({ limits: perSecond(1), store: defineStore(bare) })).not.toThrow();
  });

  it('passes a store through createPacedFetch, and refuses one next to a shared pacer', async () => {
    const clock = createManualClock();
    const fake = fakeStore({ now: clock.now });
    const fetch = vi.fn(async () => new Response('ok'));
    const paced = createPacedFetch({ limits: perSecond(5), store: fake.store, fetch, clock });
    const response = await paced('https://api.test/x');
    expect(await response.text()).toBe('ok');
    expect(fake.grants).toEqual([{ key: 'https://api.test', cost: 1, at: 0 }]);
    expect(() => createPacedFetch({ pacer: paced.pacer, store: fake.store })).toThrow(/store/);
  });
});
