import { usePacerState } from 'fetch-pacer/react';
import { bursts } from '../client/bursts';
import { useStore } from '../lib/store';
import { serverState } from '../mock/server';

function Stat({ label, value, tone }: { label: string; value: string | number; tone?: string }) {
  return (
    <div className={`stat ${tone ?? ''}`}>
      <dt>{label}</dt>
      <dd>{value}</dd>
    </div>
  );
}

/**
 * The paced side in two scopes, each labelled: what the pacer holds right now, and what the
 * server saw since the page loaded (the burst panel above has "this burst").
 */
export function Counters() {
  const { sent, ok, refused } = useStore(serverState).totals.paced;
  const { count, totalMs } = useStore(bursts).waits;
  // The pacer of <PacerProvider>; each re-renders only when its own number changes.
  const queued = usePacerState(undefined, (state) => state.queued);
  const inFlight = usePacerState(undefined, (state) => state.inFlight);
  const denied = usePacerState(undefined, (state) => state.denied);
  const meanWait = count === 0 ? '–' : `${(totalMs / count / 1000).toFixed(2)} s`;
  return (
    <div className="counter-groups">
      <section aria-labelledby="counters-now">
        <h4 id="counters-now">Right now, in the pacer</h4>
        <dl className="counters">
          <Stat label="Waiting" value={queued} />
          <Stat label="In flight" value={inFlight} />
          <Stat label="Denied (reject mode)" value={denied} tone={denied > 0 ? 'denied' : ''} />
        </dl>
      </section>
      <section aria-labelledby="counters-load">
        <h4 id="counters-load">Since the page loaded, paced side</h4>
        <dl className="counters">
          <Stat label="Reached the server" value={sent} />
          <Stat label="200 OK" value={ok} tone="good" />
          <Stat label="429" value={refused} tone={refused > 0 ? 'bad' : ''} />
          <Stat label="Mean wait to start" value={meanWait} />
        </dl>
      </section>
    </div>
  );
}
