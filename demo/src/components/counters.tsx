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

/** The paced client since the page loaded (queued and denied: of the current pacer). */
export function Counters() {
  const { sent, ok, refused } = useStore(serverState).totals.paced;
  const { count, totalMs } = useStore(bursts).waits;
  // The pacer of <PacerProvider>; each re-renders only when its own number changes.
  const queued = usePacerState(undefined, (state) => state.queued);
  const denied = usePacerState(undefined, (state) => state.denied);
  const meanWait = count === 0 ? '–' : `${(totalMs / count / 1000).toFixed(2)} s`;
  return (
    <dl className="counters" aria-label="Paced client counters">
      <Stat label="Sent" value={sent} />
      <Stat label="Succeeded" value={ok} tone="good" />
      <Stat label="429s" value={refused} tone={refused > 0 ? 'bad' : ''} />
      <Stat label="Queued now" value={queued} />
      <Stat label="Mean wait" value={meanWait} />
      <Stat label="Denied" value={denied} tone={denied > 0 ? 'denied' : ''} />
    </dl>
  );
}
