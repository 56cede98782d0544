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
