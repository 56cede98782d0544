import type { ServerQuota } from '../core/limiter.js';
import { MAX_DELAY_MS, resetToDelayMs, toDelayMs } from './duration.js';
import {
  type BareItem,
  type Item,
  type Member,
  parseDictionary,
  parseItem,
  parseList,
} from './structured-fields.js';
import {
  definedFields,
  fromAnthropic,
  fromHubSpot,
  fromOpenAi,
  fromShopify,
  fromSpringCloudGateway,
  fromXRateLimit,
  fromXRateLimitDashed,
  type QuotaFields,
  type UnitQuota,
} from './vendor-headers.js';

/** Which header family a {@link ServerQuotaReport} was read from. */
export type RateLimitHeaderSource =
  | 'ietf'
  | 'draft-7'
  | 'draft-6'
  | 'openai'
  | 'anthropic'
  | 'x-ratelimit'
  | 'x-rate-limit'
  | 'shopify'
  | 'spring-cloud-gateway'
  | 'hubspot';

/**
 * What a response's rate-limit headers say about the server's quota. It is a
 * {@link ServerQuota}, so it can go straight to `observe(key, report)`.
 */
export interface ServerQuotaReport extends ServerQuota {
  /** Quota units left: an integer >= 0 (a negative count from the server reads as 0). */
  readonly remaining: number;
  /** ms until the quota resets (an integer from 0 to `MAX_DELAY_MS`), when the server says. */
  readonly resetMs?: number;
  /** The quota of the policy reported on (`q`, `limit=`, `RateLimit-Limit`, `X-RateLimit-Limit`). */
  readonly limit?: number;
  /** The policy's window in ms (`w` × 1000), when the server advertises it. */
  readonly windowMs?: number;
  /**
   * The policy's name: the IETF item's name, GitHub's `x-ratelimit-resource` (`core`), or
   * Discord's `x-ratelimit-bucket`.
   */
  readonly policy?: string;
  /**
   * How finely `resetMs` was given, in ms, when not to the whole second (the default: every
   * seconds-based header): `1` for OpenAI's `20ms` or Discord's `1.234`, `60000` for Jira's
   * minutes. A reset rounded to the second may be up to that much late (or early).
   */
  readonly resetPrecisionMs?: number;
  /**
   * `resetMs` is when the quota is full again (OpenAI, Anthropic: a token bucket), not when a
   * window ends: with nothing remaining, the next permit comes after `resetMs / limit`.
   */
  readonly resetFull?: true;
  /**
   * `resetMs` was said as a delay finer than seconds (`X-RateLimit-Reset-After: 0.083`, a
   * decimal delta, rate-limiter-flexible's `Retry-After: 0.083`), which the server counts from
   * the request's arrival, not as an instant by its clock (a Unix reset): read at the answer it
   * is late by the way back, where an instant's is not. Not said of whole seconds, which a
   * server may have rounded down.
   */
  readonly resetFromArrival?: true;
  /** The header family read. */
  readonly source: RateLimitHeaderSource;
}

