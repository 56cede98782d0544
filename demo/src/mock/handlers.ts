import { delay, HttpResponse, http } from 'msw';
import { SENT_AT } from './network';
import { answer } from './server';

/** The routes of the mock API; loaded with msw, apart from the page's own code. */
export const handlers = [
  http.get('*/api/:lane/items/:id', async ({ params, request }) => {
    const lane = params['lane'] === 'paced' ? 'paced' : 'unpaced';
    const id = String(params['id']);
    const sentAt = Number(request.headers.get(SENT_AT) ?? Number.NaN);
    const at = Number.isFinite(sentAt) ? sentAt : performance.now();
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
    const sentAt = Number(request.headers.get(SENT_AT) ?? Number.NaN);
    const at = Number.isFinite(sentAt) ? sentAt : performance.now();
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
];
