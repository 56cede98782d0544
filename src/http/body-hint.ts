/**
 * The waits some APIs put only in a refusal's JSON body: Discord's `retry_after` (float
 * seconds, with `global`), Google's `error.details[]` entry of type `google.rpc.RetryInfo`
 * with `retryDelay: "4s"` (a protobuf Duration in JSON). Read only for a refusal whose headers
 * say nothing of when to come back, from a clone, at most `BODY_HINT_BYTES`.
 */
import { floatToDelayMs } from './duration.js';

/** Most bytes of a refusal's body read for a hint: a rate-limit error body is a few hundred. */
export const BODY_HINT_BYTES = 16 * 1024;

/** What a refusal's body says about when to come back. */
export interface BodyHint {
  /** ms to wait, rounded up, at most `MAX_DELAY_MS`. */
  readonly retryAfterMs: number;
  /** Discord's `global: true`: every route of the client is limited, not just this one. */
  readonly global?: true;
}

/**
 * The wait a refusal's JSON body gives, or `undefined` (not JSON, no hint, a hint that is not
 * a finite number >= 0). Never throws; linear in the text (one `JSON.parse`).
 *
 * @example parseBodyHint('{"retry_after": 64.57, "global": false}') // { retryAfterMs: 64570 }
 */
export function parseBodyHint(text: string): BodyHint | undefined {
  if (text.length > BODY_HINT_BYTES || !/^\s*\{/.test(text.slice(0, 64))) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined; // malformed, or nested deeper than the engine's stack
  }
  const discord = field(body, 'retry_after');
  if (typeof discord === 'number' && discord >= 0 && Number.isFinite(discord)) {
    const retryAfterMs = floatToDelayMs(discord * 1000);
    return field(body, 'global') === true ? { retryAfterMs, global: true } : { retryAfterMs };
  }
  const details = field(field(body, 'error'), 'details');
  if (!Array.isArray(details)) return undefined;
  for (const detail of details.slice(0, 32)) {
    const type = field(detail, '@type');
    const delay = field(detail, 'retryDelay');
    if (typeof type !== 'string' || !type.endsWith('google.rpc.RetryInfo')) continue;
    const m = typeof delay === 'string' ? /^(\d{1,12}(?:\.\d{1,9})?)s$/.exec(delay) : null;
    if (m !== null) return { retryAfterMs: floatToDelayMs(Number(m[1]) * 1000) };
  }
  return undefined;
}

function field(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null
    ? (value as Record<string, unknown>)[name]
    : undefined;
}

/**
 * A clone of `response`'s body as text, up to `BODY_HINT_BYTES` of `response`'s body as text, when it says it is JSON;
 * `undefined` otherwise or on any failure. The response itself stays unread for the caller.
 */
export async function readBodyHintText(response: Response): Promise<string | undefined> {
  if (!/json/i.test(response.headers.get('content-type') ?? '')) return undefined;
  try {
    const reader = (response.clone().body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return text;
      text += decoder.decode(value, { stream: true });
      if (text.length > BODY_HINT_BYTES) {
        reader.cancel().catch(() => {});
        return undefined;
      }
    }
  } catch {
    return undefined; // no body, a body already used, a stream that failed
  }
}
