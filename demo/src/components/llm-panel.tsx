import type { PacedFetch, UnitInspection } from 'fetch-pacer';
import { useBucketLevel } from 'fetch-pacer/react';
import { useEffect, useRef, useState } from 'react';
import { type Batch, createChatClient, llmBatches, runBatch } from '../client/llm-batch';
import { useStore } from '../lib/store';
import { CHAT_PATH, LLM_LIMITS } from '../mock/llm-server';
import { highlight } from './code-sample';
import { Dial } from './gauge';

/**
 * "Pacing an LLM API": a mock chat API limited in requests and tokens (OpenAI's headers), a
 * paced fetch configured to both, a gauge per unit, and what settling each call's cost from its
 * `usage` changes, in figures.
 */

const BATCH_SIZE = 20;

const CONFIG = `createPacedFetch({
  limits: { requests: perSecond(10), tokens: perSecond(2_000) },
  // Reserve what a call may cost: characters / 4, plus max_tokens.
  cost: (_request, init) => ({ requests: 1, tokens: estimate(init.body) }),
  // Settlement: give back what the answer's usage says was not used.
  actualCost: async (response) => ({
    tokens: (await response.json()).usage.total_tokens,
  }),
})`;

const UNITS = [
  { name: 'requests', title: 'Requests', limit: LLM_LIMITS.requests },
  { name: 'tokens', title: 'Tokens', limit: LLM_LIMITS.tokens },
] as const;

const count = (n: number) => Math.floor(n).toLocaleString('en');

function UnitGauge({
  name,
  title,
  limit,
  unit,
}: {
  name: string;
  title: string;
  limit: number;
  unit: UnitInspection | undefined;
}) {
  const level = unit?.level ?? 0;
  const capacity = unit?.capacity ?? limit;
  const fraction = capacity > 0 ? Math.max(0, level) / capacity : 0;
  return (
    <div className={`gauge gauge-${fraction < 0.2 ? 'low' : 'ok'}`} data-testid={`llm-${name}`}>
      <figure>
        <Dial
          fraction={fraction}
          value={count(level)}
          unit={`of ${count(capacity)} ${name}`}
          label={`${title}: ${count(level)} of ${count(capacity)} now`}
        />
        <figcaption>
          {title}: {count(limit)} / s
        </figcaption>
      </figure>
    </div>
  );
}

function Gauges({ client }: { client: PacedFetch }) {
  const key = new URL(CHAT_PATH, globalThis.location?.href ?? 'http://localhost').origin;
  const { units, queued } = useBucketLevel(client, key);
  return (
    <div className="llm-gauges">
      {UNITS.map((unit) => (
        <UnitGauge key={unit.name} {...unit} unit={units?.[unit.name]} />
      ))}
      <p className="llm-queued">{queued > 0 ? `${queued} calls waiting` : 'No call waiting'}</p>
    </div>
  );
}

function SettlementSwitch({ on, onChange }: { on: boolean; onChange: (on: boolean) => void }) {
  return (
    <label className="switch">
      <input
        type="checkbox"
        role="switch"
        aria-checked={on}
        checked={on}
        onChange={(event) => onChange(event.currentTarget.checked)}
        data-testid="llm-settlement"
      />
      <span className="switch-track" aria-hidden="true" />
      <span>
        Settle each call from its <code>usage</code> (<code>actualCost</code>)
      </span>
    </label>
  );
}

function statusOf(batch: Batch | undefined): string {
  if (batch === undefined) return `Send a batch: ${BATCH_SIZE} calls at once, of random sizes.`;
  const settled = `settlement ${batch.settlement ? 'on' : 'off'}`;
  const { figures } = batch;
  // Announced twice a batch (role="status"), not at every answer: the table row counts those.
  if (figures === undefined) return `Sending ${batch.calls} chat calls, ${settled}…`;
  return `Done, ${settled}: ${figures.succeeded} of ${figures.calls} succeeded, ${figures.refusals} × 429, ${figures.throughput.toFixed(2)}× the tokens allowed, in ${(figures.makespanMs / 1000).toFixed(1)} s`;
}

