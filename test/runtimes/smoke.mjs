// The smoke every runtime runs against the built package (dist/, as published): a paced fetch
// against the loopback server of run.mjs, with time owned by the manual clock. It uses only web
// APIs (fetch, Response, Promise), so the same file runs in Node, Bun, Deno and edge-runtime.
// It moves time with the clock's synchronous `advance()`, and checks `advanceAsync()` on its own
// (edge-runtime has no MessageChannel: the clock takes its turn from a zero timeout there).
import { createPacedFetch, createRateLimiter, perSecond } from '../../dist/index.js';
import { createManualClock } from '../../dist/testing.js';

/**
 * Runs each check against the server at `baseUrl` and resolves with
 * `{ passed: string[], failed: { name, error }[] }`. Never rejects.
 */
export async function smoke(baseUrl) {
  const passed = [];
  const failed = [];
  for (const [name, check] of checks) {
    try {
      await check(baseUrl);
      passed.push(name);
    } catch (error) {
      failed.push({ name, error: String(error?.stack ?? error) });
    }
  }
  return { passed, failed };
}

const checks = [
  ['the limiter decides on the manual clock', decideOnManualClock],
  ['a paced fetch sends 2 per second and holds the third until its permit', paceThree],
  ['a 429 with Retry-After: 1 is retried once the clock reaches it', retryAfterRefusal],
  ['advanceAsync lets the promise callbacks of a fired timer run', advanceAsyncTurns],
];

function deferred() {
  let resolve;
  const promise = new Promise((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

function expectEqual(actual, expected, what) {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) throw new Error(`${what}: expected ${e}, got ${a}`);
}

async function decideOnManualClock() {
  const clock = createManualClock();
  const limiter = createRateLimiter({ limits: perSecond(5), clock });
  const remaining = Array.from({ length: 6 }, () => limiter.tryAcquire('alice').remaining);
  expectEqual(remaining, [4, 3, 2, 1, 0, 0], 'remaining after six takes');
  expectEqual(limiter.tryAcquire('alice').retryAfterMs, 200, 'retryAfterMs of the seventh');
  clock.advance(200);
  expectEqual(limiter.tryAcquire('alice').allowed, true, 'allowed 200 ms later');
}

async function advanceAsyncTurns() {
  const clock = createManualClock();
  let ran = false;
  clock.setTimeout(() => {
    Promise.resolve().then(() => {
      ran = true;
    });
  }, 10);
  await clock.advanceAsync(10);
  expectEqual([clock.now(), ran], [10, true], 'time and the callback after advanceAsync(10)');
}

async function paceThree(baseUrl) {
  const clock = createManualClock();
  // No slow start: the first two go at once, as the projection below counts them.
  const pacedFetch = createPacedFetch({ limits: perSecond(2), learn: { slowStart: false }, clock });
  const run = `${Date.now()}-${Math.random()}`;
  let started = 0;
  const third = deferred();
  const calls = [1, 2, 3].map((n) =>
    pacedFetch(`${baseUrl}/echo/${run}/${n}`, {
      pacing: {
        onProgress: (progress) => {
          if (progress.state === 'started') started += 1;
          if (n === 3 && progress.state === 'queued') third.resolve(progress.startAt);
        },
      },
    }),
  );
  const [first, second] = await Promise.all(calls.slice(0, 2));
  expectEqual([first.status, second.status], [200, 200], 'statuses of the first two');
  // Counted arrival-safe (the default): while the first two are out, the third is due a window
  // on at the earliest; answered at 0 ms, they count until 1001 ms.
  expectEqual(await third.promise, 1000, 'projected start of the third (ms)');
  expectEqual([started, pacedFetch.pacer.getSnapshot().queued], [2, 1], 'started, queued at 0 ms');
  clock.advance(1000);
  expectEqual(started, 2, 'started at 1000 ms');
  clock.advance(1);
  const last = await calls[2];
  expectEqual(await last.text(), `echo ${run}/3`, 'body of the third');
  const seen = await (await fetch(`${baseUrl}/seen/${run}`)).json();
  expectEqual(seen, 3, 'requests the server saw');
}

async function retryAfterRefusal(baseUrl) {
  const clock = createManualClock();
  const pacedFetch = createPacedFetch({ limits: perSecond(10), clock });
  const run = `${Date.now()}-${Math.random()}`;
  const blocked = deferred();
  const response = pacedFetch(`${baseUrl}/limited-once/${run}`, {
    pacing: {
      onProgress: (progress) => {
        if (progress.state === 'blocked') blocked.resolve(progress.until);
      },
    },
  });
  expectEqual(await blocked.promise, 1000, 'blocked until (ms)');
  clock.advance(1000);
  const answer = await response;
  expectEqual([answer.status, await answer.text()], [200, 'ok after 1'], 'the retried answer');
}
