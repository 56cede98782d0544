import { it } from 'vitest';
import { seededRandom } from '../../bench/lib/random.mjs';
import { perSecond } from '../../src/core/policy.js';
import {
  createPacedFetch,
  type PacedFetch,
  type PacedFetchOptions,
} from '../../src/http/paced-fetch.js';
import { createManualClock } from '../../src/testing/index.js';
import { driveNetwork, network, trackCalls } from '../support/counting-servers.js';
import { fakeStore } from '../support/fake-store.js';
import { LLM_ORIGIN, type LlmVendor, llmServer } from '../support/llm-servers.js';
import { server } from '../support/msw.js';

// Issue 14's target, on the manual clock (deterministic: seeded sizes and delays): a mock LLM
// API enforcing 10 requests and 2,000 tokens per second in token buckets (OpenAI's headers, or
// Anthropic's with input and output tokens), 300 chat calls of 100-900 tokens whose estimate is
// off by up to 30% either way, a network delaying each request and answer by 5-30 ms.
//
//   npm run bench:llm
//
// Token throughput: the real tokens the server admitted over what its buckets allow from the
// first arrival to the last (a full bucket, then 2,000 per second).

const CALLS = 300;
const LIMITS = { requests: 10, tokens: 2_000 };
const SEEDS = [1, 2, 3];

interface Call {
  readonly input: number;
  readonly output: number;
  readonly estimate: number;
}

function callsOf(seed: number): Call[] {
  const random = seededRandom(seed);
  return Array.from({ length: CALLS }, () => {
    const total = 100 + Math.floor(random() * 801);
    const input = Math.floor(total * (0.3 + random() * 0.4));
    const estimate = Math.max(1, Math.round(total * (0.7 + random() * 0.6)));
    return { input, output: total - input, estimate };
  });
}

const estimateOf = (request: Request) => Number(request.headers.get('x-estimate'));
/** The most a call can cost when its estimate is off by up to 30%. */
const reserveOf = (request: Request) => Math.ceil(estimateOf(request) / 0.7);

type Usage = { total_tokens?: number; input_tokens?: number; output_tokens?: number };
async function usageOf(response: Response): Promise<Usage | undefined> {
  return ((await response.json()) as { usage?: Usage }).usage;
}

const openaiActual = async (response: Response) => {
  const usage = await usageOf(response);
  return usage && { tokens: usage.total_tokens ?? 0 };
};

/** A client configured to OpenAI's limits, paying `tokensOf` a call, adjusted to its usage or not. */
function openai(tokensOf: (request: Request) => number, adjusted: boolean) {
  const options: Partial<PacedFetchOptions> = {
    limits: { requests: perSecond(LIMITS.requests), tokens: perSecond(LIMITS.tokens) },
    cost: (request) => ({ requests: 1, tokens: tokensOf(request) }),
  };
  return adjusted ? { ...options, actualCost: openaiActual } : options;
}

/** The client configurations compared, per vendor. */
const CLIENTS: Record<LlmVendor, Record<string, () => Partial<PacedFetchOptions>>> = {
  openai: {
    'requests only, perSecond(10) (before units)': () => ({ limits: perSecond(LIMITS.requests) }),
    'requests + tokens, estimate, no adjustment': () => openai(estimateOf, false),
    'requests + tokens, estimate, adjusted': () => openai(estimateOf, true),
    'requests + tokens, reserve estimate/0.7, no adjustment': () => openai(reserveOf, false),
    'requests + tokens, reserve estimate/0.7, adjusted': () => openai(reserveOf, true),
    'zero configuration, reserve, adjusted': () => ({
      cost: (request) => ({ requests: 1, tokens: reserveOf(request) }),
      actualCost: openaiActual,
    }),
  },
  anthropic: {
    'requests + input + output tokens, reserve (output: max_tokens 900), adjusted': () => ({
      limits: {
        requests: perSecond(LIMITS.requests),
        'input-tokens': perSecond(LIMITS.tokens),
        'output-tokens': perSecond(LIMITS.tokens),
      },
      cost: (request) => ({
        requests: 1,
        'input-tokens': reserveOf(request),
        'output-tokens': 900,
      }),
      actualCost: async (response) => {
        const usage = await usageOf(response);
        return (
          usage && {
            'input-tokens': usage.input_tokens ?? 0,
            'output-tokens': usage.output_tokens ?? 0,
          }
        );
      },
    }),
  },
};

