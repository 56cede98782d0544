import { HttpResponse, http } from 'msw';
import { afterEach, describe, expect, it } from 'vitest';
import { seededRandom } from '../../bench/lib/random.mjs';
import {
  chatBodiesOf,
  createChatClient,
  estimateTokens,
  figuresOf,
  sendBatch,
  tokensUsed,
} from '../../demo/src/client/llm-batch.js';
import { goDuration } from '../../demo/src/mock/llm-api.js';
import {
  type ChatRequest,
  chatCompletion,
  isChatRequest,
  LLM_LIMITS,
  llmServer,
  promptTokens,
  resetLlmServer,
} from '../../demo/src/mock/llm-server.js';
import { createManualClock } from '../../src/testing/index.js';
import { driveNetwork, network } from '../support/counting-servers.js';
import { EPOCH } from '../support/dialect-servers.js';
import { server } from '../support/msw.js';

const ORIGIN = 'https://demo.test';
const CALLS = 20;
const URL_ = `${ORIGIN}/api/llm/v1/chat/completions`;

afterEach(() => {
  resetLlmServer();
});

const call = (content: string, max_tokens?: number): ChatRequest => ({
  model: 'gpt-demo',
  messages: [{ role: 'user', content }],
  ...(max_tokens === undefined ? {} : { max_tokens }),
});

describe('the LLM panel’s mock chat API', () => {
  it('answers OpenAI’s chat completion with its usage and x-ratelimit headers', () => {
    resetLlmServer();
    // 40 characters: 10 tokens, plus 4 for the message; the model stops at 0.1 + 0.9 × 0.5.
    const answer = chatCompletion(0, call('x'.repeat(40), 100), EPOCH, () => 0.5);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      object: 'chat.completion',
      model: 'gpt-demo',
      choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant' } }],
      usage: { prompt_tokens: 14, completion_tokens: 55, total_tokens: 69 },
    });
    expect(answer.headers).toMatchObject({
      'x-ratelimit-limit-requests': '10',
      'x-ratelimit-remaining-requests': '9',
      'x-ratelimit-reset-requests': '100ms',
      'x-ratelimit-limit-tokens': '2000',
      'x-ratelimit-remaining-tokens': '1931',
      'x-ratelimit-reset-tokens': '35ms',
    });
  });

  it('stops between a tenth of max_tokens and all of it ("length" at the cap)', () => {
    resetLlmServer();
    const low = chatCompletion(0, call('hi', 250), EPOCH, () => 0);
    const high = chatCompletion(0, call('hi', 250), EPOCH, () => 0.999_999);
    expect(low.body).toMatchObject({ usage: { completion_tokens: 25 } });
    expect(high.body).toMatchObject({
      usage: { completion_tokens: 250 },
      choices: [{ finish_reason: 'length' }],
    });
  });

  it('refuses with 429 rate_limit_exceeded once the tokens run out, and counts the refusal', () => {
    resetLlmServer();
    const big = call('x'.repeat(6_000), 300);
    expect(chatCompletion(0, big, EPOCH, () => 1).status).toBe(200);
    const refused = chatCompletion(1, big, EPOCH + 1, () => 1);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      error: { type: 'tokens', code: 'rate_limit_exceeded', message: 'Rate limit reached' },
    });
    expect(refused.headers['x-ratelimit-remaining-tokens']).toBe('198');
    expect(llmServer().refusals()).toBe(1);
    // A fresh server for the next batch: both buckets full again.
    resetLlmServer();
    expect(chatCompletion(1, big, EPOCH + 1, () => 1).status).toBe(200);
  });

  it('counts a prompt as a token per 4 characters of each message, plus 4 per message', () => {
    expect(promptTokens([{ role: 'user', content: '' }])).toBe(4);
    expect(
      promptTokens([
        { role: 'system', content: 'abcde' },
        { role: 'user', content: 'abcd' },
      ]),
    ).toBe(2 + 4 + 1 + 4);
  });

  it('takes only chat requests', () => {
    expect(isChatRequest(call('hi', 10))).toBe(true);
    expect(isChatRequest(call('hi'))).toBe(true);
    for (const bad of [
      null,
      'text',
      { model: 'm' },
      { model: 'm', messages: [{ role: 'user' }] },
      { ...call('hi'), max_tokens: 0 },
      { ...call('hi'), max_tokens: 1.5 },
    ]) {
      expect(isChatRequest(bad)).toBe(false);
    }
  });

  it('writes resets as Go durations', () => {
    expect([20, 999, 999.2, 6 * 60_000, 3_723_500].map(goDuration)).toEqual([
      '20ms',
      '999ms',
      '1s',
      '6m0s',
      '1h2m3.5s',
    ]);
  });
});

