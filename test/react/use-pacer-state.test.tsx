// @vitest-environment jsdom
import { act, cleanup, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPacer, type Pacer } from '../../src/pacer/index.js';
import { PacerProvider, shallowEqual, usePacerState } from '../../src/react/index.js';
import { createManualClock } from '../../src/testing/index.js';

afterEach(() => {
  cleanup();
  vi.restoreAllMocks();
});

function setup() {
  const clock = createManualClock();
  const pacer = createPacer({ limits: { limit: 1, windowMs: 1000 }, clock });
  return { clock, pacer };
}

interface Props {
  readonly pacer: Pacer;
  readonly onRender?: () => void;
}

function Whole({ pacer }: Props) {
  const state = usePacerState(pacer);
  return <p>{`queued ${state.queued}, admitted ${state.admitted}`}</p>;
}

function Queued({ pacer, onRender }: Props) {
  onRender?.();
  const queued = usePacerState(pacer, (state) => state.queued);
  return <p>{`queued ${queued}`}</p>;
}

function Busy({ pacer, onRender }: Props) {
  onRender?.();
  const { queued, paused } = usePacerState(
    pacer,
    (state) => ({ queued: state.queued, paused: state.paused }),
    shallowEqual,
  );
  return <p>{`${queued} ${paused}`}</p>;
}

function Inline({ pacer, onRender, tick }: Props & { readonly tick: number }) {
  onRender?.();
  const selected = usePacerState(pacer, (state) => [state.queued], shallowEqual);
  return <p>{`${tick}:${selected.join()}`}</p>;
}

function Admitted() {
  return <p>{`admitted ${usePacerState(undefined, (state) => state.admitted)}`}</p>;
}

function Orphan() {
  usePacerState();
  return null;
}

describe('usePacerState', () => {
  it('renders the whole snapshot and follows every change', async () => {
    const { clock, pacer } = setup();
    render(<Whole pacer={pacer} />);
    expect(screen.getByText('queued 0, admitted 0')).toBeTruthy();
    act(() => {
      void pacer.schedule(() => {});
      void pacer.schedule(() => {});
    });
    expect(screen.getByText('queued 1, admitted 1')).toBeTruthy();
    await act(() => clock.advanceAsync(1000));
    expect(screen.getByText('queued 0, admitted 2')).toBeTruthy();
  });

  it('re-renders a component only when its selected slice changes', async () => {
    const { clock, pacer } = setup();
    let renders = 0;
    render(<Queued pacer={pacer} onRender={() => renders++} />);
    expect(renders).toBe(1);
    // `admitted` changes, `queued` does not: no render.
    act(() => {
      void pacer.schedule(() => {});
    });
    expect(renders).toBe(1);
    act(() => {
      void pacer.schedule(() => {});
    });
    expect(renders).toBe(2);
    expect(screen.getByText('queued 1')).toBeTruthy();
    await act(() => clock.advanceAsync(1000));
    expect(renders).toBe(3);
    expect(screen.getByText('queued 0')).toBeTruthy();
    // Denials change `denied` only.
    act(() => {
      pacer.tryAcquire();
      pacer.tryAcquire();
    });
    expect(renders).toBe(3);
  });

  it('with shallowEqual, a selector that builds an object renders only on a real change', () => {
    const { pacer } = setup();
    let renders = 0;
    render(<Busy pacer={pacer} onRender={() => renders++} />);
    act(() => {
      void pacer.schedule(() => {});
    });
    expect(renders).toBe(1);
    act(() => pacer.pause());
    expect(renders).toBe(2);
    expect(screen.getByText('0 true')).toBeTruthy();
  });

  it('an inline selector, new on every render, causes no extra render', () => {
    const { pacer } = setup();
    let renders = 0;
    const onRender = () => renders++;
    const { rerender } = render(<Inline pacer={pacer} onRender={onRender} tick={1} />);
    rerender(<Inline pacer={pacer} onRender={onRender} tick={2} />);
    expect(renders).toBe(2);
    act(() => {
      void pacer.schedule(() => {});
    });
    expect(renders).toBe(2);
  });

  it('reads the pacer of <PacerProvider> when given none', () => {
    const { pacer } = setup();
    render(
      <PacerProvider pacer={pacer}>
        <Admitted />
      </PacerProvider>,
    );
    act(() => {
      void pacer.schedule(() => {});
    });
    expect(screen.getByText('admitted 1')).toBeTruthy();
  });

  it('says which hook found no pacer, and how to give it one', () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    expect(() => render(<Orphan />)).toThrow(
      /usePacerState found no pacer: wrap the tree in <PacerProvider/,
    );
  });
});
