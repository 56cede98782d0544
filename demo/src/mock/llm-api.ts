/**
 * LLM APIs that count requests and tokens at once, each in a token bucket replenished
 * continuously, with the exact header families their documentation gives, scaled from minutes
 * to seconds. Plain functions of the arrival time: the demo's mock API (in the page, msw) and the
 * tests' mocks (test/support/llm-servers.ts, on a manual clock) both count with them. Written
 * independently of fetch-pacer: the server must not be the client's twin.
 *
 * - OpenAI (https://platform.openai.com/docs/guides/rate-limits, "Rate limits in headers"):
 *   requests and tokens per minute; `x-ratelimit-limit-requests`, `-remaining-requests`,
 *   `-reset-requests` and the same with `-tokens`, the resets Go durations until the bucket is
 *   full again (`6m0s`, `20ms`); a 429 `rate_limit_exceeded` error body when either runs out.
 * - Anthropic (https://docs.anthropic.com/en/api/rate-limits): requests, input tokens and
 *   output tokens per minute, "token bucket" replenished continuously; output tokens are
 *   estimated from `max_tokens` at the start of a request and corrected to the real count at its
 *   end; `anthropic-ratelimit-{requests,input-tokens,output-tokens}-{limit,remaining,reset}`
 *   with RFC 3339 resets, and `retry-after` (seconds) on a 429 `rate_limit_error`.
 *
 * A call says what it really costs (`{ input, output, max_tokens }`, the way a prompt and a
 * completion would); the answer's `usage` says the same, as each API reports it.
 */

/** A server's admission state: what one arrival finds. */
export interface Admission {
  readonly ok: boolean;
  /** Permits left after this arrival. */
  readonly remaining: number;
  /** ms from the arrival until one more request would be admitted. */
  readonly nextMs: number;
  /** ms from the arrival until the window ends (fixed) or the bucket is full (bucket). */
  readonly resetMs: number;
}

/**
 * A token bucket whose requests weigh `cost` tokens (an LLM API counts tokens in one):
 * `admit` takes them when they fit (`take: false` only asks), `Admission` in tokens. An arrival
 * stamped earlier than the last one is counted at the last one's time: its clock never runs back.
 */
export function weightedBucket(capacity: number, fillMs: number) {
  const perMs = capacity / fillMs;
  let tokens = capacity;
  let stamp = 0;
  return {
    admit(at: number, cost: number, take = true): Admission {
      tokens = Math.min(capacity, tokens + Math.max(0, at - stamp) * perMs);
      stamp = Math.max(stamp, at);
      const ok = tokens >= cost - 1e-9;
      if (ok && take) tokens -= cost;
      const nextMs = tokens >= cost - 1e-9 ? 0 : (cost - tokens) / perMs;
      return {
        ok,
        remaining: Math.floor(tokens + 1e-9),
        nextMs,
        resetMs: (capacity - tokens) / perMs,
      };
    },
  };
}

/** Go's time.Duration.String() for whole ms (OpenAI's resets): `1h2m3.5s`, `6m0s`, `20ms`. */
export function goDuration(ms: number): string {
  const whole = Math.ceil(ms);
  if (whole < 1000) return `${whole}ms`;
  const h = Math.floor(whole / 3_600_000);
  const m = Math.floor((whole % 3_600_000) / 60_000);
  const s = (whole % 60_000) / 1000;
  return `${h > 0 ? `${h}h` : ''}${h > 0 || m > 0 ? `${m}m` : ''}${s}s`;
}

export type LlmVendor = 'openai' | 'anthropic';

/** Per window: requests, and tokens (OpenAI) or input and output tokens (Anthropic). */
export interface LlmLimits {
  readonly requests: number;
  readonly tokens: number;
  /** The window the limits are per: a bucket refills that fast. @default 1000 */
  readonly windowMs?: number;
}

/** What one call asks for: its prompt's tokens, the completion's, and the reserve asked. */
export interface ChatBody {
  readonly input: number;
  readonly output: number;
  readonly max_tokens?: number;
}

/** One arrival as the server saw it. */
export interface LlmHit {
  readonly at: number;
  readonly status: number;
  /** Tokens the server charged (0 on a refusal). */
  readonly tokens: number;
}

/** The server's answer to one call: its status, headers and JSON body (`usage`, or the error). */
export interface LlmAnswer {
  readonly status: 200 | 429;
  readonly headers: Record<string, string>;
  readonly body: Record<string, unknown>;
}

