// Clocks and heap probes shared by the workloads.

/** Nanoseconds now, as a Number (a bigint would cost an allocation inside the timed loops). */
export function nowNs() {
  return Number(process.hrtime.bigint());
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs a full collection; throws when node was started without --expose-gc. */
export function fullGc() {
  if (typeof globalThis.gc !== 'function') {
    throw new Error('run with node --expose-gc (npm run bench does)');
  }
  // Twice: the first may leave weak references and finalizers that the second collects.
  globalThis.gc();
  globalThis.gc();
}

export function heapUsed() {
  return process.memoryUsage().heapUsed;
}

/** Active Node timers (setTimeout/setInterval handles that are still pending). */
export function activeTimers() {
  return process.getActiveResourcesInfo().filter((name) => name === 'Timeout').length;
}

/** CPU ms (user + system) this process spends while idling `ms` of wall time. */
export async function idleCpuMs(ms) {
  const before = process.cpuUsage();
  await sleep(ms);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}
