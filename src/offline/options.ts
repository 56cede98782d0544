import { assertKnownOptions, describe } from '../core/validate.js';
import type { OutboxError, OutboxSendError } from './errors.js';
import type {
  OutboxClock,
  OutboxDrop,
  OutboxEntry,
  OutboxLocks,
  OutboxNetwork,
  OutboxStorage,
} from './types.js';

export interface OutboxOptions {
  /**
   * Names the outbox: its IndexedDB database (by default), its Web Lock and its broadcast
   * channel. Tabs that use the same name share one outbox. A non-empty string.
   */
  readonly name: string;
  /**
   * Sends an entry: a paced fetch from `createPacedFetch`, so the drain keeps to the rate limit
   * and the server's `Retry-After` blocks every later entry of the key. Any
   * `(request: Request) => Promise<Response>` works (unpaced, it sends as fast as answers come).
   */
  readonly fetch: (request: Request) => Promise<Response>;
  /**
   * Where entries live. @default `indexedDBStorage({ name })` where `indexedDB` exists, else
   * `memoryStorage()` (which a reload forgets: in Node, pass a durable storage of your own)
   */
  readonly storage?: OutboxStorage;
  /**
   * The line an entry waits in. Entries of one key go one at a time, in enqueue order, and one
   * that keeps failing holds back the later ones of its key only; other keys go on. Key by
   * resource (`request.url`) to let unrelated writes go in parallel, still paced.
   * @default the request's origin (the paced fetch's default key)
   */
  readonly key?: (request: Request) => string;
  /**
   * Longest an entry is kept, in ms from its enqueue (wall clock). An older one is not sent but
   * dropped and reported to `onDropped` with `reason: 'expired'`. `Infinity` keeps entries forever.
   * @default 604_800_000 (7 days)
   */
  readonly maxRetentionMs?: number;
  /** Most entries stored at once; `enqueue` beyond rejects with `OutboxFullError`. @default Infinity */
  readonly maxEntries?: number;
  /**
   * Sends of one entry without a definitive answer (network error, 408, 429, 5xx) after which it
   * is dropped and reported (`reason: 'attempts'`), so its key's later entries go on.
   * @default Infinity (only `maxRetentionMs` ends an entry that keeps failing)
   */
  readonly maxAttempts?: number;
  /**
   * First wait, in ms, after a send without a definitive answer; it doubles per attempt up to
   * `maxRetryDelayMs`, with equal jitter (half fixed, half random). The server's `Retry-After`
   * wins when it is longer. @default 1_000
   */
  readonly retryDelayMs?: number;
  /** Longest wait between two attempts of an entry, in ms. @default 300_000 (5 minutes) */
  readonly maxRetryDelayMs?: number;
  /**
   * The header that carries each entry's idempotency key (its `id`, kept across retries and
   * reloads), so the server can drop a repeated write whose first answer was lost. A request
   * that has the header keeps its own value. `false`: no header. A cross-origin API must allow
   * it in `Access-Control-Allow-Headers`.
   * @default 'Idempotency-Key'
   */
  readonly idempotencyKeyHeader?: string | false;
  /** A 2xx answer (or an opaque one): the entry left the outbox. The body is yours to read. */
  readonly onSent?: (entry: OutboxEntry, response: Response) => void;
  /**
   * A definitive refusal (a 4xx other than 408/429, or a 3xx fetch did not follow): the entry
   * left the outbox, since sending it again would get the same answer. @default console.warn
   */
  readonly onRejected?: (entry: OutboxEntry, response: Response) => void;
  /** An entry left without a definitive answer (expired, attempts, corrupt). @default console.warn */
  readonly onDropped?: (drop: OutboxDrop) => void;
  /**
   * A failure that no promise carries: the storage failed during a flush, a record from a
   * later version was found. Also in `getSnapshot().lastError`. @default console.error
   */
  readonly onError?: (error: OutboxError) => void;
  /**
   * Wall-clock time (epoch ms) and timers. A `ManualClock` created with `start: <epoch ms>` works.
   * @default `Date.now()` and the global `setTimeout`/`clearTimeout`
   */
  readonly clock?: OutboxClock;
  /** Source of jitter in [0, 1). @default Math.random */
  readonly random?: () => number;
  /** Online state and its changes. @default `navigator.onLine` and the `online`/`offline` events */
  readonly network?: OutboxNetwork;
  /**
   * The Web Locks that let one tab at a time flush. `false`, or a platform without them: this
   * tab flushes without asking the others (two tabs may then send an entry twice; the
   * idempotency key lets the server tell). @default `navigator.locks`
   */
  readonly locks?: OutboxLocks | false;
}

