/**
 * The default clock's waits in a browser page (a global with a `document`), built for tabs in
 * the background. Chromium limits a hidden page's timers to one wake-up a second, and once the
 * page has been hidden for 5 minutes ("intensive wake-up throttling") a chain of timers (one
 * armed from inside another's callback, nesting level 5 and up) to one wake-up a *minute*. The
 * pacer's timer re-arms from its own callback, so it was such a chain. Here every wait arms its
 * `setTimeout` from a `MessageChannel` message instead: a message task is not a timer, so the
 * timer armed in it starts a new chain at nesting level 1 (Blink `DOMTimer`, task type
 * `JavascriptTimerDelayedLowNesting`, which intensive throttling leaves alone), and the message
 * itself is never throttled.
 *
 * While any wait is armed, `visibilitychange` (to visible), `resume` (after a Page Lifecycle
 * freeze) and `online` fire every wait already due at once, in that event's task, instead of on
 * a throttled timer. Nothing fires before its time: a wait not yet due keeps its timer.
 */

/** What this module reads of a page's globals (looked up per call: none exist in Node). */
interface PageGlobals {
  readonly document?: Pick<
    Document,
    'visibilityState' | 'addEventListener' | 'removeEventListener'
  >;
  readonly MessageChannel?: typeof MessageChannel;
  readonly addEventListener?: (type: string, listener: (event: Event) => void) => void;
  readonly removeEventListener?: (type: string, listener: (event: Event) => void) => void;
}
const host = globalThis as PageGlobals;

/** Whether this global is a page: a `document` to listen on, and messages to hop through. */
export function isPage(): boolean {
  return typeof host.document === 'object' && typeof host.MessageChannel === 'function';
}

/** Every wait armed and not yet fired or cancelled: what a catch-up looks at. */
const armed = new Set<PageWait>();
/** Waits whose hop message is on its way, in posting order (messages arrive in that order). */
const hopping: PageWait[] = [];
let channel: MessageChannel | undefined;

/** A timer handle of the default clock in a page. */
export class PageWait {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private done = false;

  /** `due` is `performance.now()` time. */
  constructor(
    readonly due: number,
    private readonly callback: () => void,
  ) {
    if (armed.size === 0) listen(true);
    armed.add(this);
    hopping.push(this);
    hopChannel().port2.postMessage(undefined);
  }

  /** In the hop's message task, a fresh task: arm the timer there, or fire if already due. */
  arm(): void {
    if (this.done) return;
    const ms = this.due - performance.now();
    if (ms > 0) this.timer = setTimeout(this.fire, ms);
    else this.fire();
  }

  readonly fire = (): void => {
    if (this.done) return;
    this.cancel();
    this.callback();
  };

  cancel(): void {
    if (this.done) return;
    this.done = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    armed.delete(this);
    if (armed.size === 0) listen(false);
  }
}

function hopChannel(): MessageChannel {
  if (channel === undefined) {
    const created = new (host.MessageChannel as typeof MessageChannel)();
    created.port1.onmessage = () => hopping.shift()?.arm();
    // Node's ports (a DOM emulation in Node) would otherwise hold the process open.
    (created.port1 as { unref?: () => void }).unref?.();
    channel = created;
  }
  return channel;
}

/** Fires every wait that is due now, in the task of the event that says the page is back. */
function catchUp(event: Event): void {
  if (event.type === 'visibilitychange' && host.document?.visibilityState === 'hidden') return;
  const now = performance.now();
  for (const wait of [...armed]) if (wait.due <= now) wait.fire();
}

/** Adds (or removes) the catch-up listeners: only while some wait is armed. */
function listen(on: boolean): void {
  const page = host.document;
  const method = on ? 'addEventListener' : 'removeEventListener';
  page?.[method]('visibilitychange', catchUp);
  page?.[method]('resume', catchUp);
  host[method]?.('online', catchUp);
}
