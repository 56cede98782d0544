// One measurement per child process: timers, heaps and JIT state of one library never touch
// another's. The parent forks a workload file; the child answers once over IPC and exits.
import { fork } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** Children running now, so that an interrupted bench can stop every one it started. */
const running = new Set();
let stopping = false;

/** Kills every child this process forked and is still waiting for (each by its own pid), and
 * refuses to fork any more: the bench is on its way out. */
export function killChildren() {
  stopping = true;
  for (const child of running) child.kill('SIGKILL');
  running.clear();
}

/**
 * Forks `file` with `args` (JSON) and resolves with `{ ok: true, result, ms }`, or
 * `{ ok: false, timedOut, error, ms }`. A child still running after `timeoutMs` is killed
 * (by its own pid) and reported as a timeout, never waited for.
 */
export function runChild(file, args, { execArgv = ['--expose-gc'], timeoutMs = 60_000 } = {}) {
  const started = performance.now();
  if (stopping) return Promise.resolve({ ok: false, timedOut: false, error: 'stopped', ms: 0 });
  return new Promise((resolve) => {
    const child = fork(fileURLToPath(file), [JSON.stringify(args)], {
      execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    running.add(child);
    let answer;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('message', (message) => {
      answer = message;
    });
    child.on('exit', (code, signal) => {
      running.delete(child);
      clearTimeout(timer);
      const ms = performance.now() - started;
      if (answer?.result !== undefined) resolve({ ok: true, result: answer.result, ms });
      else {
        const error = answer?.error ?? (timedOut ? 'timeout' : `exit ${code ?? signal}`);
        resolve({ ok: false, timedOut, error, ms });
      }
    });
  });
}

/** True when `importMetaUrl` is the file node was started with (the child side of a workload). */
export function isMain(importMetaUrl) {
  return process.argv[1] !== undefined && importMetaUrl === pathToFileURL(process.argv[1]).href;
}

/** The child side: the JSON args the parent passed. */
export function childArgs() {
  return JSON.parse(process.argv[2] ?? '{}');
}

/** The child side: runs `body(args)`, sends its result (or error) to the parent, and exits. */
export async function serveChild(body) {
  // A child never outlives its parent (Ctrl-C, a crash): nobody would read its answer.
  process.on('disconnect', () => process.exit(0));
  let message;
  try {
    message = { result: await body(childArgs()) };
  } catch (error) {
    message = { error: error instanceof Error ? (error.stack ?? error.message) : String(error) };
  }
  if (process.send) process.send(message, () => process.exit(0));
  else {
    console.log(JSON.stringify(message, null, 2));
    process.exit(0);
  }
}
