// The session source runtime: follows the bridge's stream and forwards it to
// Terminay's publisher under the host's publication rules.

import { Bridge, BridgeHTTPError } from './bridge.js';
import { Pacer, guarded } from './pacer.js';
import { LIMITS, SESSION_STATUSES, TURN_OUTCOMES, boundedAgentText, validateAgentSessionSnapshot, validateAgentSessionSourceDiagnostic } from './rules.js';

/** The most sessions one reset may hold (the host's EXTENSION_LIMITS). */
export const MAX_RESET_SESSIONS = LIMITS.agentSessionsPerReset;

/** The diagnostic code that counts the sessions Terminay is not shown. */
export const NOT_SHOWN_CODE = 'sessions-not-shown';

/**
 * @typedef {import('./extension.js').AgentSessionSnapshot} AgentSessionSnapshot
 * @typedef {import('./extension.js').AgentSessionSourceRuntime} AgentSessionSourceRuntime
 * @typedef {import('./extension.js').AgentSessionSourceStart} AgentSessionSourceStart
 * @typedef {import('./extension.js').AgentSessionPublisher} AgentSessionPublisher
 * @typedef {import('./bridge.js').BridgeOptions} BridgeOptions
 * @typedef {import('./bridge.js').StreamEvent} StreamEvent
 */

/**
 * @typedef {object} SourceOptions
 * @property {readonly string[]} harnesses the harness ids the manifest declares
 * @property {{ min: number, max: number }} [backoff] reconnect delay in ms (default 250 to 10,000)
 * @property {number} [connectTimeout] ms to wait for the listing on each connection (default 5,000)
 * @property {(err: unknown) => void} [log] where unexpected errors go (default: nowhere)
 * @property {() => void} [onStopped] called once a started runtime has released everything after abort
 * @property {number} [paceWindow] ms over which at most 1,024 upserts and 1,024 removals are published (default: the host's 5,000 ms acknowledgement deadline)
 */

/**
 * Makes the runtime that Terminay starts for the source.
 * @param {SourceOptions & BridgeOptions} options
 * @returns {AgentSessionSourceRuntime}
 */
export function createBridgeSource(options) {
  return {
    start(start) {
      const follower = new Follower(new Bridge(options), options, start);
      return follower.begin();
    },
  };
}

/**
 * The session id the host is shown: the bridge's own sessions keep theirs;
 * a remote's session (its entry or record carries `host`) becomes
 * `<id>@<host>`, so that the same id on two machines is two sessions.
 * Undefined when that is longer than the host's id limit (256 UTF-16 units):
 * ids are never shortened.
 * @param {string} id
 * @param {unknown} host
 * @returns {string | undefined}
 */
export function hostSessionId(id, host) {
  const out = typeof host !== 'string' || host === '' ? id : `${id}@${host}`;
  return out.length <= LIMITS.agentSessionIdLength ? out : undefined;
}

/**
 * A bridge entry: its source, host, snapshot and, once the session ended,
 * its end (sessions linger on the bridge after they end).
 * @typedef {{ source: string, host: string, snapshot: any, ended: boolean }} Entry
 */

/**
 * An entry under the id the host is shown.
 * @param {string} source
 * @param {unknown} host
 * @param {any} snapshot
 * @param {unknown} ended the entry's `ended`, if any
 * @returns {[string, Entry] | undefined}
 */
function hostEntry(source, host, snapshot, ended) {
  const id = hostSessionId(snapshot.id, host);
  if (id === undefined) return undefined;
  const h = typeof host === 'string' ? host : '';
  return [id, { source, host: h, snapshot, ended: ended !== undefined && ended !== null }];
}

/**
 * Why a bridge session is not shown, when it is not: `ended` and `off` are
 * expected and not reported; the others are counted in one diagnostic.
 * @typedef {'ended' | 'off' | 'no-process' | 'no-cwd' | 'invalid'} Unshown
 */

