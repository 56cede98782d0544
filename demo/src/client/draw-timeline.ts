import type { Arrival } from '../mock/server';
import type { Sample, Span } from './timeline-events';

/** Everything one frame of the timeline shows; times are `performance.now()` ms. */
export interface TimelineFrame {
  readonly now: number;
  readonly windowMs: number;
  readonly capacity: number;
  readonly samples: readonly Sample[];
  readonly arrivals: readonly Arrival[];
  readonly blocks: readonly Span[];
  readonly denials: readonly number[];
}

export interface Palette {
  readonly ink: string;
  readonly muted: string;
  readonly grid: string;
  readonly accent: string;
  readonly ok: string;
  readonly bad: string;
  readonly blocked: string;
  readonly queued: string;
  readonly denied: string;
}

const PAD = { left: 64, right: 14, top: 14, bottom: 24 } as const;

/** Draws the level curve over the last `windowMs`, and each request's marks below it. */
export function drawTimeline(
  ctx: CanvasRenderingContext2D,
  width: number,
  height: number,
  frame: TimelineFrame,
  colors: Palette,
): void {
  const { now, windowMs, capacity } = frame;
  const left = PAD.left;
  const right = width - PAD.right;
  const x = (t: number) => right - ((now - t) / windowMs) * (right - left);
  const usable = height - PAD.top - PAD.bottom;
  const chart = { top: PAD.top, bottom: PAD.top + usable * 0.52 };
  const queue = { top: chart.bottom + 12, bottom: chart.bottom + 12 + usable * 0.3 };
  const server = { top: queue.bottom + 8, bottom: height - PAD.bottom };
  const y = (level: number) =>
    chart.bottom - (Math.max(0, level) / Math.max(1, capacity)) * (chart.bottom - chart.top);

  ctx.clearRect(0, 0, width, height);
  ctx.font = '11px system-ui, -apple-system, "Segoe UI", sans-serif';
  ctx.textBaseline = 'middle';

  // Server blocks: an amber band over everything.
  for (const block of frame.blocks) {
    const from = Math.max(left, x(block.from));
    const to = Math.min(right, x(block.to));
    if (to <= left || from >= right) continue;
    ctx.fillStyle = withAlpha(colors.blocked, 0.14);
    ctx.fillRect(from, chart.top, to - from, server.bottom - chart.top);
    ctx.fillStyle = colors.blocked;
    ctx.fillRect(from, chart.top, 2, server.bottom - chart.top);
  }

  // Grid: capacity, half, zero; a line every 5 s.
  ctx.strokeStyle = colors.grid;
  ctx.lineWidth = 1;
  ctx.fillStyle = colors.muted;
  ctx.textAlign = 'right';
  for (const level of [capacity, capacity / 2, 0]) {
    const at = Math.round(y(level)) + 0.5;
    ctx.setLineDash(level === capacity ? [4, 4] : []);
    line(ctx, left, at, right, at);
    ctx.fillText(level === capacity ? `${capacity} max` : formatLevel(level), left - 8, at);
  }
  ctx.setLineDash([]);
  ctx.textAlign = 'center';
  for (let s = 0; s <= windowMs / 1000; s += 5) {
    const at = Math.round(x(now - s * 1000)) + 0.5;
    line(ctx, at, chart.top, at, server.bottom);
    ctx.fillText(s === 0 ? 'now' : `−${s} s`, at, height - PAD.bottom / 2);
  }

  // The level: an area under a line, flat from the last sample to now.
  const points = frame.samples.filter((sample) => sample.t >= now - windowMs - 1000);
  if (points.length > 0) {
    ctx.beginPath();
    ctx.moveTo(Math.max(left, x((points[0] as Sample).t)), chart.bottom);
    for (const sample of points) ctx.lineTo(Math.max(left, x(sample.t)), y(sample.level));
    ctx.lineTo(right, y((points[points.length - 1] as Sample).level));
    ctx.lineTo(right, chart.bottom);
    ctx.closePath();
    ctx.fillStyle = withAlpha(colors.accent, 0.14);
    ctx.fill();
    ctx.beginPath();
    points.forEach((sample, index) => {
      const px = Math.max(left, x(sample.t));
      if (index === 0) ctx.moveTo(px, y(sample.level));
      else ctx.lineTo(px, y(sample.level));
    });
    ctx.lineTo(right, y((points[points.length - 1] as Sample).level));
    ctx.strokeStyle = colors.accent;
    ctx.lineWidth = 2;
    ctx.stroke();
  }

  // Lane labels.
  ctx.textAlign = 'right';
  ctx.fillStyle = colors.muted;
  ctx.fillText('queued', left - 8, (queue.top + queue.bottom) / 2);
  ctx.fillText('server', left - 8, (server.top + server.bottom) / 2);

  // Requests waiting: a step area, scaled to the most that waited in view, its peak labelled.
  const inView = points.filter((sample) => sample.t >= now - windowMs);
  const peak = inView.reduce((most, sample) => Math.max(most, sample.queued), 0);
  if (peak > 0) {
    const qy = (queued: number) => queue.bottom - (queued / peak) * (queue.bottom - queue.top);
    ctx.beginPath();
    ctx.moveTo(Math.max(left, x((points[0] as Sample).t)), queue.bottom);
    let previous = 0;
    for (const sample of points) {
      const px = Math.max(left, x(sample.t));
      ctx.lineTo(px, qy(previous));
      ctx.lineTo(px, qy(sample.queued));
      previous = sample.queued;
    }
    ctx.lineTo(right, qy(previous));
    ctx.lineTo(right, queue.bottom);
    ctx.closePath();
    ctx.fillStyle = withAlpha(colors.queued, 0.35);
    ctx.fill();
    ctx.strokeStyle = colors.queued;
    ctx.lineWidth = 1.5;
    ctx.stroke();
    const top = inView.find((sample) => sample.queued === peak) as Sample;
    ctx.fillStyle = colors.ink;
    ctx.textAlign = 'left';
    ctx.fillText(
      `${peak} waiting`,
      Math.min(right - 70, Math.max(left, x(top.t)) + 4),
      queue.top + 6,
    );
  }
  // Local denials (reject mode): a cross.
  ctx.strokeStyle = colors.denied;
  ctx.lineWidth = 1.5;
  for (const at of frame.denials) {
    if (at < now - windowMs) continue;
    const cx = x(at);
    const cy = (queue.top + queue.bottom) / 2;
    line(ctx, cx - 4, cy - 4, cx + 4, cy + 4);
    line(ctx, cx - 4, cy + 4, cx + 4, cy - 4);
  }

  // What reached the server: a green tick per 200, a red triangle per 429.
  for (const arrival of frame.arrivals) {
    if (arrival.at < now - windowMs) continue;
    const ax = x(arrival.at);
    if (arrival.status === 200) {
      ctx.fillStyle = colors.ok;
      ctx.fillRect(ax - 1, server.top + 2, 2, server.bottom - server.top - 4);
    } else {
      ctx.fillStyle = colors.bad;
      ctx.beginPath();
      ctx.moveTo(ax, server.top + 1);
      ctx.lineTo(ax + 5, server.bottom - 1);
      ctx.lineTo(ax - 5, server.bottom - 1);
      ctx.closePath();
      ctx.fill();
    }
  }
}

function line(ctx: CanvasRenderingContext2D, x1: number, y1: number, x2: number, y2: number) {
  ctx.beginPath();
  ctx.moveTo(x1, y1);
  ctx.lineTo(x2, y2);
  ctx.stroke();
}

function formatLevel(level: number): string {
  return Number.isInteger(level) ? String(level) : level.toFixed(1);
}

/** `#rrggbb` with an alpha. */
function withAlpha(hex: string, alpha: number): string {
  const value = hex.trim().replace('#', '');
  if (value.length !== 6) return hex;
  const [r, g, b] = [0, 2, 4].map((at) => Number.parseInt(value.slice(at, at + 2), 16));
  return `rgba(${r}, ${g}, ${b}, ${alpha})`;
}
