// @vitest-environment jsdom
import { act, cleanup, render, screen } from '@testing-library/react';
import { renderToString } from 'react-dom/server';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createPacer, type Pacer } from '../../src/pacer/index.js';
import { useBucketLevel } from '../../src/react/index.js';
import { createManualClock, type ManualClock } from '../../src/testing/index.js';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['requestAnimationFrame', 'cancelAnimationFrame'] });
});
afterEach(() => {
  cleanup();
  vi.useRealTimers();
});

function setup(): { clock: ManualClock; pacer: Pacer } {
  const clock = createManualClock();
  // 4 permits, one back every 250 ms.
  const pacer = createPacer({ limits: { limit: 4, windowMs: 1000 }, clock });
  return { clock, pacer };
}

function Gauge({ pacer, label = 'gauge' }: { pacer: Pacer; label?: string }) {
  const { level, capacity } = useBucketLevel(pacer, 'api');
  return <p>{`${label} ${level.toFixed(2)}/${capacity}`}</p>;
}

function Counting({ pacer, onRender }: { pacer: Pacer; onRender: () => void }) {
  onRender();
  useBucketLevel(pacer, 'api');
  return null;
}

function Learned({ pacer }: { pacer: Pacer }) {
  const { learned } = useBucketLevel(pacer, 'api');
  return (
    <p>
      {learned === undefined ? 'nothing learned' : `learned ${learned.limit}/${learned.windowMs}`}
    </p>
  );
}

/** Runs the pending animation frame, as the browser would, inside act. */
function frame(): void {
  act(() => {
    vi.advanceTimersToNextFrame();
  });
}

function Tokens({ pacer }: { pacer: Pacer }) {
  const { units } = useBucketLevel(pacer, 'api');
  const tokens = units?.['tokens'];
  return <p>{`tokens ${tokens?.level.toFixed(0)}/${tokens?.capacity}`}</p>;
}

describe('useBucketLevel', () => {
  it('shows a full bucket and samples nothing while it stays full', () => {
    const { pacer } = setup();
    render(<Gauge pacer={pacer} />);
    expect(screen.getByText('gauge 4.00/4')).toBeTruthy();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('drains on admission, refills frame by frame, and stops sampling once full', () => {
    const { clock, pacer } = setup();
    render(<Gauge pacer={pacer} />);
    act(() => {
      pacer.tryAcquire('api');
      pacer.tryAcquire('api');
    });
    // The pacer's change wakes the sampler: one frame is pending.
    expect(vi.getTimerCount()).toBe(1);
    frame();
    expect(screen.getByText('gauge 2.00/4')).toBeTruthy();
    clock.advance(125);
    frame();
    expect(screen.getByText('gauge 2.50/4')).toBeTruthy();
    clock.advance(375);
    frame();
    expect(screen.getByText('gauge 4.00/4')).toBeTruthy();
    expect(vi.getTimerCount()).toBe(0);
    // And wakes again on the next admission.
    act(() => {
      pacer.tryAcquire('api');
    });
    frame();
    expect(screen.getByText('gauge 3.00/4')).toBeTruthy();
  });

  it('re-renders only when the level changes, not on every frame', () => {
    const { pacer } = setup();
    let renders = 0;
    render(<Counting pacer={pacer} onRender={() => renders++} />);
    act(() => {
      pacer.tryAcquire('api');
    });
    frame();
    const after = renders;
    // The clock has not moved: the same level, frame after frame.
    frame();
    frame();
    expect(renders).toBe(after);
  });

  it('re-renders when the key learns a policy, even one that leaves the level as it was', () => {
    const { clock, pacer } = setup();
    render(<Learned pacer={pacer} />);
    expect(screen.getByText('nothing learned')).toBeTruthy();
    act(() => {
      pacer.tryAcquire('api');
    });
    frame();
    // Looser than the key's own 4/s, and the clock stands still: level, capacity and limit stay
    // as they were, only `learned` is new.
    act(() => {
      pacer.observe('api', { kind: 'policy', remaining: 99, limit: 100, windowMs: 1000 });
    });
    frame();
    expect(clock.now()).toBe(0);
    expect(screen.getByText('learned 100/1000')).toBeTruthy();
  });

  it('runs one sampling loop for every gauge of a key, and stops it on unmount', () => {
    const { pacer } = setup();
    const { unmount } = render(
      <>
        <Gauge pacer={pacer} label="a" />
        <Gauge pacer={pacer} label="b" />
      </>,
    );
    act(() => {
      pacer.tryAcquire('api');
    });
    expect(vi.getTimerCount()).toBe(1);
    frame();
    expect(screen.getByText('a 3.00/4')).toBeTruthy();
    expect(screen.getByText('b 3.00/4')).toBeTruthy();
    unmount();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('catches up at once with a change made while no gauge watched', () => {
    const { pacer } = setup();
    const first = render(<Gauge pacer={pacer} />);
    first.unmount();
    pacer.tryAcquire('api');
    render(<Gauge pacer={pacer} />);
    expect(screen.getByText('gauge 3.00/4')).toBeTruthy();
  });

  it('renders a full, idle bucket on the server', () => {
    const { pacer } = setup();
    pacer.tryAcquire('api');
    expect(renderToString(<Gauge pacer={pacer} />)).toBe('<p>gauge 4.00/4</p>');
  });

  it('shows each unit of limits per unit, and samples while tokens refill', () => {
    const clock = createManualClock();
    const pacer = createPacer({
      limits: { requests: { limit: 10, windowMs: 1000 }, tokens: { limit: 1000, windowMs: 1000 } },
      clock,
    });
    render(<Tokens pacer={pacer} />);
    expect(screen.getByText('tokens 1000/1000')).toBeTruthy();
    act(() => {
      pacer.tryAcquire('api'); // a request, no tokens: only the main unit moves
      pacer.schedule(() => {}, { key: 'api', cost: { tokens: 600 } });
    });
    frame();
    expect(screen.getByText('tokens 400/1000')).toBeTruthy();
    // The requests are full again before the tokens: sampling goes on for the tokens.
    clock.advance(300);
    frame();
    expect(screen.getByText('tokens 700/1000')).toBeTruthy();
    clock.advance(300);
    frame();
    expect(screen.getByText('tokens 1000/1000')).toBeTruthy();
    expect(vi.getTimerCount()).toBe(0);
    expect(renderToString(<Tokens pacer={pacer} />)).toContain('tokens 1000/1000');
  });
});