/**
 * Reads a response's rate-limit headers. The first family that gives a usable `remaining`
 * wins, in this order:
 *
 * 1. `'ietf'`: draft-ietf-httpapi-ratelimit-headers-08 and later, structured-field lists
 *    `RateLimit: "api";r=50;t=30` and `RateLimit-Policy: "api";q=100;w=60`. With several
 *    items, the most restrictive is reported: fewest remaining, then the longest reset (an
 *    item without `t` counts as the shortest); its limit and window come from the policy of
 *    the same name (preferring one with the same `pk`).
 * 2. `'draft-7'`: the dictionary `RateLimit: limit=3, remaining=2, reset=60`, with the
 *    window from the `RateLimit-Policy: 3;w=60` item whose quota equals `limit`.
 * 3. `'draft-6'`: `RateLimit-Limit` / `-Remaining` / `-Reset`, window from
 *    `RateLimit-Policy` (or an older `RateLimit-Limit: 3, 3;w=60`) the same way.
 * 4. `'openai'`: `x-ratelimit-{limit,remaining,reset}-requests`, the reset a Go duration
 *    (`1s`, `6m0s`, `20ms`) until the quota is full again (`resetFull`).
 * 5. `'anthropic'`: `anthropic-ratelimit-requests-{limit,remaining,reset}`, the reset RFC 3339.
 * 6. `'spring-cloud-gateway'`: `X-RateLimit-Remaining` beside `-Replenish-Rate`,
 *    `-Burst-Capacity` and `-Requested-Tokens` (Spring Cloud Gateway's `RedisRateLimiter`): a
 *    `bucket` its own, refilled once a second, always admits (see `fromSpringCloudGateway`).
 *    A remaining of -1 (Redis down) reports nothing.
 * 7. `'x-ratelimit'`: `X-RateLimit-Limit` / `-Remaining` / `-Reset` (GitHub, Discord, Jira,
 *    Reddit, Envoy); GitHub's `-Used` gives a missing remaining (`limit - used`), Reddit's a
 *    missing limit (`used + remaining`); Discord's `-Reset-After` is the precise reset;
 *    `-Resource` or `-Bucket` names the policy; counts may be decimal (Reddit's `575.0`). A limit
 *    with draft-03's quota policies (Envoy's and Limitador's `DRAFT_VERSION_03`:
 *    `10, 10;w=1, 1000;w=3600`) is its first member, its window the policy of that quota's.
 * 8. `'x-rate-limit'`: X's `x-rate-limit-limit` / `-remaining` / `-reset` (Unix seconds).
 * 9. `'shopify'`: `X-Shopify-Shop-Api-Call-Limit: 32/40` (used/limit, no reset).
 * 10. `'hubspot'`: `X-HubSpot-RateLimit-Max` per `-Interval-Milliseconds`, `-Remaining`.
 *
 * Token quotas (OpenAI's `-tokens`, Anthropic's token families) are another unit: see
 * `readServerAnswer`.
 *
 * Resets in the IETF and draft-7 forms are delta seconds, as those drafts require.
 * `RateLimit-Reset` and `X-RateLimit-Reset` may also be Unix seconds (GitHub, GitLab), Unix
 * ms or an ISO date (Jira); up to a year of seconds is a delta, otherwise a value within a year of
 * `nowEpochMs` as Unix seconds (then as Unix ms) is a time, and anything else is ignored.
 *
 * A malformed structured field is ignored whole; in other headers a malformed field is
 * ignored alone. It never throws, and never reports NaN, Infinity or a negative number.
 * Retry-After is not read here: when a response has both, Retry-After takes precedence
 * (read it with {@link parseRetryAfter}).
 *
 * @param headers - the response headers
 * @param nowEpochMs - the current wall-clock time in Unix epoch ms, to read Unix-time resets
 * @returns the report, or `undefined` when no family gives a usable `remaining`
 * @example
 * const headers = new Headers({ ratelimit: '"api";r=2;t=60', 'ratelimit-policy': '"api";q=3;w=60' });
 * parseRateLimitHeaders(headers, Date.now());
 * // { remaining: 2, resetMs: 60000, limit: 3, windowMs: 60000, policy: 'api', source: 'ietf' }
 */
export function parseRateLimitHeaders(
  headers: Headers,
  nowEpochMs: number,
): ServerQuotaReport | undefined {
  return quotaOf(headers, nowEpochMs, serviceLimits(headers));
}

/**
 * `parseRateLimitHeaders` and `ietfUnitQuotas` of one response, its IETF fields read once (what
 * `readServerAnswer` needs of every answer).
 */
export function readRateLimitFields(
  headers: Headers,
  nowEpochMs: number,
): { readonly quota: ServerQuotaReport | undefined; readonly units: UnitQuota[] } {
  const limits = serviceLimits(headers);
  return { quota: quotaOf(headers, nowEpochMs, limits), units: unitQuotasOf(limits) };
}

function quotaOf(
  headers: Headers,
  nowEpochMs: number,
  limits: readonly ServiceLimitOf[],
): ServerQuotaReport | undefined {
  const ietf = fromIetf(limits) ?? fromDraft7(headers) ?? fromDraft6(headers, nowEpochMs);
  if (ietf !== undefined) return ietf;
  for (const [source, read] of VENDORS) {
    const fields = read(headers, nowEpochMs);
    if (fields === null) return undefined;
    if (fields !== undefined) return report(source, fields);
  }
  return undefined;
}

/**
 * The other families, in the order they are tried (see `vendor-headers.ts`): `undefined` is not
 * this family, `null` is this family saying nothing usable, which no later family reads.
 */
const VENDORS: ReadonlyArray<
  readonly [
    RateLimitHeaderSource,
    (headers: Headers, now: number) => QuotaFields | null | undefined,
  ]
