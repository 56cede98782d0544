import type { PacedFetch } from 'fetch-pacer';
import { useEffect, useRef } from 'react';
import { drawTimeline, type Palette } from '../client/draw-timeline';
import { API_KEY } from '../client/settings';
import { clientEvents, onClientEvent, recordSample } from '../client/timeline-events';
import { serverState } from '../mock/server';
import { TimelineText, WINDOW_MS } from './timeline-text';

function palette(element: Element): Palette {
  const style = getComputedStyle(element);
  const read = (name: string) => style.getPropertyValue(name).trim();
  return {
    ink: read('--ink'),
    muted: read('--muted'),
    grid: read('--grid'),
    accent: read('--accent'),
    ok: read('--ok'),
    bad: read('--bad'),
    blocked: read('--blocked'),
    queued: read('--queued'),
    denied: read('--denied'),
  };
}

/**
 * The last 15 seconds: the bucket's level, each paced request's wait in the queue, what reached
 * the server (200 or 429), server blocks and local denials. It animates only while something
 * moves or is still scrolling by, like `useBucketLevel`.
 */
export function Timeline({ client }: { client: PacedFetch }) {
  const canvasRef = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    const canvas = canvasRef.current;
    const ctx = canvas?.getContext('2d');
    if (canvas == null || ctx == null) return;
    const colors = palette(canvas);
    let lastMove = performance.now();
    let frame: number | undefined;
    let size = { width: 0, height: 0 };

    const draw = (now: number) => {
      const { level, capacity, queued } = client.pacer.inspect(API_KEY);
      const { samples } = clientEvents;
      const previous = samples[samples.length - 1];
      if (previous === undefined || previous.level !== level || previous.queued !== queued) {
        lastMove = now;
      }
      recordSample({ t: now, level, queued });
      const { arrivals } = serverState.get();
      drawTimeline(
        ctx,
        size.width,
        size.height,
        {
          now,
          windowMs: WINDOW_MS,
          capacity,
          samples,
          arrivals: arrivals.filter((arrival) => arrival.lane === 'paced'),
          blocks: clientEvents.blocks,
          denials: clientEvents.denials,
        },
        colors,
      );
      const lastArrival = arrivals[arrivals.length - 1]?.at ?? Number.NEGATIVE_INFINITY;
      const lastBlockEnd = clientEvents.blocks[clientEvents.blocks.length - 1]?.to ?? 0;
      const recent = Math.max(lastMove, lastArrival, clientEvents.lastChange, lastBlockEnd);
      return level < capacity || now - recent < WINDOW_MS + 500;
    };
    const tick = () => {
      frame = undefined;
      if (draw(performance.now())) wake();
    };
    const wake = () => {
      frame ??= requestAnimationFrame(tick);
    };
    const resize = () => {
      const { width, height } = canvas.getBoundingClientRect();
      const ratio = window.devicePixelRatio || 1;
      size = { width, height };
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(height * ratio);
      ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
      draw(performance.now());
      wake();
    };
    const observer = new ResizeObserver(resize);
    observer.observe(canvas);
    const unsubscribers = [
      client.pacer.subscribe(wake),
      serverState.subscribe(wake),
      onClientEvent(wake),
    ];
    resize();
    return () => {
      observer.disconnect();
      for (const unsubscribe of unsubscribers) unsubscribe();
      if (frame !== undefined) cancelAnimationFrame(frame);
    };
  }, [client]);

  return (
    <section className="card timeline" aria-labelledby="timeline-title">
      <header className="card-head">
        <h3 id="timeline-title">The last 15 seconds</h3>
        <ul className="legend" aria-label="Legend">
          <li>
            <i className="swatch swatch-level" aria-hidden="true" />
            permits in the bucket
          </li>
          <li>
            <i className="swatch swatch-queued" aria-hidden="true" />
            requests waiting (scaled to the peak)
          </li>
          <li>
            <i className="swatch swatch-ok" aria-hidden="true" />
            reached the server, 200
          </li>
          <li>
            <i className="swatch swatch-bad" aria-hidden="true" />
            429
          </li>
          <li>
            <i className="swatch swatch-blocked" aria-hidden="true" />
            blocked by the server
          </li>
          <li>
            <i className="swatch swatch-denied" aria-hidden="true" />
            denied locally
          </li>
        </ul>
      </header>
      <canvas
        ref={canvasRef}
        className="timeline-canvas"
        role="img"
        aria-label="Chart of the last 15 seconds: permits, requests waiting, and the server's answers. Its data follows as text."
      />
      <TimelineText />
    </section>
  );
}
