/** Shared argument checks. Every message names the field and shows the value it got. */

export function describe(value: unknown): string {
  if (typeof value === 'string') return `\`'${value}'\` (string)`;
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') {
    return `\`${String(value)}\` (${typeof value})`;
  }
  if (value === null) return '`null`';
  if (value === undefined) return '`undefined`';
  if (Array.isArray(value)) return 'an array';
  return `a value of type ${typeof value}`;
}

/**
 * Throws "[fetch-pacer] Expected \`field\` to be <expected>, got <value>": the one message
 * scaffold of every option check. By default a number is out of range (`RangeError`) and
 * anything else is of the wrong type (`TypeError`); a field that is not numeric at all passes
 * `TypeError`, so that `random: 5` is a wrong type, not a number out of range.
 */
export function fail(
  field: string,
  expected: string,
  value: unknown,
  type: ErrorConstructor = typeof value === 'number' ? RangeError : TypeError,
): never {
  throw new type(`[fetch-pacer] Expected \`${field}\` to be ${expected}, got ${describe(value)}`);
}

export function assertPositiveInteger(field: string, value: unknown): asserts value is number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    fail(field, 'a positive integer', value);
  }
}

export function assertPositiveFinite(field: string, value: unknown): asserts value is number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    fail(field, 'a finite number > 0', value);
  }
}

export function assertFiniteNumber(field: string, value: unknown): asserts value is number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    fail(field, 'a finite number', value);
  }
}

export function assertKey(value: unknown): asserts value is string {
  // Always a TypeError: a number here is the wrong type, not a number out of range.
  if (typeof value !== 'string') fail('key', 'a string', value, TypeError);
}

/** Infinity is allowed and means "no bound". */
export function assertBound(field: string, value: unknown): asserts value is number {
  if (value === Infinity) return;
  assertPositiveInteger(field, value);
}

/**
 * Throws a TypeError for an option name that `known` lacks, naming the nearest known one. A
 * misspelt option (`concurency`, `brust`) would otherwise be ignored and its default used in
 * silence, which is the hardest kind of misconfiguration to find.
 */
export function assertKnownOptions(what: string, options: object, known: readonly string[]): void {
  for (const name of Object.keys(options)) {
    if (known.includes(name)) continue;
    const near = nearestName(name, known);
    const hint =
      near === undefined ? `; known: \`${known.join('`, `')}\`` : `: did you mean \`${near}\`?`;
    throw new TypeError(`[fetch-pacer] Unknown option \`${name.slice(0, 64)}\` in ${what}${hint}`);
  }
}

/**
 * The closest known name that is near `name`: within a few edits (`concurency`), or sharing a
 * stem of at least four letters (`retries` for `retry`); undefined if none is.
 */
function nearestName(name: string, known: readonly string[]): string | undefined {
  const lower = name.slice(0, 64).toLowerCase();
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of known) {
    const other = candidate.toLowerCase();
    const distance = editDistance(lower, other);
    let stem = 0;
    while (stem < lower.length && lower[stem] === other[stem]) stem++;
    const near =
      distance <= Math.max(2, Math.floor(lower.length / 3)) ||
      stem >= Math.max(4, Math.ceil(Math.min(lower.length, other.length) / 2));
    if (near && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** Levenshtein distance, one row at a time (names are short: at most 64 characters here). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      row[j] = Math.min((previous[j] as number) + 1, (row[j - 1] as number) + 1, substitution);
    }
    previous = row;
  }
  return previous[b.length] as number;
}
