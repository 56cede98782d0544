/**
 * The earliest send among the last answers in `kept` that show a bucket `limit` deep: `2j + 1`
 * of them that left at least `limit - j` (j of 1, then 2), from the first one's send to `now`
 * (the last one's answer) shorter than `windowMs`. No window of `limit` counts so (see
 * `countsShowBucket` in learning.ts, and stores/shared-counts.ts). `kept` holds one entry of
 * `stride` numbers per answer, oldest first: its send first, its count last. Undefined when they
 * show none.
 */
export function fullRunFrom(
  kept: readonly number[],
  stride: number,
  limit: number,
  now: number,
  windowMs: number,
): number | undefined {
  for (let j = 1; j <= 2; j++) {
    let found = 0;
    let first = Number.POSITIVE_INFINITY;
    for (let at = kept.length - stride; at >= 0 && found < 2 * j + 1; at -= stride) {
      if ((kept[at + stride - 1] as number) < limit - j) continue;
      found++;
      if ((kept[at] as number) < first) first = kept[at] as number;
    }
    if (found === 2 * j + 1 && now - first < windowMs) return first;
  }
  return undefined;
}