/** Every option checked, defaults filled in (storage stays optional: it is chosen at start). */
export interface ResolvedOutboxOptions {
  readonly name: string;
  readonly fetch: (request: Request) => Promise<Response>;
  readonly storage: OutboxStorage | undefined;
  readonly key: (request: Request) => string;
  readonly maxRetentionMs: number;
  readonly maxEntries: number;
  readonly maxAttempts: number;
  readonly retryDelayMs: number;
  readonly maxRetryDelayMs: number;
  readonly idempotencyKeyHeader: string | false;
  readonly onSent: (entry: OutboxEntry, response: Response) => void;
  readonly onRejected: (entry: OutboxEntry, response: Response) => void;
  readonly onDropped: (drop: OutboxDrop) => void;
  readonly onError: (error: OutboxError) => void;
  readonly clock: OutboxClock;
  readonly random: () => number;
  readonly network: OutboxNetwork | undefined;
  readonly locks: OutboxLocks | false | undefined;
}

const DAY_MS = 24 * 60 * 60 * 1000;
/** The longest delay a platform timer takes (2^31 − 1 ms); longer ones fire at once. */
export const MAX_TIMER_MS = 2_147_483_647;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

const defaultClock: OutboxClock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => globalThis.setTimeout(callback, ms),
  clearTimeout: (handle) => globalThis.clearTimeout(handle as Parameters<typeof clearTimeout>[0]),
};

function fail(field: string, expected: string, value: unknown): never {
  const message = `[fetch-pacer] Expected \`${field}\` to be ${expected}, got ${describe(value)}`;
  throw typeof value === 'number' ? new RangeError(message) : new TypeError(message);
}

function assertFunction(field: string, value: unknown): void {
  if (typeof value !== 'function') fail(field, 'a function', value);
}

function assertMs(field: string, value: unknown, allowInfinity: boolean): void {
  const ok =
    typeof value === 'number' &&
    value > 0 &&
    (Number.isFinite(value) || (allowInfinity && value === Number.POSITIVE_INFINITY));
  if (!ok) fail(field, `a number of ms > 0${allowInfinity ? ' (or Infinity)' : ''}`, value);
}

function assertBound(field: string, value: unknown): void {
  if (value === Number.POSITIVE_INFINITY) return;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    fail(field, 'a positive integer (or Infinity)', value);
  }
}

function assertHas(field: string, value: unknown, methods: readonly string[], hint: string): void {
  const ok =
    typeof value === 'object' &&
    value !== null &&
    methods.every((method) => typeof (value as Record<string, unknown>)[method] === 'function');
  if (!ok) fail(field, hint, value);
}