function BatchRows({ batches }: { batches: readonly Batch[] }) {
  return (
    <table className="llm-batches">
      <caption>Batches, newest first, each against a fresh server</caption>
      <thead>
        <tr>
          <th scope="col">Settlement</th>
          <th scope="col">Succeeded</th>
          <th scope="col">429s</th>
          <th scope="col">Tokens admitted</th>
          <th scope="col">Token throughput</th>
          <th scope="col">Makespan</th>
        </tr>
      </thead>
      <tbody>
        {batches.map(({ id, settlement, calls, answered, figures }) => (
          <tr key={id} data-testid="llm-batch" data-state={figures ? 'done' : 'running'}>
            <th scope="row">{settlement ? 'On' : 'Off'}</th>
            <td data-testid="llm-succeeded">
              {figures ? `${figures.succeeded} / ${calls}` : `${answered} / ${calls} answered`}
            </td>
            <td data-testid="llm-429">{figures ? figures.refusals : '…'}</td>
            <td>{figures ? count(figures.tokens) : '…'}</td>
            <td data-testid="llm-throughput">
              {figures ? `${figures.throughput.toFixed(2)}×` : '…'}
            </td>
            <td data-testid="llm-makespan">
              {figures ? `${(figures.makespanMs / 1000).toFixed(1)} s` : '…'}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The panel. Each batch gets a fresh client (and the server a fresh start), so rows compare. */
export function LlmPanel() {
  const [settlement, setSettlement] = useState(true);
  const [client, setClient] = useState(() => createChatClient(true));
  const batches = useStore(llmBatches);
  const latest = batches[0];
  const running = latest !== undefined && latest.figures === undefined;
  const previous = useRef(client);
  useEffect(() => {
    if (previous.current !== client) previous.current.pacer.dispose();
    previous.current = client;
  }, [client]);

  function run(): void {
    const fresh = createChatClient(settlement);
    // A paced fetch is a function: wrapped, or React would call it as an updater.
    setClient(() => fresh);
    void runBatch(fresh, settlement, BATCH_SIZE);
  }

  return (
    <div className="llm-panel">
      <div className="section-head">
        <h2 id="llm-title">Pacing an LLM API</h2>
        <p className="muted">
          A mock chat API that counts requests and tokens, as OpenAI does (its minute scaled to a
          second: {LLM_LIMITS.requests} requests and {count(LLM_LIMITS.tokens)} tokens, its{' '}
          <code>x-ratelimit-*-requests</code> and <code>-tokens</code> headers, a 429 when either
          runs out). A call&apos;s real size is known only from its answer, so each one reserves
          what it may cost at most; settlement gives back what it did not use.
        </p>
      </div>
      <div className="llm-grid">
        <div className="card llm-controls">
          <pre className="code llm-code">
            <code>{highlight(CONFIG)}</code>
          </pre>
          <SettlementSwitch on={settlement} onChange={setSettlement} />
          <button
            type="button"
            className="button primary"
            onClick={run}
            disabled={running}
            data-testid="llm-run"
          >
            Send {BATCH_SIZE} chat calls
          </button>
          <p role="status" className="llm-status" data-testid="llm-status">
            {statusOf(latest)}
          </p>
        </div>
        <div className="card">
          <h3 className="card-label">The pacer&apos;s budget, per unit</h3>
          <Gauges client={client} />
        </div>
      </div>
      {batches.length === 0 ? null : (
        <div className="card llm-results">
          {/* Scrolls sideways on a narrow screen: focusable, so a keyboard can scroll it too. */}
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must take focus (WCAG 2.1.1) */}
          <section className="llm-table" aria-label="Batch figures" tabIndex={0}>
            <BatchRows batches={batches} />
          </section>
          <p className="hint">
            Token throughput: the tokens the server admitted over what it allows from the first
            call&apos;s arrival to the last (a full bucket, then {count(LLM_LIMITS.tokens)} a
            second). Without settlement every call keeps its whole <code>max_tokens</code> reserve.
          </p>
        </div>
      )}
    </div>
  );
}
