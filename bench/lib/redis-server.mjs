// A throwaway redis-server of our own: a loopback port, nothing written to disk but into its own
// folder. For the bench (`bench/servers-store.mjs`, the redis-gcra server of `bench/servers`)
// and the tests that start one (`test/support/redis-server.ts`, which takes the arguments).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { createClient } from 'redis';
import { ensureDebianPackage } from './debian.mjs';
import { freePort, stopProcess } from './server-process.mjs';
import { sleep } from './timing.mjs';

/** redis-server's arguments for `port`, keeping its files in `dir`. */
export function redisServerArgs(port, dir) {
  return [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
  ];
}

/**
 * Debian's redis-server on a free loopback port, in a folder of its own; resolves with its URL
 * and `stop()` (which ends it and removes the folder) once it answers a PING.
 */
export async function startRedisServer() {
  ensureDebianPackage('redis-server', '/usr/bin/redis-server');
  const port = await freePort();
  const dir = mkdtempSync(join(os.tmpdir(), 'fetch-pacer-bench-redis-'));
  const child = spawn('/usr/bin/redis-server', redisServerArgs(port, dir), { stdio: 'ignore' });
  const stop = async () => {
    await stopProcess(child);
    rmSync(dir, { recursive: true, force: true });
  };
  const url = `redis://127.0.0.1:${port}`;
  for (let attempt = 0; attempt < 50; attempt++) {
    const client = createClient({ url });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.ping();
      await client.quit();
      return { url, stop };
    } catch {
      await client.disconnect().catch(() => {});
      await sleep(100);
    }
  }
  await stop();
  throw new Error(`redis-server did not answer on ${url}`);
}
