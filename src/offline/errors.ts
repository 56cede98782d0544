import { isPacerError, PacerError } from '../pacer/errors.js';

/**
 * The base of every error the outbox reports or rejects with. It extends `PacerError`, so
 * `instanceof PacerError` holds; across realms, match with `isOutboxError` (by `name`).
 */
export class OutboxError extends PacerError {
  override readonly name: string = 'OutboxError';
  /** The outbox's `name`. */
  readonly outbox: string;

  constructor(outbox: string, message: string, options?: { readonly cause?: unknown }) {
    super(message, options);
    this.outbox = outbox;
  }
}

/** `enqueue` found `maxEntries` entries stored already. Nothing was stored. */
export class OutboxFullError extends OutboxError {
  override readonly name = 'OutboxFullError' as const;
  readonly maxEntries: number;

  constructor(outbox: string, maxEntries: number) {
    super(
      outbox,
      `[fetch-pacer] The outbox '${outbox}' holds \`maxEntries\` (${maxEntries}) entries: the request was not stored. Wait until it drains, or raise \`maxEntries\`.`,
    );
    this.maxEntries = maxEntries;
  }
}

/** `enqueue` could not read the request's body (a failed stream, a body already used). */
export class OutboxBodyError extends OutboxError {
  override readonly name = 'OutboxBodyError' as const;

  constructor(outbox: string, method: string, url: string, cause: unknown) {
    super(
      outbox,
      `[fetch-pacer] The outbox '${outbox}' could not read the body of ${method} ${url}: nothing was stored. Pass a body that can be read once in full (string, Blob, FormData, bytes, or a stream that does not fail).`,
      { cause },
    );
  }
}

/** The storage failed: the request was not stored (`enqueue`) or a flush stopped (`onError`). */
export class OutboxStorageError extends OutboxError {
  override readonly name = 'OutboxStorageError' as const;
  /** What the outbox was doing: `'open'`, `'add'`, `'list'`, `'update'`, `'delete'`. */
  readonly operation: string;
  /** The storage said the quota is exceeded (a `QuotaExceededError`). */
  readonly quotaExceeded: boolean;

  constructor(outbox: string, operation: string, cause: unknown) {
    const quotaExceeded = isQuotaError(cause);
    const what =
      operation === 'add'
        ? 'could not store the request: nothing was stored'
        : `could not ${operation} its entries: they stay as they are and the outbox tries again later`;
    const why = quotaExceeded
      ? 'the storage quota is exceeded. Free space (or ask for `navigator.storage.persist()`), or store fewer and smaller requests'
      : `the storage failed (${messageOf(cause)})`;
    super(outbox, `[fetch-pacer] The outbox '${outbox}' ${what}: ${why}.`, { cause });
    this.operation = operation;
    this.quotaExceeded = quotaExceeded;
  }
}

/** A stored value is not a valid record. It is reported through `onDropped` and deleted. */
export class OutboxCorruptEntryError extends OutboxError {
  override readonly name = 'OutboxCorruptEntryError' as const;
  readonly seq: number;
  /** What is wrong with it, e.g. "`url` is not a string". */
  readonly problem: string;

  constructor(outbox: string, seq: number, problem: string) {
    super(
      outbox,
      `[fetch-pacer] The outbox '${outbox}' found a corrupt entry (seq ${seq}): ${problem}. It was removed and reported with its stored value; the other entries are untouched.`,
    );
    this.seq = seq;
    this.problem = problem;
  }
}

/**
 * A send got no definitive answer: 408, 429, 5xx, a network error (`status` undefined), or the
 * paced fetch refused to start it (`maxWaitMs`, `maxQueue`: `cause` is the pacer's error).
 * The entry stays and is tried again after `retryAfterMs`.
 */
export class OutboxSendError extends OutboxError {
  override readonly name = 'OutboxSendError' as const;
  readonly entryId: string;
  /** The response status, or undefined when the request failed in the network. */
  readonly status: number | undefined;
  /** How long the entry now waits before its next attempt, in ms. */
  readonly retryAfterMs: number;

  constructor(
    outbox: string,
    entry: { readonly id: string; readonly method: string; readonly url: string },
    status: number | undefined,
    retryAfterMs: number,
    cause?: unknown,
  ) {
    const what =
      status !== undefined
        ? `got ${status}`
        : isPacerError(cause)
          ? `was held back by the pacer (${messageOf(cause)})`
          : `failed in the network (${messageOf(cause)})`;
    super(
      outbox,
      `[fetch-pacer] ${entry.method} ${entry.url} from the outbox '${outbox}' ${what}; it stays and is tried again in ${retryAfterMs} ms.`,
      { cause },
    );
    this.entryId = entry.id;
    this.status = status;
    this.retryAfterMs = retryAfterMs;
  }
}

/** The outbox was closed: `enqueue` takes nothing more. */
export class OutboxClosedError extends OutboxError {
  override readonly name = 'OutboxClosedError' as const;

  constructor(outbox: string) {
    super(
      outbox,
      `[fetch-pacer] The outbox '${outbox}' is closed and stores nothing more. Create a new one.`,
    );
  }
}

function nameOf(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const name = (value as { name?: unknown }).name;
  return typeof name === 'string' ? name : undefined;
}

function messageOf(value: unknown): string {
  if (typeof value === 'object' && value !== null) {
    const message = (value as { message?: unknown }).message;
    if (typeof message === 'string' && message !== '') return message;
  }
  return String(value);
}

/** A quota error from IndexedDB or Web Storage, whichever browser: matched by name. */
export function isQuotaError(value: unknown): boolean {
  const name = nameOf(value);
  return name === 'QuotaExceededError' || name === 'NS_ERROR_DOM_QUOTA_REACHED';
}

const NAMES: ReadonlySet<string> = new Set([
  'OutboxError',
  'OutboxFullError',
  'OutboxBodyError',
  'OutboxStorageError',
  'OutboxCorruptEntryError',
  'OutboxSendError',
  'OutboxClosedError',
]);

/** True for any error of the outbox, from this realm or another (matched by `name`). */
export function isOutboxError(value: unknown): value is OutboxError {
  return value instanceof OutboxError || NAMES.has(nameOf(value) ?? '');
}

export function isOutboxFullError(value: unknown): value is OutboxFullError {
  return value instanceof OutboxFullError || nameOf(value) === 'OutboxFullError';
}

export function isOutboxBodyError(value: unknown): value is OutboxBodyError {
  return value instanceof OutboxBodyError || nameOf(value) === 'OutboxBodyError';
}

export function isOutboxStorageError(value: unknown): value is OutboxStorageError {
  return value instanceof OutboxStorageError || nameOf(value) === 'OutboxStorageError';
}

export function isOutboxCorruptEntryError(value: unknown): value is OutboxCorruptEntryError {
  return value instanceof OutboxCorruptEntryError || nameOf(value) === 'OutboxCorruptEntryError';
}

export function isOutboxSendError(value: unknown): value is OutboxSendError {
  return value instanceof OutboxSendError || nameOf(value) === 'OutboxSendError';
}

export function isOutboxClosedError(value: unknown): value is OutboxClosedError {
  return value instanceof OutboxClosedError || nameOf(value) === 'OutboxClosedError';
}
