/**
 * Structured Field Values (RFC 8941, and the two bare-item types its successor RFC 9651 adds)
 * for the RateLimit headers: Lists, Dictionaries and Items with Parameters.
 *
 * It follows the RFC's parsing algorithms step for step and is all-or-nothing: any syntax
 * error rejects the whole field (RFC 8941 §4.2), which is what the RateLimit drafts ask of a
 * client ("Malformed RateLimit header fields MUST be ignored"). Internal only: it is not part
 * of the package's public API.
 */

/** A bare item. Byte sequences stay as the base64 text that was sent: we only compare them. */
export type BareItem =
  | { readonly type: 'integer' | 'decimal' | 'date'; readonly value: number }
  | { readonly type: 'string' | 'token' | 'bytes' | 'display-string'; readonly value: string }
  | { readonly type: 'boolean'; readonly value: boolean };

/** Parameters by key; a repeated key keeps its last value (RFC 8941 §4.2.3.2). */
export type Parameters = ReadonlyMap<string, BareItem>;

/** An Item: a bare item with its parameters. */
export interface Item {
  readonly kind: 'item';
  readonly value: BareItem;
  readonly params: Parameters;
}

/** An Inner List: `(a b);p=1`. */
export interface InnerList {
  readonly kind: 'inner-list';
  readonly items: readonly Item[];
  readonly params: Parameters;
}

/** A member of a List or a Dictionary. */
export type Member = Item | InnerList;

/**
 * Parses a List field such as `"burst";q=100;w=60, "daily";q=1000;w=86400`.
 * An empty value is an empty list; a malformed one gives `undefined`.
 *
 * @example parseList('"api";r=2;t=60') // [{ kind: 'item', value: { type: 'string', value: 'api' }, ... }]
 */
export function parseList(input: string): Member[] | undefined {
  return parseField(input, (c) => {
    const members: Member[] = [];
    while (!c.done()) {
      members.push(parseMember(c));
      if (!c.nextInCollection()) break;
    }
    return members;
  });
}

/**
 * Parses a Dictionary field such as `limit=3, remaining=2, reset=60`. A key without `=` is
 * boolean true; a repeated key keeps its last value. A malformed value gives `undefined`.
 *
 * @example parseDictionary('limit=3, remaining=2')?.get('remaining') // { kind: 'item', value: { type: 'integer', value: 2 }, ... }
 */
export function parseDictionary(input: string): Map<string, Member> | undefined {
  return parseField(input, (c) => {
    const members = new Map<string, Member>();
    while (!c.done()) {
      const key = parseKey(c);
      if (c.peek() === '=') {
        c.take();
        members.set(key, parseMember(c));
      } else {
        members.set(key, { kind: 'item', value: TRUE, params: parseParameters(c) });
      }
      if (!c.nextInCollection()) break;
    }
    return members;
  });
}

/**
 * Parses an Item field such as `60` or `"api";pk=:YWJj:`. A malformed value gives `undefined`.
 *
 * @example parseItem('60')?.value // { type: 'integer', value: 60 }
 */
export function parseItem(input: string): Item | undefined {
  return parseField(input, parseItemAt);
}

const TRUE: BareItem = { type: 'boolean', value: true };

/** Thrown inside the parser only; the exported functions turn it into `undefined`. */
class SyntaxFailure extends Error {}

function fail(): never {
  throw new SyntaxFailure();
}

class Cursor {
  private i = 0;
  constructor(private readonly s: string) {}
  done(): boolean {
    return this.i >= this.s.length;
  }
  /** The next character, or '' at the end (which matches no character class below). */
  peek(): string {
    return this.s.charAt(this.i);
  }
  take(): string {
    if (this.done()) fail();
    return this.s.charAt(this.i++);
  }
  skip(chars: string): void {
    while (!this.done() && chars.includes(this.peek())) this.i++;
  }
  /** After a member: true if a `,` and another member follow, false at the end (§4.2.1). */
  nextInCollection(): boolean {
    this.skip(' \t');
    if (this.done()) return false;
    if (this.take() !== ',') fail();
    this.skip(' \t');
    if (this.done()) fail(); // a trailing comma
    return true;
  }
}

function parseField<T>(input: string, parse: (c: Cursor) => T): T | undefined {
  // Field values are ASCII (RFC 8941 §4.2 step 1); anything else is not a structured field.
  if (!/^[\x20-\x7e\t]*$/.test(input)) return undefined;
  const c = new Cursor(input);
  try {
    c.skip(' ');
    const value = parse(c);
    c.skip(' ');
    return c.done() ? value : undefined;
  } catch (error) {
    if (error instanceof SyntaxFailure) return undefined;
    throw error;
  }
}

function parseMember(c: Cursor): Member {
  return c.peek() === '(' ? parseInnerList(c) : parseItemAt(c);
}

