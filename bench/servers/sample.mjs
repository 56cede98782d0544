// One answer and one refusal of a server, headers and all, for the bench's output: what a
// client of that server actually reads.

/** Headers that say nothing about the limit. */
const NOISE = new Set([
  'accept-ranges',
  'cache-control',
  'connection',
  'content-length',
  'content-type',
  'date',
  'etag',
  'keep-alive',
  'last-modified',
  'server',
]);

function describe(response) {
  const headers = [...response.headers].filter(([name]) => !NOISE.has(name));
  return { status: response.status, headers: headers.map(([name, value]) => `${name}: ${value}`) };
}

/**
 * Sends `rate + 10` requests at once under a client of its own (so more than the server allows)
 * and returns the first accepted and the first refused answer (in the order they were sent).
 */
export async function sampleAnswers(url, rate, client) {
  const answers = await Promise.all(
    Array.from({ length: rate + 10 }, async () => {
      const response = await fetch(url, { headers: { 'x-bench-client': client } });
      await response.arrayBuffer();
      return response;
    }),
  );
  const accepted = answers.find((r) => r.status === 200);
  const refused = answers.find((r) => r.status !== 200);
  return {
    accepted: accepted && describe(accepted),
    refused: refused && describe(refused),
  };
}

/** The sample as markdown lines: `- 200: a: 1; b: 2`. */
export function sampleLines({ accepted, refused }) {
  const line = (answer) =>
    answer === undefined
      ? '(none)'
      : `${answer.status}: ${answer.headers.length > 0 ? answer.headers.map((h) => `\`${h}\``).join('; ') : '(no limit headers)'}`;
  return [`  - accepted ${line(accepted)}`, `  - refused ${line(refused)}`];
}
