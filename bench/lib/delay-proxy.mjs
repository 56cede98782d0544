// A TCP proxy that delays every chunk by a seeded random amount, each way: the network between
// a client and a server, on loopback.
//
// Why: on loopback a request arrives the instant it is sent, and a server counts arrivals. Real
// networks put a variable delay between the send and the arrival, so sends that were correctly
// spaced can arrive bunched (a request sent 20 ms after another, but delayed 40 ms less, arrives
// first and right behind it). A client that paces its sends exactly to the published limit is
// then refused; this proxy shows it.
//
// A TCP connection stays in order: a chunk is delivered no earlier than the one before it on the
// same connection and direction (head-of-line blocking, as TCP does). Fetch (undici) sends one
// request at a time per connection and opens more connections for concurrent requests, so one
// request is one chunk in practice and its delay is its own.
import { connect, createServer } from 'node:net';
import { seededRandom, uniform } from './random.mjs';

/**
 * Listens on 127.0.0.1 (a port the OS picks) and forwards every connection to
 * `127.0.0.1:targetPort`, delaying each chunk by a uniform draw in [minMs, maxMs) in each
 * direction. Resolves with `{ port, stop, stats }`; `stats()` tells how many chunks were delayed
 * and their mean delay.
 */
export function startDelayProxy({ targetPort, minMs, maxMs, seed }) {
  const random = seededRandom(seed);
  const sockets = new Set();
  let chunks = 0;
  let delaySum = 0;

  /**
   * Forwards `from` to `to`, each chunk after its delay and never before the previous one: one
   * queue and one timer per direction, so the order holds even when two chunks fall due in the
   * same ms (two timers of equal due time do not promise an order).
   */
  function pipeDelayed(from, to) {
    const queue = []; // [dueAt, chunk | null (the end)], due times ascending
    let lastAt = 0;
    let timer;
    const drain = () => {
      timer = undefined;
      const now = performance.now();
      while (queue.length > 0 && queue[0][0] <= now + 0.5) {
        const [, chunk] = queue.shift();
        if (to.destroyed) return;
        if (chunk === null) to.end();
        else to.write(chunk);
      }
      if (queue.length > 0) timer = setTimeout(drain, queue[0][0] - now);
    };
    const push = (chunk, delayMs) => {
      const now = performance.now();
      lastAt = Math.max(lastAt, now + delayMs);
      queue.push([lastAt, chunk]);
      if (timer === undefined) timer = setTimeout(drain, lastAt - now);
      return lastAt - now;
    };
    from.on('data', (chunk) => {
      chunks++;
      delaySum += push(chunk, uniform(random, minMs, maxMs));
    });
    from.on('end', () => push(null, 0));
    from.on('close', () => clearTimeout(timer));
  }

  const server = createServer((client) => {
    const upstream = connect({ host: '127.0.0.1', port: targetPort });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.setNoDelay(true);
      socket.on('close', () => sockets.delete(socket));
      // A reset on one side closes the other: the proxy holds no half-dead connection.
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    pipeDelayed(client, upstream);
    pipeDelayed(upstream, client);
  });

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const stop = () =>
        new Promise((done) => {
          for (const socket of sockets) socket.destroy();
          server.close(() => done());
        });
      const stats = () => ({ chunks, meanDelayMs: chunks > 0 ? delaySum / chunks : 0 });
      resolve({ port: server.address().port, stop, stats });
    });
  });
}
