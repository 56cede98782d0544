import { createOutbox } from 'fetch-pacer/offline';
import { PacerProvider } from 'fetch-pacer/react';
import { useEffect, useMemo, useRef, useState } from 'react';
import { fire } from './client/bursts';
import {
  API_KEY,
  createClient,
  DEFAULT_SETTINGS,
  type Settings,
  serverConfigOf,
} from './client/settings';
import { recordBlock } from './client/timeline-events';
import { Announcer } from './components/announcer';
import { CodeSample } from './components/code-sample';
import { Comparison } from './components/comparison';
import { Controls } from './components/controls';
import { Counters } from './components/counters';
import { Gauge } from './components/gauge';
import { LlmPanel } from './components/llm-panel';
import { OutboxPanel } from './components/outbox-panel';
import { ServerPicker } from './components/server-picker';
import { Timeline } from './components/timeline';
import { useDebounced } from './lib/hooks';
import { demoNetwork } from './mock/network';
import { configureServer } from './mock/server';

/**
 * The paced fetch the settings describe, rebuilt (and the old one disposed) when they change.
 * A new server is a new API to learn: the client starts afresh with it too.
 */
function useClient(settings: Settings) {
  const { rate, burst, algorithm, mode, concurrency } = useDebounced(settings, 250);
  const { counting, dialect } = settings;
  // biome-ignore lint/correctness/useExhaustiveDependencies: the server choice only starts a fresh client
  const client = useMemo(
    () => createClient({ ...DEFAULT_SETTINGS, rate, burst, algorithm, mode, concurrency }),
    [rate, burst, algorithm, mode, concurrency, counting, dialect],
  );
  const previous = useRef(client);
  useEffect(() => {
    if (previous.current !== client) previous.current.pacer.dispose();
    previous.current = client;
    // Server blocks, for the timeline: the pacer says when its key is blocked, and until when.
    return client.pacer.subscribe(() => {
      const { blockedUntil } = client.pacer.inspect(API_KEY);
      if (blockedUntil !== undefined) recordBlock(client.pacer.now(), blockedUntil);
    });
  }, [client]);
  return client;
}

function FireButtons({ onFire }: { onFire: (size: number) => void }) {
  return (
    <fieldset className="fire">
      <legend>Fire a burst down both sides</legend>
      <div className="fire-row">
        {[1, 10, 100].map((size) => (
          <button
            key={size}
            type="button"
            className={size === 100 ? 'button primary' : 'button'}
            onClick={() => onFire(size)}
          >
            Fire {size}
          </button>
        ))}
      </div>
    </fieldset>
  );
}