export function resolveOutboxOptions(options: OutboxOptions): ResolvedOutboxOptions {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(
      `[fetch-pacer] Expected outbox options \`{ name, fetch }\`, got ${describe(options)}`,
    );
  }
  assertKnownOptions('createOutbox()', options, OUTBOX_OPTIONS);
  const {
    name,
    fetch,
    storage,
    key = originOf,
    maxRetentionMs = 7 * DAY_MS,
    maxEntries = Number.POSITIVE_INFINITY,
    maxAttempts = Number.POSITIVE_INFINITY,
    retryDelayMs = 1_000,
    maxRetryDelayMs = 300_000,
    idempotencyKeyHeader = 'Idempotency-Key',
    onSent = () => {},
    onRejected = warnRejected,
    onDropped = warnDropped,
    onError = (error: OutboxError) => console.error(error),
    clock = defaultClock,
    random = Math.random,
    network,
    locks,
  } = options;
  if (typeof name !== 'string' || name === '') fail('name', 'a non-empty string', name);
  assertFunction('fetch', fetch);
  if (storage !== undefined) {
    assertHas(
      'storage',
      storage,
      ['add', 'list', 'update', 'delete'],
      'an OutboxStorage (`add`, `list`, `update`, `delete`), such as `indexedDBStorage()`',
    );
  }
  assertFunction('key', key);
  assertMs('maxRetentionMs', maxRetentionMs, true);
  assertBound('maxEntries', maxEntries);
  assertBound('maxAttempts', maxAttempts);
  assertMs('retryDelayMs', retryDelayMs, false);
  assertMs('maxRetryDelayMs', maxRetryDelayMs, false);
  if (maxRetryDelayMs > MAX_TIMER_MS) {
    fail('maxRetryDelayMs', `at most ${MAX_TIMER_MS} (the longest timer)`, maxRetryDelayMs);
  }
  if (
    idempotencyKeyHeader !== false &&
    (typeof idempotencyKeyHeader !== 'string' || !TOKEN.test(idempotencyKeyHeader))
  ) {
    fail('idempotencyKeyHeader', 'a header name or false', idempotencyKeyHeader);
  }
  assertFunction('onSent', onSent);
  assertFunction('onRejected', onRejected);
  assertFunction('onDropped', onDropped);
  assertFunction('onError', onError);
  assertHas(
    'clock',
    clock,
    ['now', 'setTimeout', 'clearTimeout'],
    'an object with `now()`, `setTimeout()` and `clearTimeout()` (a ManualClock works)',
  );
  assertFunction('random', random);
  if (network !== undefined) {
    assertHas(
      'network',
      network,
      ['isOnline', 'subscribe'],
      'an object with `isOnline()` and `subscribe()`',
    );
  }
  if (locks !== undefined && locks !== false) {
    assertHas('locks', locks, ['request'], 'a LockManager (`navigator.locks`) or false');
  }
  return {
    name,
    fetch,
    storage,
    key,
    maxRetentionMs,
    maxEntries,
    maxAttempts,
    retryDelayMs: Math.min(retryDelayMs, maxRetryDelayMs),
    maxRetryDelayMs,
    idempotencyKeyHeader,
    onSent,
    onRejected,
    onDropped,
    onError,
    clock,
    random,
    network,
    locks,
  };
}

function originOf(request: Request): string {
  return new URL(request.url).origin;
}

function warnRejected(entry: OutboxEntry, response: Response): void {
  console.warn(
    `[fetch-pacer] The server refused ${entry.method} ${entry.url} from the outbox with ${response.status}; the entry was removed. Pass \`onRejected\` to handle refusals.`,
  );
}

function warnDropped(drop: OutboxDrop): void {
  if (drop.reason === 'corrupt') {
    console.warn(drop.error.message, drop.record);
    return;
  }
  const { entry } = drop;
  const why =
    drop.reason === 'expired'
      ? 'it was older than `maxRetentionMs`'
      : `it failed \`maxAttempts\` times (${(drop.error as OutboxSendError).message})`;
  console.warn(
    `[fetch-pacer] The outbox dropped ${entry.method} ${entry.url} unsent: ${why}. Pass \`onDropped\` to handle drops.`,
  );
}

/** Every option of `createOutbox`. */
const OUTBOX_OPTIONS: readonly (keyof OutboxOptions)[] = [
  'name',
  'fetch',
  'storage',
  'key',
  'maxRetentionMs',
  'maxEntries',
  'maxAttempts',
  'retryDelayMs',
  'maxRetryDelayMs',
  'idempotencyKeyHeader',
  'onSent',
  'onRejected',
  'onDropped',
  'onError',
  'clock',
  'random',
  'network',
  'locks',
];
