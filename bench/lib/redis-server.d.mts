// Types of redis-server.mjs, for the TypeScript test support.
export function redisServerArgs(port: number, dir: string): string[];
