import { createClient } from 'redis';
import { afterAll, beforeAll } from 'vitest';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { redisServerArgs } from '../../bench/lib/redis-server.mjs';

/** A free loopback port (asked of the OS, then released for the server to take). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  /** SIGKILL: the server dies mid-run, as a crash would; resolves once the process is gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port (empty: it saved nothing). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A throwaway `redis-server` of our own on a loopback port, for the tests that kill it. Waits
 * for "Ready to accept connections" in its log, not for a time; fails loudly if it cannot start.
 */
export async function startRedisServer(): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'fetch-pacer-redis-'));
  let child: ChildProcess | undefined;

  const start = () =>
    new Promise<void>((resolve, reject) => {
      const spawned = spawn('redis-server', redisServerArgs(port, dir), {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child = spawned;
      let output = '';
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('Ready to accept connections')) {
          spawned.stdout?.off('data', onData);
          resolve();
        }
      };
      spawned.stdout?.on('data', onData);
      spawned.once('error', (error) =>
        reject(new Error(`redis-server would not start: ${error.message}`)),
      );
      spawned.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${output}`)));
    });

  const end = (signal: NodeJS.Signals) =>
    new Promise<void>((resolve) => {
      const running = child;
      child = undefined;
      if (running === undefined || running.exitCode !== null) {
        resolve();
        return;
      }
      running.removeAllListeners('exit');
      running.once('exit', () => resolve());
      running.kill(signal);
    });

  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    kill: () => end('SIGKILL'),
    restart: start,
    async stop() {
      await end('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A client of `REDIS_URL` for a `describe.skipIf(url === undefined)` block, connected before its
 * tests and, after them, cleared of every key under `prefix()` and closed. No reconnect loop: a
 * REDIS_URL set but unreachable must fail in `beforeAll`, loudly.
 */
export function useTestRedis(url: string | undefined, prefix: () => string) {
  const held: { client: ReturnType<typeof createClient> } = {
    client: undefined as unknown as ReturnType<typeof createClient>,
  };
  beforeAll(async () => {
    held.client = createClient({
      url: url as string,
      socket: { reconnectStrategy: false, connectTimeout: 5_000 },
    });
    held.client.on('error', () => {});
    await held.client.connect();
  });
  afterAll(async () => {
    const { client } = held;
    if (!client?.isOpen) return;
    for await (const keys of client.scanIterator({ MATCH: `${prefix()}*`, COUNT: 1_000 })) {
      if (keys.length > 0) await client.del(keys);
    }
    client.destroy();
  });
  return held;
}
