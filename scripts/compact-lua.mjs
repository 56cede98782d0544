// The Redis store's Lua script (src/stores/redis/script.ts) is written to be read: indented, with
// a comment for every rule. The package ships it without them: 1.4 kB of the redis entry's 40.6 kB
// gzip size (a sixth of the script's text). `npm run build` applies this to the script's template
// literal (vite.config.ts), and the tests run the same function over the source's script against
// a real Redis.

/**
 * `lua` without its comment lines and indentation. Each comment line becomes an empty line, so
 * the lines of the file keep their numbers (its source map stays right to the line). Only whole
 * lines that start with `--` are comments here: the script has no long strings or block
 * comments, and a `--` inside a line is left alone.
 */
export function compactLua(lua) {
  return lua
    .split('\n')
    .map((line) => {
      const code = line.trimStart();
      return code.startsWith('--') ? '' : code;
    })
    .join('\n');
}

const START = 'SCRIPT = `';

/**
 * The module `code` with the template literal of its `SCRIPT` compacted (`compactLua`). Throws
 * if it has none, so a renamed script fails the build rather than ships unread.
 */
export function compactScriptModule(code) {
  const start = code.indexOf(START);
  const end = start < 0 ? -1 : code.indexOf('`', start + START.length);
  if (start < 0 || end < 0) throw new Error('[compact-lua] no SCRIPT = `...` template found');
  const from = start + START.length;
  return code.slice(0, from) + compactLua(code.slice(from, end)) + code.slice(end);
}
