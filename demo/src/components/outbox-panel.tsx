/**
 * The demo's "offline outbox" panel: go offline, queue writes, reload, go online, and watch
 * them drain through the bucket. Self-contained: it takes an outbox (and, for the gauge, the
 * paced fetch behind it) and renders everything else itself.
 *
 * ```tsx
 * const pacedFetch = createPacedFetch({ limits: perSecond(2) });
 * const outbox = createOutbox({ name: 'demo', fetch: pacedFetch });
 * <OutboxPanel outbox={outbox} pacedFetch={pacedFetch} endpoint="/api/notes" />
 * ```
 */
import type { PacedFetch } from 'fetch-pacer';
import type { Outbox, OutboxEntry } from 'fetch-pacer/offline';
import { useBucketLevel, useOutbox } from 'fetch-pacer/react';
import { useEffect, useState, useSyncExternalStore } from 'react';

/** A network the visitor can switch off in the page (the outbox's `network` option too). */
export interface NetworkSwitch {
  isOnline(): boolean;
  setOnline(online: boolean): void;
  subscribe(listener: () => void): () => void;
}

export interface OutboxPanelProps {
  readonly outbox: Outbox;
  /** The paced fetch the outbox sends through: shows its bucket filling and draining. */
  readonly pacedFetch?: PacedFetch;
  /** Where the queued writes go (POST, JSON body). @default '/api/notes' */
  readonly endpoint?: string;
  /** The outbox's network, to switch it off from the panel (else: DevTools' offline). */
  readonly network?: NetworkSwitch;
}

/** Refreshes the entry list whenever the outbox's state changes. */
function useEntries(outbox: Outbox): readonly OutboxEntry[] {
  const snapshot = useOutbox(outbox);
  const [entries, setEntries] = useState<readonly OutboxEntry[]>([]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: re-read on every new snapshot
  useEffect(() => {
    let current = true;
    outbox.list().then(
      (list) => current && setEntries(list),
      () => {},
    );
    return () => {
      current = false;
    };
  }, [outbox, snapshot]);
  return entries;
}

function Bucket({ pacedFetch, bucketKey }: { pacedFetch: PacedFetch; bucketKey: string }) {
  const { level, capacity, queued, blockedUntil } = useBucketLevel(pacedFetch, bucketKey);
  return (
    <p className="outbox-bucket">
      <meter min={0} max={capacity} value={level} /> {level.toFixed(1)} / {capacity} permits
      {queued > 0 ? `, ${queued} waiting` : ''}
      {blockedUntil === undefined ? '' : ', the server asked to wait'}
    </p>
  );
}

function OfflineSwitch({ network }: { network: NetworkSwitch }) {
  const online = useSyncExternalStore(network.subscribe, network.isOnline, network.isOnline);
  return (
    <label className="switch">
      <input
        type="checkbox"
        role="switch"
        aria-checked={!online}
        checked={!online}
        onChange={(event) => network.setOnline(!event.currentTarget.checked)}
        data-testid="offline-switch"
      />
      <span className="switch-track" aria-hidden="true" />
      Offline (this panel&apos;s network)
    </label>
  );
}

function Countdown({ at }: { at: number }) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 250);
    return () => clearInterval(timer);
  }, []);
  return <>{Math.max(0, Math.ceil((at - now) / 1000))} s</>;
}

export function OutboxPanel({
  outbox,
  pacedFetch,
  endpoint = '/api/notes',
  network,
}: OutboxPanelProps) {
  const state = useOutbox(outbox);
  const entries = useEntries(outbox);
  const [count, setCount] = useState(10);
  const [problem, setProblem] = useState<string | undefined>();
  const bucketKey = new URL(endpoint, globalThis.location?.href ?? 'http://localhost').origin;

  async function queue(): Promise<void> {
    setProblem(undefined);
    try {
      for (let i = 0; i < count; i++) {
        await outbox.enqueue(endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ note: `note ${Date.now()}-${i}` }),
        });
      }
    } catch (error) {
      setProblem((error as Error).message);
    }
  }

  return (
    <section className="outbox-panel" aria-labelledby="outbox-title">
      <h2 id="outbox-title">Offline outbox</h2>
      <p>
        {network === undefined
          ? 'Go offline (DevTools → Network → Offline)'
          : 'Switch the panel offline'}
        , queue writes, reload the page, go online again: the writes survive the reload and drain
        through the bucket, in order. It starts empty; what you queue stays until it is sent.
      </p>
      {network === undefined ? null : <OfflineSwitch network={network} />}
      <p role="status" data-testid="outbox-status">
        <strong>{state.online ? 'Online' : 'Offline'}</strong>
        {state.ready ? '' : ' · reading the store…'}
        {' · '}
        {state.pending} pending · {state.inFlight} in flight · {state.sent} sent · {state.rejected}{' '}
        rejected · {state.dropped} dropped
        {state.flushing ? ' · this tab is flushing' : ''}
        {state.nextAttemptAt === undefined ? (
          ''
        ) : (
          <>
            {' · next attempt in '}
            <Countdown at={state.nextAttemptAt} />
          </>
        )}
      </p>
      {pacedFetch === undefined ? null : <Bucket pacedFetch={pacedFetch} bucketKey={bucketKey} />}
      <p>
        <label>
          Writes{' '}
          <input
            type="number"
            min={1}
            max={500}
            value={count}
            onChange={(event) => setCount(Math.max(1, Number(event.target.value) || 1))}
          />
        </label>{' '}
        <button type="button" onClick={() => void queue()}>
          Queue {count} writes
        </button>{' '}
        <button type="button" onClick={() => void outbox.flush()} disabled={!state.online}>
          Flush now
        </button>
      </p>
      {problem === undefined ? null : <p role="alert">{problem}</p>}
      {state.lastError === undefined ? null : (
        <p className="outbox-error">Last error: {state.lastError.message}</p>
      )}
      <ol className="outbox-entries">
        {entries.slice(0, 20).map((entry) => (
          <li key={entry.id}>
            {entry.method} {new URL(entry.url).pathname} · {entry.body?.byteLength ?? 0} bytes
            {entry.attempts > 0 ? ` · ${entry.attempts} failed attempts` : ''}
          </li>
        ))}
        {entries.length > 20 ? <li>… and {entries.length - 20} more</li> : null}
      </ol>
    </section>
  );
}
