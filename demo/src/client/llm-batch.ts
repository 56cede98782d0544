import {
  type ActualCost,
  createPacedFetch,
  type PacedFetch,
  type PacedFetchOptions,
  perSecond,
} from 'fetch-pacer';
import { createStore } from '../lib/store';
import type { LlmHit } from '../mock/llm-api';
import { CHAT_PATH, LLM_LIMITS, llmServer, resetLlmServer } from '../mock/llm-server';

/**
 * The LLM panel's client and its batches: chat calls of random size through a paced fetch
 * limited in requests and tokens, each call reserving what it may cost at most (characters / 4
 * of its body plus `max_tokens`, the README's recipe), and, with settlement on, giving back what
 * it did not use once the answer's `usage` says so.
 */

/** A call's token estimate: characters / 4 of its JSON body, plus the completion it reserves. */
export function estimateTokens(body: string): number {
  let maxTokens = 0;
  try {
    const parsed = JSON.parse(body) as { max_tokens?: unknown };
    if (typeof parsed.max_tokens === 'number' && parsed.max_tokens > 0)
      maxTokens = Math.ceil(parsed.max_tokens);
  } catch {
    // Not JSON: only its characters count.
  }
  return Math.ceil(body.length / 4) + maxTokens;
}

/** Reads OpenAI's `usage.total_tokens` from the answer (a clone of it: the caller reads its own). */
export const tokensUsed: ActualCost = async (response) => {
  const { usage } = (await response.json().catch(() => ({}))) as {
    usage?: { total_tokens?: unknown };
  };
  const total = usage?.total_tokens;
  return typeof total === 'number' && Number.isInteger(total) && total >= 0
    ? { tokens: total }
    : undefined;
};

/**
 * The paced fetch configured to the mock's limits; `settlement`: adjust to each `usage`.
 * `network`: the clock and fetch to use (tests run it on a manual clock).
 */
export function createChatClient(
  settlement: boolean,
  network: Pick<PacedFetchOptions, 'clock' | 'fetch'> = {},
): PacedFetch {
  return createPacedFetch({
    ...network,
    limits: {
      requests: perSecond(LLM_LIMITS.requests),
      tokens: perSecond(LLM_LIMITS.tokens),
    },
    cost: (_request, init) => ({
      requests: 1,
      tokens: estimateTokens(typeof init?.body === 'string' ? init.body : ''),
    }),
    ...(settlement ? { actualCost: tokensUsed } : {}),
  });
}

const WORDS = ['pace', 'the', 'calls', 'under', 'a', 'limit', 'of', 'tokens', 'and', 'requests'];

/** A prompt of about `chars` characters. */
function promptOf(chars: number, random: () => number): string {
  let text = 'Summarise:';
  while (text.length < chars) text += ` ${WORDS[Math.floor(random() * WORDS.length)]}`;
  return text;
}

/**
 * `count` chat call bodies of random size: prompts of 200-1,600 characters (54-404 tokens as the
 * mock counts them) and `max_tokens` of 100-500, so each costs about 75-900 tokens and reserves
 * up to 920.
 */
export function chatBodiesOf(count: number, random: () => number = Math.random): string[] {
  return Array.from({ length: count }, () =>
    JSON.stringify({
      model: 'gpt-demo',
      messages: [{ role: 'user', content: promptOf(200 + Math.floor(random() * 1_401), random) }],
      max_tokens: 100 + Math.floor(random() * 401),
    }),
  );
}

/** What a batch earned, as the server counted it. */
export interface BatchFigures {
  readonly calls: number;
  /** Calls whose final answer was a 200 (after any retries). */
  readonly succeeded: number;
  /** 429s the server sent (each retried attempt counts). */
  readonly refusals: number;
  /** Tokens the server admitted. */
  readonly tokens: number;
  /** Admitted tokens over what the server allows from the first arrival to the last admitted. */
  readonly throughput: number;
  /** From the click to the last answer, ms. */
  readonly makespanMs: number;
}

/**
 * The figures of a batch from the server's arrivals. What the server allows is its full tokens
 * bucket, then `tokensPerSecond` from the first arrival to the last admitted one (as
 * `npm run bench:llm` counts it).
 */
export function figuresOf(
  hits: readonly LlmHit[],
  outcome: { readonly calls: number; readonly succeeded: number; readonly makespanMs: number },
  tokensPerSecond: number = LLM_LIMITS.tokens,
): BatchFigures {
  const admitted = hits.filter((hit) => hit.status === 200);
  const tokens = admitted.reduce((sum, hit) => sum + hit.tokens, 0);
  const first = Math.min(...hits.map((hit) => hit.at));
  const last = Math.max(...admitted.map((hit) => hit.at));
  const allowed =
    admitted.length === 0 ? 0 : tokensPerSecond + (tokensPerSecond * (last - first)) / 1000;
  return {
    ...outcome,
    refusals: hits.length - admitted.length,
    tokens,
    throughput: allowed > 0 ? tokens / allowed : 0,
  };
}

/**
 * Sends every body at once to `url` through `client`, reads each answer as an app would, and
 * resolves with each call's final status (0 for a call that failed or was rejected).
 */
export function sendBatch(
  client: PacedFetch,
  url: string,
  bodies: readonly string[],
  onAnswer: () => void = () => {},
): Promise<number[]> {
  return Promise.all(
    bodies.map(async (body) => {
      const status = await client(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      }).then(
        async (response) => {
          await response.text();
          return response.status;
        },
        () => 0,
      );
      onAnswer();
      return status;
    }),
  );
}

/** One batch: running (`figures` undefined) or done. */
export interface Batch {
  readonly id: number;
  readonly settlement: boolean;
  readonly calls: number;
  readonly answered: number;
  readonly figures?: BatchFigures;
}

/** Newest first; the one running, if any, on top. */
export const llmBatches = createStore<readonly Batch[]>([]);

const KEEP = 6;
let next = 1;

function update(id: number, change: (batch: Batch) => Batch): void {
  llmBatches.set((list) => list.map((batch) => (batch.id === id ? change(batch) : batch)));
}

/**
 * Sends `count` chat calls at once through `client`, against a fresh server, and records the
 * batch's figures once every call has its answer.
 */
export async function runBatch(
  client: PacedFetch,
  settlement: boolean,
  count: number,
): Promise<BatchFigures> {
  const id = next++;
  llmBatches.set((list) => [
    { id, settlement, calls: count, answered: 0 },
    ...list.slice(0, KEEP - 1),
  ]);
  const server = resetLlmServer();
  const startedAt = performance.now();
  const url = new URL(CHAT_PATH, globalThis.location?.href ?? 'http://localhost').href;
  const statuses = await sendBatch(client, url, chatBodiesOf(count), () =>
    update(id, (batch) => ({ ...batch, answered: batch.answered + 1 })),
  );
  // Still this batch's server unless another batch started meanwhile (the panel prevents it).
  const hits = server === llmServer() ? server.hits : [];
  const figures = figuresOf(hits, {
    calls: count,
    succeeded: statuses.filter((status) => status === 200).length,
    makespanMs: performance.now() - startedAt,
  });
  update(id, (batch) => ({ ...batch, figures }));
  return figures;
}