/** A vendor's chat endpoint: `answer` counts one call arriving at `at` (ms; `wall` epoch ms). */
export function llmApi(vendor: LlmVendor, limits: LlmLimits) {
  const { windowMs = 1_000 } = limits;
  const requests = weightedBucket(limits.requests, windowMs);
  // Anthropic splits the token budget: input and output tokens, each its own bucket.
  const tokens = weightedBucket(limits.tokens, windowMs);
  const output = weightedBucket(limits.tokens, windowMs);
  const hits: LlmHit[] = [];
  function answer(at: number, body: ChatBody, wall: number): LlmAnswer {
    // OpenAI counts prompt and completion in one; Anthropic reserves `max_tokens` of output at
    // the start (corrected at the end, below).
    const inTokens = vendor === 'openai' ? body.input + body.output : body.input;
    const outTokens = body.max_tokens ?? body.output;
    const r = requests.admit(at, 1, false);
    const t = tokens.admit(at, inTokens, false);
    const o = vendor === 'anthropic' ? output.admit(at, outTokens, false) : undefined;
    const ok = r.ok && t.ok && (o?.ok ?? true);
    if (ok) {
      requests.admit(at, 1);
      tokens.admit(at, inTokens);
      // The real output replaces the reserve at once here (the call's answer is instant).
      if (o !== undefined) output.admit(at, body.output);
    }
    hits.push({ at, status: ok ? 200 : 429, tokens: ok ? inTokens + (o ? body.output : 0) : 0 });
    const after = {
      r: requests.admit(at, 1, false),
      t: tokens.admit(at, 1, false),
      o: output.admit(at, 1, false),
    };
    const headers: Record<string, string> = {
      date: new Date(wall).toUTCString(),
      ...(vendor === 'openai'
        ? openaiHeaders(limits, after.r, after.t)
        : anthropicHeaders(limits, after.r, after.t, after.o, wall)),
    };
    if (ok) {
      const usage =
        vendor === 'openai'
          ? {
              prompt_tokens: body.input,
              completion_tokens: body.output,
              total_tokens: body.input + body.output,
            }
          : { input_tokens: body.input, output_tokens: body.output };
      return { status: 200, headers, body: { usage } };
    }
    const waitMs = Math.max(r.nextMs, t.nextMs, o?.nextMs ?? 0);
    if (vendor === 'anthropic') {
      headers['retry-after'] = String(Math.max(1, Math.ceil(waitMs / 1000)));
      return {
        status: 429,
        headers,
        body: {
          type: 'error',
          error: { type: 'rate_limit_error', message: 'Rate limit exceeded' },
        },
      };
    }
    return {
      status: 429,
      headers,
      body: {
        error: { type: 'tokens', code: 'rate_limit_exceeded', message: 'Rate limit reached' },
      },
    };
  }
  return {
    answer,
    hits,
    refusals: () => hits.filter((hit) => hit.status !== 200).length,
    /** Tokens the server admitted over the calls' arrivals. */
    admittedTokens: () => hits.reduce((sum, hit) => sum + hit.tokens, 0),
  };
}

export type LlmApi = ReturnType<typeof llmApi>;

function openaiHeaders(limits: LlmLimits, r: Admission, t: Admission): Record<string, string> {
  return {
    'x-ratelimit-limit-requests': String(limits.requests),
    'x-ratelimit-remaining-requests': String(r.remaining),
    'x-ratelimit-reset-requests': goDuration(r.resetMs),
    'x-ratelimit-limit-tokens': String(limits.tokens),
    'x-ratelimit-remaining-tokens': String(t.remaining),
    'x-ratelimit-reset-tokens': goDuration(t.resetMs),
  };
}

function anthropicHeaders(
  limits: LlmLimits,
  r: Admission,
  t: Admission,
  o: Admission,
  wall: number,
): Record<string, string> {
  const at = (ms: number) => new Date(Math.ceil((wall + ms) / 1000) * 1000).toISOString();
  const family = (name: string, limit: number, a: Admission) => ({
    [`anthropic-ratelimit-${name}-limit`]: String(limit),
    [`anthropic-ratelimit-${name}-remaining`]: String(a.remaining),
    [`anthropic-ratelimit-${name}-reset`]: at(a.resetMs).replace('.000', ''),
  });
  return {
    ...family('requests', limits.requests, r),
    ...family('input-tokens', limits.tokens, t),
    ...family('output-tokens', limits.tokens, o),
  };
}
