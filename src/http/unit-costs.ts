/**
 * Costs in named units through a paced fetch (issue 14): the token quotas of an answer as
 * signals in their unit, and a request's estimate adjusted to its real cost once its answer
 * tells it.
 */
import type { Cost, ReserveTimes, UnitCosts } from '../core/units.js';
import { reportListenerError } from '../pacer/progress.js';
import type { Pacer } from '../pacer/types.js';
import { signalOf } from './probes.js';
import { quotaForCore } from './answer-to-pacer.js';
import type { ServerQuotaReport } from './ratelimit-headers.js';
import { definedFields, type UnitQuota } from './vendor-headers.js';

/**
 * The real cost of a request once its answer has come (`{ tokens: usage.total_tokens }`), or
 * `undefined` to keep the estimate. Given a clone of the response (read its body freely: for a
 * stream, read it to the end or cancel it, as a tee holds what one side has not read).
 */
export type ActualCost = (
  response: Response,
  request: Request,
) => UnitCosts | undefined | PromiseLike<UnitCosts | undefined>;

/**
 * OpenAI's and Anthropic's token quotas (`x-ratelimit-remaining-tokens`,
 * `anthropic-ratelimit-input-tokens-*`, ...) as signals in their unit (`tokens`, `input-tokens`,
 * `output-tokens`): a key that counts that unit lowers its credit there and, when learning,
 * adopts the unit's policy; a key that does not count it ignores them.
 */
export function applyUnitQuotas(
  pacer: Pacer,
  key: string,
  units: readonly UnitQuota[] | undefined,
  learning: boolean,
): void {
  if (units === undefined) return;
  for (const { unit, bucket, ...quota } of units) {
    // The vendors send the time until their bucket is full again (`resetFull`); an IETF
    // policy in a unit states its window.
    const report = definedFields({
      ...quota,
      source: bucket === true ? 'openai' : 'ietf',
      resetFull: bucket,
    }) as ServerQuotaReport;
    const signal = signalOf(quotaForCore(report, false), learning, undefined);
    if (signal.kind === 'policy') {
      pacer.observe(key, bucket === true ? { ...signal, unit, bucket } : { ...signal, unit });
    } else if (signal.kind === 'quota') pacer.observe(key, { ...signal, unit });
  }
}

/**
 * Calls `actualCost` with a clone of `response` (taken now, before the caller reads the body) and
 * charges or gives back the difference from the `estimate` the request was paced on, whenever
 * its answer comes (a stream's usage arrives at its end), without holding anything up. A hook
 * that throws or rejects is reported, and the estimate stands. `reserved`: when the request was
 * sent and answered (`pacer.now()`), so a give-back a bucket absorbed since is not credited.
 */
export function adjustToActual(
  pacer: Pacer,
  key: string,
  estimate: Cost,
  actualCost: ActualCost,
  response: Response,
  request: Request,
  reserved: ReserveTimes,
): void {
  const copy = response.clone();
  Promise.resolve()
    .then(() => actualCost(copy, request))
    .then((actual) => {
      if (actual === undefined) return;
      const delta = differenceOf(actual, estimate);
      if (delta !== undefined) pacer.adjust(key, delta, reserved);
    })
    .catch(reportListenerError);
}

/** `actual - estimate` in each unit `actual` names (a number estimate is in `requests`). */
function differenceOf(actual: UnitCosts, estimate: Cost): UnitCosts | undefined {
  if (typeof actual !== 'object' || actual === null) {
    throw new TypeError(
      '[fetch-pacer] Expected `actualCost` to return amounts per unit or undefined',
    );
  }
  const delta: Record<string, number> = {};
  let changed = false;
  for (const unit of Object.keys(actual)) {
    const before =
      typeof estimate === 'number' ? (unit === 'requests' ? estimate : 0) : estimate[unit];
    const change = (actual[unit] as number) - (before ?? 0);
    if (change !== 0) changed = true;
    delta[unit] = change;
  }
  return changed ? delta : undefined;
}
