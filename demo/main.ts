import { type Algorithm, createRateLimiter, type Policy, type RateLimiter } from 'fetch-pacer';

const KEY = 'demo';
const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

const rate = $<HTMLInputElement>('rate');
const burst = $<HTMLInputElement>('burst');
const algorithm = $<HTMLSelectElement>('algorithm');
const fill = $<HTMLDivElement>('fill');
const levelText = $<HTMLElement>('level');
const log = $<HTMLOListElement>('log');
let allowedCount = 0;
let deniedCount = 0;
let limiter: RateLimiter;
let capacity = 5;

function policy(): Policy {
  const chosen = algorithm.value as Algorithm;
  const base = { limit: Number(rate.value), windowMs: 1000, algorithm: chosen };
  const burstable = chosen === 'token-bucket' || chosen === 'gcra';
  return burstable ? { ...base, burst: Number(burst.value) } : base;
}

function rebuild(): void {
  const next = policy();
  limiter = createRateLimiter({ policy: next });
  capacity = next.burst ?? next.limit;
  burst.disabled = next.burst === undefined;
  $('rate-out').textContent = `${rate.value} / s`;
  $('burst-out').textContent = burst.disabled ? '= rate' : burst.value;
  const fields = Object.entries(next).map(([name, value]) =>
    typeof value === 'string' ? `${name}: '${value}'` : `${name}: ${value}`,
  );
  $('policy-text').textContent = `createRateLimiter({ policy: { ${fields.join(', ')} } })`;
}

function send(count: number): void {
  for (let i = 0; i < count; i++) {
    const decision = limiter.tryAcquire(KEY);
    const item = document.createElement('li');
    if (decision.allowed) {
      allowedCount++;
      item.className = 'ok';
      item.textContent = `allowed · ${decision.remaining} left`;
    } else {
      deniedCount++;
      item.className = 'deny';
      item.textContent = `denied (${decision.reason}) · retry in ${decision.retryAfterMs} ms`;
    }
    log.prepend(item);
  }
  while (log.children.length > 60) log.lastElementChild?.remove();
  $('allowed-count').textContent = String(allowedCount);
  $('denied-count').textContent = String(deniedCount);
}

function frame(): void {
  const level = limiter.level(KEY);
  fill.style.height = `${Math.min(100, (level / capacity) * 100)}%`;
  levelText.textContent = level.toFixed(2);
  requestAnimationFrame(frame);
}

for (const input of [rate, burst, algorithm]) input.addEventListener('input', rebuild);
$('one').addEventListener('click', () => send(1));
$('ten').addEventListener('click', () => send(10));
rebuild();
requestAnimationFrame(frame);
