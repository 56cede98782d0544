// The names docs/ snippets use without defining them, so that a snippet shows one thing and
// still type-checks. README blocks may not use any of them: a README block runs as pasted.
declare const pacedFetch: import('fetch-pacer').PacedFetch;
declare const pacer: import('fetch-pacer').Pacer;
declare const limiter: import('fetch-pacer').RateLimiter;
declare const api: { getUser(id: string): Promise<{ name: string }> };
declare const id: string;
declare const url: string;
declare const body: string;
declare const order: { id: string; total: number };
declare function toast(message: string): void;
declare const log: { warn(...values: unknown[]): void };
