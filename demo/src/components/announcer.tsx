import { useEffect, useState } from 'react';
import { bursts, isDone } from '../client/bursts';
import { useStore } from '../lib/store';
import { serverState } from '../mock/server';
import { summaryOf } from './burst-summary';

/**
 * A polite live region: a screen reader hears a burst start and, once every request of both
 * sides has settled, how each side did. Nothing per request, so it never floods.
 */
export function Announcer() {
  const state = useStore(bursts);
  const server = useStore(serverState);
  const [message, setMessage] = useState('');
  const latest = state.list[state.list.length - 1];
  const done = latest !== undefined && isDone(state, latest);
  const id = latest?.id;
  // biome-ignore lint/correctness/useExhaustiveDependencies: announce on a new burst and when it finishes, not on every count
  useEffect(() => {
    if (latest === undefined) return;
    if (!done) {
      setMessage(`Fired ${latest.size} requests down each side.`);
      return;
    }
    const progress = state.progress[latest.id];
    if (progress === undefined) return;
    setMessage(summaryOf(latest, progress, server.bursts[latest.id]));
  }, [id, done]);
  return (
    <p className="sr-only" role="status" aria-live="polite" data-testid="announcer">
      {message}
    </p>
  );
}