export function App({ autoplay }: { autoplay: boolean }) {
  const [settings, setSettings] = useState(DEFAULT_SETTINGS);
  const client = useClient(settings);
  const server = serverConfigOf(settings);
  const { counting, dialect } = server;
  const { rate: serverRate, burst: serverBurst } = server.limits;
  useEffect(
    () => configureServer({ counting, dialect, limits: { rate: serverRate, burst: serverBurst } }),
    [counting, dialect, serverRate, serverBurst],
  );
  const latestClient = useRef(client);
  useEffect(() => {
    latestClient.current = client;
  }, [client]);
  const onFire = (size: number) => fire(size, latestClient.current);
  // Writes made offline survive a reload (IndexedDB) and drain through the current client.
  const outbox = useMemo(
    () =>
      createOutbox({
        name: 'fetch-pacer-demo',
        // The page's own offline switch: the outbox sees it as the platform's network.
        network: demoNetwork,
        fetch: (request) => demoNetwork.send(request, latestClient.current),
      }),
    [],
  );
  useEffect(() => () => void outbox.close(), [outbox]);

  useEffect(() => {
    if (!autoplay) return;
    // A first burst shortly after arrival, so the page shows what it is about.
    const id = setTimeout(() => fire(30, latestClient.current), 900);
    return () => clearTimeout(id);
  }, [autoplay]);

  return (
    <PacerProvider fetch={client}>
      <header className="nav">
        <a className="brand" href="#top">
          <span className="brand-mark" aria-hidden="true" />
          fetch-pacer
        </a>
        <nav>
          <a href="#demo">Demo</a>
          <a href="#playground">Playground</a>
          <a href="#code">Code</a>
        </nav>
        <code className="install">npm i fetch-pacer</code>
      </header>

      <main id="top">
        <section className="stage" id="demo" aria-labelledby="stage-title">
          <div className="stage-intro">
            <h1 id="stage-title">Stay under the rate limit. Skip the wall of 429s.</h1>
            <p className="lede">
              fetch-pacer queues your <code>fetch</code> calls in the browser and sends each one
              when the API&apos;s limit allows it, learning the limit from its headers. Pick a
              server, fire a burst: plain fetch and the pacer meet the same one.
            </p>
          </div>
          <div className="stage-grid">
            <div className="card stage-controls">
              <ServerPicker settings={settings} onChange={setSettings} />
              <FireButtons onFire={onFire} />
            </div>
            <div className="card stage-gauge">
              <h2 className="card-label">The pacer&apos;s bucket</h2>
              <Gauge rate={settings.rate} />
            </div>
            <Comparison />
          </div>
          <Announcer />
        </section>

        <section className="playground" id="playground" aria-labelledby="playground-title">
          <div className="section-head">
            <h2 id="playground-title">Tune the client</h2>
            <p className="muted">
              Each request takes a permit; permits come back at the rate of the client&apos;s
              policy. Change the policy, make the server stricter than the client, and fire again.
            </p>
          </div>
          <div className="playground-grid">
            <Controls settings={settings} onChange={setSettings} />
            <div className="card bucket">
              <header>
                <h3>One bucket per API</h3>
                <p className="muted">
                  A paced fetch keys requests by origin, so every request to{' '}
                  <code>{API_KEY.replace(/^https?:\/\//, '')}</code> draws on one bucket: the gauge
                  above.
                </p>
              </header>
              <Counters />
            </div>
          </div>
          <Timeline client={client} />
        </section>

        <section className="playground" id="outbox">
          <OutboxPanel
            outbox={outbox}
            pacedFetch={client}
            endpoint="/api/paced/notes"
            network={demoNetwork}
          />
        </section>

        <section className="playground" id="llm" aria-labelledby="llm-title">
          <LlmPanel />
        </section>

        <section className="usage" id="code" aria-labelledby="code-title">
          <div className="section-head">
            <h2 id="code-title">Three lines to pace a React app</h2>
            <p className="muted">
              Wrap the app once; every <code>useRateLimitedFetch</code> below shares the budget and
              tells you where its request is.
            </p>
          </div>
          <div className="usage-grid">
            <CodeSample />
            <ul className="features">
              <li>
                <h3>Paces before the server says no</h3>
                <p>
                  Token bucket, GCRA, sliding log or window, fixed window: requests wait their turn
                  and start on the dot, in order, per key.
                </p>
              </li>
              <li>
                <h3>Listens when it does</h3>
                <p>
                  A 429 or 503 with <code>Retry-After</code> blocks the whole key, so the requests
                  behind it wait too; <code>RateLimit</code> headers lower local credit first.
                </p>
              </li>
              <li>
                <h3>Live state, no render storms</h3>
                <p>
                  <code>queued</code>, <code>blocked</code>, <code>loading</code>: each component
                  re-renders only for its own request, and gauges sample only while the bucket
                  moves.
                </p>
              </li>
            </ul>
          </div>
        </section>
      </main>

      <footer className="footer">
        <p>
          fetch-pacer · MIT · The mock API is{' '}
          <a className="inline-link" href="https://mswjs.io">
            Mock Service Worker
          </a>{' '}
          running in this page; nothing leaves your browser.
        </p>
      </footer>
    </PacerProvider>
  );
}