/** What each reported reason says in the diagnostic. */
const UNSHOWN_TEXT = /** @type {const} */ ({
  'no-process': 'no process bound',
  'no-cwd': 'no working directory',
  invalid: "values outside Terminay's limits",
});

/**
 * The snapshot the host is shown for a bridge entry, or why there is none.
 * A session is host-ready when it has a pid and an absolute cwd and has not
 * ended. Display text is shortened to the host's limits (by UTF-16 units,
 * never inside a surrogate pair); ids are never shortened. A subagent with
 * no type gets "subagent". The result passes the host's own snapshot check
 * against the declared harnesses.
 * @param {string} id the id the host is shown
 * @param {Entry} e
 * @param {ReadonlySet<string>} declared
 * @returns {{ snapshot: AgentSessionSnapshot } | { reason: Unshown }}
 */
export function hostSnapshot(id, e, declared) {
  const s = e.snapshot ?? {};
  if (e.ended || s.status === 'exited') return { reason: 'ended' };
  if (!Number.isSafeInteger(s.pid) || s.pid < 1 || s.pid > 2 ** 31 - 1) return { reason: 'no-process' };
  if (typeof s.cwd !== 'string' || !s.cwd.startsWith('/')) return { reason: 'no-cwd' };
  /** @type {Record<string, unknown>} */
  const out = { id, harness: s.harness, pid: s.pid, cwd: s.cwd };
  const text = (/** @type {string} */ key, /** @type {number} */ max) => {
    const v = boundedAgentText(s[key], max);
    if (v !== undefined) out[key] = v;
  };
  text('title', LIMITS.agentTitleLength);
  text('model', LIMITS.agentModelLength);
  // A bridge from before the host's model said "done" for a finished turn.
  const status = s.status === 'done' ? 'idle' : s.status;
  if (SESSION_STATUSES.includes(status)) out.status = status;
  text('waitingFor', LIMITS.agentWaitingForLength);
  text('tool', LIMITS.agentToolNameLength);
  const turn = s.lastTurn === 'cancelled' ? 'interrupted' : s.lastTurn;
  if (TURN_OUTCOMES.includes(turn)) out.lastTurn = turn;
  if (s.lastTurnEndedAt !== undefined) out.lastTurnEndedAt = s.lastTurnEndedAt;
  text('error', LIMITS.agentErrorLength);
  if (Array.isArray(s.subagents) && s.subagents.length > 0) {
    out.subagents = s.subagents.slice(0, LIMITS.agentSubagents).map((/** @type {any} */ a) => {
      /** @type {Record<string, unknown>} */
      const sub = { id: a?.id };
      if (typeof a?.parentId === 'string' && a.parentId !== '') sub.parentId = a.parentId;
      sub.type = boundedAgentText(a?.type, LIMITS.agentSubagentTypeLength) ?? 'subagent';
      const title = boundedAgentText(a?.title, LIMITS.agentTitleLength);
      if (title !== undefined) sub.title = title;
      sub.status = a?.status;
      return sub;
    });
  }
  if (!validateAgentSessionSnapshot(out, declared).ok) return { reason: 'invalid' };
  return { snapshot: /** @type {AgentSessionSnapshot} */ (/** @type {unknown} */ (out)) };
}

