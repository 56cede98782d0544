import type { Outcome } from '../client/bursts';

/** A dot's colour: where its request is, or how it ended. */
export type DotState = 'queued' | 'blocked' | 'loading' | Outcome;

export const DOT_LABELS: Readonly<Record<DotState, string>> = {
  queued: 'queued',
  blocked: 'blocked by server',
  loading: 'in flight',
  ok: '200 OK',
  refused: '429',
  denied: 'denied locally',
  cancelled: 'cancelled',
  failed: 'failed',
};
