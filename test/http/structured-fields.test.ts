import { describe, expect, it } from 'vitest';
import {
  type BareItem,
  type Member,
  parseDictionary,
  parseItem,
  parseList,
} from '../../src/http/structured-fields.js';

/** A member as plain data, so tables can state expectations compactly. */
function plain(member: Member | undefined): unknown {
  if (member === undefined) return undefined;
  const params = Object.fromEntries([...member.params].map(([k, v]) => [k, bare(v)]));
  if (member.kind === 'inner-list') return { inner: member.items.map(plain), params };
  return { value: bare(member.value), params };
}

function bare(item: BareItem): unknown {
  return `${item.type}:${String(item.value)}`;
}

describe('parseItem: bare items (RFC 8941 §4.2.4-§4.2.8, RFC 9651 §4.2.9-§4.2.10)', () => {
  it.each([
    ['42', 'integer:42'],
    ['-42', 'integer:-42'],
    ['-0', 'integer:0'],
    ['042', 'integer:42'],
    ['123456789012345', 'integer:123456789012345'],
    ['-999999999999999', 'integer:-999999999999999'],
    ['1.5', 'decimal:1.5'],
    ['-0.25', 'decimal:-0.25'],
    ['123456789012.123', 'decimal:123456789012.123'],
    ['"hello"', 'string:hello'],
    ['""', 'string:'],
    ['"a \\"quoted\\" \\\\ b"', 'string:a "quoted" \\ b'],
    ['foo', 'token:foo'],
    ['*foo', 'token:*foo'],
    ["foo/bar:baz!#$%&'*+-.^_`|~1", "token:foo/bar:baz!#$%&'*+-.^_`|~1"],
    ['Foo', 'token:Foo'],
    [':YWJj:', 'bytes:YWJj'],
    ['::', 'bytes:'],
    [':MTJjYTE3YjQ5YWYy:', 'bytes:MTJjYTE3YjQ5YWYy'],
    ['?1', 'boolean:true'],
    ['?0', 'boolean:false'],
    ['@1659578233', 'date:1659578233'],
    ['%"f%c3%bc%c3%bc"', 'display-string:füü'],
    ['%"plain"', 'display-string:plain'],
    ['%"%ef%bb%bfbom"', 'display-string:\ufeffbom'],
    ['  60  ', 'integer:60'],
  ])('reads %j as %s', (input, expected) => {
    const item = parseItem(input);
    expect(item === undefined ? undefined : bare(item.value)).toBe(expected);
  });

  it.each([
    ['empty', ''],
    ['a 16-digit integer', '1234567890123456'],
    ['13 integer digits in a decimal', '1234567890123.1'],
    ['4 fraction digits', '1.1234'],
    ['a trailing dot', '1.'],
    ['two dots', '1.2.3'],
    ['a double minus', '--1'],
    ['a space after the minus', '- 1'],
    ['a lone minus', '-'],
    ['an exponent', '1e3'],
    ['a plus sign', '+1'],
    ['a leading dot', '.5'],
    ['an unterminated string', '"abc'],
    ['a bad escape', '"a\\nb"'],
    ['a tab in a string', '"a\tb"'],
    ['non-ASCII in a string', '"é"'],
    ['an unterminated byte sequence', ':YWJj'],
    ['a space in a byte sequence', ':YW Jj:'],
    ['a non-base64 character', ':YW*j:'],
    ['a boolean other than 0 or 1', '?2'],
    ['a lone question mark', '?'],
    ['a decimal date', '@1.5'],
    ['uppercase hex in a display string', '%"%C3%BC"'],
    ['invalid UTF-8 in a display string', '%"%c3"'],
    ['a short escape in a display string', '%"%c"'],
    ['an unterminated display string', '%"abc'],
    ['a percent without a quote', '%abc'],
    ['two items', '60, 60'],
    ['a trailing comma', '60,'],
    ['a token starting with a digit followed by letters', '1abc'],
    ['a leading tab', '\t60'],
    ['a parenthesis', '(60)'],
  ])('rejects %s', (_case, input) => {
    expect(parseItem(input)).toBeUndefined();
  });
});

