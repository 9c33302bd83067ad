// Publishing within the host's caps. Terminay's host takes at most 1,024
// sessions in a reset, 1,024 upserts and 1,024 removals in one batch, and
// rejects a whole batch that breaks a cap, silently. Its child process merges
// publisher calls per session into a pending batch (a reset absorbs the
// upserts and removes made after it) and sends the next batch only when the
// host has acknowledged the one before, but the publisher returns nothing:
// the extension never sees an acknowledgement. So the pacer keeps what it
// publishes within the caps over a window as long as the host's
// acknowledgement deadline (5 s): a batch the host has not acknowledged by
// then has expired, and the next batch starts afresh. Within that window it
// makes at most 1,024 upserts (a reset's sessions count as upserts) and 1,024
// removals; what does not fit waits, merged per session, for the window to
// move on. Only a burst of more than 1,024 changes ever waits. The window of
// a call starts only once the event loop has turned after it: the child
// takes its pending batch on setImmediate, so until then a later call would
// still join the same batch, however long this process was busy.

import { LIMITS } from './rules.js';

/** The host's acknowledgement deadline (sessionSourceBridge.ts). */
export const ACK_DEADLINE_MS = 5_000;

/**
 * @typedef {import('./extension.js').AgentSessionSnapshot} AgentSessionSnapshot
 * @typedef {import('./extension.js').AgentSessionPublisher} AgentSessionPublisher
 */

/**
 * Makes one publisher call. The host's publisher never throws; one that
 * does is logged and stops nothing.
 * @param {() => void} fn
 * @param {(err: unknown) => void} log
 */
export function guarded(fn, log) {
  try {
    fn();
  } catch (err) {
    log(err);
  }
}

/** Keeps the host's copy of the sessions in line with the wanted set. */
export class Pacer {
  /**
   * @param {AgentSessionPublisher} publisher
   * @param {AbortSignal} signal
   * @param {{ window?: number, cap?: number, now?: () => number, log?: (err: unknown) => void }} [opts]
   */
  constructor(publisher, signal, opts = {}) {
    this.publisher = publisher;
    this.signal = signal;
    this.window = opts.window ?? ACK_DEADLINE_MS;
    this.cap = opts.cap ?? LIMITS.agentSessionsPerReset;
    this.now = opts.now ?? Date.now;
    this.log = opts.log ?? (() => {});
    /** @type {Map<string, { json: string, snapshot: AgentSessionSnapshot }>} what the host should hold */
    this.want = new Map();
    /** @type {Map<string, string>} what the host holds once every call made applies: id -> JSON */
    this.have = new Map();
    /** @type {Set<string>} ids whose wanted and held copies may differ */
    this.dirty = new Set();
    this.resetWanted = false;
    /** @type {Array<{ at: number, upserts: number, removals: number }>} calls made within the window; at is Infinity until the child can have taken them */
    this.spent = [];
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this.timer = undefined;
    this.flushQueued = false;
    this.settling = false;
  }

  /**
   * The host should hold snapshot for id (undefined: not hold id).
   * @param {string} id
   * @param {AgentSessionSnapshot | undefined} snapshot
   */
  set(id, snapshot) {
    if (snapshot === undefined) this.want.delete(id);
    else this.want.set(id, { json: JSON.stringify(snapshot), snapshot });
    this.dirty.add(id);
    // Many changes in one turn (a bridge reset) are published together.
    if (this.flushQueued) return;
    this.flushQueued = true;
    queueMicrotask(() => {
      this.flushQueued = false;
      this.flush();
    });
  }

  /**
   * The host should hold exactly these sessions, starting from a reset.
   * @param {Map<string, AgentSessionSnapshot>} sessions
   */
  reset(sessions) {
    this.want = new Map([...sessions].map(([id, s]) => [id, { json: JSON.stringify(s), snapshot: s }]));
    this.resetWanted = true;
    this.flush();
  }

  /** Cancels the wait for the window; nothing is published after. */
  stop() {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Starts the window of the calls made, once the event loop has turned. */
  settle() {
    if (this.settling) return;
    this.settling = true;
    setImmediate(() => {
      this.settling = false;
      const now = this.now();
      for (const s of this.spent) if (s.at === Infinity) s.at = now;
      this.wait();
    });
  }

  /** Waits for the window to free budget when something still waits for it. */
  wait() {
    if (this.signal.aborted || this.timer !== undefined || !(this.resetWanted || this.dirty.size > 0)) return;
    const first = this.spent[0];
    if (first === undefined || first.at === Infinity) return; // nothing spent, or settle() comes back
    const delay = Math.max(0, first.at + this.window - this.now()) + 1;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush();
    }, delay);
  }

  /** How many upserts and removals the window still allows. */
  budget() {
    const since = this.now() - this.window;
    while (this.spent.length > 0 && this.spent[0].at <= since) this.spent.shift();
    let upserts = this.cap;
    let removals = this.cap;
    for (const s of this.spent) {
      upserts -= s.upserts;
      removals -= s.removals;
    }
    return { upserts, removals };
  }

  /** @param {() => void} fn */
  call(fn) {
    guarded(fn, this.log);
  }

  /** Publishes what the window allows; waits for the window for the rest. */
  flush() {
    if (this.signal.aborted) return;
    let { upserts, removals } = this.budget();
    let usedUpserts = 0;
    let usedRemovals = 0;
    if (this.resetWanted) {
      const n = Math.min(this.want.size, upserts);
      if (n > 0 || this.want.size === 0) {
        /** @type {AgentSessionSnapshot[]} */
        const first = [];
        this.have = new Map();
        this.dirty = new Set(this.want.keys());
        for (const [id, w] of this.want) {
          if (first.length === n) break;
          first.push(w.snapshot);
          this.have.set(id, w.json);
          this.dirty.delete(id);
        }
        this.call(() => this.publisher.reset(first));
        this.resetWanted = false;
        usedUpserts += n;
        upserts -= n;
      }
    }
    if (!this.resetWanted && (upserts > 0 || removals > 0)) {
      for (const id of this.dirty) {
        const w = this.want.get(id);
        const h = this.have.get(id);
        if (w?.json === h) {
          this.dirty.delete(id);
        } else if (w !== undefined && upserts > 0) {
          this.call(() => this.publisher.upsert(w.snapshot));
          this.have.set(id, w.json);
          this.dirty.delete(id);
          upserts--;
          usedUpserts++;
        } else if (w === undefined && removals > 0) {
          this.call(() => this.publisher.remove(id));
          this.have.delete(id);
          this.dirty.delete(id);
          removals--;
          usedRemovals++;
        }
      }
    }
    if (usedUpserts + usedRemovals > 0) {
      this.spent.push({ at: Infinity, upserts: usedUpserts, removals: usedRemovals });
      this.settle();
    }
    this.wait();
  }
}