/**
 * Several clients (tabs, processes) of one budget: `copies` paced fetches, the calls dealt to
 * them in turn, each configured as the row says; with `shared`, on one store (the shared-bucket
 * arithmetic of crossTabStore and redisStore, in test/support/fake-store.ts).
 */
interface Fleet {
  readonly copies: number;
  readonly shared: boolean;
}

async function runOne(
  vendor: LlmVendor,
  client: Partial<PacedFetchOptions>,
  seed: number,
  fleet: Fleet = { copies: 1, shared: false },
) {
  const clock = createManualClock();
  const backend = llmServer(vendor, LIMITS);
  server.use(backend.handler);
  const net = network({ clock, delayMs: [5, 30], seed });
  const store = fleet.shared ? { store: fakeStore({ now: clock.now }).store } : {};
  const fetches = Array.from({ length: fleet.copies }, () =>
    createPacedFetch({ ...client, ...store, fetch: net.fetch, clock } as PacedFetchOptions),
  );
  const work = callsOf(seed);
  const { statuses, done, all } = trackCalls(
    work.map((call, index) =>
      (fetches[index % fetches.length] as PacedFetch)(`${LLM_ORIGIN}/v1/chat`, {
        method: 'POST',
        body: JSON.stringify({ input: call.input, output: call.output, max_tokens: 900 }),
        headers: { 'x-estimate': String(call.estimate) },
      }),
    ),
  );
  await driveNetwork(clock, net, done, 3_600_000);
  await all;
  server.resetHandlers();
  const admitted = backend.hits.filter((hit) => hit.status === 200);
  const first = Math.min(...backend.hits.map((hit) => hit.at));
  const last = Math.max(...admitted.map((hit) => hit.at));
  // Anthropic's two token buckets each allow 2,000 a second; count the binding (input) one.
  const real = work.reduce((sum, call) => sum + call.input + call.output, 0);
  const counted = vendor === 'openai' ? real : work.reduce((sum, call) => sum + call.input, 0);
  const allowed = LIMITS.tokens + (LIMITS.tokens * (last - first)) / 1_000;
  return {
    refusals: backend.refusals(),
    failed: statuses.filter((status) => status !== 200).length,
    throughput: counted / allowed,
    seconds: (last - first) / 1_000,
  };
}

type Run = Awaited<ReturnType<typeof runOne>>;

/** A row of the table: 429s per seed, the worst failed count, the least throughput, the longest makespan. */
function row(vendor: LlmVendor, name: string, runs: readonly Run[]): string {
  const worst = (pick: (run: Run) => number) => Math.max(...runs.map(pick));
  const least = (pick: (run: Run) => number) => Math.min(...runs.map(pick));
  return `| ${vendor === 'openai' ? 'OpenAI' : 'Anthropic'} | ${name} | ${runs.map((run) => run.refusals).join(' / ')} | ${worst((run) => run.failed)} | ${least((run) => run.throughput).toFixed(2)}x | ${worst((run) => run.seconds).toFixed(1)} s |`;
}

/** Rows of three clients of one budget, each configured to all of it (reserve, adjusted). */
const FLEETS: Record<string, Fleet> = {
  'three clients, each its own pacer, reserve, adjusted': { copies: 3, shared: false },
  'three clients sharing one store, reserve, adjusted': { copies: 3, shared: true },
};

it('prints what each client earns from a mocked LLM API', async () => {
  const lines = [
    '| API | client | 429s on the wire | failed calls | token throughput vs allowed | makespan |',
    '| --- | --- | --: | --: | --: | --: |',
  ];
  for (const vendor of ['openai', 'anthropic'] as const) {
    for (const [name, make] of Object.entries(CLIENTS[vendor])) {
      const runs: Run[] = [];
      for (const seed of SEEDS) runs.push(await runOne(vendor, make(), seed));
      lines.push(row(vendor, name, runs));
    }
  }
  for (const [name, fleet] of Object.entries(FLEETS)) {
    const runs: Run[] = [];
    for (const seed of SEEDS) {
      runs.push(await runOne('openai', openai(reserveOf, true), seed, fleet));
    }
    lines.push(row('openai', name, runs));
  }
  console.log(
    `\n${CALLS} calls of 100-900 tokens, estimates off by up to 30%, 10 requests and 2,000 tokens per second, 5-30 ms each way; seeds ${SEEDS.join(', ')} (429s per seed, the worst failed count, the least throughput, the longest makespan)\n\n${lines.join('\n')}\n`,
  );
});
