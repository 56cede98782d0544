import type { CountAnswer } from './counting';

/** What the mock API tells the client about its limit, in the header families APIs use. */
export type Dialect = 'ietf' | 'x-ratelimit' | 'retry-after' | 'none';

/** Whole seconds, rounded up, as every one of these headers carries them: never early. */
function seconds(ms: number): number {
  return Math.max(0, Math.ceil(ms / 1000));
}

/** `Retry-After: <delta-seconds>`, at least 1 (RFC 9110 §10.2.3, https://www.rfc-editor.org/rfc/rfc9110#section-10.2.3). */
function retryAfter(answer: CountAnswer): string {
  return String(Math.max(1, seconds(answer.nextMs)));
}

/**
 * The headers of one answer. `limit` is the published quota per 1 s window; `wallNow` is the
 * server's wall clock (epoch ms), for the Unix-time reset of `X-RateLimit-Reset`.
 */
export function headersOf(
  dialect: Dialect,
  answer: CountAnswer,
  limit: number,
  wallNow: number,
): Record<string, string> {
  switch (dialect) {
    case 'ietf': {
      // draft-ietf-httpapi-ratelimit-headers (https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/):
      // the policy (quota `q` per window `w` seconds) on every answer, the quota left (`r`) and
      // the seconds until it resets (`t`); a 429 also says when to come back.
      const headers: Record<string, string> = {
        'ratelimit-policy': `"api";q=${limit};w=1`,
        ratelimit: answer.allowed
          ? `"api";r=${answer.remaining};t=${seconds(answer.resetMs)}`
          : `"api";r=0;t=${retryAfter(answer)}`,
      };
      if (!answer.allowed) headers['retry-after'] = retryAfter(answer);
      return headers;
    }
    case 'x-ratelimit':
      // GitHub's REST API (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api):
      // `x-ratelimit-reset` is the end of the window in UTC epoch seconds; over the limit the
      // answer has `x-ratelimit-remaining: 0` and no Retry-After.
      return {
        'x-ratelimit-limit': String(limit),
        'x-ratelimit-remaining': String(answer.allowed ? answer.remaining : 0),
        'x-ratelimit-used': String(limit - (answer.allowed ? answer.remaining : 0)),
        'x-ratelimit-reset': String(
          Math.ceil((wallNow + (answer.allowed ? answer.resetMs : answer.nextMs)) / 1000),
        ),
        'x-ratelimit-resource': 'core',
      };
    case 'retry-after':
      // Only a refusal says anything: when to come back (nginx `limit_req` with an
      // `add_header Retry-After`, most hand-rolled limits).
      return answer.allowed ? {} : { 'retry-after': retryAfter(answer) };
    case 'none':
      // A bare 429 (nginx `limit_req_status 429;`): "too fast", nothing else.
      return {};
  }
}
