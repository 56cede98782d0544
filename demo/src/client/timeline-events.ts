/**
 * What the client saw, for the timeline and its table: the bucket's level and the requests
 * waiting, sampled while they move; when the server blocked the key; local denials (reject
 * mode). Times are `performance.now()`, the pacer's clock. Kept for a minute.
 */
export interface Span {
  readonly from: number;
  to: number;
}

export interface Sample {
  readonly t: number;
  readonly level: number;
  /** Requests of the key waiting in the pacer. */
  readonly queued: number;
}

const KEEP_MS = 60_000;

export const clientEvents = {
  samples: [] as Sample[],
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
  clientEvents.blocks = clientEvents.blocks.filter((span) => span.to >= since);
  clientEvents.denials = clientEvents.denials.filter((at) => at >= since);
  for (const listener of [...listeners]) listener();
}

/** A sample of the key; one that repeats the previous one only moves it forward. */
export function recordSample(sample: Sample): void {
  const { samples } = clientEvents;
  const last = samples[samples.length - 1];
  const before = samples[samples.length - 2];
  // Three equal samples in a row: the middle one says nothing the ends do not.
  if (last !== undefined && before !== undefined && sameAs(last, sample) && sameAs(before, last)) {
    samples[samples.length - 1] = sample;
  } else samples.push(sample);
  while (samples.length > 2 && (samples[1] as Sample).t < sample.t - KEEP_MS) samples.shift();
}

function sameAs(a: Sample, b: Sample): boolean {
  return a.level === b.level && a.queued === b.queued;
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
