import { describe, expect, it } from 'vitest';
import { perSecond } from '../../src/core/policy.js';
import type { TaskProgress } from '../../src/pacer/index.js';
import { harness } from './support.js';

/** 10 requests and 2,000 tokens per second. */
const llm = { requests: perSecond(10), tokens: perSecond(2_000) };

describe('a pacer with limits per unit', () => {
  it('starts each task once every unit has its amount, in line order', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: llm });
    for (const tokens of [1_500, 1_000, 100, 1_000]) {
      pacer.schedule(task(`t${tokens}`), { cost: { requests: 1, tokens } });
    }
    await clock.advanceAsync(2_000);
    // 1,500 at once; 1,000 needs 500 more (250 ms); 100 waits behind it, then 50 ms; 1,000 more
    // needs 500 ms beyond that.
    expect(startsOf()).toEqual([0, 250, 300, 800]);
  });

  it('waits for the request unit too, and counts a plain cost in it', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: llm });
    for (let i = 0; i < 11; i++)
      pacer.schedule(task(`t${i}`), { cost: { tokens: 1, requests: 1 } });
    pacer.schedule(task('plain'));
    await clock.advanceAsync(1_000);
    expect(startsOf()).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 100, 200]);
  });

  it('gives back tokens on settle and starts the next task at once', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: llm });
    pacer.schedule(task('big'), { cost: { requests: 1, tokens: 1_800 } });
    pacer.schedule(task('next'), { cost: { requests: 1, tokens: 1_000 } });
    await clock.advanceAsync(10);
    expect(startsOf('next')).toEqual([]);
    pacer.adjust('default', { tokens: -1_300 }); // the big one used 500
    expect(startsOf('next')).toEqual([10]);
    await clock.advanceAsync(1_000);
    expect(startsOf()).toEqual([0, 10]);
  });

  it('charges more on settle and holds the next task until the debt is paid', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: llm });
    pacer.schedule(task('first'), { cost: { requests: 1, tokens: 1_000 } });
    pacer.schedule(task('second'), { cost: { requests: 1, tokens: 1_000 } });
    expect(startsOf()).toEqual([0, 0]);
    pacer.schedule(task('third'), { cost: { requests: 1, tokens: 1_000 } });
    pacer.adjust('default', { tokens: 500 }); // the first used 1,500
    await clock.advanceAsync(2_000);
    expect(startsOf('third')).toEqual([750]);
  });

  it('judges maxWaitMs by the slowest unit: a line of long prompts waits for its tokens', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: llm, maxWaitMs: 1_000 });
    const outcomes: string[] = [];
    for (let i = 0; i < 4; i++) {
      pacer.schedule(task(`t${i}`), { cost: { requests: 1, tokens: 1_600 } }).then(
        () => outcomes.push(`t${i} ran`),
        (error: Error) => outcomes.push(`t${i} ${error.name}`),
      );
    }
    // 1,600 tokens each at 2,000 a second: the second waits 600 ms; the third 1,400 ms, more than
    // maxWaitMs, and so does the fourth (behind the same two, the third being rejected). By their
    // requests alone (10 a second) all four would start within 300 ms.
    await clock.advanceAsync(2_000);
    expect(startsOf()).toEqual([0, 600]);
    expect(outcomes.sort()).toEqual(['t0 ran', 't1 ran', 't2 RateLimitError', 't3 RateLimitError']);
  });

  it('shows each unit in inspect', () => {
    const { pacer } = harness({ limits: llm });
    pacer.schedule(() => {}, { key: 'api', cost: { requests: 1, tokens: 500 } });
    expect(pacer.inspect('api')).toMatchObject({
      level: 9,
      capacity: 10,
      units: { requests: { level: 9 }, tokens: { level: 1_500, capacity: 2_000 } },
    });
    expect(pacer.inspect('other').units?.['tokens']?.level).toBe(2_000);
    expect(harness({ limits: perSecond(1) }).pacer.inspect('a')).not.toHaveProperty('units');
  });

  it('rejects a task whose amount no unit can ever hold, and a unit the key lacks', async () => {
    const { pacer } = harness({ limits: llm });
    await expect(pacer.schedule(() => {}, { cost: { tokens: 2_001 } })).rejects.toThrow(
      /2001 tokens can never be allowed/,
    );
    await expect(pacer.schedule(() => {}, { cost: { tokns: 1 } })).rejects.toThrow(
      /Unknown unit `tokns`/,
    );
    expect(() => pacer.schedule(() => {}, { cost: { tokens: -1 } })).toThrow(
      '[fetch-pacer] Expected `cost.tokens` to be an integer >= 0, got `-1` (number)',
    );
    expect(() => pacer.adjust('default', { tokens: Number.NaN })).toThrow(/`delta.tokens`/);
    expect(() => pacer.adjust('default', { tokens: -1 }, { startedAt: Number.NaN })).toThrow(
      '[fetch-pacer] Expected `reserved.startedAt` to be a finite number, got `NaN` (number)',
    );
    expect(() =>
      pacer.adjust('default', { tokens: -1 }, { startedAt: 0, answeredAt: '1' as never }),
    ).toThrow(
      "[fetch-pacer] Expected `reserved.answeredAt` to be a finite number, got `'1'` (string)",
    );
  });
});

describe('onProgress with limits per unit', () => {
  const recorder = () => {
    const reports: TaskProgress[] = [];
    return { reports, onProgress: (progress: TaskProgress) => reports.push(progress) };
  };

  it('projects each task to the start the slowest unit gives it, and keeps to it', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: llm });
    const listeners = [1_500, 1_000, 100, 1_000].map((tokens) => {
      const listener = recorder();
      pacer.schedule(task(`t${tokens}`), {
        cost: { requests: 1, tokens },
        onProgress: listener.onProgress,
      });
      return listener;
    });
    // Projected at once, before anything ran: the same starts as they then get.
    expect(listeners.map(({ reports }) => reports[0])).toEqual([
      { state: 'started' },
      { state: 'queued', startAt: 250 },
      { state: 'queued', startAt: 300 },
      { state: 'queued', startAt: 800 },
    ]);
    await clock.advanceAsync(2_000);
    expect(startsOf()).toEqual([0, 250, 300, 800]);
    // Each was told once where it stands, then that it started: the projection held.
    for (const { reports } of listeners.slice(1)) expect(reports).toHaveLength(2);
  });

  it('moves the projection when tokens are given back, and counts a plain cost in requests', async () => {
    const { clock, pacer, task } = harness({ limits: llm });
    pacer.schedule(task('big'), { cost: { requests: 1, tokens: 2_000 } });
    const next = recorder();
    pacer.schedule(task('next'), {
      cost: { requests: 1, tokens: 1_000 },
      onProgress: next.onProgress,
    });
    const plain = recorder();
    pacer.schedule(task('plain'), { onProgress: plain.onProgress });
    expect(next.reports).toEqual([{ state: 'queued', startAt: 500 }]);
    // Behind `next` in line, with the requests it needs at hand: right after it.
    expect(plain.reports).toEqual([{ state: 'queued', startAt: 500 }]);
    await clock.advanceAsync(100);
    pacer.adjust('default', { tokens: -1_000 }); // the big one used 1,000
    expect(next.reports.at(-1)).toEqual({ state: 'started' });
    expect(plain.reports.at(-1)).toEqual({ state: 'started' });
  });
});
