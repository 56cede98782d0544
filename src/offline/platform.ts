import type { OutboxLocks, OutboxNetwork } from './types.js';

interface EventHost {
  addEventListener(type: string, listener: () => void): void;
  removeEventListener(type: string, listener: () => void): void;
}

/** `navigator.onLine` and the window's (or worker's) `online`/`offline` events; online in Node. */
export function platformNetwork(): OutboxNetwork {
  return {
    // Only `false` means offline: Node has no `navigator.onLine`, and "online" is the safe guess
    // (a send that fails in the network keeps its entry).
    isOnline: () =>
      (globalThis as { navigator?: { onLine?: boolean } }).navigator?.onLine !== false,
    subscribe(listener) {
      const host = globalThis as Partial<EventHost>;
      if (typeof host.addEventListener !== 'function') return () => {};
      const on = () => listener();
      host.addEventListener('online', on);
      host.addEventListener('offline', on);
      return () => {
        host.removeEventListener?.('online', on);
        host.removeEventListener?.('offline', on);
      };
    },
  };
}

/** `navigator.locks` where the platform has it (every current browser, in secure contexts). */
export function platformLocks(): OutboxLocks | undefined {
  return (globalThis as { navigator?: { locks?: OutboxLocks } }).navigator?.locks;
}

/** A random UUID v4, also outside secure contexts (where `crypto.randomUUID` is missing). */
export function uuid(): string {
  const { crypto } = globalThis;
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  const hex = [...bytes].map((byte) => byte.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Tells the other tabs of the origin that the store changed, so their snapshots follow (the
 * flushing tab deletes what it sent). A no-op where `BroadcastChannel` is missing.
 */
export class ChangeChannel {
  private readonly channel: BroadcastChannel | undefined;

  constructor(name: string, onChange: () => void) {
    if (typeof globalThis.BroadcastChannel !== 'function') return;
    this.channel = new BroadcastChannel(`fetch-pacer-outbox:${name}`);
    this.channel.onmessage = () => onChange();
  }

  post(): void {
    this.channel?.postMessage('changed');
  }

  close(): void {
    this.channel?.close();
  }
}