> = [
  ['openai', fromOpenAi],
  ['anthropic', fromAnthropic],
  ['spring-cloud-gateway', fromSpringCloudGateway],
  ['x-ratelimit', fromXRateLimitPolicies],
  ['x-rate-limit', fromXRateLimitDashed],
  ['shopify', fromShopify],
  ['hubspot', fromHubSpot],
];

/**
 * `X-RateLimit-*` (see `fromXRateLimit`) whose limit is a list of draft-03's quota policies, as
 * Envoy's rate limit filter and Kuadrant's Limitador send them (`x-ratelimit-limit: 10,
 * 10;w=1;name="per-ip", 1000;w=3600`): the first member is the limit, and the policy of the
 * same quota says its window, as in `RateLimit-Limit` up to draft-02 (`fromDraft6`).
 */
function fromXRateLimitPolicies(headers: Headers, nowEpochMs: number): QuotaFields | undefined {
  const fields = fromXRateLimit(headers, nowEpochMs);
  if (fields === undefined || fields.limit !== undefined) return fields;
  const limits = listOf(headers, 'x-ratelimit-limit');
  const limit = nonNegative(integerMember(limits[0]));
  return limit === undefined
    ? fields
    : { ...fields, limit, windowMs: windowForQuota(limits, limit) };
}

/** One `RateLimit` item: the draft calls it a service limit. */
interface ServiceLimit {
  readonly name: string;
  readonly remaining: number;
  readonly resetMs: number | undefined;
  readonly pk: string | undefined;
}

/** A `RateLimit` item with the `RateLimit-Policy` item it reports on, and that policy's unit. */
interface ServiceLimitOf extends ServiceLimit {
  readonly policy: Item | undefined;
  /** The policy's `qu`: `requests` (the default), `content-bytes`, or another unit. */
  readonly unit: string;
}

/** Every `RateLimit` item that can be read, each with its policy. */
function serviceLimits(headers: Headers): ServiceLimitOf[] {
  const policies = listOf(headers, 'ratelimit-policy').filter(
    (p): p is Item => p.kind === 'item' && nameOf(p.value) !== undefined,
  );
  const limits: ServiceLimitOf[] = [];
  for (const member of listOf(headers, 'ratelimit')) {
    const name = member.kind === 'item' ? nameOf(member.value) : undefined;
    const r = integerOf(member.params.get('r'));
    if (name === undefined || r === undefined) continue;
    const t = integerOf(member.params.get('t'));
    const pk = bytesOf(member.params.get('pk'));
    const named = policies.filter((p) => nameOf(p.value) === name);
    const policy = named.find((p) => bytesOf(p.params.get('pk')) === pk) ?? named[0];
    const qu = policy?.params.get('qu');
    const unit = qu === undefined ? REQUESTS : (nameOf(qu) ?? '').slice(0, 64);
    limits.push({
      name,
      remaining: Math.max(0, r),
      resetMs: t === undefined ? undefined : toDelayMs(t * 1000),
      pk,
      policy,
      // draft-08 spelled the default `request`.
      unit: unit === 'request' ? REQUESTS : unit,
    });
  }
  return limits;
}

const REQUESTS = 'requests';

function fromIetf(limits: readonly ServiceLimitOf[]): ServerQuotaReport | undefined {
  let chosen: ServiceLimitOf | undefined;
  for (const candidate of limits) {
    // A quota in another unit (`qu="content-bytes"`) says nothing of requests: see `ietfUnitQuotas`.
    if (candidate.unit !== REQUESTS) continue;
    if (chosen === undefined || moreRestrictive(candidate, chosen)) chosen = candidate;
  }
  if (chosen === undefined) return undefined;
  const { name, remaining, resetMs, policy } = chosen;
  return report('ietf', {
    remaining,
    resetMs,
    limit: nonNegative(integerOf(policy?.params.get('q'))),
    windowMs: windowMsOf(policy),
    policy: name,
  });
}

/**
 * The IETF quotas in units other than requests (`RateLimit-Policy: "t";q=20000;qu="tokens";w=60`),
 * the most restrictive per unit: a key that counts the unit learns it there, any other ignores it.
 */
export function ietfUnitQuotas(headers: Headers): UnitQuota[] {
  return unitQuotasOf(serviceLimits(headers));
}

