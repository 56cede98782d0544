/**
 * A Node process of the Redis tests (test/stores/redis.test.ts bundles it with esbuild and forks
 * it 8 times): it runs pacers on a `redisStore` as an app's worker would, on the parent's
 * command, and reports what it admitted. Not a test file itself.
 */
import { createClient } from 'redis';
import { perDay, perSecond, resolvePolicy } from '../../src/core/policy.js';
import { createPacedFetch } from '../../src/http/index.js';
import { createPacer, isRateLimitError, RateLimitError } from '../../src/pacer/index.js';
import { redisStore } from '../../src/stores/redis/index.js';

/** Fire `calls` tasks at once in reject mode at a bucket of `capacity` without refill. */
interface Burst {
  readonly type: 'burst';
  readonly prefix: string;
  readonly calls: number;
  readonly capacity: number;
}

/** Fire `calls` takes straight at the store, all at once: one script each, no batching. */
interface Takes {
  readonly type: 'takes';
  readonly prefix: string;
  readonly calls: number;
  readonly capacity: number;
}

/** Fire `calls` paced fetches at `url` (reject mode); the server's 429 blocks the key for all. */
interface Fetches {
  readonly type: 'fetches';
  readonly prefix: string;
  readonly url: string;
  readonly calls: number;
}

/** Fire `calls` paced fetches at `url`, queued, configured far too generously (1,000 a second). */
interface Generous {
  readonly type: 'generous';
  readonly prefix: string;
  readonly url: string;
  readonly calls: number;
}

type Command = Burst | Takes | Fetches | Generous | { readonly type: 'exit' };

export interface WorkerResult {
  readonly admitted: number;
  readonly denied: number;
  /** Denials by reason. */
  readonly reasons: Record<string, number>;
  /** Anything else a call rejected with (should be none). */
  readonly errors: string[];
  readonly statuses: Record<string, number>;
  readonly ms: number;
}

const url = process.env['REDIS_URL'];
if (url === undefined) throw new Error('REDIS_URL is not set');
const client = createClient({ url, socket: { reconnectStrategy: false } });
client.on('error', () => {});
await client.connect();

const send = (message: unknown) => process.send?.(message);

async function tally(calls: Promise<unknown>[], started: number): Promise<WorkerResult> {
  const reasons: Record<string, number> = {};
  const statuses: Record<string, number> = {};
  const errors: string[] = [];
  let admitted = 0;
  let denied = 0;
  for (const outcome of await Promise.allSettled(calls)) {
    if (outcome.status === 'fulfilled') {
      admitted++;
      const status = (outcome.value as { status?: number } | undefined)?.status;
      if (status !== undefined) statuses[status] = (statuses[status] ?? 0) + 1;
    } else if (isRateLimitError(outcome.reason)) {
      denied++;
      const reason = outcome.reason.decision.reason ?? 'rate';
      reasons[reason] = (reasons[reason] ?? 0) + 1;
    } else {
      errors.push(String(outcome.reason));
    }
  }
  return { admitted, denied, reasons, errors, statuses, ms: performance.now() - started };
}

async function run(command: Burst | Takes | Fetches | Generous): Promise<WorkerResult> {
  const started = performance.now();
  const store = redisStore({ client, prefix: command.prefix });
  if (command.type === 'takes') {
    const call = {
      limits: Object.freeze([resolvePolicy(perDay(command.capacity))]),
      signal: new AbortController().signal,
    };
    const calls = Array.from({ length: command.calls }, () =>
      store.take('default', 1, call).then((decision) => {
        if (!decision.allowed) throw new RateLimitError(decision);
      }),
    );
    return tally(calls, started);
  }
  if (command.type === 'burst') {
    // `capacity` permits a day: not one refilled within a trial.
    const pacer = createPacer({ limits: perDay(command.capacity), mode: 'reject', store });
    const calls = Array.from({ length: command.calls }, () => pacer.schedule(() => true));
    const result = await tally(calls, started);
    pacer.dispose();
    return result;
  }
  if (command.type === 'generous') {
    const pacedFetch = createPacedFetch({ limits: perSecond(1_000), store });
    const calls = Array.from({ length: command.calls }, () => pacedFetch(command.url));
    const result = await tally(calls, started);
    pacedFetch.pacer.dispose();
    return result;
  }
  const pacedFetch = createPacedFetch({
    limits: perDay(1_000),
    mode: 'reject',
    store,
    retry: { limit: 0 },
  });
  const calls = Array.from({ length: command.calls }, () => pacedFetch(command.url));
  const result = await tally(calls, started);
  pacedFetch.pacer.dispose();
  return result;
}

process.on('message', (command: Command) => {
  if (command.type === 'exit') {
    client.destroy();
    process.exit(0);
  }
  run(command).then(
    (result) => send({ type: 'result', result }),
    (error: unknown) => send({ type: 'error', error: String(error) }),
  );
});
// The test process is gone (killed, crashed): so is this one.
process.on('disconnect', () => process.exit(0));
send({ type: 'ready' });
