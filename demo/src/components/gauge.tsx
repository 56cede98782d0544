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
 * The bucket of the demo's API key, live: drains as requests start, refills at the rate. The
 * pacer comes from `<PacerProvider>`.
 */
export function Gauge({ rate }: { rate: number }) {
  const { level, capacity, queued, blockedUntil } = useBucketLevel(undefined, API_KEY);
  const now = useNow(blockedUntil !== undefined);
  const fraction = capacity > 0 ? level / capacity : 0;
  const tone = blockedUntil !== undefined ? 'blocked' : fraction < 0.2 ? 'low' : 'ok';
  let status: string;
  if (blockedUntil !== undefined) {
    const left = Math.max(0, blockedUntil - now) / 1000;
    status = `Server says wait: ${left.toFixed(1)} s`;
  } else if (queued > 0) status = `${queued} waiting for a permit`;
  else if (level < capacity) status = `Refilling at ${rate} per second`;
  else status = 'Full: the next requests go at once';
  return (
    <figure className={`gauge gauge-${tone}`}>
      <svg
        viewBox="0 0 200 178"
        role="img"
        aria-label={`${level.toFixed(1)} of ${capacity} permits`}
      >
        <path className="gauge-track" d={arc(1)} />
        {fraction > 0.001 && <path className="gauge-fill" d={arc(fraction)} />}
        <text x="100" y="100" className="gauge-value">
          {level.toFixed(1)}
        </text>
        <text x="100" y="126" className="gauge-unit">
          of {capacity} permits
        </text>
      </svg>
      <figcaption data-testid="gauge-status">{status}</figcaption>
    </figure>
  );
}
