import { memo } from 'react';
import { type Burst, bursts, isDone, type LaneProgress } from '../client/bursts';
import { useStore } from '../lib/store';
import { COUNTINGS, DIALECTS } from '../client/settings';
import { type Lane, type LaneCounts, serverState } from '../mock/server';
import { DotLegend, PacedDot, PlainDot } from './dots';

const LANE_TEXT: Readonly<Record<Lane, { readonly title: string; readonly subtitle: string }>> = {
  unpaced: { title: 'Plain fetch', subtitle: 'All at once, no retries' },
  paced: { title: 'fetch-pacer', subtitle: 'Queued, sent as the limit allows, 429s retried' },
};

const ZERO: LaneCounts = { sent: 0, ok: 0, refused: 0 };

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function LaneView({
  burst,
  lane,
  progress,
  counts,
}: {
  burst: Burst;
  lane: Lane;
  progress: LaneProgress;
  counts: LaneCounts;
}) {
  const { title, subtitle } = LANE_TEXT[lane];
  const done = progress.doneAt !== undefined;
  return (
    <div className={`lane lane-${lane}`}>
      <div className="lane-head">
        <h3>{title}</h3>
        <p>{subtitle}</p>
      </div>
      <p className={`big-number ${counts.refused > 0 ? 'bad' : 'good'}`}>
        <span data-testid={`${lane}-429`}>{counts.refused}</span>
        <small>
          × 429<span className="wide-only"> from the server</span>
        </small>
      </p>
      <dl className="lane-stats">
        <div>
          <dt>Succeeded</dt>
          <dd data-testid={`${lane}-ok`}>
            {progress.outcomes.ok} / {burst.size}
          </dd>
        </div>
        <div>
          <dt>Sent</dt>
          <dd data-testid={`${lane}-sent`}>{counts.sent}</dd>
        </div>
        <div>
          <dt>{done ? 'Finished in' : 'Settled'}</dt>
          <dd>
            {done && progress.doneAt !== undefined
              ? seconds(progress.doneAt - burst.firedAt)
              : `${progress.settled} / ${burst.size}`}
          </dd>
        </div>
      </dl>
      <DotGrid
        burst={burst}
        lane={lane}
        label={`${burst.size} requests, ${title}, one dot each (the counts above say how they went)`}
      />
    </div>
  );
}

/**
 * One dot per request. Memoized: the counts above it change with every response, the dots
 * only with their own request (each is its own `useRateLimitedFetch`).
 */
const DotGrid = memo(function DotGrid({
  burst,
  lane,
  label,
}: {
  burst: Burst;
  lane: Lane;
  label: string;
}) {
  const Dot = lane === 'paced' ? PacedDot : PlainDot;
  return (
    <div className="dots" role="img" aria-label={label}>
      {Array.from({ length: burst.size }, (_, index) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: one dot per request number, fixed for the burst
        <Dot key={index} burst={burst} index={index} />
      ))}
    </div>
  );
});

/** Both lanes of one burst. Every burst stays mounted until it settles: its dots own requests. */
function BurstView({ burst, latest }: { burst: Burst; latest: boolean }) {
  const state = useStore(bursts);
  const server = useStore(serverState);
  const progress = state.progress[burst.id];
  if (progress === undefined) return null;
  const counts = server.bursts[burst.id];
  return (
    <div
      className="burst"
      hidden={!latest}
      data-testid={latest ? 'latest-burst' : undefined}
      data-state={isDone(state, burst) ? 'done' : 'running'}
    >
      {(['unpaced', 'paced'] as const).map((lane) => (
        <LaneView
          key={lane}
          burst={burst}
          lane={lane}
          progress={progress[lane]}
          counts={counts?.[lane] ?? ZERO}
        />
      ))}
    </div>
  );
}

/** The same burst, sent with plain fetch and through the pacer, side by side. */
export function Comparison() {
  const { list } = useStore(bursts);
  const { config } = useStore(serverState);
  const latest = list[list.length - 1];
  const counting = COUNTINGS.find((c) => c.value === config.counting)?.label ?? config.counting;
  const dialect = DIALECTS.find((d) => d.value === config.dialect)?.label ?? config.dialect;
  const bursty = config.counting === 'gcra' ? `, bursts of ${config.limits.burst}` : '';
  return (
    <section className="card comparison" aria-labelledby="comparison-title">
      <header className="card-head">
        <h2 id="comparison-title">
          {latest === undefined ? 'This burst' : `This burst: ${latest.size} requests`}
        </h2>
        <p className="muted server-line">
          Same server for both: {counting.toLowerCase()}, {config.limits.rate} / s{bursty}; headers:{' '}
          {dialect}.
        </p>
      </header>
      {latest === undefined && (
        <p className="empty">
          Fire a burst: each dot is one request, shaped and coloured by how it went.
        </p>
      )}
      {list.map((burst) => (
        <BurstView key={burst.id} burst={burst} latest={burst === latest} />
      ))}
      <DotLegend states={['queued', 'blocked', 'loading', 'ok', 'refused', 'denied']} />
    </section>
  );
}
