// Order statistics for small samples (runs, start times). Nearest-rank quantiles: every value
// reported is one that was measured, never an interpolation between two.

/** Sorted copy, ascending. */
export function sorted(values) {
  return [...values].sort((a, b) => a - b);
}

/** The q-quantile (0..1) by nearest rank; NaN for an empty sample. */
export function quantile(values, q) {
  if (values.length === 0) return Number.NaN;
  const s = sorted(values);
  const rank = Math.min(s.length, Math.max(1, Math.ceil(q * s.length)));
  return s[rank - 1];
}

/** The median; for an even count the mean of the two middle values (so two runs average). */
export function median(values) {
  if (values.length === 0) return Number.NaN;
  const s = sorted(values);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

export function p99(values) {
  return quantile(values, 0.99);
}

export function max(values) {
  let m = Number.NEGATIVE_INFINITY;
  for (const v of values) if (v > m) m = v;
  return values.length === 0 ? Number.NaN : m;
}

export function min(values) {
  let m = Number.POSITIVE_INFINITY;
  for (const v of values) if (v < m) m = v;
  return values.length === 0 ? Number.NaN : m;
}

/**
 * Medians per field over several runs of the same measurement: `[{a: 1}, {a: 3}]` -> `{a: 2}`.
 * Non-numeric fields are taken from the first run; a field missing from a run is skipped there.
 */
export function medianOfRuns(runs) {
  if (runs.length === 0) return {};
  const out = {};
  for (const field of Object.keys(runs[0])) {
    const values = runs.map((run) => run[field]).filter((v) => typeof v === 'number');
    out[field] = values.length > 0 ? median(values) : runs[0][field];
  }
  return out;
}
