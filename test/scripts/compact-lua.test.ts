import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { compactLua, compactScriptModule } from '../../scripts/compact-lua.mjs';
import { SCRIPT } from '../../src/stores/redis/script.js';

describe('compactLua', () => {
  it('drops comment lines and indentation, keeps every line and a -- inside one', () => {
    const lua = [
      '-- a rule',
      'local function f(x)',
      '  -- why',
      "  return x .. '--' -- kept: not a whole-line comment",
      'end',
    ].join('\n');
    expect(compactLua(lua)).toBe(
      [
        '',
        'local function f(x)',
        '',
        "return x .. '--' -- kept: not a whole-line comment",
        'end',
      ].join('\n'),
    );
  });

  it('leaves no comment or indentation in the Redis script, and a tenth of it off at least', () => {
    const shipped = compactLua(SCRIPT);
    const lines = shipped.split('\n');
    expect(lines).toHaveLength(SCRIPT.split('\n').length);
    expect(lines.filter((line) => line.startsWith('--') || /^\s/.test(line))).toEqual([]);
    expect(shipped.length).toBeLessThan(0.9 * SCRIPT.length);
  });
});

describe('compactScriptModule', () => {
  it("compacts the script module's template and nothing else", () => {
    const path = new URL('../../src/stores/redis/script.ts', import.meta.url);
    const source = readFileSync(path, 'utf8');
    const built = compactScriptModule(source);
    const from = source.indexOf('SCRIPT = `') + 'SCRIPT = `'.length;
    const to = source.indexOf('`', from);
    const tail = source.slice(to);
    expect(built.slice(0, from)).toBe(source.slice(0, from));
    expect(built.endsWith(tail)).toBe(true);
    expect(built.slice(from, built.length - tail.length)).toBe(compactLua(source.slice(from, to)));
  });

  it('fails the build when the module has no SCRIPT template', () => {
    expect(() => compactScriptModule('export const OTHER = `x`;')).toThrow(/no SCRIPT/);
  });
});