function parseInnerList(c: Cursor): InnerList {
  c.take(); // '('
  const items: Item[] = [];
  for (;;) {
    c.skip(' ');
    if (c.peek() === ')') {
      c.take();
      return { kind: 'inner-list', items, params: parseParameters(c) };
    }
    items.push(parseItemAt(c));
    if (c.peek() !== ' ' && c.peek() !== ')') fail(); // also fails at the end: unclosed
  }
}

function parseItemAt(c: Cursor): Item {
  const value = parseBareItem(c);
  return { kind: 'item', value, params: parseParameters(c) };
}

function parseParameters(c: Cursor): Parameters {
  const params = new Map<string, BareItem>();
  while (c.peek() === ';') {
    c.take();
    c.skip(' ');
    const key = parseKey(c);
    let value = TRUE;
    if (c.peek() === '=') {
      c.take();
      value = parseBareItem(c);
    }
    params.set(key, value);
  }
  return params;
}

function parseKey(c: Cursor): string {
  if (!/[a-z*]/.test(c.peek())) fail();
  let key = c.take();
  while (/[a-z0-9_\-.*]/.test(c.peek())) key += c.take();
  return key;
}

function parseBareItem(c: Cursor): BareItem {
  const first = c.peek();
  if (first === '-' || /[0-9]/.test(first)) return parseNumber(c);
  if (first === '"') return { type: 'string', value: parseString(c) };
  if (first === '*' || /[A-Za-z]/.test(first)) return { type: 'token', value: parseToken(c) };
  if (first === ':') return { type: 'bytes', value: parseByteSequence(c) };
  if (first === '?') return parseBoolean(c);
  if (first === '@') return parseDate(c);
  if (first === '%') return { type: 'display-string', value: parseDisplayString(c) };
  return fail();
}

/** §4.2.4: at most 15 integer digits, or 12 + 3 for a decimal, so every value is exact. */
function parseNumber(c: Cursor): BareItem {
  let sign = 1;
  if (c.peek() === '-') {
    c.take();
    sign = -1;
  }
  if (!/[0-9]/.test(c.peek())) fail();
  let text = '';
  let decimal = false;
  for (;;) {
    const ch = c.peek();
    if (/[0-9]/.test(ch)) {
      text += c.take();
    } else if (ch === '.' && !decimal) {
      if (text.length > 12) fail();
      text += c.take();
      decimal = true;
    } else {
      break;
    }
    if (!decimal && text.length > 15) fail();
    if (decimal && text.length > 16) fail();
  }
  if (!decimal) return { type: 'integer', value: sign * Number(text) + 0 }; // + 0: no -0
  if (text.endsWith('.') || text.length - text.indexOf('.') - 1 > 3) fail();
  return { type: 'decimal', value: sign * Number(text) + 0 };
}

function parseString(c: Cursor): string {
  c.take(); // '"'
  let out = '';
  for (;;) {
    const ch = c.take(); // fails at the end: unterminated
    if (ch === '"') return out;
    if (ch === '\\') {
      const escaped = c.take();
      if (escaped !== '"' && escaped !== '\\') fail();
      out += escaped;
    } else {
      if (ch === '\t') fail(); // the only non-printable the ASCII check lets through
      out += ch;
    }
  }
}

function parseToken(c: Cursor): string {
  let out = c.take();
  while (/[A-Za-z0-9!#$%&'*+\-.^_`|~:/]/.test(c.peek())) out += c.take();
  return out;
}

function parseByteSequence(c: Cursor): string {
  c.take(); // ':'
  let out = '';
  for (;;) {
    const ch = c.take(); // fails at the end: unterminated
    if (ch === ':') return out;
    if (!/[A-Za-z0-9+/=]/.test(ch)) fail();
    out += ch;
  }
}

function parseBoolean(c: Cursor): BareItem {
  c.take(); // '?'
  const ch = c.take();
  if (ch !== '0' && ch !== '1') fail();
  return { type: 'boolean', value: ch === '1' };
}

/** RFC 9651 §4.2.9: `@` and an integer of Unix seconds. */
function parseDate(c: Cursor): BareItem {
  c.take(); // '@'
  const n = parseNumber(c);
  if (n.type !== 'integer') fail();
  return { type: 'date', value: n.value };
}

/** RFC 9651 §4.2.10: `%"` printable ASCII with `%xx` (lowercase hex) UTF-8 escapes. */
function parseDisplayString(c: Cursor): string {
  c.take(); // '%'
  if (c.take() !== '"') fail();
  const bytes: number[] = [];
  for (;;) {
    const ch = c.take(); // fails at the end: unterminated
    if (ch === '"') break;
    if (ch === '\t') fail();
    if (ch === '%') {
      const hex = c.take() + c.take();
      if (!/^[0-9a-f]{2}$/.test(hex)) fail();
      bytes.push(Number.parseInt(hex, 16));
    } else {
      bytes.push(ch.charCodeAt(0));
    }
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array(bytes));
  } catch {
    return fail();
  }
}
