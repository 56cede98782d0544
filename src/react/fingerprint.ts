/** What `useRateLimitedFetch` loads: a URL, a Request, or nothing. */
export type RequestInput = string | URL | Request;

const ids = new WeakMap<object, number>();
let nextId = 1;

/** A number per object, for parts of a request that cannot be compared by value. */
function idOf(value: object): string {
  let id = ids.get(value);
  if (id === undefined) {
    id = nextId++;
    ids.set(value, id);
  }
  return `#${id}`;
}

function headersOf(headers: HeadersInit | undefined): unknown {
  if (headers === undefined) return undefined;
  try {
    return [...new Headers(headers)];
  } catch {
    // Malformed headers: sending fails and reports it; here they just need an identity.
    return idOf(headers);
  }
}

function bodyOf(body: BodyInit | null | undefined): string | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return `s:${body}`;
  if (body instanceof URLSearchParams) return `q:${body.toString()}`;
  // FormData, Blob, a buffer or a stream: the same object is the same body.
  return idOf(body as object);
}

/** The fields of `RequestInit` that are plain values. `signal` is left out: see below. */
const PLAIN_FIELDS = [
  'cache',
  'credentials',
  'integrity',
  'keepalive',
  'mode',
  'priority',
  'redirect',
  'referrer',
  'referrerPolicy',
] as const;

/**
 * A string that changes when, and only when, the request a hook should send changes. Callers
 * write `useRateLimitedFetch(url, { init: { headers: { ... } } })` with a new `init` object on
 * every render, or build a new `Request` each time: comparing by identity would send a request
 * per render. So the URL, method, headers and string bodies are compared by value, other bodies
 * by identity. The `signal` is not part of it (an inline `AbortSignal.timeout()` would refetch on
 * every render): the latest one is used when the request is sent.
 */
export function fingerprint(input: RequestInput, init: RequestInit | undefined): string {
  const parts: unknown[] = [];
  if (typeof input === 'string') parts.push(input);
  else if (input instanceof URL) parts.push(input.href);
  else {
    // A Request's body can only be read asynchronously: the same Request object, the same body.
    parts.push(input.method, input.url, [...input.headers], input.body === null ? '' : idOf(input));
    for (const field of PLAIN_FIELDS) parts.push(input[field as keyof Request] ?? null);
  }
  if (init !== undefined) {
    parts.push(
      init.method?.toUpperCase() ?? null,
      headersOf(init.headers) ?? null,
      bodyOf(init.body) ?? null,
    );
    for (const field of PLAIN_FIELDS) parts.push(init[field] ?? null);
  }
  return JSON.stringify(parts);
}
