import { type LearningNote, NOTE } from '../core/learned.js';
import type { ServerQuota } from '../core/limiter.js';
import type { Policy } from '../core/policy.js';
import { assertKnownOptions, describe } from '../core/validate.js';
import type { Pacer } from '../pacer/types.js';
import type { ServerQuotaReport } from './ratelimit-headers.js';

/** What a paced fetch learns besides the server's count (`learn: true` is `{}`). */
export interface LearnOptions {
  /**
   * A key at rest (never heard from, or idle since) sends one request and waits for its answer
   * before the others go: a burst never reaches a server whose limit is unknown, at the price
   * of one round trip before the first burst. For a policy you are not sure of; in reject mode
   * the calls behind the probe are rejected.
   * @default false
   */
  readonly probe?: boolean;
}

/** `learn` checked: whether to learn at all, and whether to probe. */
export function resolveLearn(learn: boolean | LearnOptions | undefined): {
  readonly learning: boolean;
  readonly probing: boolean;
} {
  if (learn === undefined || typeof learn === 'boolean') {
    return { learning: learn !== false, probing: false };
  }
  const isObject = typeof learn === 'object' && learn !== null && !Array.isArray(learn);
  if (isObject) assertKnownOptions('`learn`', learn, ['probe']);
  const probe = isObject ? learn.probe : 'not an object';
  if (probe === undefined || typeof probe === 'boolean') {
    return { learning: true, probing: probe === true };
  }
  throw new TypeError(
    `[fetch-pacer] Expected \`learn\` to be a boolean or \`{ probe?: boolean }\`, got ${describe(learn)}`,
  );
}

/**
 * How long a probe holds an unknown key to one request while it waits for the server's first
 * answer (ms). A lost answer (a network error) so costs at most this; a slower one lets one more
 * request through per `PROBE_MS`.
 */
export const PROBE_MS = 1_000;

/** One request per `PROBE_MS`: what a key may send until its server has answered once. */
const PROBE: Policy = Object.freeze({ limit: 1, windowMs: PROBE_MS, algorithm: 'sliding-log' });

/** A probe without an answer after this long is forgotten by the adapter (ms). */
const PROBE_FORGOTTEN_MS = 10 * PROBE_MS;

/** Entries looked at per new probe, so lost probes are dropped without a timer or a scan. */
const SWEEP_STEP = 2;

/**
 * What a paced fetch learns of a server's rate, beyond its count (`readRateLimitHeaders`):
 *
 * - a key at rest (unknown, or idle long enough to have forgotten) first sends one request and
 *   waits for its answer (`calling`), so a burst never reaches a server whose limit is unknown;
 * - an advertised policy (`RateLimit-Policy`, `limit` + `windowMs`) becomes the key's learned
 *   policy (`RateLimiter.observe`);
 * - a refusal without any RateLimit header cuts the key's learned rate (AIMD,
 *   `RateLimiter.refused`).
 *
 * One adapter per pacer, shared by every paced fetch on it.
 */
export class Adapter {
  /** Keys probed and not answered yet: pacer time the probe was set. */
  private readonly probing = new Map<string, number>();
  private cursor: MapIterator<[string, number]> | undefined;

  constructor(private readonly pacer: Pacer) {}

  /** Before a call of `key` is queued: a key at rest is probed. */
  calling(key: string): void {
    if (this.probing.has(key)) return;
    const { level, capacity, queued, blockedUntil } = this.pacer.inspect(key);
    // Busy: requests of it are out, waiting, or held by the server; its answers teach it.
    if (level < capacity || queued > 0 || blockedUntil !== undefined) return;
    const now = this.pacer.now();
    this.sweep(now);
    this.probing.set(key, now);
    this.tell(key, { probe: PROBE });
  }

  /**
   * After an answer of `key`: its RateLimit headers (`quota`, if read and usable), and whether
   * it was a refusal (429/503) without a `Retry-After`. A refusal with neither says only "too
   * fast": AIMD. (One with a Retry-After says when to come back, which the key's block does.)
   */
  answered(key: string, quota: ServerQuotaReport | undefined, refused: boolean): void {
    const probed = this.probing.delete(key);
    // An advertised policy replaces the probe (and any learned rate) in `observe`.
    if (quota !== undefined) this.pacer.observe(key, quota);
    if (quota?.limit !== undefined && quota.windowMs !== undefined) return;
    const bare = refused && quota === undefined;
    if (probed || bare) this.tell(key, { unprobe: probed, refused: bare });
  }

  /**
   * A note rides on `observe` (see `NOTE`). Its `remaining` is for a shared store, which the
   * pacer also tells: 0 for a refusal (true), else a count that lowers nothing.
   */
  private tell(key: string, note: LearningNote): void {
    const remaining = note.refused === true ? 0 : Number.MAX_SAFE_INTEGER;
    this.pacer.observe(key, { remaining, [NOTE]: note } as ServerQuota);
  }

  private sweep(now: number): void {
    for (let step = 0; step < SWEEP_STEP; step++) {
      this.cursor ??= this.probing.entries();
      const next = this.cursor.next();
      if (next.done) {
        this.cursor = undefined;
        return;
      }
      const [key, since] = next.value;
      if (now - since > PROBE_FORGOTTEN_MS) this.probing.delete(key);
    }
  }
}

const adapters = new WeakMap<Pacer, Adapter>();

/**
 * What a paced fetch does with an answer of `key`: with `learning`, the adapter's `answered`;
 * without, the server's count alone (its advertised policy is not adopted). `refused`: a
 * refusal without Retry-After. Returns nothing, for `return heard(...)`.
 */
export function heard(
  pacer: Pacer,
  key: string,
  quota: ServerQuotaReport | undefined,
  refused: boolean,
  learning: boolean,
): undefined {
  if (learning) adapterOf(pacer).answered(key, quota, refused);
  else if (quota !== undefined) {
    const { remaining, resetMs } = quota;
    pacer.observe(key, resetMs === undefined ? { remaining } : { remaining, resetMs });
  }
}

/** The adapter of `pacer`, made on first use. */
export function adapterOf(pacer: Pacer): Adapter {
  let adapter = adapters.get(pacer);
  if (adapter === undefined) {
    adapter = new Adapter(pacer);
    adapters.set(pacer, adapter);
  }
  return adapter;
}
