/**
 * The tests' mocked LLM APIs: the counting of demo/src/mock/llm-api.ts (OpenAI's and Anthropic's
 * request and token buckets, their exact header families, the doc addresses are there), served
 * by msw. Time is the arrival time the client's network stamps (`x-arrived-at`, see `network`
 * in counting-servers.ts), on the test's manual clock.
 */
import { HttpResponse, http } from 'msw';
import {
  type ChatBody,
  type LlmLimits,
  type LlmVendor,
  llmApi,
} from '../../demo/src/mock/llm-api.js';
import { EPOCH } from './dialect-servers.js';

export type { ChatBody, LlmHit, LlmLimits, LlmVendor } from '../../demo/src/mock/llm-api.js';

export const LLM_ORIGIN = 'https://llm.test';

/** The msw handler of a vendor's chat endpoint, and what reached it. */
export function llmServer(vendor: LlmVendor, limits: LlmLimits) {
  const api = llmApi(vendor, limits);
  const handler = http.post(`${LLM_ORIGIN}/*`, async ({ request }) => {
    const at = Number(request.headers.get('x-arrived-at'));
    const body = (await request.json()) as ChatBody;
    const { status, headers, body: json } = api.answer(at, body, EPOCH + at);
    return HttpResponse.json(json, { status, headers });
  });
  const { hits, refusals, admittedTokens } = api;
  return { handler, hits, refusals, admittedTokens };
}
