/**
 * The default clock's waits in a browser page (a global with a `document`), built for tabs in
 * the background. Chromium limits a hidden page's timers to one wake-up a second, and once the
 * page has been hidden for 5 minutes ("intensive wake-up throttling") a chain of timers (one
 * armed from inside another's callback, nesting level 5 and up) to one wake-up a *minute*. The
 * pacer's timer re-arms from its own callback, so it was such a chain. In a hidden page every
 * wait here arms its `setTimeout` from a `MessageChannel` message instead: a message task is no
 * timer, so the timer armed in it starts a new chain at nesting level 1 (Blink `DOMTimer`, task
 * type `JavascriptTimerDelayedLowNesting`, which intensive throttling leaves alone), and the
 * message itself is never throttled. When the page turns hidden, the waits armed while it was
 * visible are re-armed in that event's task, which is no timer either.
 *
 * A visible page keeps the plain timer, armed at once: nothing throttles it, and a test's fake
 * timers (jsdom and vitest or jest) see it as before.
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
    if (host.document?.visibilityState === 'hidden') {
      hopping.push(this);
      hopChannel().port2.postMessage(undefined);
    } else {
      // Never fired from here, even when due: the caller is still arming.
      this.timer = setTimeout(this.fire, Math.max(0, due - performance.now()));
    }
  }

  /**
   * Arms the timer for what is left of the wait (or fires, if nothing is): in a hidden page only
   * from a task that is no timer (the hop's message, the page turning hidden).
   */
  arm(): void {
    if (this.done) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
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

/**
 * The page turned hidden: re-arm every wait in this task, out of any timer chain. Otherwise it
 * is back (or online): fire every wait due by now, in this task.
 */
function onPageEvent(event: Event): void {
  const now = performance.now();
  const hidden = event.type === 'visibilitychange' && host.document?.visibilityState === 'hidden';
  for (const wait of [...armed]) {
    if (hidden) wait.arm();
    else if (wait.due <= now) wait.fire();
  }
}

/** Adds (or removes) the catch-up listeners: only while some wait is armed. */
function listen(on: boolean): void {
  const page = host.document;
  const method = on ? 'addEventListener' : 'removeEventListener';
  page?.[method]('visibilitychange', onPageEvent);
  page?.[method]('resume', onPageEvent);
  host[method]?.('online', onPageEvent);
}
