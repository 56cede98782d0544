import { createPacedFetch, perSecond } from 'fetch-pacer';
import { crossTabStore } from 'fetch-pacer/cross-tab';
import { createOutbox } from 'fetch-pacer/offline';
import { PacerProvider, usePacerState, useRateLimitedFetch } from 'fetch-pacer/react';
import { redisStore } from 'fetch-pacer/redis';
import { createManualClock } from 'fetch-pacer/testing';

const pacedFetch = createPacedFetch({
  limits: perSecond(10),
  store: crossTabStore({ name: 'github-api' }),
});
const outbox = createOutbox({ name: 'orders', fetch: pacedFetch });

function User({ id }: { id: string }) {
  const request = useRateLimitedFetch<{ name: string }>(`/api/users/${id}`);
  const queued: number = usePacerState(pacedFetch, (state) => state.queued);
  return <p>{request.status === 'success' ? request.data.name : `${queued} waiting`}</p>;
}

export function App() {
  return (
    <PacerProvider fetch={pacedFetch}>
      <User id="42" />
    </PacerProvider>
  );
}
export { createManualClock, outbox, redisStore };
