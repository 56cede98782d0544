/**
 * The wait before retry number `attempt` (0 for the first) after a failure nobody explained: it
 * doubles from `firstMs` per attempt up to `maxMs`, with "equal jitter" (half of it fixed, half
 * random from `random()` in [0, 1)), so clients that failed together do not come back together,
 * and none comes back at once. Whole ms, rounded up. The one backoff of the paced fetch, the
 * outbox and the Redis store's probes.
 */
export function backoffMs(
  attempt: number,
  firstMs: number,
  maxMs: number,
  random: () => number,
): number {
  // 2 ** 52 already dwarfs any cap; a larger exponent would only reach Infinity.
  const exponent = attempt > 0 ? (attempt < 52 ? attempt : 52) : 0;
  const ceiling = Math.min(maxMs, firstMs * 2 ** exponent);
  return Math.ceil(ceiling / 2 + (random() * ceiling) / 2);
}
