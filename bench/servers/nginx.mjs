// The nginx server of `npm run bench:servers`: Debian's nginx with limit_req at 20 r/s, burst 5,
// nodelay, 429 on refusal (a leaky bucket that sends no Retry-After and no RateLimit headers).
// It runs from its own config, pid file and logs in a temporary folder, bound to 127.0.0.1.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep } from '../lib/timing.mjs';

export const NGINX = '/usr/sbin/nginx';
export const RATE = 20; // per second
export const BURST = 5;

function apt(args) {
  const result = spawnSync('apt-get', args, {
    stdio: 'inherit',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    timeout: 300_000,
  });
  return result.status === 0;
}

/**
 * Installs Debian's nginx when it is missing. The package would start a system nginx on port
 * 80 of every address; a policy-rc.d that refuses service starts keeps it from doing so (and is
 * removed again if this made it).
 */
export function ensureNginx() {
  if (existsSync(NGINX)) return;
  console.log('nginx is missing: installing the Debian package (apt-get install -y nginx)');
  const policy = '/usr/sbin/policy-rc.d';
  const madePolicy = !existsSync(policy);
  if (madePolicy) writeFileSync(policy, '#!/bin/sh\nexit 101\n', { mode: 0o755 });
  try {
    const ok =
      apt(['install', '-y', '--no-install-recommends', 'nginx']) ||
      (apt(['update']) && apt(['install', '-y', '--no-install-recommends', 'nginx']));
    if (!ok || !existsSync(NGINX)) throw new Error('could not install nginx with apt-get');
  } finally {
    if (madePolicy) rmSync(policy, { force: true });
  }
}

function config(dir, port) {
  return `daemon off;
master_process on;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  keepalive_requests 100000;
  # One bucket per bench client (a header), so no run inherits another's state.
  limit_req_zone $http_x_bench_client zone=bench:1m rate=${RATE}r/s;
  server {
    listen 127.0.0.1:${port};
    location / {
      # A static file, served in the content phase: limit_req (preaccess) runs before it.
      # ('return 200' would answer in the rewrite phase, before any limit is looked at.)
      root ${dir}/www;
      limit_req zone=bench burst=${BURST} nodelay;
      limit_req_status 429;
    }
  }
}
`;
}

/** Starts nginx on 127.0.0.1:`port`; resolves once it answers. `stop()` ends it and its folder. */
export async function startNginx(port) {
  const dir = mkdtempSync(join(tmpdir(), 'fetch-pacer-nginx-'));
  // Its worker runs as an unprivileged user and must read the page.
  chmodSync(dir, 0o755);
  mkdirSync(join(dir, 'www'), { mode: 0o755 });
  writeFileSync(join(dir, 'www', 'ok.txt'), 'ok\n', { mode: 0o644 });
  writeFileSync(join(dir, 'nginx.conf'), config(dir, port));
  const child = spawn(
    NGINX,
    ['-c', join(dir, 'nginx.conf'), '-p', dir, '-e', join(dir, 'error.log')],
    {
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  let exited = false;
  const exit = new Promise((resolve) => child.on('exit', resolve));
  exit.then(() => {
    exited = true;
  });
  const stop = async () => {
    if (!exited) {
      child.kill('SIGTERM'); // the master stops its worker and removes its pid file
      await Promise.race([exit, sleep(3_000)]);
      if (!exited) child.kill('SIGKILL');
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const url = `http://127.0.0.1:${port}/ok.txt`;
  for (let attempt = 0; attempt < 50 && !exited; attempt++) {
    try {
      const response = await fetch(url, { headers: { 'x-bench-client': 'readiness' } });
      await response.arrayBuffer();
      if (response.ok) return { url, stop, pid: child.pid };
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  await stop();
  throw new Error(`nginx did not answer on ${url} (see its error log)`);
}
