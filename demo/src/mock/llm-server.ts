import { type LlmAnswer, type LlmApi, llmApi } from './llm-api';

/**
 * The LLM panel's mock chat API, `POST /api/llm/v1/chat/completions`, run by the page's msw
 * Service Worker (see `handlers.ts`). It counts as OpenAI does (`llm-api.ts`: a requests bucket
 * and a tokens bucket, OpenAI's `x-ratelimit-*-requests` / `-tokens` headers, 429
 * `rate_limit_exceeded` when either runs out), with OpenAI's per-minute limits scaled to seconds.
 */
export const LLM_LIMITS = { requests: 10, tokens: 2_000 } as const;

export const CHAT_PATH = '/api/llm/v1/chat/completions';

/** A chat completion request, as the OpenAI SDK sends it (the fields this mock reads). */
export interface ChatRequest {
  readonly model: string;
  readonly messages: readonly { readonly role: string; readonly content: string }[];
  readonly max_tokens?: number;
}

/** The completion length when a call names no `max_tokens`. */
const DEFAULT_MAX_TOKENS = 256;

let api: LlmApi = llmApi('openai', LLM_LIMITS);
let served = 0;

/** A fresh server (both buckets full, no arrivals yet), so every batch of the panel compares. */
export function resetLlmServer(): LlmApi {
  api = llmApi('openai', LLM_LIMITS);
  return api;
}

/** The server as it stands: its arrivals (`hits`), refusals and admitted tokens. */
export function llmServer(): LlmApi {
  return api;
}

/**
 * The server's count of a prompt: the mock's tokenizer is a token per 4 characters of each
 * message, plus 4 per message for its role and separators (OpenAI's cookbook counts 3-4,
 * https://cookbook.openai.com/examples/how_to_count_tokens_with_tiktoken). The JSON around the
 * messages is not counted, so a client's characters / 4 of the whole body is a little above it.
 */
export function promptTokens(messages: ChatRequest['messages']): number {
  return messages.reduce((sum, message) => sum + Math.ceil(message.content.length / 4) + 4, 0);
}

/**
 * The answer to one call arriving at `at` (`wall`: epoch ms then). The model stops where it
 * would, between a tenth of `max_tokens` and all of it (`random` picks where), so a client that
 * reserved `max_tokens` has the rest to give back once the answer's `usage` says so. The 200's
 * body is OpenAI's chat completion object (https://platform.openai.com/docs/api-reference/chat/object).
 */
export function chatCompletion(
  at: number,
  request: ChatRequest,
  wall: number,
  random: () => number = Math.random,
): LlmAnswer {
  const maxTokens = request.max_tokens ?? DEFAULT_MAX_TOKENS;
  const output = Math.max(1, Math.round(maxTokens * (0.1 + 0.9 * random())));
  const input = promptTokens(request.messages);
  const answer = api.answer(at, { input, output, max_tokens: maxTokens }, wall);
  if (answer.status !== 200) return answer;
  served++;
  return {
    ...answer,
    body: {
      id: `chatcmpl-demo-${served}`,
      object: 'chat.completion',
      created: Math.floor(wall / 1000),
      model: request.model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Lorem ipsum '.repeat(Math.ceil(output / 3)) },
          finish_reason: output >= maxTokens ? 'length' : 'stop',
        },
      ],
      ...answer.body,
    },
  };
}

/** A body that is not a chat request: OpenAI's 400 `invalid_request_error`. */
export function isChatRequest(body: unknown): body is ChatRequest {
  if (typeof body !== 'object' || body === null) return false;
  const { model, messages, max_tokens } = body as Partial<ChatRequest>;
  return (
    typeof model === 'string' &&
    Array.isArray(messages) &&
    messages.every((message) => typeof message?.content === 'string') &&
    (max_tokens === undefined || (Number.isInteger(max_tokens) && max_tokens > 0))
  );
}
