/**
 * Rate-limit headers outside the IETF drafts: the `X-RateLimit-*` family (GitHub, Discord, Jira,
 * Reddit, most proxies), X's `x-rate-limit-*`, OpenAI's `x-ratelimit-*-requests`, Anthropic's
 * `anthropic-ratelimit-requests-*`, and Shopify's `X-Shopify-Shop-Api-Call-Limit: 32/40`.
 * Each reader is pure, bounded (every value is length-checked before a regex sees it) and never
 * throws; a malformed field is ignored alone.
 */
import {
  isDelta,
  MAX_DELAY_MS,
  MAX_NUMBER_TEXT,
  parseGoDuration,
  type ReadDelay,
  resetToDelayMs,
  toDelayMs,
  trimSpaces,
} from './duration.js';
import { parseIsoDate } from './iso-date.js';

/** The fields of a report as the readers build it (`report()` drops the undefined ones). */
export interface QuotaFields {
  remaining: number;
  resetMs?: number | undefined;
  limit?: number | undefined;
  windowMs?: number | undefined;
  policy?: string | undefined;
  resetPrecisionMs?: number | undefined;
  resetFull?: true | undefined;
  resetFromArrival?: true | undefined;
  bucket?: true | undefined;
}

/**
 * A quota of another unit than requests (tokens): a key with limits in that unit is paced on it
 * (see `applyUnitQuotas`).
 */
export interface UnitQuota {
  /** `'tokens'`, `'input-tokens'`, `'output-tokens'`, or an IETF policy's `qu`. */
  readonly unit: string;
  readonly remaining: number;
  readonly limit?: number | undefined;
  /** ms until the quota resets: for a `bucket`, until it is full again. */
  readonly resetMs?: number | undefined;
  /** How finely `resetMs` was given (see `ServerQuotaReport.resetPrecisionMs`). */
  readonly resetPrecisionMs?: number | undefined;
  /** The window of `limit`, when stated (an IETF policy's `w`). */
  readonly windowMs?: number | undefined;
  /** Counted in a token bucket refilled continuously (OpenAI's and Anthropic's tokens). */
  readonly bucket?: true | undefined;
}

type ResetReader = (value: string, nowEpochMs: number) => ReadDelay | undefined;

/**
 * A family of three headers, `<prefix>remaining<suffix>` and its `limit` and `reset`; the
 * reset read by `readReset`. `undefined` without a usable remaining.
 */
function family(
  headers: Headers,
  nowEpochMs: number,
  prefix: string,
  suffix: string,
  readReset: ResetReader,
): QuotaFields | undefined {
  const remaining = count(headers.get(`${prefix}remaining${suffix}`));
  if (remaining === undefined) return undefined;
  const reset = readReset(trimSpaces(headers.get(`${prefix}reset${suffix}`) ?? ''), nowEpochMs);
  return {
    remaining: Math.max(0, remaining),
    limit: count(headers.get(`${prefix}limit${suffix}`), 0),
    resetMs: reset?.ms,
    resetPrecisionMs: reset?.precisionMs,
  };
}

/** A Go duration (OpenAI): the time until the quota is full again. */
const goReset: ResetReader = (value) => parseGoDuration(value);

/** An RFC 3339 instant (Anthropic, Jira) as the delay until it (0 once passed). */
const instantReset: ResetReader = (value, nowEpochMs) => {
  const instant = parseIsoDate(value);
  const ms = instant && toDelayMs(instant.epochMs - nowEpochMs);
  return ms === undefined ? undefined : { ms, precisionMs: instant?.precisionMs ?? 1000 };
};

/**
 * A legacy reset: seconds as a delta, Unix seconds or Unix ms (see `resetToDelayMs`), possibly
 * decimal (Discord's `1470173023.123`) or negative (0), or an RFC 3339 instant (Jira).
 */
const legacyReset: ResetReader = (value, nowEpochMs) => {
  const m = value.length <= MAX_NUMBER_TEXT ? /^(-?)\d{1,15}(?:\.(\d{1,15}))?$/.exec(value) : null;
  if (m === null) return instantReset(value, nowEpochMs);
  const ms = m[1] ? 0 : resetToDelayMs(Number(value) * 1000, nowEpochMs);
  if (ms === undefined) return undefined;
  const precisionMs = 1000 / 10 ** (m[2]?.length ?? 0);
  // A delta is counted from the arrival: said only of a fraction (whole seconds may have been
  // rounded down, see `resetFromArrival`).
  return m[2] !== undefined && isDelta(Number(value) * 1000)
    ? { ms, precisionMs, fromArrival: true }
    : { ms, precisionMs };
};

