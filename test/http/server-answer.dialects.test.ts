import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readServerAnswer } from '../../src/http/server-answer.js';

interface Dialect {
  readonly name: string;
  readonly doc: string;
  readonly now: string;
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body?: string;
  readonly expect: unknown;
}

const { dialects } = JSON.parse(
  fs.readFileSync(new URL('./fixtures/dialects.json', import.meta.url), 'utf8'),
) as { dialects: Dialect[] };

describe('readServerAnswer: every dialect, as its documentation shows it (fixtures/dialects.json)', () => {
  it('names the documentation of every dialect', () => {
    for (const dialect of dialects) expect(dialect.doc).toMatch(/^https:\/\//);
    expect(new Set(dialects.map((d) => d.name)).size).toBe(dialects.length);
  });

  it.each(dialects.map((d) => [d.name, d] as const))('reads %s', (_name, dialect) => {
    const answer = readServerAnswer({
      status: dialect.status,
      headers: new Headers(dialect.headers),
      nowEpochMs: Date.parse(dialect.now),
      body: dialect.body,
    });
    expect(answer ?? null).toEqual(dialect.expect);
  });

  it('reads the headers alone the same when no body is given, except the body-only hints', () => {
    for (const dialect of dialects.filter((d) => d.body === undefined)) {
      const headers = new Headers(dialect.headers);
      const nowEpochMs = Date.parse(dialect.now);
      const withBody = readServerAnswer({ status: dialect.status, headers, nowEpochMs, body: '' });
      expect(withBody).toEqual(readServerAnswer({ status: dialect.status, headers, nowEpochMs }));
    }
    const google = dialects.find((d) => d.name === 'google-retryinfo-429') as Dialect;
    const bare = readServerAnswer({
      status: 429,
      headers: new Headers(google.headers),
      nowEpochMs: Date.parse(google.now),
    });
    expect(bare).toEqual({ refused: true });
  });
});
