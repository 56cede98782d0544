/** `lua` without its comment lines and indentation (see compact-lua.mjs). */
export function compactLua(lua: string): string;
/** The module `code` with the template literal of its `SCRIPT` compacted. */
export function compactScriptModule(code: string): string;
