/**
 * The server answered with a status that is not 2xx, and the hook was asked for the body as
 * JSON or text. The response (its body unread) is on the error, for its status and details.
 */
export class HttpError extends Error {
  override readonly name = 'HttpError' as const;
  readonly response: Response;
  readonly status: number;

  constructor(response: Response, options?: { readonly cause?: unknown }) {
    const what = response.url === '' ? 'the request' : response.url;
    const status = `${response.status}${response.statusText === '' ? '' : ` ${response.statusText}`}`;
    super(
      `[fetch-pacer] The server answered ${status} to ${what}. Read \`error.response\` for details, or pass \`parse: 'response'\` to handle every status yourself.`,
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
    this.response = response;
    this.status = response.status;
  }
}

/** True for an `HttpError`, from this realm or another (matched by `name`). */
export function isHttpError(value: unknown): value is HttpError {
  return value instanceof HttpError || nameOf(value) === 'HttpError';
}

/**
 * True for the rejection of an aborted request or task: a `DOMException` named `AbortError`
 * (what `abort()` without a reason, and this library, use), or any error of that name.
 */
export function isAbortError(value: unknown): boolean {
  return nameOf(value) === 'AbortError';
}

function nameOf(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const name = (value as { name?: unknown }).name;
  return typeof name === 'string' ? name : undefined;
}

/** The reason a hook aborts with: an `AbortError`, saying why. */
export function abortReason(why: string): DOMException {
  return new DOMException(`[fetch-pacer] ${why}`, 'AbortError');
}