describe('parameters (RFC 8941 §4.2.3.2)', () => {
  it('reads integer, decimal, string, token, boolean and byte-sequence values', () => {
    expect(plain(parseItem('"p";q=3;d=1.5;s="x";t=tok;f=?0;b;pk=:YQ==:'))).toEqual({
      value: 'string:p',
      params: {
        q: 'integer:3',
        d: 'decimal:1.5',
        s: 'string:x',
        t: 'token:tok',
        f: 'boolean:false',
        b: 'boolean:true',
        pk: 'bytes:YQ==',
      },
    });
  });

  it('allows spaces after a semicolon but not before it', () => {
    expect(plain(parseItem('"api"; r=2; t=60'))).toEqual({
      value: 'string:api',
      params: { r: 'integer:2', t: 'integer:60' },
    });
    expect(parseItem('"api" ;r=2')).toBeUndefined();
  });

  it('keeps the last value of a repeated key', () => {
    expect(plain(parseItem('a;b=1;b=2'))).toEqual({ value: 'token:a', params: { b: 'integer:2' } });
  });

  it.each([
    ['an uppercase key', 'a;B=1'],
    ['a key starting with a digit', 'a;1b=1'],
    ['an inner list as a value', 'a;b=(1)'],
    ['a missing value', 'a;b='],
    ['a lone semicolon', 'a;'],
  ])('rejects %s', (_case, input) => {
    expect(parseItem(input)).toBeUndefined();
  });
});

describe('parseList (RFC 8941 §4.2.1)', () => {
  it('reads items with parameters', () => {
    expect(parseList('"burst";q=100;w=60,"daily";q=1000;w=86400')?.map((m) => plain(m))).toEqual([
      { value: 'string:burst', params: { q: 'integer:100', w: 'integer:60' } },
      { value: 'string:daily', params: { q: 'integer:1000', w: 'integer:86400' } },
    ]);
  });

  it('reads inner lists', () => {
    expect(parseList('(a "b");p=1, ( ), c')?.map((m) => plain(m))).toEqual([
      {
        inner: [
          { value: 'token:a', params: {} },
          { value: 'string:b', params: {} },
        ],
        params: { p: 'integer:1' },
      },
      { inner: [], params: {} },
      { value: 'token:c', params: {} },
    ]);
  });

  it.each([
    ['an empty value', '', 0],
    ['spaces only', '   ', 0],
    ['no space after a comma', 'a,b', 2],
    ['tabs around a comma', 'a\t,\tb', 2],
    ['spaces around the value', '  a , b  ', 2],
  ])('accepts %s', (_case, input, length) => {
    expect(parseList(input)).toHaveLength(length);
  });

  it.each([
    ['a trailing comma', 'a,'],
    ['a leading comma', ',a'],
    ['an empty member', 'a,,b'],
    ['a missing comma', 'a b'],
    ['an unclosed inner list', '(a b'],
    ['a comma in an inner list', '(a,b)'],
    ['a dictionary', 'limit=3, remaining=2'],
    ['non-ASCII', 'a, ü'],
  ])('rejects %s', (_case, input) => {
    expect(parseList(input)).toBeUndefined();
  });
});

describe('parseDictionary (RFC 8941 §4.2.2)', () => {
  it('reads members, a bare key as true, and parameters', () => {
    const dictionary = parseDictionary('limit=3, remaining=2;x=1, reset=60, flag, list=(1 2)');
    expect(Object.fromEntries([...(dictionary ?? [])].map(([k, v]) => [k, plain(v)]))).toEqual({
      limit: { value: 'integer:3', params: {} },
      remaining: { value: 'integer:2', params: { x: 'integer:1' } },
      reset: { value: 'integer:60', params: {} },
      flag: { value: 'boolean:true', params: {} },
      list: {
        inner: [
          { value: 'integer:1', params: {} },
          { value: 'integer:2', params: {} },
        ],
        params: {},
      },
    });
  });

  it('keeps the last value of a repeated key', () => {
    expect(plain(parseDictionary('a=1, a=2')?.get('a'))).toEqual({
      value: 'integer:2',
      params: {},
    });
  });

  it.each([
    ['an uppercase key', 'Limit=3'],
    ['a trailing comma', 'a=1,'],
    ['a string key', '"api";r=2'],
    ['a space before =', 'a =1'],
    ['a missing value', 'a='],
  ])('rejects %s', (_case, input) => {
    expect(parseDictionary(input)).toBeUndefined();
  });
});