/**
 * `X-RateLimit-Limit` / `-Remaining` / `-Reset`, and what GitHub, Discord, Jira and Reddit add:
 * without a remaining, GitHub's `-Used` gives `limit - used`; without a limit, Reddit's
 * `used + remaining` is one; Discord's `-Reset-After` (float seconds) is the precise reset and
 * its `-Bucket` (or GitHub's `-Resource`) names the policy; Jira's reset is an ISO date.
 */
export function fromXRateLimit(headers: Headers, nowEpochMs: number): QuotaFields | undefined {
  const limit = count(headers.get('x-ratelimit-limit'), 0);
  const used = count(headers.get('x-ratelimit-used'), 0);
  const stated = count(headers.get('x-ratelimit-remaining'));
  const remaining =
    stated ?? (limit !== undefined && used !== undefined ? limit - used : undefined);
  if (remaining === undefined) return undefined;
  // A negative count (a buggy server) is read as 0, here and in the limit it would derive.
  const left = Math.max(0, remaining);
  const after = trimSpaces(headers.get('x-ratelimit-reset-after') ?? '');
  const reset =
    (/^\d{1,15}(?:\.\d{1,15})?$/.test(after) ? legacyReset(after, 0) : undefined) ??
    legacyReset(trimSpaces(headers.get('x-ratelimit-reset') ?? ''), nowEpochMs);
  const name = headers.get('x-ratelimit-bucket') ?? headers.get('x-ratelimit-resource') ?? '';
  return {
    remaining: left,
    limit: limit ?? (used !== undefined && stated !== undefined ? used + left : undefined),
    resetMs: reset?.ms,
    resetPrecisionMs: reset?.precisionMs,
    resetFromArrival: reset?.fromArrival,
    // An empty name names nothing: `|| undefined` drops it.
    policy: trimSpaces(name).slice(0, 256) || undefined,
  };
}

/** X (Twitter): `x-rate-limit-limit` / `-remaining` / `-reset` (Unix seconds). */
export function fromXRateLimitDashed(headers: Headers, now: number): QuotaFields | undefined {
  return family(headers, now, 'x-rate-limit-', '', legacyReset);
}

/**
 * Spring Cloud Gateway's `RedisRateLimiter` (Stripe's token bucket, in Redis): the tokens left
 * (`X-RateLimit-Remaining`), the tokens added per second (`-Replenish-Rate`), the bucket's size
 * (`-Burst-Capacity`) and a request's cost (`-Requested-Tokens`), on every answer; its 429 says
 * nothing else. Its script reads Redis' clock in whole seconds, so a second's tokens all come
 * when it begins, at a phase the client cannot know: any d seconds bring at least `floor(d)`
 * seconds' refill, where a bucket refilled continuously at the same rate admits `burst + rate × d`
 * in that time. So the bucket read is a second's refill less one request shallower than the
 * gateway's (`burst`, its count as much lower), and is then never ahead of it: the doc's bucket of
 * 20 refilled 10 a second is one of 11. A shallower one, under a second's refill (the doc's steady
 * rate, a bucket of one second's refill, is one of 1), is a window of whole seconds the refill
 * covers instead: counted arrival-safe, a bucket's permits each wait for the answer before them
 * when the burst is spent, and one of 1 ran at 0.64x of the rate through 5-60 ms of jitter each
 * way, a window at 0.95x. `null` for a remaining of -1: Redis failed and the gateway let the
 * request through, knowing nothing.
 */
export function fromSpringCloudGateway(headers: Headers): QuotaFields | null | undefined {
  const rate = count(headers.get('x-ratelimit-replenish-rate'), 1);
  if (rate === undefined) return undefined;
  const tokens = count(headers.get('x-ratelimit-remaining'), 0);
  if (tokens === undefined) return null;
  const cost = count(headers.get('x-ratelimit-requested-tokens'), 1) ?? 1;
  const capacity = count(headers.get('x-ratelimit-burst-capacity'), 0) ?? rate;
  // OpenVPN's Cloud Connexa says `rate` per `X-RateLimit-Replenish-Time` seconds: read as a
  // refill of `rate` at the start of each such period, the least a bucket of that rate admits.
  const periodMs = (count(headers.get('x-ratelimit-replenish-time'), 1) ?? 1) * 1000;
  const burst = Math.floor((capacity - rate + 1) / cost);
  if (burst * cost >= rate) {
    const ahead = Math.max(0, Math.floor((tokens - rate + 1) / cost));
    const windowMs = Math.min(((burst * cost) / rate) * periodMs, MAX_DELAY_MS);
    return { remaining: Math.min(ahead, burst), limit: burst, windowMs, bucket: true };
  }
  const periods = Math.ceil(cost / rate);
  const limit = Math.floor(Math.min(periods * rate, capacity) / cost);
  const remaining = Math.min(Math.floor(tokens / cost), limit);
  const windowMs = Math.min(periods * periodMs, MAX_DELAY_MS);
  return limit > 0 ? { remaining, limit, windowMs } : { remaining };
}

