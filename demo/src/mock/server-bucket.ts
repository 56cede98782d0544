/**
 * The mock API's own limiter: a token bucket written here, independently of fetch-pacer, the
 * way an API gateway would count. `rate` tokens per second, at most `burst`, one per request.
 *
 * Like real gateways (GCRA's "delay variation tolerance") it lets a request be a little early,
 * up to `TOLERANCE_MS`: the jitter between the client's clock and the server's. Here that is the
 * gap between the pacer's decision and the moment the request is stamped (see `network.ts`),
 * which a busy machine (a GC pause, the OS running another process) can stretch to tens of ms.
 * A request that takes a token from a full bucket late leaves the server's bucket behind the
 * client's by that much refill, for good.
 */
const TOLERANCE_MS = 100;

export interface BucketAnswer {
  readonly allowed: boolean;
  /** Whole tokens left: the `r` of the `RateLimit` header. */
  readonly remaining: number;
  /** Seconds until the next request would be accepted: the `Retry-After` of a 429. */
  readonly retryAfterS: number;
  /** Seconds until the bucket is full again: the `t` of the `RateLimit` header. */
  readonly resetS: number;
}

export class ServerBucket {
  private tokens: number;
  private last: number;

  constructor(
    private rate: number,
    private burst: number,
    now: number,
  ) {
    this.tokens = burst;
    this.last = now;
  }

  /** Takes a token if there is one. Returns the headers' view of the bucket either way. */
  take(now: number): BucketAnswer {
    this.refill(now);
    const allowed = this.tokens + (this.rate * TOLERANCE_MS) / 1000 >= 1;
    // An early request is owed: the bucket goes below zero and the debt refills like the rest,
    // so the tolerance never raises the sustained rate (at most one early request per debt).
    if (allowed) this.tokens -= 1;
    const remaining = Math.max(0, Math.floor(this.tokens));
    // Whole seconds, rounded up, as the headers carry them: never earlier than the truth.
    return {
      allowed,
      remaining,
      retryAfterS: Math.max(1, Math.ceil((1 - this.tokens) / this.rate)),
      resetS: Math.ceil((this.burst - this.tokens) / this.rate),
    };
  }

  /** New limits apply from now; the tokens in hand are kept (capped at the new burst). */
  configure(rate: number, burst: number, now: number): void {
    this.refill(now);
    this.rate = rate;
    this.burst = burst;
    this.tokens = Math.min(this.tokens, burst);
  }

  get limits(): { readonly rate: number; readonly burst: number } {
    return { rate: this.rate, burst: this.burst };
  }

  /** Requests can arrive a little out of order: time never runs backwards here. */
  private refill(now: number): void {
    if (now <= this.last) return;
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.rate);
    this.last = now;
  }
}
