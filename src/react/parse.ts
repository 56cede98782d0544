import { describe } from '../core/validate.js';
import { HttpError } from './errors.js';

/**
 * How the hook turns the response into `data`:
 * - `'json'` (default) and `'text'`: the body; a status other than 2xx is an `HttpError`.
 * - `'response'`: the `Response` itself, whatever its status.
 * - a function: its result, whatever the status (check `response.ok` yourself).
 */
export type Parse<T> = 'json' | 'text' | 'response' | ((response: Response) => T | PromiseLike<T>);

/** A response with no body by its status (or the method that asked for it). */
function isEmpty(response: Response): boolean {
  return (
    response.status === 204 ||
    response.status === 205 ||
    response.status === 304 ||
    response.headers.get('content-length') === '0'
  );
}

export async function parseResponse<T>(parse: Parse<T>, response: Response): Promise<T> {
  if (typeof parse === 'function') return parse(response);
  if (parse === 'response') return response as T;
  if (!response.ok) throw new HttpError(response);
  if (parse === 'text') return (await response.text()) as T;
  // `undefined` for an empty body, where `response.json()` would throw a SyntaxError.
  if (isEmpty(response)) return undefined as T;
  return (await response.json()) as T;
}

export function assertParse(parse: unknown): void {
  if (typeof parse === 'function' || parse === 'json' || parse === 'text' || parse === 'response') {
    return;
  }
  throw new TypeError(
    `[fetch-pacer] Expected \`parse\` to be 'json', 'text', 'response' or a function, got ${describe(parse)}`,
  );
}
