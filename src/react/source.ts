import { describe } from '../core/validate.js';
import { createPacedFetch, type PacedFetch } from '../http/paced-fetch.js';
import type { Pacer } from '../pacer/types.js';

/**
 * What the hooks pace through: a paced fetch (`createPacedFetch`), or a pacer (`createPacer`).
 * Every hook takes one directly, or finds one in the nearest `<PacerProvider>`.
 */
export type PacerSource = PacedFetch | Pacer;

/** The pacer behind a source. */
export function pacerOf(source: PacerSource): Pacer {
  return typeof source === 'function' ? source.pacer : source;
}

/** The default paced fetch of each bare pacer the hooks were given. */
const defaultFetches = new WeakMap<Pacer, PacedFetch>();

/**
 * The fetch a hook sends through. A paced fetch is called as it is, so its own `fetch`, `key`,
 * `retry` and header options hold; a bare pacer gets one default paced fetch (origin keys, the
 * global fetch, default retries), made once and shared by every hook of that pacer.
 */
export function fetchOf(source: PacerSource): PacedFetch {
  if (typeof source === 'function') return source;
  let paced = defaultFetches.get(source);
  if (paced === undefined) {
    paced = createPacedFetch({ pacer: source });
    defaultFetches.set(source, paced);
  }
  return paced;
}

/** A source is a paced fetch (a function with a `pacer`) or a pacer (an object with `schedule`). */
export function isPacerSource(value: unknown): value is PacerSource {
  if (typeof value === 'function') return isPacer((value as { pacer?: unknown }).pacer);
  return isPacer(value);
}

function isPacer(value: unknown): value is Pacer {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Pacer).schedule === 'function' &&
    typeof (value as Pacer).subscribe === 'function' &&
    typeof (value as Pacer).inspect === 'function'
  );
}

export function assertPacerSource(field: string, value: unknown): asserts value is PacerSource {
  if (!isPacerSource(value)) {
    throw new TypeError(
      `[fetch-pacer] Expected \`${field}\` to be a paced fetch (createPacedFetch) or a pacer (createPacer), got ${describe(value)}`,
    );
  }
}
