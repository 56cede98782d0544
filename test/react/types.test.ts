import { describe, expectTypeOf, it } from 'vitest';
import type { PacedFetch } from '../../src/http/paced-fetch.js';
import type { PacingInit, RequestPacing, TaskProgress } from '../../src/index.js';
import type { KeyInspection, Pacer, PacerSnapshot } from '../../src/pacer/index.js';
import type {
  BoundFetch,
  FetchStatus,
  PacedRequestInit,
  Pacing,
  RateLimitedFetchResult,
  RequestProgress,
  useBucketLevel,
  usePacerState,
  useRateLimitedFetch,
} from '../../src/react/index.js';

// Checked by `tsc`; at run time each check is only defined, never called (hooks need React).
type Call = typeof useRateLimitedFetch;

describe('the public types of fetch-pacer/react', () => {
  it('infers data from the parse mode', () => {
    expectTypeOf<ReturnType<Call>>().toEqualTypeOf<RateLimitedFetchResult<unknown>>();
    const check = (use: Call) => {
      expectTypeOf(use<{ id: string }>('/x').data).toEqualTypeOf<{ id: string } | undefined>();
      expectTypeOf(use('/x', { parse: 'text' }).data).toEqualTypeOf<string | undefined>();
      expectTypeOf(use('/x', { parse: 'response' }).data).toEqualTypeOf<Response | undefined>();
      expectTypeOf(use('/x', { parse: async () => 42 }).data).toEqualTypeOf<number | undefined>();
    };
    expectTypeOf(check).toBeFunction();
  });

  it('narrows the fields by status', () => {
    const check = (result: RateLimitedFetchResult<{ id: string }>) => {
      expectTypeOf(result.status).toEqualTypeOf<FetchStatus>();
      if (result.status === 'success') {
        expectTypeOf(result.data).toEqualTypeOf<{ id: string }>();
        expectTypeOf(result.response).toEqualTypeOf<Response>();
        expectTypeOf(result.error).toEqualTypeOf<undefined>();
      }
      if (result.status === 'blocked') expectTypeOf(result.retryAt).toEqualTypeOf<number>();
      if (result.status === 'queued') {
        expectTypeOf(result.startAt).toEqualTypeOf<number | undefined>();
      }
      if (result.status === 'error') expectTypeOf(result.error).toEqualTypeOf<unknown>();
      expectTypeOf(result.refetch).toEqualTypeOf<() => Promise<void>>();
      expectTypeOf(result.fetch).toEqualTypeOf<BoundFetch>();
    };
    expectTypeOf(check).toBeFunction();
  });

  it('accepts a URL, a Request, null or undefined, and a paced fetch or a pacer', () => {
    expectTypeOf<Call>().toBeCallableWith(new URL('https://x.test'));
    expectTypeOf<Call>().toBeCallableWith(new Request('https://x.test'));
    expectTypeOf<Call>().toBeCallableWith(null);
    expectTypeOf<Call>().toBeCallableWith(undefined);
    expectTypeOf<Call>().toBeCallableWith('/x', { fetch: {} as PacedFetch });
    expectTypeOf<Call>().toBeCallableWith('/x', { fetch: {} as Pacer });
  });

  it('types usePacerState by its selector, and useBucketLevel as an inspection', () => {
    const check = (use: typeof usePacerState) => {
      expectTypeOf(use()).toEqualTypeOf<PacerSnapshot>();
      expectTypeOf(use({} as PacedFetch)).toEqualTypeOf<PacerSnapshot>();
      expectTypeOf(use(undefined, (state) => state.queued)).toEqualTypeOf<number>();
      expectTypeOf(use(undefined, (state) => state.blockedKeys)).toEqualTypeOf<readonly string[]>();
    };
    expectTypeOf(check).toBeFunction();
    expectTypeOf<ReturnType<typeof useBucketLevel>>().toEqualTypeOf<KeyInspection>();
  });

  it('takes per-call pacing on a paced fetch, which still passes for a fetch', () => {
    expectTypeOf<PacedFetch>().toBeCallableWith('/x', {
      method: 'POST',
      pacing: { key: 'reports', cost: 2, priority: 1, onProgress: (_: TaskProgress) => {} },
    });
    expectTypeOf<PacedFetch>().toMatchTypeOf<
      (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>
    >();
    expectTypeOf<PacingInit['pacing']>().toEqualTypeOf<RequestPacing | undefined>();
    expectTypeOf<BoundFetch>().toBeCallableWith('/x', { pacing: { key: 'reports' } });
  });

  it('keeps the react names of the pacing types', () => {
    expectTypeOf<Pacing>().toEqualTypeOf<RequestPacing>();
    expectTypeOf<PacedRequestInit>().toEqualTypeOf<PacingInit>();
    expectTypeOf<RequestProgress>().toEqualTypeOf<TaskProgress>();
  });
});
