import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createPacer, type PacerClock, perSecond } from '../../src/index.js';
import { realClock } from '../../src/pacer/real-clock.js';
import { createManualClock } from '../../src/testing/index.js';
import { gate } from './support.js';

/**
 * A browser page, faked just enough, with every source of time in the test's hands: the
 * ticker (`performance.now`), the timers (vitest's fakes) and the message queue (delivered
 * only by `deliver()`). `stall` moves the ticker without firing a timer: a hidden page's
 * throttled timer that has not woken yet.
 */
const posted: (() => void)[] = [];
class FakeChannel {
  readonly port1: { onmessage: (() => void) | null } = { onmessage: null };
  readonly port2 = { postMessage: () => posted.push(() => this.port1.onmessage?.()) };
}
/** Runs every queued message, each in its own "task", as the event loop would. */
function deliver(): number {
  let count = 0;
  while (posted.length > 0) {
    posted.shift()?.();
    count++;
  }
  return count;
}

let now = 0;
let page: EventTarget & { visibilityState: DocumentVisibilityState };
let win: EventTarget;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  now = 1_000;
  vi.spyOn(performance, 'now').mockImplementation(() => now);
  page = Object.assign(new EventTarget(), { visibilityState: 'hidden' as DocumentVisibilityState });
  win = new EventTarget();
  vi.stubGlobal('document', page);
  vi.stubGlobal('MessageChannel', FakeChannel);
  vi.stubGlobal('addEventListener', win.addEventListener.bind(win));
  vi.stubGlobal('removeEventListener', win.removeEventListener.bind(win));
});

afterEach(() => {
  deliver();
  vi.runOnlyPendingTimers();
  vi.useRealTimers();
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});

function elapse(ms: number): void {
  now += ms;
  vi.advanceTimersByTime(ms);
}

function stall(ms: number): void {
  now += ms;
}

function become(state: DocumentVisibilityState): void {
  page.visibilityState = state;
  page.dispatchEvent(new Event('visibilitychange'));
}

