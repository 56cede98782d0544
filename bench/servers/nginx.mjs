// nginx `limit_req` (Debian's nginx): a leaky bucket per client, `rate` r/s with `burst` nodelay,
// 429 on refusal. A refused request is not counted (the bucket is not filled by it).
// Headers: none about the limit (no Retry-After, no RateLimit headers): the client learns only
// from the 429 itself. Docs: https://nginx.org/en/docs/http/ngx_http_limit_req_module.html
// It runs from its own config, pid file and logs in a temporary folder, bound to 127.0.0.1.
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDebianPackage } from '../lib/debian.mjs';
import { spawnServer } from '../lib/server-process.mjs';

const NGINX = '/usr/sbin/nginx';

export function ensureNginx() {
  ensureDebianPackage('nginx', NGINX);
}

function config(dir, port, { rate, burst }) {
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
  limit_req_zone $http_x_bench_client zone=bench:1m rate=${typeof rate === 'string' ? rate : `${rate}r/s`};
  server {
    listen 127.0.0.1:${port};
    location / {
      # A static file, served in the content phase: limit_req (preaccess) runs before it.
      # ('return 200' would answer in the rewrite phase, before any limit is looked at.)
      root ${dir}/www;
      limit_req zone=bench burst=${burst} nodelay;
      limit_req_status 429;
    }
  }
}
`;
}

/**
 * Starts nginx on 127.0.0.1:`port` limiting `rate` r/s (or nginx's own `'12r/m'`) with `burst`;
 * resolves once it answers.
 * `stop()` ends it and removes its folder.
 */
export async function startNginx(port, limits) {
  const dir = mkdtempSync(join(tmpdir(), 'fetch-pacer-nginx-'));
  // Its worker runs as an unprivileged user and must read the page.
  chmodSync(dir, 0o755);
  mkdirSync(join(dir, 'www'), { mode: 0o755 });
  writeFileSync(join(dir, 'www', 'ok.txt'), 'ok\n', { mode: 0o644 });
  writeFileSync(join(dir, 'nginx.conf'), config(dir, port, limits));
  // SIGTERM (on stop): the master stops its worker and removes its pid file.
  return spawnServer(
    NGINX,
    ['-c', join(dir, 'nginx.conf'), '-p', dir, '-e', join(dir, 'error.log')],
    {
      url: `http://127.0.0.1:${port}/ok.txt`,
      dir,
    },
  );
}
