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

function fail(field: string, expected: string, value: unknown): never {
  const message = `[fetch-pacer] Expected \`${field}\` to be ${expected}, got ${describe(value)}`;
  throw typeof value === 'number' ? new RangeError(message) : new TypeError(message);
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
  if (typeof value !== 'string') {
    // Always a TypeError: a number here is the wrong type, not a number out of range.
    throw new TypeError(`[fetch-pacer] Expected \`key\` to be a string, got ${describe(value)}`);
  }
}

/** Infinity is allowed and means "no bound". */
export function assertBound(field: string, value: unknown): asserts value is number {
  if (value === Number.POSITIVE_INFINITY) return;
  assertPositiveInteger(field, value);
}
