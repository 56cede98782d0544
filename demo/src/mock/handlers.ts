import { delay, HttpResponse, http } from 'msw';
import { CHAT_PATH, chatCompletion, isChatRequest } from './llm-server';
import { SENT_AT } from './network';
import { answer } from './server';

/** When the request was sent (see `network.ts`), else now. */
function sentAt(request: Request): number {
  const stamped = Number(request.headers.get(SENT_AT) ?? Number.NaN);
  return Number.isFinite(stamped) ? stamped : performance.now();
}

/** The routes of the mock API; loaded with msw, apart from the page's own code. */
export const handlers = [
  http.get('*/api/:lane/items/:id', async ({ params, request }) => {
    const lane = params['lane'] === 'paced' ? 'paced' : 'unpaced';
    const id = String(params['id']);
    const at = sentAt(request);
    const { status, headers, retryAfterS } = answer(lane, id, at);
    // A network and a server that take some time, so requests in flight are visible.
    await delay(40 + Math.random() * 60);
    if (status === 429) {
      return HttpResponse.json(
        { error: 'Too Many Requests', retryAfter: retryAfterS },
        { status, headers },
      );
    }
    return HttpResponse.json({ id, lane }, { headers });
  }),
  // The offline outbox's writes: they draw on the same server bucket as the reads.
  http.post('*/api/:lane/notes', async ({ params, request }) => {
    const lane = params['lane'] === 'paced' ? 'paced' : 'unpaced';
    const note = await request.text();
    const at = sentAt(request);
    const { status, headers, retryAfterS } = answer(lane, `note-${note.length}`, at);
    await delay(40 + Math.random() * 60);
    if (status === 429) {
      return HttpResponse.json(
        { error: 'Too Many Requests', retryAfter: retryAfterS },
        { status, headers },
      );
    }
    return HttpResponse.json({ ok: true }, { status: 201, headers });
  }),
  // The LLM panel's chat API: counted on arrival, answered after the model's time.
  http.post(`*${CHAT_PATH}`, async ({ request }) => {
    const at = sentAt(request);
    const body: unknown = await request.json().catch(() => undefined);
    if (!isChatRequest(body)) {
      return HttpResponse.json(
        { error: { type: 'invalid_request_error', message: 'Expected a chat completion request' } },
        { status: 400 },
      );
    }
    const { status, headers, body: json } = chatCompletion(at, body, performance.timeOrigin + at);
    await delay(150 + Math.random() * 250);
    return HttpResponse.json(json, { status, headers });
  }),
];
