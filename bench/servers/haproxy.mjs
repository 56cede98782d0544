// HAProxy (Debian's haproxy) with a stick table tracking `http_req_rate(1s)` per client and
// `http-request deny deny_status 429` above `rate`: a sliding-window counter (HAProxy's
// freq_ctr: the previous period's count, weighted by the part of it still inside the last
// second, plus the current period's). Every tracked request counts, refused ones included, so
// a client that keeps sending while refused keeps itself refused.
// Headers: none about the limit (no Retry-After, no RateLimit headers).
// Docs: https://www.haproxy.com/blog/four-examples-of-haproxy-rate-limiting and
// https://docs.haproxy.org/2.6/configuration.html#7.3.3-sc_http_req_rate
// It answers by itself (`http-request return`), no backend; its own config in a temporary
// folder, bound to 127.0.0.1, in the foreground (-db) so that stopping the child stops it.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDebianPackage } from '../lib/debian.mjs';
import { spawnServer } from '../lib/server-process.mjs';

const HAPROXY = '/usr/sbin/haproxy';

export function ensureHaproxy() {
  ensureDebianPackage('haproxy', HAPROXY);
}

function config(port, { rate }) {
  return `global
  maxconn 4096
defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s
  timeout http-keep-alive 30s
frontend bench
  bind 127.0.0.1:${port}
  # One entry per bench client (a header), so no run inherits another's rate.
  stick-table type string len 64 size 10k expire 30s store http_req_rate(1s)
  http-request track-sc0 req.hdr(x-bench-client)
  http-request deny deny_status 429 if { sc_http_req_rate(0) gt ${rate} }
  http-request return status 200 content-type text/plain string "ok\\n"
`;
}

/** Starts HAProxy on 127.0.0.1:`port` at `rate` r/s; resolves once it answers. */
export async function startHaproxy(port, limits) {
  const dir = mkdtempSync(join(tmpdir(), 'fetch-pacer-haproxy-'));
  const file = join(dir, 'haproxy.cfg');
  writeFileSync(file, config(port, limits));
  return spawnServer(HAPROXY, ['-db', '-f', file], { url: `http://127.0.0.1:${port}/ok`, dir });
}
