import type { Page } from 'playwright-core';

/**
 * The page: a paced fetch at `perSecond(rate)`, a token bucket (the default clock, as an app uses it), a pacer
 * whose tasks send a request and return at once (a beacon, a fire-and-forget write: no response
 * re-arms its timer, so it is the pure timer chain), a paced fetch under an outbox, a recorder
 * of each start (its time and the page's visibility then), and three chains of 100 ms timers
 * that compare the mechanisms: a plain `setTimeout` chain (the probe that intensive throttling
 * is on in that page), one that arms each timer from a `MessageChannel` message (what the
 * default clock does in a hidden page), and a dedicated worker's chain posting to the page.
 */
export const pageScript = (rate: number): string => `
import { createPacedFetch, createPacer, perSecond, tokenBucket } from './src/index.ts';
import { createOutbox } from './src/offline/index.ts';

const starts = [];
const started = (run) => {
  starts.push({ run, at: performance.now(), state: document.visibilityState });
};
/** The paced fetch's own word that a request starts: right after its permit is taken. */
const pacing = (run) => ({ onProgress: (progress) => progress.state === 'started' && started(run) });
// A token bucket, named: these runs measure how the timers of a hidden page keep the pacer on
// time, against a token bucket's ideal schedule. (The paced fetch's default, arrival-safe, has
// its own schedule: spaced after the first window, catching up at each late wake; its hidden-page
// case is test/core/arrival-safe.test.ts, "a late pacer catches up".)
const bucket = perSecond(${rate}, { algorithm: tokenBucket });
// Nor a slow start: its first sends wait for answers, and the schedule measured is the bucket's.
const pacedFetch = createPacedFetch({ limits: bucket, learn: { slowStart: false } });
const pacer = createPacer({ limits: bucket });
const outboxFetch = createPacedFetch({ limits: bucket, learn: { slowStart: false } });
const outbox = createOutbox({
  name: 'hidden-tab',
  fetch: (request) => outboxFetch(request, { pacing: pacing(new URL(request.url).pathname) }),
});
const chains = { plain: [], hop: [], worker: [] };
window.harness = {
  now: () => performance.now(),
  starts: (run) => starts.filter((start) => start.run === run),
  run(run, count) {
    const from = performance.now();
    for (let n = 0; n < count; n++) {
      pacedFetch(run + '?n=' + n, { pacing: pacing(run) }).then((response) => response.text());
    }
    return from;
  },
  send(run, count) {
    const send = (n) => () => {
      started(run);
      fetch(run + '?n=' + n).then((response) => response.text());
    };
    const from = performance.now();
    for (let n = 0; n < count; n++) pacer.schedule(send(n));
    return from;
  },
  async enqueue(run, count) {
    const from = performance.now();
    for (let n = 0; n < count; n++) await outbox.enqueue(run + '?n=' + n, { method: 'POST' });
    return from;
  },
  startChains(ms) {
    const plain = () => { chains.plain.push(performance.now()); setTimeout(plain, ms); };
    setTimeout(plain, ms);
    const channel = new MessageChannel();
    const hop = () => { chains.hop.push(performance.now()); channel.port2.postMessage(0); };
    channel.port1.onmessage = () => setTimeout(hop, ms);
    setTimeout(hop, ms);
    const source = 'const tick = () => { postMessage(0); setTimeout(tick, ' + ms + '); }; tick();';
    const worker = new Worker(URL.createObjectURL(new Blob([source], { type: 'text/javascript' })));
    worker.onmessage = () => chains.worker.push(performance.now());
  },
  fires: (kind, from, to) => chains[kind].filter((at) => at >= from && at <= to).length,
};
`;

export interface Start {
  readonly run: string;
  readonly at: number;
  readonly state: DocumentVisibilityState;
}

export interface Harness {
  now(): number;
  starts(run: string): Start[];
  /** Each returns when it was called: no permit of the run is taken before. */
  run(run: string, count: number): number;
  send(run: string, count: number): number;
  enqueue(run: string, count: number): Promise<number>;
  startChains(ms: number): void;
  fires(kind: 'plain' | 'hop' | 'worker', from: number, to: number): number;
}

/** Calls `harness[name](...args)` in the page. */
export function call<K extends keyof Harness>(
  page: Page,
  name: K,
  ...args: Parameters<Harness[K]>
): Promise<Awaited<ReturnType<Harness[K]>>> {
  return page.evaluate(
    ([method, params]) => {
      const harness = (
        window as unknown as { harness: Record<string, (...a: unknown[]) => unknown> }
      ).harness;
      return harness[method as string]?.(...(params as unknown[]));
    },
    [name, args] as const,
  ) as Promise<Awaited<ReturnType<Harness[K]>>>;
}