describe('the default clock in a page', () => {
  it('arms its timer in a message task, never where it was asked', () => {
    const fired = vi.fn();
    realClock.setTimeout(fired, 100);
    expect(vi.getTimerCount()).toBe(0);
    expect(deliver()).toBe(1);
    expect(vi.getTimerCount()).toBe(1);
    elapse(99);
    expect(fired).not.toHaveBeenCalled();
    elapse(1);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it('re-arms from its own callback through another hop, so the timers never form a chain', () => {
    const armedInside: number[] = [];
    const fire = () => {
      if (armedInside.length < 6) realClock.setTimeout(fire, 50);
      armedInside.push(vi.getTimerCount());
    };
    realClock.setTimeout(fire, 50);
    for (let round = 0; round < 6; round++) {
      expect(deliver()).toBe(1);
      elapse(50);
    }
    // Inside each callback no timer was pending: the next one waited for its message.
    expect(armedInside).toEqual([0, 0, 0, 0, 0, 0]);
    expect(posted).toHaveLength(1);
    deliver();
    elapse(50);
    expect(armedInside).toHaveLength(7);
  });

  it('keeps the due time across the hop, and fires in the message task once it has passed', () => {
    const fired = vi.fn();
    realClock.setTimeout(fired, 100);
    stall(60);
    deliver();
    elapse(39);
    expect(fired).not.toHaveBeenCalled();
    elapse(1);
    expect(fired).toHaveBeenCalledTimes(1);

    const late = vi.fn();
    realClock.setTimeout(late, 5);
    stall(10);
    deliver();
    expect(late).toHaveBeenCalledTimes(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('cancels a wait before its hop and after it', () => {
    const early = vi.fn();
    const later = vi.fn();
    const first = realClock.setTimeout(early, 10);
    realClock.clearTimeout(first);
    const second = realClock.setTimeout(later, 10);
    deliver();
    expect(vi.getTimerCount()).toBe(1);
    realClock.clearTimeout(second);
    expect(vi.getTimerCount()).toBe(0);
    elapse(50);
    expect(early).not.toHaveBeenCalled();
    expect(later).not.toHaveBeenCalled();
  });

  it('listens for the page coming back only while a wait is armed', () => {
    const onPage = vi.spyOn(page, 'addEventListener');
    const offPage = vi.spyOn(page, 'removeEventListener');
    const first = realClock.setTimeout(() => {}, 100);
    realClock.setTimeout(() => {}, 200);
    expect(onPage.mock.calls.map(([type]) => type)).toEqual(['visibilitychange', 'resume']);
    realClock.clearTimeout(first);
    expect(offPage).not.toHaveBeenCalled();
    deliver();
    elapse(200);
    expect(offPage.mock.calls.map(([type]) => type)).toEqual(['visibilitychange', 'resume']);
    expect(onPage).toHaveBeenCalledTimes(2);
  });

  it('fires the waits already due when the page becomes visible, and only those', () => {
    const soon = vi.fn();
    const later = vi.fn();
    realClock.setTimeout(soon, 100);
    realClock.setTimeout(later, 300);
    deliver();
    stall(50);
    become('hidden');
    stall(100);
    expect(soon).not.toHaveBeenCalled();
    become('visible');
    expect(soon).toHaveBeenCalledTimes(1);
    expect(later).not.toHaveBeenCalled();
    // The throttled timer of the wait that fired is gone; the other keeps its own.
    expect(vi.getTimerCount()).toBe(1);
    elapse(300); // its timer wakes, late as a throttled one does
    expect(later).toHaveBeenCalledTimes(1);
    expect(soon).toHaveBeenCalledTimes(1);
  });

  it('catches up on `online` and on `resume` (after a freeze) too, even before the hop', () => {
    const first = vi.fn();
    const second = vi.fn();
    realClock.setTimeout(first, 10);
    stall(10);
    win.dispatchEvent(new Event('online'));
    expect(first).toHaveBeenCalledTimes(1);
    realClock.setTimeout(second, 10);
    stall(10);
    page.dispatchEvent(new Event('resume'));
    expect(second).toHaveBeenCalledTimes(1);
    deliver();
    expect(first).toHaveBeenCalledTimes(1);
    expect(second).toHaveBeenCalledTimes(1);
  });
});

describe('the default clock in a visible page', () => {
  it('arms the timer at once, so fake timers (jsdom) see it as before', () => {
    page.visibilityState = 'visible';
    const fired = vi.fn();
    realClock.setTimeout(fired, 100);
    expect(vi.getTimerCount()).toBe(1);
    expect(posted).toHaveLength(0);
    elapse(100);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it('never fires a wait already due from inside the call that arms it', () => {
    page.visibilityState = 'visible';
    const fired = vi.fn();
    realClock.setTimeout(fired, -5);
    expect(fired).not.toHaveBeenCalled();
    elapse(0);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it('re-arms a wait in the task of the page turning hidden, out of the chain it was armed in', () => {
    page.visibilityState = 'visible';
    const fired = vi.fn();
    const set = vi.spyOn(globalThis, 'setTimeout');
    realClock.setTimeout(fired, 100);
    elapse(30);
    become('hidden');
    expect(set).toHaveBeenCalledTimes(2);
    expect(set).toHaveBeenLastCalledWith(expect.any(Function), 70);
    expect(vi.getTimerCount()).toBe(1);
    elapse(70);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it('lets a pacer on the default clock run on fake timers alone', async () => {
    page.visibilityState = 'visible';
    const pacer = createPacer({ limits: perSecond(2) });
    const starts: number[] = [];
    const tasks = [0, 1, 2].map(() => pacer.schedule(() => starts.push(performance.now())));
    elapse(499);
    expect(starts).toEqual([1_000, 1_000]);
    elapse(1);
    expect(starts).toEqual([1_000, 1_000, 1_500]);
    await Promise.all(tasks);
    expect(posted).toHaveLength(0);
  });
});

describe('a pacer in a hidden page', () => {
  it('starts a due task when the page becomes visible, though its throttled timer is asleep, never early', async () => {
    const pacer = createPacer({ limits: perSecond(2) });
    const starts: number[] = [];
    const run = () => starts.push(performance.now());
    const tasks = [pacer.schedule(run), pacer.schedule(run), pacer.schedule(run)];
    expect(starts).toEqual([1_000, 1_000]);
    deliver();
    stall(400);
    win.dispatchEvent(new Event('online'));
    become('visible');
    expect(starts).toHaveLength(2);
    stall(100);
    become('visible');
    expect(starts).toEqual([1_000, 1_000, 1_500]);
    await Promise.all(tasks);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('keeps a manual clock exact: no hop, no listeners', () => {
    const onPage = vi.spyOn(page, 'addEventListener');
    const clock = createManualClock();
    const pacer = createPacer({ limits: perSecond(2), clock });
    const starts: number[] = [];
    for (let n = 0; n < 3; n++) pacer.schedule(() => starts.push(clock.now()));
    expect(clock.pendingTimers).toBe(1);
    clock.advance(500);
    expect(starts).toEqual([0, 0, 500]);
    expect(onPage).not.toHaveBeenCalled();
    expect(posted).toHaveLength(0);
  });
});

describe('a task that settles', () => {
  it('starts the tasks due by then, while the timer has not woken (a throttled one)', async () => {
    let time = 0;
    const asleep: PacerClock = { now: () => time, setTimeout: () => 0, clearTimeout: () => {} };
    const pacer = createPacer({ limits: perSecond(1), concurrency: 2, clock: asleep });
    const first = gate();
    const starts: number[] = [];
    void pacer.schedule(() => {
      starts.push(time);
      return first.promise;
    });
    const next = pacer.schedule(() => starts.push(time));
    time = 1_000.5;
    await Promise.resolve();
    expect(starts).toEqual([0]);
    first.open();
    await next;
    expect(starts).toEqual([0, 1_000.5]);
  });
});
