/**
 * Structured Field Values (RFC 8941, and the two bare-item types its successor RFC 9651 adds)
 * for the RateLimit headers: Lists, Dictionaries and Items with Parameters.
 *
 * All-or-nothing, as the RFC's parsing algorithms are: any syntax error rejects the whole field
 * (RFC 8941 §4.2), which is what the RateLimit drafts ask of a client ("Malformed RateLimit
 * header fields MUST be ignored"). The structure (members, inner lists, parameters, commas,
 * spaces) follows those algorithms step for step; each bare item is one match of a regular
 * expression written from the RFC's rules for it, so a malformed item fails the match, or
 * leaves a character that no structure accepts next. Internal only: it is not part of the
 * package's public API.
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
    while (c.i < c.s.length) {
      members.push(member(c));
      take(c, NEXT_MEMBER);
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
    while (c.i < c.s.length) {
      const [, key = '', equals] = take(c, DICTIONARY_KEY);
      members.set(key, equals ? member(c) : { kind: 'item', value: TRUE, params: parameters(c) });
      take(c, NEXT_MEMBER);
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
  return parseField(input, item);
}

/**
 * One bare item (RFC 8941 §4.2.3.1); the group that matched says which type. Every rule reads
 * printable ASCII only, so a field with anything else (RFC 8941 §4.2 step 1) fails here.
 */
const BARE_ITEM = new RegExp(
  [
    // 1. Decimal (§4.2.4): at most 12 integer and 3 fraction digits, so every value is exact.
    /(-?\d{1,12}\.\d{1,3})/,
    // 2. Integer (§4.2.4): at most 15 digits. A longer number leaves a digit or dot behind.
    /(-?\d{1,15})/,
    // 3. String (§4.2.5): printable ASCII, with `\"` and `\\` the only escapes.
    /"((?:[ !#-[\]-~]|\\["\\])*)"/,
    // 4. Token (§4.2.6).
    /([A-Za-z*][\w!#$%&'*+.^`|~:/-]*)/,
    // 5. Byte Sequence (§4.2.7), kept as its base64 text.
    /:([A-Za-z\d+/=]*):/,
    // 6. Boolean (§4.2.8).
    /\?([01])/,
    // 7. Date (RFC 9651 §4.2.9): `@` and an integer of Unix seconds.
    /@(-?\d{1,15})/,
    // 8. Display String (RFC 9651 §4.2.10): `%"` printable ASCII with `%xx` (lowercase hex)
    //    UTF-8 escapes; the UTF-8 is checked when it is decoded.
    /%"((?:[ !#$&-~]|%[\da-f]{2})*)"/,
  ]
    .map((rule) => rule.source)
    .join('|'),
  'y',
);

const KEY = '[a-z*][a-z\\d_.*-]*';
/** `;`, optional spaces, a parameter's key, and `=` when a value follows (§4.2.3.2). */
const PARAMETER_KEY = new RegExp(`; *(${KEY})(=?)`, 'y');
/** A dictionary member's key, and `=` when a value follows (§4.2.2). */
const DICTIONARY_KEY = new RegExp(`(${KEY})(=?)`, 'y');
/** After a member (§4.2.1): the end, or a comma that another member follows. */
const NEXT_MEMBER = /[ \t]*(?:$|,[ \t]*(?!$))/y;
const SPACES = / */y;
/** Trailing spaces, then nothing (§4.2 steps 7-8). */
const END = / *$/y;
/** After an inner list's item (§4.2.1.2): a space or its closing parenthesis. */
const IN_INNER_LIST = /(?=[ )])/y;

const TRUE: BareItem = { type: 'boolean', value: true };

/** Where a parse stands in the field. */
interface Cursor {
  readonly s: string;
  i: number;
}

/** Matches `rule` (sticky) at the cursor and moves past it; throws when it does not match. */
function take(c: Cursor, rule: RegExp): RegExpExecArray {
  rule.lastIndex = c.i;
  const match = rule.exec(c.s);
  if (match === null) throw new SyntaxError('malformed structured field');
  c.i = rule.lastIndex;
  return match;
}

function parseField<T>(input: string, parse: (c: Cursor) => T): T | undefined {
  const c: Cursor = { s: input, i: 0 };
  try {
    take(c, SPACES);
    const value = parse(c);
    take(c, END);
    return value;
  } catch {
    // Nothing here throws but a syntax error: `take`'s, or decodeURIComponent's URIError.
    return undefined;
  }
}

function member(c: Cursor): Member {
  return c.s[c.i] === '(' ? innerList(c) : item(c);
}

function innerList(c: Cursor): InnerList {
  c.i++; // '('
  const items: Item[] = [];
  for (;;) {
    take(c, SPACES);
    if (c.s[c.i] === ')') {
      c.i++;
      return { kind: 'inner-list', items, params: parameters(c) };
    }
    items.push(item(c));
    take(c, IN_INNER_LIST); // also fails at the end: unclosed
  }
}

function item(c: Cursor): Item {
  return { kind: 'item', value: bareItem(c), params: parameters(c) };
}

function parameters(c: Cursor): Parameters {
  const params = new Map<string, BareItem>();
  while (c.s[c.i] === ';') {
    const [, key = '', equals] = take(c, PARAMETER_KEY);
    params.set(key, equals ? bareItem(c) : TRUE);
  }
  return params;
}

function bareItem(c: Cursor): BareItem {
  const [, decimal, integer, string, token, bytes, boolean, date, display] = take(c, BARE_ITEM);
  // `+ 0` turns -0 into 0.
  if (decimal !== undefined) return { type: 'decimal', value: Number(decimal) + 0 };
  if (integer !== undefined) return { type: 'integer', value: Number(integer) + 0 };
  if (string !== undefined) return { type: 'string', value: string.replace(/\\(.)/g, '$1') };
  if (token !== undefined) return { type: 'token', value: token };
  if (bytes !== undefined) return { type: 'bytes', value: bytes };
  if (boolean !== undefined) return { type: 'boolean', value: boolean === '1' };
  if (date !== undefined) return { type: 'date', value: Number(date) + 0 };
  // Throws a URIError on bytes that are not UTF-8, as a display string must fail then.
  return { type: 'display-string', value: decodeURIComponent(display ?? '') };
}
