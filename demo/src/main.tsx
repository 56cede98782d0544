import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './app';
import { installInstantNetwork } from './mock/network';
import './styles.css';

async function start(): Promise<void> {
  // The mock API (msw) is a chunk of its own, loaded before the first request needs it.
  const [{ setupWorker }, { handlers }] = await Promise.all([
    import('msw/browser'),
    import('./mock/handlers'),
  ]);
  installInstantNetwork();
  const worker = setupWorker(...handlers);
  // Relative to the page, so the built site works under any path.
  await worker.start({
    serviceWorker: { url: new URL('mockServiceWorker.js', document.baseURI).pathname },
    onUnhandledRequest: 'bypass',
    quiet: true,
  });
  const root = document.getElementById('root');
  if (root === null) throw new Error('The page has no #root element');
  const autoplay = new URLSearchParams(location.search).get('autoplay') !== '0';
  createRoot(root).render(
    <StrictMode>
      <App autoplay={autoplay} />
    </StrictMode>,
  );
  document.documentElement.dataset['ready'] = 'true';
}

void start();
