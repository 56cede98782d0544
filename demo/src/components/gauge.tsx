import type { KeyInspection } from 'fetch-pacer';
import { useBucketLevel } from 'fetch-pacer/react';
import { API_KEY } from '../client/settings';
import { useNow } from '../lib/hooks';

const SWEEP = 270;
const RADIUS = 80;

function point(angle: number): string {
  const radians = ((angle - 90) * Math.PI) / 180;
  return `${100 + RADIUS * Math.cos(radians)} ${100 + RADIUS * Math.sin(radians)}`;
}

/** An SVG arc from the gauge's start, `fraction` of the way round. */
function arc(fraction: number): string {
  const start = -SWEEP / 2;
  const end = start + SWEEP * Math.min(1, Math.max(0, fraction));
  const large = end - start > 180 ? 1 : 0;
  return `M ${point(start)} A ${RADIUS} ${RADIUS} 0 ${large} 1 ${point(end)}`;
}

/**
 * The dial itself: an arc `fraction` of the way round, a big `value`, its `unit` and a `note`
 * under it; one image for assistive technology, named by `label`. Every gauge of the page draws
 * with it (the pacer's bucket, each unit of the LLM panel).
 */
export function Dial({
  fraction,
  value,
  unit,
  note = '',
  noteTestId,
  label,
}: {
  fraction: number;
  value: string;
  unit: string;
  note?: string;
  noteTestId?: string;
  label: string;
}) {
  return (
    <svg viewBox="0 0 200 178" role="img" aria-label={label}>
      <path className="gauge-track" d={arc(1)} />
      {fraction > 0.001 && <path className="gauge-fill" d={arc(fraction)} />}
      <text x="100" y="96" className="gauge-value">
        {value}
      </text>
      <text x="100" y="122" className="gauge-unit">
        {unit}
      </text>
      <text x="100" y="150" className="gauge-queued" data-testid={noteTestId}>
        {note}
      </text>
    </svg>
  );
}

type LearnedPolicy = NonNullable<KeyInspection['learned']>;

function perSecond(policy: { readonly limit: number; readonly windowMs: number }): string {
  const rate = (policy.limit * 1000) / policy.windowMs;
  return Number.isInteger(rate) ? String(rate) : rate.toFixed(1);
}

function window(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${Math.round(ms)} ms`;
}

/** The learned policy, in words: what it is and where it came from. */
export function describeLearned(learned: LearnedPolicy | undefined): string {
  if (learned === undefined) return 'nothing yet';
  switch (learned.source) {
    case 'server':
      return `${learned.limit} per ${window(learned.windowMs)}, from the server’s RateLimit-Policy`;
    case 'rate':
      return learned.limit === 1
        ? `${perSecond(learned)} / s, cut on refusals (AIMD)`
        : `${learned.limit} per ${window(learned.windowMs)}, measured up to a refusal`;
    case 'client':
      return `1 per ${window(learned.windowMs)} while it waits for a first answer (probe)`;
    case 'start':
      return `${learned.limit} in flight, one more per answer (slow start)`;
  }
}

/** Is the learned policy slower than the client's own rate (so it is why requests wait)? */
function learnedBinds(learned: LearnedPolicy | undefined, rate: number): boolean {
  return (
    learned !== undefined &&
    learned.windowMs > 0 &&
    (learned.limit * 1000) / learned.windowMs <= rate
  );
}

/** Why requests wait, or what the next one gets: the gauge's caption. */
export function whyOf(inspection: KeyInspection, rate: number, now: number): string {
  const { level, capacity, queued, blockedUntil, nextStartAt, learned } = inspection;
  const waiting = `${queued} waiting`;
  if (blockedUntil !== undefined) {
    const left = (Math.max(0, blockedUntil - now) / 1000).toFixed(1);
    return queued > 0
      ? `${waiting}: the server blocked the key for ${left} s more`
      : `The server blocked the key for ${left} s more`;
  }
  if (queued > 0) {
    const next =
      nextStartAt === undefined
        ? ''
        : `, next in ${(Math.max(0, nextStartAt - now) / 1000).toFixed(1)} s`;
    if (learnedBinds(learned, rate)) {
      return `${waiting} for the learned ${describeShort(learned as LearnedPolicy)}${next}`;
    }
    return `${waiting} for the local rate, ${rate} / s${next}`;
  }
  if (level < capacity) return `Refilling at ${rate} per second; nothing waits`;
  return 'Full: the next requests go at once';
}

function describeShort(learned: LearnedPolicy): string {
  return learned.source === 'rate'
    ? `rate, ${perSecond(learned)} / s`
    : `policy, ${learned.limit} per ${window(learned.windowMs)}`;
}

/**
 * The bucket of the demo's API key, live: drains as requests start, refills at the rate, and
 * says why requests wait (a server block, a learned policy, the local rate). The pacer comes
 * from `<PacerProvider>`.
 */
export function Gauge({ rate }: { rate: number }) {
  const inspection = useBucketLevel(undefined, API_KEY);
  const { level, capacity, queued, blockedUntil, learned } = inspection;
  const now = useNow(blockedUntil !== undefined || queued > 0, 200);
  const fraction = capacity > 0 ? level / capacity : 0;
  const blocked = blockedUntil !== undefined;
  const tone = blocked ? 'blocked' : fraction < 0.2 ? 'low' : 'ok';
  // While the server blocks the key its permits do not count: the dial shows the block instead.
  const value = blocked
    ? `${(Math.max(0, blockedUntil - now) / 1000).toFixed(1)} s`
    : level.toFixed(1);
  const unit = blocked ? 'server block' : `of ${capacity} permits`;
  return (
    <div className={`gauge gauge-${tone}`}>
      <figure>
        <Dial
          fraction={fraction}
          value={value}
          unit={unit}
          note={queued > 0 ? `${queued} waiting` : ''}
          noteTestId="gauge-queued"
          label={
            blocked
              ? `Blocked by the server, ${value} more`
              : `${Math.floor(level)} of ${capacity} permits now`
          }
        />
        <figcaption data-testid="gauge-status">{whyOf(inspection, rate, now)}</figcaption>
      </figure>
      <p className="learned" data-testid="learned">
        <span className="badge">Learned</span> {describeLearned(learned)}
      </p>
    </div>
  );
}
