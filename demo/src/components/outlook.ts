import type { Counting, Dialect } from '../mock/server';

/**
 * What happens today with each server, said plainly next to the picker: what the pacer can
 * learn from what the server says, and what the first burst costs on the paced side.
 *
 * The figures are measured, not hoped for: the most 429s the paced side got in a first burst
 * of 100 with the default client (token bucket, 10 / s, bursts of 10) on a fresh page, in
 * Debian Chromium, the worst of five runs on 3efb280 (four for GCRA + Nothing; sliding log +
 * Nothing the worst of six on 1a7ee63, where 2b4ab86 had made it 13-14;
 * test/e2e/demo-servers.e2e.test.ts prints them and holds the page to a bound of them). Every
 * paced call succeeded in the end (its retries). The learning issue (12) is what brings them to 0.
 */
export const FIRST_BURST_429: Readonly<Record<Counting, Readonly<Record<Dialect, number>>>> = {
  'sliding-log': { ietf: 1, 'x-ratelimit': 1, 'retry-after': 4, none: 7 },
  'fixed-window': { ietf: 1, 'x-ratelimit': 3, 'retry-after': 3, none: 8 },
  gcra: { ietf: 0, 'x-ratelimit': 0, 'retry-after': 5, none: 6 },
};

/** Plain fetch against the same server, in the same runs: all it gets is the burst allowance. */
const PLAIN_429: Readonly<Record<Counting, number>> = {
  'sliding-log': 90,
  'fixed-window': 90,
  gcra: 95,
};

export interface Outlook {
  readonly tone: 'good' | 'gap';
  readonly headline: string;
  readonly detail: string;
}

const LEARNS: Readonly<Record<Dialect, string>> = {
  ietf: 'It adopts the advertised policy (RateLimit-Policy: 10 per 1 s) as a learned sliding log.',
  'x-ratelimit': 'It reads the count (X-RateLimit-Remaining) and waits for the reset once it is 0.',
  'retry-after':
    'Each 429 blocks the key until its Retry-After (whole seconds); only the refusals tell the pacer it went too fast.',
  none: 'A bare 429 says only “too fast”: after 3 of them the pacer learns a rate (AIMD), pausing and probing after each refusal and cutting to what the server admitted.',
};

const COUNTS: Readonly<Record<Counting, string>> = {
  'sliding-log':
    'A sliding log allows 10 in any second, counted as requests arrive, a moment after the pacer sent them: a second after the first 10, the next 10 arrive a hair early and are refused (arrival-safe pacing is issue 12).',
  'fixed-window':
    'Fixed windows restart on the wall clock’s second, so the client’s spacing meets each window’s count.',
  gcra: 'The leaky bucket takes bursts of 5, half the client’s: a burst of 10 loses 5 to 429 unless the headers told the count first.',
};

/** Where a second burst is measured too (test/e2e/demo.e2e.test.ts): the pacer has learned. */
const LEARNED_BY_SECOND_BURST: readonly string[] = ['sliding-log+ietf'];

export function outlookOf(counting: Counting, dialect: Dialect): Outlook {
  const paced = FIRST_BURST_429[counting][dialect];
  const plain = PLAIN_429[counting];
  const second = LEARNED_BY_SECOND_BURST.includes(`${counting}+${dialect}`)
    ? ' From the second burst on: 0.'
    : '';
  return {
    tone: paced === 0 ? 'good' : 'gap',
    headline: `Today, first burst of 100: up to ${paced} × 429 on the paced side (plain fetch: ${plain}).${second}`,
    detail: `${LEARNS[dialect]} ${COUNTS[counting]}`,
  };
}