/** Waits ms, or less when signal aborts. */
function sleep(ms, signal) {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(undefined);
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve(undefined);
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** One started runtime: its state, its connection and its publications. */
class Follower {
  /**
   * @param {Bridge} bridge
   * @param {SourceOptions} options
   * @param {AgentSessionSourceStart} start
   */
  constructor(bridge, options, start) {
    this.bridge = bridge;
    this.declared = new Set(options.harnesses);
    this.backoff = options.backoff ?? { min: 250, max: 10_000 };
    this.connectTimeout = options.connectTimeout ?? 5_000;
    this.log = options.log ?? (() => {});
    this.onStopped = options.onStopped ?? (() => {});
    this.publisher = start.publisher;
    this.signal = start.signal;
    this.enabled = new Set(start.enabledHarnesses);
    /** @type {Map<string, Entry>} what the bridge reports, by the id the host is shown (hostSessionId) */
    this.entries = new Map();
    /** what the host is given, paced to its caps */
    this.pacer = new Pacer(this.publisher, this.signal, { window: options.paceWindow, log: this.log });
    /** @type {Map<string, Unshown>} the bridge sessions the host is not shown, and why */
    this.unshown = new Map();
    /** the last not-shown summary reported */
    this.unshownReported = '';
    this.unshownQueued = false;
    this.resetDone = false;
    /** the outage being reported, so that it is reported once */
    this.outage = '';
    /** @type {Promise<void>} the switches being posted */
    this.switching = Promise.resolve();
    this.subscription = start.onEnabledHarnessesChanged((harnesses) => this.harnessesChanged(harnesses));
  }

  /** Starts following; resolves once the first reset is published. */
  begin() {
    if (this.signal.aborted) {
      this.stop();
      return Promise.resolve();
    }
    /** @type {(v?: unknown) => void} */
    let started = () => {};
    const first = new Promise((resolve) => (started = resolve));
    this.loop(started)
      .catch((err) => this.log(err))
      .then(() => this.switching)
      .finally(() => this.stop());
    return first;
  }

  /** Releases the harness subscription and reports the runtime stopped. */
  stop() {
    this.pacer.stop();
    this.subscription?.dispose();
    this.subscription = undefined;
    this.onStopped();
  }

  /**
   * Connects, publishes, follows, and reconnects with backoff, until the
   * signal aborts.
   * @param {(v?: unknown) => void} started
   */
  async loop(started) {
    let delay = this.backoff.min;
    while (!this.signal.aborted) {
      let progressed = false;
      try {
        await this.connect(started, () => {
          progressed = true;
          this.outageOver();
        });
      } catch (err) {
        if (this.signal.aborted) break;
        if (!this.resetDone) {
          // The host gets its reset after start even with no bridge.
          this.reset();
          started();
        }
        // A stream that breaks off after a good start is only resumed; a
        // bridge that cannot be reached, refuses or fails is reported.
        if (progressed) this.log(err);
        else this.reportOutage(err);
      }
      if (this.signal.aborted) break;
      if (progressed) delay = this.backoff.min;
      await sleep(delay, this.signal);
      delay = Math.min(delay * 2, this.backoff.max);
    }
    started();
  }

  /**
   * One connection: align the bridge's switches, list, publish, then follow
   * the stream from the listing's revision.
   * @param {() => void} listed called once the listing is published
   * @param {() => void} streaming called once the stream is open
   */
  async connect(listed, streaming) {
    const timeout = AbortSignal.any([this.signal, AbortSignal.timeout(this.connectTimeout)]);
    await this.postSwitches(timeout);
    const list = await this.bridge.sessions(timeout);
    if (this.signal.aborted) return;
    /** @type {Map<string, Entry>} */
    const next = new Map();
    for (const e of list.sessions) {
      if (e && typeof e.source === 'string' && e.snapshot && typeof e.snapshot.id === 'string') {
        const he = hostEntry(e.source, e.host, e.snapshot, e.ended);
        if (he) next.set(...he);
      }
    }
    this.replace(next);
    listed();
    await this.bridge.follow(list.revision, (ev) => this.apply(ev), this.signal, streaming);
  }

  /**
   * Replaces the whole bridge state: the first time with a reset, later
   * (after a reconnection) with upserts and removes for what changed.
   * @param {Map<string, Entry>} next
   */
  replace(next) {
    const ids = new Set([...this.entries.keys(), ...next.keys()]);
    this.entries = next;
    if (!this.resetDone) {
      this.reset();
      return;
    }
    for (const id of ids) this.sync(id);
  }

  /**
   * Applies one stream event. Lifecycle and harness records are not
   * forwarded: the snapshot upserts that follow them carry the state.
   * @param {StreamEvent} ev
   */
  apply(ev) {
    if (this.signal.aborted) return;
    const d = ev.data ?? {};
    switch (ev.event) {
      case 'reset': {
        if (typeof d.source !== 'string' || !Array.isArray(d.sessions)) return;
        const host = typeof d.host === 'string' ? d.host : '';
        const ended = d.ended && typeof d.ended === 'object' ? d.ended : {};
        const ids = new Set();
        // A reset replaces the sessions of its source on its host only.
        for (const [id, e] of this.entries) {
          if (e.source === d.source && e.host === host) {
            this.entries.delete(id);
            ids.add(id);
          }
        }
        for (const s of d.sessions) {
          if (s && typeof s.id === 'string') {
            const he = hostEntry(d.source, host, s, Object.hasOwn(ended, s.id) ? ended[s.id] : undefined);
            if (!he) continue;
            this.entries.set(...he);
            ids.add(he[0]);
          }
        }
        for (const id of ids) this.sync(id);
        return;
      }
      case 'upsert': {
        const s = d.snapshot;
        if (typeof d.source !== 'string' || !s || typeof s.id !== 'string') return;
        const he = hostEntry(d.source, d.host, s, d.ended);
        if (!he) return;
        this.entries.set(...he);
        this.sync(he[0]);
        return;
      }
      case 'remove': {
        if (typeof d.sessionId !== 'string') return;
        const id = hostSessionId(d.sessionId, d.host);
        const e = id === undefined ? undefined : this.entries.get(id);
        if (id !== undefined && e && e.source === d.source) {
          this.entries.delete(id);
          this.sync(id);
        }
        return;
      }
      case 'diagnostic': {
        const diag = { code: d.diagnostic?.code, message: d.diagnostic?.message };
        // The host drops an invalid diagnostic silently; check it here.
        if (validateAgentSessionSourceDiagnostic(diag).ok) this.call(() => this.publisher.diagnostic(diag));
        return;
      }
      default:
      // lifecycle, harnesses and anything newer: nothing for the host
    }
  }

  /**
   * What the host is shown for one bridge session: its snapshot, or why not.
   * @param {string} id
   * @returns {{ snapshot: AgentSessionSnapshot } | { reason: Unshown }}
   */
  shown(id) {
    const e = this.entries.get(id);
    if (e === undefined) return { reason: 'ended' };
    const harness = e.snapshot?.harness;
    if (!this.declared.has(harness) || !this.enabled.has(harness)) return { reason: 'off' };
    return hostSnapshot(id, e, this.declared);
  }

  /**
   * Brings the host's copy of one session in line with the bridge's.
   * @param {string} id
   */
  sync(id) {
    if (this.signal.aborted) return;
    const r = this.shown(id);
    this.note(id, 'reason' in r ? r.reason : undefined);
    this.pacer.set(id, 'snapshot' in r ? r.snapshot : undefined);
  }

  /**
   * Records why a session is not shown and queues the summary diagnostic.
   * @param {string} id
   * @param {Unshown | undefined} reason
   */
  note(id, reason) {
    const before = this.unshown.get(id);
    if (reason === undefined || reason === 'ended' || reason === 'off') this.unshown.delete(id);
    else this.unshown.set(id, reason);
    if (before !== this.unshown.get(id)) this.queueUnshown();
  }

  /** Reports the not-shown summary once the current turn is done. */
  queueUnshown() {
    if (this.unshownQueued) return;
    this.unshownQueued = true;
    queueMicrotask(() => {
      this.unshownQueued = false;
      this.reportUnshown();
    });
  }

  /**
   * Tells the host, in one diagnostic, how many bridge sessions it is not
   * shown and why: counts and reasons only, no ids or paths. Reported when
   * the summary changes and some session is not shown.
   */
  reportUnshown() {
    if (this.signal.aborted) return;
    /** @type {Map<Unshown, number>} */
    const counts = new Map();
    for (const r of this.unshown.values()) counts.set(r, (counts.get(r) ?? 0) + 1);
    const parts = [];
    for (const [r, text] of Object.entries(UNSHOWN_TEXT)) {
      const n = counts.get(/** @type {Unshown} */ (r));
      if (n) parts.push(`${n} with ${text}`);
    }
    const total = this.unshown.size;
    const message = total === 0 ? '' : `${total} agentbridge session${total === 1 ? ' is' : 's are'} not shown: ${parts.join(', ')}`;
    if (message === this.unshownReported) return;
    this.unshownReported = message;
    if (message === '') return;
    const diag = { code: NOT_SHOWN_CODE, message };
    if (validateAgentSessionSourceDiagnostic(diag).ok) this.call(() => this.publisher.diagnostic(diag));
  }

  /**
   * Makes one publisher call, none after abort.
   * @param {() => void} fn
   */
  call(fn) {
    if (!this.signal.aborted) guarded(fn, this.log);
  }

  /** Publishes everything shown as a fresh reset (paced to the host's caps). */
  reset() {
    if (this.signal.aborted) return;
    /** @type {Map<string, AgentSessionSnapshot>} */
    const all = new Map();
    for (const id of this.entries.keys()) {
      const r = this.shown(id);
      this.note(id, 'reason' in r ? r.reason : undefined);
      if ('snapshot' in r) all.set(id, r.snapshot);
    }
    for (const id of this.unshown.keys()) {
      if (this.entries.has(id)) continue;
      this.unshown.delete(id);
      this.queueUnshown();
    }
    this.pacer.reset(all);
    this.resetDone = true;
  }

  /**
   * The host switched harnesses (it has already dropped the sessions of a
   * harness switched off): publish a fresh reset at once, so that what the
   * host's child holds has no session of a switched-off harness, then tell
   * the bridge, which answers with its own reset (the switched-on harness's
   * live sessions arrive with it).
   * @param {readonly string[]} harnesses
   */
  harnessesChanged(harnesses) {
    if (this.signal.aborted) return;
    this.enabled = new Set(harnesses);
    this.reset();
    this.switching = this.switching
      .then(() => this.postSwitches(this.signal))
      .catch((err) => {
        if (!this.signal.aborted) this.reportOutage(err);
      });
  }

  /**
   * Aligns the bridge's switches of the declared harnesses with the host's.
   * @param {AbortSignal} signal
   */
  async postSwitches(signal) {
    const sources = await this.bridge.sources(signal);
    for (const src of sources) {
      for (const h of src.harnesses ?? []) {
        if (!this.declared.has(h.id)) continue;
        const want = this.enabled.has(h.id);
        if (h.enabled !== want) await this.bridge.setHarness(src.id, h.id, want, signal);
      }
    }
  }

  /**
   * Tells the host once per outage why the bridge cannot be followed. The
   * message names the address, never a path or the token.
   * @param {unknown} err
   */
  reportOutage(err) {
    let code = 'bridge-unavailable';
    let message = `agentbridge is not reachable at ${this.bridge.addr}; start it with \`agentbridge serve\``;
    if (err instanceof BridgeHTTPError && err.status === 401) {
      code = 'bridge-unauthorized';
      message = `agentbridge at ${this.bridge.addr} refused the token; set AGENTBRIDGE_TOKEN or run Terminay as the user who runs the bridge`;
    } else if (err instanceof BridgeHTTPError) {
      code = 'bridge-error';
      message = `agentbridge at ${this.bridge.addr} answered ${err.status}`;
    }
    if (this.outage === code) return;
    this.outage = code;
    this.log(err);
    const diag = { code, message: message.slice(0, LIMITS.agentDiagnosticLength) };
    this.call(() => this.publisher.diagnostic(diag));
  }

  /** The bridge answers again. */
  outageOver() {
    this.outage = '';
  }
}