function unitQuotasOf(limits: readonly ServiceLimitOf[]): UnitQuota[] {
  const chosen = new Map<string, ServiceLimitOf>();
  for (const candidate of limits) {
    const { unit } = candidate;
    if (unit === REQUESTS || unit === '') continue;
    const current = chosen.get(unit);
    if (current === undefined || moreRestrictive(candidate, current)) chosen.set(unit, candidate);
  }
  return [...chosen.values()].map(
    ({ unit, remaining, resetMs, policy }) =>
      definedFields({
        unit,
        remaining,
        limit: nonNegative(integerOf(policy?.params.get('q'))),
        resetMs,
        windowMs: windowMsOf(policy),
      }) as UnitQuota,
  );
}

function moreRestrictive(a: ServiceLimit, b: ServiceLimit): boolean {
  if (a.remaining !== b.remaining) return a.remaining < b.remaining;
  return (a.resetMs ?? -1) > (b.resetMs ?? -1);
}

function fromDraft7(headers: Headers): ServerQuotaReport | undefined {
  const dictionary = parseDictionary(headers.get('ratelimit') ?? '');
  const remaining = integerMember(dictionary?.get('remaining'));
  if (remaining === undefined) return undefined;
  const limit = nonNegative(integerMember(dictionary?.get('limit')));
  const reset = integerMember(dictionary?.get('reset'));
  return report('draft-7', {
    remaining: Math.max(0, remaining),
    resetMs: reset === undefined ? undefined : toDelayMs(reset * 1000),
    limit,
    windowMs: windowForQuota(listOf(headers, 'ratelimit-policy'), limit),
  });
}

function fromDraft6(headers: Headers, nowEpochMs: number): ServerQuotaReport | undefined {
  const remaining = integerMember(parseItem(headers.get('ratelimit-remaining') ?? ''));
  if (remaining === undefined) return undefined;
  // Drafts up to -02 put the policies in RateLimit-Limit after the expiring limit.
  const limits = listOf(headers, 'ratelimit-limit');
  const limit = nonNegative(integerMember(limits[0]));
  const reset = integerMember(parseItem(headers.get('ratelimit-reset') ?? ''));
  return report('draft-6', {
    remaining: Math.max(0, remaining),
    resetMs: reset === undefined ? undefined : resetToDelayMs(reset * 1000, nowEpochMs),
    limit,
    windowMs: windowForQuota([...limits, ...listOf(headers, 'ratelimit-policy')], limit),
  });
}

/** A header's List members: none when it is missing or malformed (ignored whole). */
function listOf(headers: Headers, name: string): Member[] {
  return parseList(headers.get(name) ?? '') ?? [];
}

function nameOf(item: BareItem): string | undefined {
  // The draft says String; a Token is accepted too, since nothing else could be meant.
  return item.type === 'string' || item.type === 'token' ? item.value : undefined;
}

function bytesOf(item: BareItem | undefined): string | undefined {
  return item?.type === 'bytes' ? item.value : undefined;
}

function integerOf(item: BareItem | undefined): number | undefined {
  return item?.type === 'integer' ? item.value : undefined;
}

function integerMember(member: Member | undefined): number | undefined {
  return member?.kind === 'item' ? integerOf(member.value) : undefined;
}

function nonNegative(n: number | undefined): number | undefined {
  return n !== undefined && n >= 0 ? n : undefined;
}

/** `w` is a positive number of seconds; 0 or less means no usable window. */
function windowMsOf(item: Item | undefined): number | undefined {
  const w = integerOf(item?.params.get('w'));
  // Capped like every delay: a window of 31,000 years is a bug, not a policy.
  return w !== undefined && w > 0 ? Math.min(w * 1000, MAX_DELAY_MS) : undefined;
}

/** The window of the draft-6/7 policy whose quota is the reported limit. */
function windowForQuota(
  policies: readonly Member[],
  limit: number | undefined,
): number | undefined {
  if (limit === undefined) return undefined;
  for (const policy of policies) {
    const windowMs = integerMember(policy) === limit ? windowMsOf(policy as Item) : undefined;
    if (windowMs !== undefined) return windowMs;
  }
  return undefined;
}

/** The report without its `undefined` fields (exactOptionalPropertyTypes). */
function report(source: RateLimitHeaderSource, fields: QuotaFields): ServerQuotaReport {
  // Whole seconds are the default precision: said only when it differs.
  const precision = fields.resetPrecisionMs === 1000 ? undefined : fields.resetPrecisionMs;
  return definedFields({ ...fields, resetPrecisionMs: precision, source }) as ServerQuotaReport;
}