/**
 * HubSpot: `X-HubSpot-RateLimit-Max` requests per `-Interval-Milliseconds` (a rolling window of
 * 10 s), `-Remaining` of them; no reset, and a 429 that says only its `policyName` in the body.
 * (`-Daily` and `-Secondly` are other limits, and the latter is deprecated.)
 */
export function fromHubSpot(headers: Headers): QuotaFields | undefined {
  const remaining = count(headers.get('x-hubspot-ratelimit-remaining'));
  if (remaining === undefined) return undefined;
  const windowMs = count(headers.get('x-hubspot-ratelimit-interval-milliseconds'), 1);
  return {
    remaining: Math.max(0, remaining),
    limit: count(headers.get('x-hubspot-ratelimit-max'), 0),
    windowMs: windowMs === undefined ? undefined : Math.min(windowMs, MAX_DELAY_MS),
  };
}

/**
 * OpenAI: `x-ratelimit-limit-requests`, `-remaining-requests`, `-reset-requests` (a Go duration
 * until the quota is full again: a bucket, so `resetFull`).
 */
export function fromOpenAi(headers: Headers, now: number): QuotaFields | undefined {
  return full(family(headers, now, 'x-ratelimit-', '-requests', goReset));
}

/**
 * Anthropic: `anthropic-ratelimit-requests-limit` / `-remaining` / `-reset` (RFC 3339, when the
 * quota is fully replenished: a bucket, so `resetFull`).
 */
export function fromAnthropic(headers: Headers, now: number): QuotaFields | undefined {
  return full(family(headers, now, 'anthropic-ratelimit-requests-', '', instantReset));
}

function full(fields: QuotaFields | undefined): QuotaFields | undefined {
  return fields?.resetMs === undefined ? fields : { ...fields, resetFull: true };
}

/** Shopify REST: `X-Shopify-Shop-Api-Call-Limit: 32/40` (used/size of a leaky bucket). */
export function fromShopify(headers: Headers): QuotaFields | undefined {
  const text = trimSpaces(headers.get('x-shopify-shop-api-call-limit') ?? '');
  const m = text.length <= MAX_NUMBER_TEXT ? /^(\d{1,15}) *\/ *(\d{1,15})$/.exec(text) : null;
  if (m === null) return undefined;
  const limit = Number(m[2]);
  return { remaining: Math.max(0, limit - Number(m[1])), limit };
}

/**
 * The token quotas of OpenAI (`x-ratelimit-*-tokens`, Go durations) and Anthropic
 * (`anthropic-ratelimit-{tokens,input-tokens,output-tokens}-*`, RFC 3339): another unit than
 * requests, reported beside them.
 */
export function readTokenQuotas(headers: Headers, now: number): UnitQuota[] {
  const quotas: UnitQuota[] = [];
  const add = (unit: string, fields: QuotaFields | undefined) => {
    if (fields !== undefined) {
      const { remaining, limit, resetMs, resetPrecisionMs } = fields;
      quotas.push(
        definedFields({
          unit,
          remaining,
          limit,
          resetMs,
          resetPrecisionMs,
          bucket: true,
        }) as UnitQuota,
      );
    }
  };
  add('tokens', family(headers, now, 'x-ratelimit-', '-tokens', goReset));
  for (const unit of ['tokens', 'input-tokens', 'output-tokens']) {
    add(unit, family(headers, now, `anthropic-ratelimit-${unit}-`, '', instantReset));
  }
  return quotas;
}

/** `fields` without its `undefined` members (exactOptionalPropertyTypes, and `toEqual`). */
export function definedFields(fields: object): object {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}

/**
 * A count: digits with an optional sign, and an optional fraction dropped (Reddit sends
 * `575.0`), at most 15 digits so every count is an exact integer; below `min`, `undefined`.
 */
export function count(value: string | null, min = Number.NEGATIVE_INFINITY): number | undefined {
  const text = trimSpaces(value ?? '');
  const m = text.length <= MAX_NUMBER_TEXT ? /^(-?\d{1,15})(?:\.\d{0,15})?$/.exec(text) : null;
  const n = m === null ? Number.NaN : Number(m[1]) + 0;
  return n >= min ? n : undefined;
}
