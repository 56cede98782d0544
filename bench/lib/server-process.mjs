// Servers a bench starts and stops: a free loopback port, readiness by answer (not by a sleep
// of a guessed length), and a stop that escalates from SIGTERM to SIGKILL.
import { fork, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { sleep } from './timing.mjs';

/** A port free on 127.0.0.1 now (the OS picks it; the server binds it a moment later). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** True once `child` has exited or was killed. */
function gone(child) {
  return child.exitCode !== null || child.signalCode !== null;
}

/** SIGTERM, then SIGKILL if it is still there after `graceMs`; resolves once it is gone. */
export async function stopProcess(child, graceMs = 3_000) {
  if (gone(child)) return;
  const exited = new Promise((done) => child.once('exit', done));
  child.kill('SIGTERM');
  await Promise.race([exited, sleep(graceMs)]);
  if (!gone(child)) {
    child.kill('SIGKILL');
    await Promise.race([exited, sleep(graceMs)]);
  }
}

/**
 * Resolves once `url` answers (any status) with the `x-bench-client: readiness` header, polling
 * every 100 ms for at most `attempts`; rejects when `child` exits first or it never answers.
 */
export async function waitForAnswer(url, child, { attempts = 50 } = {}) {
  for (let attempt = 0; attempt < attempts && !gone(child); attempt++) {
    try {
      const response = await fetch(url, { headers: { 'x-bench-client': 'readiness' } });
      await response.arrayBuffer();
      return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`${url} did not answer (the server ${gone(child) ? 'exited' : 'hung'})`);
}

/**
 * Forks a Node server file (one that calls `serveUntilStopped`) with `args` (JSON) and
 * resolves with `{ port, pid, stop }` once it says which port it listens on.
 */
export function forkServer(file, args, { startMs = 10_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(file), [JSON.stringify(args)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const stop = () => stopProcess(child);
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`${file} did not start in ${startMs} ms`));
    }, startMs);
    child.once('message', ({ port }) => {
      clearTimeout(timer);
      resolve({ port, pid: child.pid, stop });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${file} exited (${code})`));
    });
  });
}

/**
 * The child side of `forkServer`: tells the parent the port `server` (a listening node
 * http.Server) is on, and closes it (then exits) on SIGTERM, SIGINT or when the parent goes.
 */
export function serveUntilStopped(server, close = () => new Promise((r) => server.close(r))) {
  process.send?.({ port: server.address().port });
  const stop = () => {
    server.closeAllConnections?.();
    close().finally(() => process.exit(0));
    setTimeout(() => process.exit(0), 2_000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('disconnect', stop); // the bench went away: do not outlive it
}

/**
 * Spawns a server binary (`command` with `args`) that runs from the temporary folder `dir` and
 * answers on `url`; resolves with `{ url, pid, stop }` once it answers. `stop()` ends it and
 * removes `dir`; a server that does not answer is stopped and its folder removed.
 */
export async function spawnServer(command, args, { url, dir }) {
  const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  const stop = () =>
    stopProcess(child).finally(() => rmSync(dir, { recursive: true, force: true }));
  try {
    await waitForAnswer(url, child);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, stop, pid: child.pid };
}
