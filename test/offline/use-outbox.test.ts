// @vitest-environment jsdom
import { act, renderHook } from '@testing-library/react';
import { createElement } from 'react';
import { renderToString } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { createOutbox, memoryStorage, type Outbox } from '../../src/offline/index.js';
import { IDLE_OUTBOX_SNAPSHOT, useOutbox } from '../../src/react/use-outbox.js';
import { fakeNetwork, until } from './support.js';

function Pending({ box }: { box: Outbox }) {
  const state = useOutbox(box);
  return createElement('p', null, `ready ${state.ready}, pending ${state.pending}`);
}

function setup(online = false) {
  const network = fakeNetwork(online);
  const outbox = createOutbox({
    name: 'hook',
    fetch: async () => new Response(null, { status: 204 }),
    storage: memoryStorage(),
    network,
    locks: false,
  });
  return { outbox, network };
}

describe('useOutbox', () => {
  it('renders the snapshot and follows it as entries come and go', async () => {
    const { outbox, network } = setup();
    const { result } = renderHook(() => useOutbox(outbox));
    await act(() => until(() => outbox.getSnapshot().ready));
    expect(result.current).toBe(outbox.getSnapshot());
    expect(result.current).toMatchObject({ ready: true, pending: 0, online: false });
    await act(async () => {
      await outbox.enqueue('https://api.test/a', { method: 'POST', body: '1' });
      await outbox.enqueue('https://api.test/a', { method: 'POST', body: '2' });
    });
    expect(result.current.pending).toBe(2);
    await act(async () => {
      network.set(true);
      await until(() => outbox.getSnapshot().pending === 0);
    });
    expect(result.current).toMatchObject({ pending: 0, sent: 2, online: true });
    await outbox.close();
  });

  it('re-renders only when the selected value changes', async () => {
    const { outbox } = setup();
    let renders = 0;
    const { result } = renderHook(() => {
      renders++;
      return useOutbox(outbox, (state) => state.pending > 0);
    });
    await act(() => until(() => outbox.getSnapshot().ready));
    const settled = renders;
    expect(result.current).toBe(false);
    await act(async () => {
      await outbox.enqueue('https://api.test/a', { method: 'POST' });
    });
    expect(result.current).toBe(true);
    const afterFirst = renders;
    expect(afterFirst).toBe(settled + 1);
    await act(async () => {
      await outbox.enqueue('https://api.test/a', { method: 'POST' });
    });
    // pending went from 1 to 2: the selection stayed `true`, no render.
    expect(renders).toBe(afterFirst);
    await outbox.close();
  });

  it('renders the idle snapshot on the server, whatever the outbox holds', async () => {
    const { outbox } = setup();
    await outbox.enqueue('https://api.test/a', { method: 'POST' });
    expect(outbox.getSnapshot()).toMatchObject({ ready: true, pending: 1 });
    expect(renderToString(createElement(Pending, { box: outbox }))).toBe(
      '<p>ready false, pending 0</p>',
    );
    expect(Object.isFrozen(IDLE_OUTBOX_SNAPSHOT)).toBe(true);
    await outbox.close();
  });

  it('says what it expects when given something else', () => {
    expect(() => renderHook(() => useOutbox({} as Outbox))).toThrow(
      '[fetch-pacer] useOutbox expects an outbox from `createOutbox()`',
    );
  });
});
