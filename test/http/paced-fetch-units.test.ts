import { describe, expect, it } from 'vitest';
import { HttpResponse, http } from 'msw';
import { seededRandom } from '../../bench/lib/random.mjs';
import { perSecond } from '../../src/core/policy.js';
import {
  createPacedFetch,
  type PacedFetch,
  type PacedFetchOptions,
} from '../../src/http/paced-fetch.js';
import { createManualClock, type ManualClock } from '../../src/testing/index.js';
import { driveNetwork, network } from '../support/counting-servers.js';
import { fakeStore } from '../support/fake-store.js';
import {
  type ChatBody,
  LLM_ORIGIN,
  type LlmLimits,
  type LlmVendor,
  llmServer,
} from '../support/llm-servers.js';
import { EPOCH } from '../support/dialect-servers.js';
import { server } from '../support/msw.js';

// Issue 14: LLM APIs count requests and tokens. 10 requests and 2,000 tokens per second,
// calls of 100-900 tokens whose estimate is off by up to 30% either way, through a network
// that delays each request and answer by 5-30 ms. The client reserves what the call may cost
// at most (the estimate / 0.7, as OpenAI reserves `max_tokens`), and gives back the rest once
// the answer's usage tells it.
const LIMITS = { requests: 10, tokens: 2_000 };

interface Call {
  readonly body: ChatBody;
  /** What the client guesses before sending (characters / 4 would be such a guess). */
  readonly estimate: number;
}

function calls(count: number, seed: number): Call[] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, () => {
    const total = 100 + Math.floor(random() * 801);
    const input = Math.floor(total * (0.3 + random() * 0.4));
    const estimate = Math.max(1, Math.round(total * (0.7 + random() * 0.6)));
    return { body: { input, output: total - input }, estimate };
  });
}

async function run(
  vendor: LlmVendor,
  options: (clock: ManualClock) => Omit<PacedFetchOptions, 'fetch' | 'clock'>,
  work: readonly Call[],
  limits: LlmLimits = LIMITS,
) {
  const clock = createManualClock();
  const backend = llmServer(vendor, limits);
  server.use(backend.handler);
  const net = network({ clock, delayMs: [5, 30], seed: 1 });
  // The client's wall clock is the server's, moving with the manual clock as a real one does
  // with the ticker (`Date.now` stood still while manual time ran, as no clock does).
  const wallClock = () => EPOCH + clock.now();
  const pacedFetch = createPacedFetch({ ...options(clock), fetch: net.fetch, clock, wallClock });
  const { statuses, lastAt } = await sendAll([pacedFetch], work, clock, net, backend);
  return { backend, statuses, lastAt, pacer: pacedFetch.pacer };
}

/**
 * Sends every call of `work` at once, the i-th through `clients[i % clients.length]`, and drives
 * the network until all are settled: their statuses, and when the last reached the server.
 */
async function sendAll(
  clients: readonly PacedFetch[],
  work: readonly Call[],
  clock: ManualClock,
  net: ReturnType<typeof network>,
  backend: ReturnType<typeof llmServer>,
) {
  let settled = 0;
  const responses = work.map((call, index) =>
    (clients[index % clients.length] as PacedFetch)(`${LLM_ORIGIN}/v1/chat`, {
      method: 'POST',
      body: JSON.stringify(call.body),
      headers: { 'x-estimate': String(call.estimate) },
    }).finally(() => settled++),
  );
  await driveNetwork(clock, net, () => settled === work.length, 600_000);
  const statuses = (await Promise.all(responses)).map((response) => response.status);
  const lastAt = Math.max(...backend.hits.map((hit) => hit.at));
  return { statuses, lastAt };
}

const estimateOf = (request: Request) => Number(request.headers.get('x-estimate'));
/** The most a call estimated at `estimate` can cost, when estimates are off by up to 30%. */
const reserveOf = (request: Request) => Math.ceil(estimateOf(request) / 0.7);

const openai = (actual: boolean) => () => ({
  limits: { requests: perSecond(LIMITS.requests), tokens: perSecond(LIMITS.tokens) },
  cost: (request: Request) => ({ requests: 1, tokens: reserveOf(request) }),
  ...(actual
    ? {
        actualCost: async (response: Response) => {
          const { usage } = (await response.json()) as { usage?: { total_tokens: number } };
          return usage && { tokens: usage.total_tokens };
        },
      }
    : {}),
});

