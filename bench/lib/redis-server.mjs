// The arguments of a throwaway redis-server of our own: a loopback port, nothing written to disk
// but into its own folder. For the bench (`bench/servers-store.mjs`) and the tests that start
// one (`test/support/redis-server.ts`).

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
