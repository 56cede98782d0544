import type { OutboxEntry, OutboxRecord } from './types.js';

/** What `enqueue` adds to the request's own fields. */
export interface RecordMeta {
  readonly id: string;
  readonly key: string;
  readonly createdAt: number;
  readonly idempotencyKeyHeader: string | false;
}

/**
 * The record of a request whose body was read into `body`. The idempotency key is written into
 * the stored headers, so it is the same on every attempt and after every reload.
 */
export function recordOf(
  request: Request,
  body: ArrayBuffer | null,
  meta: RecordMeta,
): OutboxRecord {
  // Copied pair by pair: `new Headers(request.headers)` is not as faithful everywhere.
  const headers: [string, string][] = [];
  request.headers.forEach((value, name) => {
    headers.push([name, value]);
  });
  const { idempotencyKeyHeader: header } = meta;
  if (header !== false && !request.headers.has(header)) {
    headers.push([header.toLowerCase(), meta.id]);
  }
  return {
    v: 1,
    id: meta.id,
    key: meta.key,
    method: request.method,
    url: request.url,
    headers,
    body,
    credentials: request.credentials,
    // A request made by a service worker's navigation cannot be made again as one.
    mode: request.mode === 'navigate' ? 'same-origin' : request.mode,
    redirect: request.redirect,
    referrerPolicy: request.referrerPolicy,
    createdAt: meta.createdAt,
    attempts: 0,
    nextAttemptAt: 0,
    lastFailure: null,
  };
}

/** The record part of an entry, as storage keeps it (`seq` is the storage's key). */
export function toRecord(entry: OutboxEntry): OutboxRecord {
  const { seq: _seq, ...record } = entry;
  return record;
}

/** A fresh Request for one attempt. `signal` lets `close()` abort a send waiting in the pacer. */
export function toRequest(entry: OutboxRecord, signal: AbortSignal): Request {
  const init: RequestInit = {
    method: entry.method,
    headers: entry.headers as [string, string][],
    credentials: entry.credentials,
    mode: entry.mode,
    redirect: entry.redirect,
    referrerPolicy: entry.referrerPolicy,
    signal,
  };
  if (entry.body !== null && entry.method !== 'GET' && entry.method !== 'HEAD') {
    init.body = entry.body;
  }
  return new Request(entry.url, init);
}

const CREDENTIALS: readonly string[] = ['omit', 'same-origin', 'include'];
const MODES: readonly string[] = ['cors', 'no-cors', 'same-origin'];
const REDIRECTS: readonly string[] = ['follow', 'error', 'manual'];
const FAILURES: readonly unknown[] = ['network', 'status', null];

export type Decoded =
  | { readonly ok: true; readonly entry: OutboxEntry }
  | { readonly ok: false; readonly later: boolean; readonly problem: string };

/**
 * Checks a stored value field by field and returns it as a frozen entry, or says what is wrong.
 * `later`: a record written by a later version of the library (left alone, not deleted).
 */
export function decode(seq: number, value: unknown): Decoded {
  const bad = (problem: string): Decoded => ({ ok: false, later: false, problem });
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return bad(`it is ${value === null ? 'null' : typeof value}, not a record`);
  }
  const r = value as Record<string, unknown>;
  if (typeof r['v'] === 'number' && r['v'] > 1) {
    return { ok: false, later: true, problem: `format version ${r['v']} is newer than 1` };
  }
  if (r['v'] !== 1) return bad('`v` is not 1');
  for (const field of ['id', 'key', 'method', 'url', 'referrerPolicy'] as const) {
    if (typeof r[field] !== 'string') return bad(`\`${field}\` is not a string`);
  }
  if (r['id'] === '' || r['method'] === '') return bad('`id` or `method` is empty');
  if (!isAbsoluteUrl(r['url'] as string)) return bad('`url` is not an absolute URL');
  for (const field of ['createdAt', 'attempts', 'nextAttemptAt'] as const) {
    const n = r[field];
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) {
      return bad(`\`${field}\` is not a finite number >= 0`);
    }
  }
  if (!isHeaderList(r['headers'])) return bad('`headers` is not a list of [name, value] strings');
  const body = r['body'];
  if (body !== null && !isArrayBuffer(body)) return bad('`body` is neither bytes nor null');
  if (!CREDENTIALS.includes(r['credentials'] as string)) return bad('`credentials` is invalid');
  if (!MODES.includes(r['mode'] as string)) return bad('`mode` is invalid');
  if (!REDIRECTS.includes(r['redirect'] as string)) return bad('`redirect` is invalid');
  if (!FAILURES.includes(r['lastFailure'])) return bad('`lastFailure` is invalid');
  const entry = {
    seq,
    v: 1,
    id: r['id'],
    key: r['key'],
    method: r['method'],
    url: r['url'],
    headers: Object.freeze(
      (r['headers'] as [string, string][]).map((pair) => Object.freeze([...pair])),
    ),
    body,
    credentials: r['credentials'],
    mode: r['mode'],
    redirect: r['redirect'],
    referrerPolicy: r['referrerPolicy'],
    createdAt: r['createdAt'],
    attempts: r['attempts'],
    nextAttemptAt: r['nextAttemptAt'],
    lastFailure: r['lastFailure'],
  } as OutboxEntry;
  return { ok: true, entry: Object.freeze(entry) };
}

function isAbsoluteUrl(text: string): boolean {
  try {
    new URL(text);
    return true;
  } catch {
    return false;
  }
}

function isHeaderList(value: unknown): boolean {
  return (
    Array.isArray(value) &&
    value.every(
      (pair) =>
        Array.isArray(pair) &&
        pair.length === 2 &&
        typeof pair[0] === 'string' &&
        typeof pair[1] === 'string',
    )
  );
}

/** An ArrayBuffer from any realm (IndexedDB hands back its own). */
function isArrayBuffer(value: unknown): value is ArrayBuffer {
  return Object.prototype.toString.call(value) === '[object ArrayBuffer]';
}