describe('the LLM panel’s client', () => {
  it('estimates characters / 4 of the body plus max_tokens: never below what the server counts', () => {
    expect(estimateTokens('{"max_tokens":300}')).toBe(5 + 300);
    expect(estimateTokens('not json')).toBe(2);
    expect(estimateTokens('{"max_tokens":-3}')).toBe(5);
    const random = seededRandom(7);
    for (const body of chatBodiesOf(200, random)) {
      const request = JSON.parse(body) as ChatRequest & { max_tokens: number };
      expect(request.max_tokens).toBeGreaterThanOrEqual(100);
      expect(request.max_tokens).toBeLessThanOrEqual(500);
      const prompt = request.messages[0]?.content.length ?? 0;
      expect(prompt).toBeGreaterThanOrEqual(200);
      expect(prompt).toBeLessThan(1_612);
      // The server's most: the prompt as it counts it, and the whole completion.
      expect(estimateTokens(body)).toBeGreaterThanOrEqual(
        promptTokens(request.messages) + request.max_tokens,
      );
    }
  });

  it('reads usage.total_tokens as the actual cost, and nothing from a body without it', async () => {
    const json = (body: unknown) => new Response(JSON.stringify(body));
    const request = new Request(URL_);
    expect(await tokensUsed(json({ usage: { total_tokens: 74 } }), request)).toEqual({
      tokens: 74,
    });
    expect(await tokensUsed(json({ error: {} }), request)).toBeUndefined();
    expect(await tokensUsed(json({ usage: { total_tokens: '74' } }), request)).toBeUndefined();
    expect(await tokensUsed(new Response('not json'), request)).toBeUndefined();
  });
});

describe('a batch’s figures', () => {
  it('429s, admitted tokens, and throughput over a full bucket plus the rate between arrivals', () => {
    const hits = [
      { at: 1_000, status: 200, tokens: 1_500 },
      { at: 1_200, status: 429, tokens: 0 },
      { at: 2_000, status: 200, tokens: 2_500 },
    ];
    const figures = figuresOf(hits, { calls: 2, succeeded: 2, makespanMs: 1_400 }, 2_000);
    // Allowed: 2,000 at once, then 2,000 a second for 1 s.
    expect(figures).toEqual({
      calls: 2,
      succeeded: 2,
      makespanMs: 1_400,
      refusals: 1,
      tokens: 4_000,
      throughput: 1,
    });
  });

  it('a batch the server admitted nothing of has no throughput', () => {
    const figures = figuresOf([{ at: 5, status: 429, tokens: 0 }], {
      calls: 1,
      succeeded: 0,
      makespanMs: 10,
    });
    expect(figures).toMatchObject({ refusals: 1, tokens: 0, throughput: 0 });
  });
});

/**
 * The panel's claim, on the manual clock: 20 calls of random size through the configured client
 * against the mock (a network of 75-200 ms each way, the model's time included) get no 429 with
 * settlement on or off, and settlement admits the same work sooner.
 */
describe('the panel’s batch against its mock, settlement on and off', () => {
  async function batch(settlement: boolean, seed: number) {
    const clock = createManualClock();
    const random = seededRandom(seed);
    const model = seededRandom(seed + 100);
    const api = resetLlmServer();
    server.use(
      http.post(URL_, async ({ request }) => {
        const at = Number(request.headers.get('x-arrived-at'));
        const body = (await request.json()) as ChatRequest;
        const { status, headers, body: json } = chatCompletion(at, body, EPOCH + at, model);
        return HttpResponse.json(json, { status, headers });
      }),
    );
    const net = network({ clock, delayMs: [75, 200], seed });
    const client = createChatClient(settlement, { clock, fetch: net.fetch });
    let statuses: number[] | undefined;
    const sent = sendBatch(client, URL_, chatBodiesOf(CALLS, random)).then((result) => {
      statuses = result;
    });
    await driveNetwork(clock, net, () => statuses !== undefined, 600_000);
    await sent;
    client.pacer.dispose();
    return figuresOf(api.hits, {
      calls: CALLS,
      succeeded: (statuses ?? []).filter((status) => status === 200).length,
      makespanMs: clock.now(),
    });
  }

  it('0 × 429 either way; settled, more of the tokens the server allows and a shorter makespan', async () => {
    for (const seed of [1, 2, 3]) {
      const on = await batch(true, seed);
      const off = await batch(false, seed);
      expect(on).toMatchObject({ succeeded: CALLS, refusals: 0 });
      expect(off).toMatchObject({ succeeded: CALLS, refusals: 0 });
      expect(on.makespanMs).toBeLessThan(off.makespanMs * 0.95);
      expect(on.throughput).toBeGreaterThan(off.throughput + 0.05);
      console.info(
        `seed ${seed}: settled ${on.throughput.toFixed(2)}x in ${(on.makespanMs / 1000).toFixed(1)} s, not settled ${off.throughput.toFixed(2)}x in ${(off.makespanMs / 1000).toFixed(1)} s (limits ${LLM_LIMITS.requests} requests, ${LLM_LIMITS.tokens} tokens a second)`,
      );
    }
  });
});
