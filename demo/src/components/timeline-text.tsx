import { clientEvents, type Span } from '../client/timeline-events';
import { useNow } from '../lib/hooks';
import { useStore } from '../lib/store';
import { type Arrival, serverState } from '../mock/server';

/** How far back the timeline looks, in ms. */
export const WINDOW_MS = 15_000;
const SECOND = 1000;

interface Row {
  /** Whole seconds before now at which the row starts (15 … 1). */
  readonly ago: number;
  readonly ok: number;
  readonly refused: number;
  /** Most requests waiting in the pacer at a sample within the second. */
  readonly waiting: number;
  /** ms of the second the server's block held. */
  readonly blockedMs: number;
}

function overlap(span: Span, from: number, to: number): number {
  return Math.max(0, Math.min(span.to, to) - Math.max(span.from, from));
}

/** The timeline's data, second by second, for the paced side. */
export function rowsOf(now: number, arrivals: readonly Arrival[]): Row[] {
  const rows: Row[] = [];
  for (let ago = WINDOW_MS / SECOND; ago >= 1; ago--) {
    const from = now - ago * SECOND;
    const to = from + SECOND;
    let ok = 0;
    let refused = 0;
    for (const arrival of arrivals) {
      if (arrival.lane !== 'paced' || arrival.at < from || arrival.at >= to) continue;
      if (arrival.status === 200) ok++;
      else refused++;
    }
    let waiting = 0;
    for (const sample of clientEvents.samples) {
      if (sample.t >= from && sample.t < to) waiting = Math.max(waiting, sample.queued);
    }
    const blockedMs = clientEvents.blocks.reduce((ms, span) => ms + overlap(span, from, to), 0);
    rows.push({ ago, ok, refused, waiting, blockedMs });
  }
  return rows;
}

/**
 * The text form of the timeline: a sentence that sums up the last 15 seconds, and the same data
 * second by second in a table (folded away; a screen reader or a curious visitor opens it).
 * Refreshed once a second while anything happened in view.
 */
export function TimelineText() {
  const { arrivals } = useStore(serverState);
  const last = arrivals[arrivals.length - 1]?.at ?? Number.NEGATIVE_INFINITY;
  const now = useNow(performance.now() - last < WINDOW_MS + 2 * SECOND, SECOND);
  const rows = rowsOf(now, arrivals);
  const ok = rows.reduce((sum, row) => sum + row.ok, 0);
  const refused = rows.reduce((sum, row) => sum + row.refused, 0);
  const waiting = rows.reduce((most, row) => Math.max(most, row.waiting), 0);
  const blocked = rows.reduce((sum, row) => sum + row.blockedMs, 0) / SECOND;
  return (
    <div className="timeline-text">
      <p data-testid="timeline-summary">
        Last 15 s, paced side: {ok + refused} requests reached the server ({ok} × 200, {refused} ×
        429); at most {waiting} waited in the pacer at once; the server blocked the key for{' '}
        {blocked.toFixed(1)} s.
      </p>
      <details>
        <summary>The timeline as a table, second by second</summary>
        <table>
          <caption>Paced side, the last 15 seconds</caption>
          <thead>
            <tr>
              <th scope="col">Second</th>
              <th scope="col">200</th>
              <th scope="col">429</th>
              <th scope="col">Most waiting</th>
              <th scope="col">Blocked by the server</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={row.ago}>
                <th scope="row">
                  −{row.ago} to −{row.ago - 1} s
                </th>
                <td>{row.ok}</td>
                <td>{row.refused}</td>
                <td>{row.waiting}</td>
                <td>{row.blockedMs > 0 ? `${(row.blockedMs / SECOND).toFixed(1)} s` : '–'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </div>
  );
}
