// A Node ESM service that server-renders: every entry point resolved through the exports map
// under node16 resolution (types condition first, then the file each `default` points at).
import { createPacer, type Decision, perMinute } from 'fetch-pacer';
import { crossTabStore } from 'fetch-pacer/cross-tab';
import { createOutbox, memoryStorage } from 'fetch-pacer/offline';
import { PacerProvider, type RateLimitedFetchState } from 'fetch-pacer/react';
import { redisStore } from 'fetch-pacer/redis';
import { createManualClock, type ManualClock } from 'fetch-pacer/testing';
import { createElement } from 'react';

const clock: ManualClock = createManualClock();
const pacer = createPacer({ limits: perMinute(600), clock, mode: 'reject' });
const decision: Decision = pacer.tryAcquire('reports');
const outbox = createOutbox({ name: 'audit', fetch: fetch, storage: memoryStorage() });
const tree = createElement(PacerProvider, { pacer }, null);
type Shown = RateLimitedFetchState<{ total: number }>['status'];
const shown: Shown = decision.allowed ? 'success' : 'error';

export { crossTabStore, outbox, redisStore, shown, tree };
