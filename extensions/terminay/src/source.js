// The session source runtime: follows the bridge's stream and forwards it to
// Terminay's publisher under the host's publication rules.

import { Bridge, BridgeHTTPError } from './bridge.js';

/** The most sessions one reset may hold (the host's EXTENSION_LIMITS). */
export const MAX_RESET_SESSIONS = 1024;

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
 * Undefined when that would not be an identity value (over 128 bytes).
 * @param {string} id
 * @param {unknown} host
 * @returns {string | undefined}
 */
export function hostSessionId(id, host) {
  if (typeof host !== 'string' || host === '') return id;
  const out = `${id}@${host}`;
  return Buffer.byteLength(out) <= 128 ? out : undefined;
}

/**
 * An entry as the host is shown it: the snapshot under its host id.
 * @param {string} source
 * @param {unknown} host
 * @param {AgentSessionSnapshot} snapshot
 * @returns {[string, { source: string, host: string, snapshot: AgentSessionSnapshot }] | undefined}
 */
function hostEntry(source, host, snapshot) {
  const id = hostSessionId(snapshot.id, host);
  if (id === undefined) return undefined;
  const h = typeof host === 'string' ? host : '';
  return [id, { source, host: h, snapshot: id === snapshot.id ? snapshot : { ...snapshot, id } }];
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
    /** @type {Map<string, { source: string, host: string, snapshot: AgentSessionSnapshot }>} what the bridge reports, by the id the host is shown (hostSessionId) */
    this.entries = new Map();
    /** @type {Map<string, string>} what the host holds: session id -> JSON of the snapshot */
    this.published = new Map();
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
    /** @type {Map<string, { source: string, host: string, snapshot: AgentSessionSnapshot }>} */
    const next = new Map();
    for (const e of list.sessions) {
      if (e && typeof e.source === 'string' && e.snapshot && typeof e.snapshot.id === 'string') {
        const he = hostEntry(e.source, e.host, e.snapshot);
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
   * @param {Map<string, { source: string, host: string, snapshot: AgentSessionSnapshot }>} next
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
            const he = hostEntry(d.source, host, s);
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
        const he = hostEntry(d.source, d.host, s);
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
      case 'diagnostic':
        if (d.diagnostic && typeof d.diagnostic.code === 'string' && typeof d.diagnostic.message === 'string') {
          this.call(() => this.publisher.diagnostic({ code: d.diagnostic.code, message: d.diagnostic.message }));
        }
        return;
      default:
        // lifecycle, harnesses and anything newer: nothing for the host
    }
  }

  /**
   * Whether the host may be shown a snapshot: its harness is declared and
   * switched on.
   * @param {AgentSessionSnapshot} s
   */
  visible(s) {
    return this.declared.has(s.harness) && this.enabled.has(s.harness);
  }

  /**
   * Brings the host's copy of one session in line with the bridge's.
   * @param {string} id
   */
  sync(id) {
    if (this.signal.aborted) return;
    const e = this.entries.get(id);
    const want = e && this.visible(e.snapshot) ? JSON.stringify(e.snapshot) : undefined;
    const have = this.published.get(id);
    if (want === have) return;
    if (want === undefined) {
      this.published.delete(id);
      this.call(() => this.publisher.remove(id));
    } else if (this.call(() => this.publisher.upsert(/** @type {any} */ (e).snapshot))) {
      this.published.set(id, want);
    } else {
      this.published.delete(id);
    }
  }

  /**
   * Makes one publisher call. A call the host refuses by throwing is logged
   * and does not stop the stream.
   * @param {() => void} fn
   * @returns {boolean} whether the host took it
   */
  call(fn) {
    if (this.signal.aborted) return false;
    try {
      fn();
      return true;
    } catch (err) {
      this.log(err);
      return false;
    }
  }

  /**
   * Publishes everything visible as a reset of at most MAX_RESET_SESSIONS,
   * then upserts for the rest.
   */
  reset() {
    if (this.signal.aborted) return;
    const all = [...this.entries.values()].map((e) => e.snapshot).filter((s) => this.visible(s));
    this.published = new Map(all.map((s) => [s.id, JSON.stringify(s)]));
    if (!this.call(() => this.publisher.reset(all.slice(0, MAX_RESET_SESSIONS)))) this.published.clear();
    for (const s of all.slice(MAX_RESET_SESSIONS)) {
      if (!this.call(() => this.publisher.upsert(s))) this.published.delete(s.id);
    }
    this.resetDone = true;
  }

  /**
   * The host switched harnesses: publish a fresh reset at once, then tell
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
    this.call(() => this.publisher.diagnostic({ code, message }));
  }

  /** The bridge answers again. */
  outageOver() {
    this.outage = '';
  }
}
