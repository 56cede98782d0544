// Debian packages a bench needs, installed with apt-get when missing (the bench runs as root on
// a machine that reaches Debian's mirrors; nothing else is downloaded).
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';

function apt(args) {
  const result = spawnSync('apt-get', args, {
    stdio: 'inherit',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    timeout: 300_000,
  });
  return result.status === 0;
}

/**
 * Installs Debian's `name` when `binary` is missing. Server packages (nginx, haproxy) would
 * start a system service on every address; a policy-rc.d that refuses service starts keeps them
 * from doing so (and is removed again if this made it). The bench starts its own copy, bound to
 * 127.0.0.1, from its own config.
 */
export function ensureDebianPackage(name, binary) {
  if (existsSync(binary)) return;
  console.log(`${binary} is missing: installing the Debian package (apt-get install -y ${name})`);
  const policy = '/usr/sbin/policy-rc.d';
  const madePolicy = !existsSync(policy);
  if (madePolicy) writeFileSync(policy, '#!/bin/sh\nexit 101\n', { mode: 0o755 });
  try {
    const args = ['install', '-y', '--no-install-recommends', name];
    const ok = apt(args) || (apt(['update']) && apt(args));
    if (!ok || !existsSync(binary)) throw new Error(`could not install ${name} with apt-get`);
  } finally {
    if (madePolicy) rmSync(policy, { force: true });
  }
}