describe('pacing an LLM API on requests and tokens', () => {
  it('earns no refusal from OpenAI when configured, estimates adjusted to the usage', async () => {
    const work = calls(80, 7);
    const { backend, statuses, lastAt } = await run('openai', openai(true), work);
    expect(backend.refusals()).toBe(0);
    expect(statuses.every((status) => status === 200)).toBe(true);
    // Tokens are what binds: 80 calls of ~500 tokens at 2,000 per second after the first
    // bucket. At least 0.9x the tokens the server lets through over the run.
    const used = work.reduce((sum, call) => sum + call.body.input + call.body.output, 0);
    const allowed = LIMITS.tokens + (LIMITS.tokens * lastAt) / 1_000;
    expect(used / allowed).toBeGreaterThan(0.9);
  });

  it('is slower without the adjustment: reserves hold tokens the server never counted', async () => {
    const work = calls(80, 7);
    const adjusted = await run('openai', openai(true), work);
    const estimated = await run('openai', openai(false), work);
    expect(adjusted.backend.refusals()).toBe(0);
    expect(estimated.backend.refusals()).toBe(0);
    expect(adjusted.lastAt).toBeLessThan(estimated.lastAt * 0.85);
  });

  it('earns no refusal from Anthropic on requests, input and output tokens', async () => {
    const work = calls(60, 11);
    const { backend, statuses } = await run(
      'anthropic',
      () => ({
        limits: {
          requests: perSecond(LIMITS.requests),
          'input-tokens': perSecond(LIMITS.tokens),
          'output-tokens': perSecond(LIMITS.tokens),
        },
        // Output is reserved as `max_tokens` (900 here) until the usage says what it was.
        cost: (request: Request) => ({
          requests: 1,
          'input-tokens': reserveOf(request),
          'output-tokens': 900,
        }),
        actualCost: async (response: Response) => {
          const { usage } = (await response.json()) as {
            usage?: { input_tokens: number; output_tokens: number };
          };
          return (
            usage && { 'input-tokens': usage.input_tokens, 'output-tokens': usage.output_tokens }
          );
        },
      }),
      work.map((call) => ({ ...call, body: { ...call.body, max_tokens: 900 } })),
    );
    expect(backend.refusals()).toBe(0);
    expect(statuses.every((status) => status === 200)).toBe(true);
  });

  it('learns the token limit from the headers when configured ten times too high', async () => {
    const work = calls(80, 5);
    const { backend, statuses, pacer } = await run(
      'openai',
      () => ({
        limits: { requests: perSecond(LIMITS.requests), tokens: perSecond(LIMITS.tokens * 10) },
        cost: (request: Request) => ({ requests: 1, tokens: reserveOf(request) }),
      }),
      work,
    );
    expect(statuses.every((status) => status === 200)).toBe(true);
    // Refused only in the first burst, sent before any answer: the server's word is learned
    // from the first answers, and no later call is refused.
    const firstAnswerAt = 70;
    expect(backend.hits.filter((hit) => hit.status !== 200 && hit.at > firstAnswerAt)).toEqual([]);
    expect(pacer.inspect(LLM_ORIGIN).units?.['tokens']?.limit).toBeLessThanOrEqual(LIMITS.tokens);
  });
});

describe('pacing an LLM API from several clients sharing a store', () => {
  // Three paced fetches (three tabs or processes) share one store with the real shared-bucket
  // arithmetic of crossTabStore and redisStore (the fake store; its Lua twin is property-tested
  // against it in test/stores/redis.test.ts), each configured to the whole budget.
  async function shared(work: readonly Call[], withStore: boolean) {
    const clock = createManualClock();
    const backend = llmServer('openai', LIMITS);
    server.use(backend.handler);
    const net = network({ clock, delayMs: [5, 30], seed: 3 });
    const fake = fakeStore({ now: clock.now });
    const clients = [0, 1, 2].map(() =>
      createPacedFetch({
        ...openai(true)(),
        ...(withStore ? { store: fake.store } : {}),
        fetch: net.fetch,
        clock,
      }),
    );
    const { statuses, lastAt } = await sendAll(clients, work, clock, net, backend);
    return { backend, statuses, lastAt, fake };
  }

  it('earns no refusal from OpenAI and gives the tokens back to every client', async () => {
    const work = calls(90, 9);
    const { backend, statuses, lastAt, fake } = await shared(work, true);
    expect(backend.refusals()).toBe(0);
    expect(statuses.every((status) => status === 200)).toBe(true);
    // Every answer's usage was settled through the store, in its tokens policy only.
    expect(fake.adjusted).toHaveLength(work.length);
    expect(fake.adjusted.every(({ amounts }) => amounts[0] === 0 && amounts[1] !== 0)).toBe(true);
    const used = work.reduce((sum, call) => sum + call.body.input + call.body.output, 0);
    const allowed = LIMITS.tokens + (LIMITS.tokens * lastAt) / 1_000;
    expect(used / allowed).toBeGreaterThan(0.9);
  });

  it('is refused without the store: each client spends the whole budget', async () => {
    const { backend } = await shared(calls(90, 9), false);
    expect(backend.refusals()).toBeGreaterThan(0);
  });
});

