/**
 * What the client saw, for the timeline: how long each paced request waited in the queue,
 * when the server blocked the key, and local denials (reject mode). Times are
 * `performance.now()`, the pacer's clock. Kept for a minute; read by the canvas each frame.
 */
export interface Span {
  readonly from: number;
  to: number;
}

const KEEP_MS = 60_000;

export const clientEvents = {
  waits: [] as Span[],
  blocks: [] as Span[],
  denials: [] as number[],
  /** When something was last added: the timeline animates while recent things scroll. */
  lastChange: Number.NEGATIVE_INFINITY,
};

const listeners = new Set<() => void>();

export function onClientEvent(listener: () => void): () => void {
  listeners.add(listener);
  return () => {
    listeners.delete(listener);
  };
}

function changed(): void {
  const now = performance.now();
  clientEvents.lastChange = now;
  const since = now - KEEP_MS;
  clientEvents.waits = clientEvents.waits.filter((span) => span.to >= since);
  clientEvents.blocks = clientEvents.blocks.filter((span) => span.to >= since);
  clientEvents.denials = clientEvents.denials.filter((at) => at >= since);
  for (const listener of [...listeners]) listener();
}

export function recordQueueWait(from: number, to: number): void {
  clientEvents.waits.push({ from, to });
  changed();
}

export function recordDenial(at: number): void {
  clientEvents.denials.push(at);
  changed();
}

/** The key is blocked until `until`: extends the current block, or opens a new one. */
export function recordBlock(from: number, until: number): void {
  const last = clientEvents.blocks[clientEvents.blocks.length - 1];
  if (last !== undefined && last.to >= from) last.to = Math.max(last.to, until);
  else clientEvents.blocks.push({ from, to: until });
  changed();
}
