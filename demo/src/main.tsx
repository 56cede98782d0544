import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './app';
import { forgetEarlierVisits, installInstantNetwork } from './mock/network';

async function start(): Promise<void> {
  const root = document.getElementById('root');
  if (root === null) throw new Error('The page has no #root element');
  // index.html paints a loading state at once; the mock API (msw) is a chunk of its own, and
  // its Service Worker takes a moment to start, so say what the page is waiting for.
  const loading = document.getElementById('loading-status');
  if (loading !== null)
    loading.textContent = 'Starting the mock API (a Service Worker in this tab)…';
  // The stylesheet too is loaded from here, not linked in the head, where it would hold the
  // first paint back until it arrived: the loading state has its styles inline.
  const [{ setupWorker }, { handlers }] = await Promise.all([
    import('msw/browser'),
    import('./mock/handlers'),
    import('./styles.css'),
    forgetEarlierVisits(),
  ]);
  installInstantNetwork();
  const worker = setupWorker(...handlers);
  // Relative to the page, so the built site works under any path.
  await worker.start({
    serviceWorker: { url: new URL('mockServiceWorker.js', document.baseURI).pathname },
    onUnhandledRequest: 'bypass',
    quiet: true,
  });
  const autoplay = new URLSearchParams(location.search).get('autoplay') !== '0';
  createRoot(root).render(
    <StrictMode>
      <App autoplay={autoplay} />
    </StrictMode>,
  );
  performance.mark('demo-ready');
  document.documentElement.dataset['ready'] = 'true';
}

void start();