// Zero configuration learns a bucket's window from one answer when its reset is precise enough:
// OpenAI's Go durations are to the ms; Anthropic's RFC 3339 resets are whole seconds, so its
// windows are learned once they are 10 s or more (a minute, as documented: 600 requests and
// 12,000 tokens per minute here).
const ZERO_CONFIG: Record<LlmVendor, LlmLimits> = {
  openai: LIMITS,
  anthropic: { requests: 600, tokens: 12_000, windowMs: 60_000 },
};

describe('pacing an LLM API with zero configuration', () => {
  for (const vendor of ['openai', 'anthropic'] as const) {
    it(`learns ${vendor}'s request and token limits from its headers, losing no call`, async () => {
      const limits = ZERO_CONFIG[vendor];
      const windowMs = limits.windowMs ?? 1_000;
      const work = calls(80, 13).map((call) => ({
        ...call,
        body: { ...call.body, max_tokens: 900 },
      }));
      const units = vendor === 'openai' ? ['tokens'] : ['input-tokens', 'output-tokens'];
      const { backend, statuses, pacer } = await run(
        vendor,
        () => ({
          cost: (request: Request) => ({
            requests: 1,
            ...Object.fromEntries(
              units.map((unit) => [unit, unit === 'output-tokens' ? 900 : reserveOf(request)]),
            ),
          }),
          actualCost: async (response: Response) => {
            const { usage } = (await response.json()) as {
              usage?: { total_tokens?: number; input_tokens?: number; output_tokens?: number };
            };
            if (usage === undefined) return undefined;
            return vendor === 'openai'
              ? { tokens: usage.total_tokens ?? 0 }
              : {
                  'input-tokens': usage.input_tokens ?? 0,
                  'output-tokens': usage.output_tokens ?? 0,
                };
          },
        }),
        work,
        limits,
      );
      expect(statuses.every((status) => status === 200)).toBe(true);
      // Refused at most in the server's first two windows, while its limits are learned.
      const late = backend.hits.filter((hit) => hit.status !== 200 && hit.at > 2 * windowMs);
      expect(late).toEqual([]);
      for (const unit of units) {
        // The server's rate (a policy above 10,000 is learned at its rate on a shorter window).
        const learned = pacer.inspect(LLM_ORIGIN).units?.[unit]?.learned;
        expect(learned?.source).toBe('server');
        const rate = (learned?.limit ?? 0) / (learned?.windowMs ?? 1);
        // Never faster than the server; slower by at most a reset's rounding (whole seconds).
        expect(rate).toBeLessThanOrEqual((limits.tokens / windowMs) * 1.001);
        expect(rate).toBeGreaterThan((limits.tokens / windowMs) * 0.9);
      }
    });
  }
});

describe('adjusting to the actual cost', () => {
  it('returns a streamed answer at once and adjusts when its usage arrives, never', async () => {
    const clock = createManualClock();
    let push: (text: string) => void = () => {};
    let end: () => void = () => {};
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        const encoder = new TextEncoder();
        push = (text) => controller.enqueue(encoder.encode(text));
        end = () => controller.close();
      },
    });
    const pacedFetch = createPacedFetch({
      limits: { requests: perSecond(10), tokens: perSecond(1_000) },
      clock,
      cost: () => ({ requests: 1, tokens: 1_000 }),
      fetch: async () => new Response(stream, { headers: { 'content-type': 'text/event-stream' } }),
      actualCost: async (response) => {
        const text = await response.text();
        const usage = /"total_tokens":(\d+)/.exec(text);
        return usage ? { tokens: Number(usage[1]) } : undefined;
      },
    });
    const response = await pacedFetch(`${LLM_ORIGIN}/v1/chat`);
    expect(response.status).toBe(200);
    // The stream is still open: the next call waits for tokens, not for the stream.
    const inspect = () => pacedFetch.pacer.inspect(LLM_ORIGIN).units?.['tokens']?.level;
    expect(inspect()).toBe(0);
    push('data: {"choices":[{"delta":{"content":"Hi"}}]}\n\n');
    push('data: {"usage":{"total_tokens":200}}\n\ndata: [DONE]\n\n');
    end();
    const reader = response.body?.getReader();
    while (!(await reader?.read())?.done) {}
    await clock.advanceAsync(0);
    expect(inspect()).toBe(800);
  });

  it('gives back nothing a bucket absorbed while the answer streamed', async () => {
    // The server charged the real 200 tokens at the send and was full again 200 ms later: by
    // the time the stream ends, the 800 reserved beyond them are long absorbed (ours filled up
    // at 1 s, then a second call took it all), so crediting them would put us ahead of it.
    const clock = createManualClock();
    let end: () => void = () => {};
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('data: {"usage":{"total_tokens":200}}\n\n'));
        end = () => controller.close();
      },
    });
    let calls = 0;
    const pacedFetch = createPacedFetch({
      limits: { requests: perSecond(10), tokens: perSecond(1_000) },
      clock,
      cost: () => ({ requests: 1, tokens: 1_000 }),
      fetch: async () =>
        calls++ === 0 ? new Response(stream) : new Response('{"usage":{"total_tokens":1000}}'),
      actualCost: async (response) => {
        const usage = /"total_tokens":(\d+)/.exec(await response.text());
        return usage ? { tokens: Number(usage[1]) } : undefined;
      },
    });
    const streamed = await pacedFetch(`${LLM_ORIGIN}/v1/chat`);
    await clock.advanceAsync(1_000);
    await (await pacedFetch(`${LLM_ORIGIN}/v1/chat`)).text();
    const inspect = () => pacedFetch.pacer.inspect(LLM_ORIGIN).units?.['tokens']?.level;
    expect(inspect()).toBe(0);
    end();
    await streamed.text();
    await clock.advanceAsync(0);
    expect(inspect()).toBe(0);
    await clock.advanceAsync(100);
    expect(inspect()).toBe(100);
  });

  it('reports a throwing hook and keeps the estimate', async () => {
    const clock = createManualClock();
    const errors: unknown[] = [];
    const original = globalThis.reportError;
    globalThis.reportError = (error: unknown) => errors.push(error);
    try {
      const pacedFetch = createPacedFetch({
        limits: { requests: perSecond(10), tokens: perSecond(1_000) },
        clock,
        cost: () => ({ requests: 1, tokens: 500 }),
        fetch: async () => new Response('{}'),
        actualCost: () => {
          throw new Error('no usage');
        },
      });
      await pacedFetch(`${LLM_ORIGIN}/v1/chat`);
      await clock.advanceAsync(0);
      expect(errors).toEqual([new Error('no usage')]);
      expect(pacedFetch.pacer.inspect(LLM_ORIGIN).units?.['tokens']?.level).toBe(500);
    } finally {
      globalThis.reportError = original;
    }
  });

  it('names a hook that is no function', () => {
    expect(() => createPacedFetch({ limits: perSecond(1), actualCost: 5 as never })).toThrow(
      '[fetch-pacer] Expected `actualCost` to be a function, got `5` (number)',
    );
  });
});

describe('a RateLimit-Policy that names its unit (`qu`)', () => {
  it('teaches that unit of a key that counts it, and not its requests', async () => {
    const clock = createManualClock();
    server.use(
      http.post('https://units.test/*', () =>
        HttpResponse.json(
          { ok: true },
          {
            headers: {
              'ratelimit-policy': '"req";q=100;w=1, "tok";q=2000;qu="tokens";w=1',
              ratelimit: '"req";r=99;t=1, "tok";r=1500;t=1',
            },
          },
        ),
      ),
    );
    const pacedFetch = createPacedFetch({
      limits: { requests: perSecond(1_000), tokens: perSecond(20_000) },
      cost: () => ({ requests: 1, tokens: 500 }),
      clock,
    });
    expect((await pacedFetch('https://units.test/v1/chat', { method: 'POST' })).status).toBe(200);
    const units = pacedFetch.pacer.inspect('https://units.test').units;
    expect(units?.['tokens']).toMatchObject({
      limit: 2_000,
      learned: { limit: 2_000, windowMs: 1_000, source: 'server' },
    });
    expect(units?.['requests']?.learned).toMatchObject({ limit: 100, windowMs: 1_000 });
  });
});
