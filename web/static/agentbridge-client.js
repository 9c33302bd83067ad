// agentbridge-client.js — the one place that speaks the agentbridge stream
// protocol (docs/contract.md sections 3, 4 and 6). The dashboard uses only this
// module; it also runs unchanged in Node ≥ 20 (global fetch, TextDecoder).
//
//   import { AgentBridgeClient } from '/agentbridge-client.js';
//   const client = new AgentBridgeClient();          // browser: cookie auth
//   const client = new AgentBridgeClient({ baseUrl: 'http://127.0.0.1:7391', token });
//   const unsubscribe = client.subscribe((state, change) => render(state));
//   client.start();
//
// What it owns: the bearer token (or the cookie, in a browser), the initial
// GET /v1/sources and /v1/diagnostics, the stream GET /v1/events (reset,
// upsert, remove, diagnostic, lifecycle, harnesses), resuming with
// ?since=<last id> so nothing is lost or repeated, and reconnecting with
// exponential backoff after the bridge restarts or the laptop sleeps.
//
// The stream is read with fetch and parsed here by the WHATWG
// event-stream rules rather than with EventSource: fetch sees the bridge's
// `: ping` heartbeats, so a stream that died silently (sleep, a dropped
// network) is noticed and resumed, and the same code runs in Node, where
// EventSource is not global.

/**
 * What the dashboard shows of a session, in the order of urgency it sorts
 * by: the snapshot's status (`running` `waiting` `blocked` `idle`), except
 * `done` for an idle session whose last turn ended (`lastTurn` and
 * `lastTurnEndedAt` set) and `ended` for a session whose entry carries
 * `ended` (its process is gone or it stopped).
 */
export const STATUSES = Object.freeze(['waiting', 'blocked', 'running', 'idle', 'done', 'ended']);

/**
 * Returns the status shown for a snapshot and the entry's `ended` (see
 * STATUSES).
 */
export function displayStatus(snap, ended) {
  if (ended) return 'ended';
  const st = snap?.status ?? 'idle';
  if (st === 'idle' && snap.lastTurn && snap.lastTurnEndedAt > 0) return 'done';
  return st;
}

/** The shown status a lifecycle event kind leads to, when it sets one. */
const KIND_STATUS = {
  'session.started': 'idle',
  'turn.started': 'running',
  'tool.started': 'running',
  'agent.done': 'done',
  'agent.exited': 'ended',
  'session.stopped': 'ended',
};

/**
 * Returns the key that identifies a session across sources and hosts: the
 * same session id on two hosts (remotes) is two sessions. host is the
 * remote's id, or empty for the bridge's own sessions.
 */
export function sessionKey(source, id, host = '') {
  return host ? `${source}\u0000${id}\u0000${host}` : `${source}\u0000${id}`;
}

/**
 * Returns the delay before reconnect attempt `attempt` (0-based):
 * exponential from `initial`, capped at `max`, with ±20 % jitter so that
 * many tabs do not reconnect in step.
 */
export function backoffDelay(attempt, { initial = 500, max = 10000, random = Math.random } = {}) {
  const base = Math.min(max, initial * 2 ** Math.min(attempt, 30));
  return Math.round(Math.min(max, base * (0.8 + 0.4 * random())));
}

/**
 * SSEParser turns decoded text/event-stream chunks into events by the
 * WHATWG rules: lines end with CRLF, LF or CR (also across chunks); `:`
 * starts a comment; `data` lines join with "\n"; `id` persists until
 * changed (an id holding NUL is ignored); `retry` must be all digits; a
 * blank line dispatches; an event without data is not dispatched.
 */
export class SSEParser {
  #buf = '';
  #skipLF = false;
  #data = '';
  #hasData = false;
  #type = '';
  #idBuf = '';
  #handlers;

  /**
   * @param {{onEvent?: (e: {type: string, data: string, lastEventId: string}) => void,
   *          onRetry?: (ms: number) => void, onComment?: (text: string) => void,
   *          onId?: (id: string) => void}} handlers
   */
  constructor(handlers = {}) {
    this.#handlers = handlers;
  }

  /** The last event id seen, as the browser would send in Last-Event-ID. */
  get lastEventId() {
    return this.#idBuf;
  }

  /** Feeds decoded text. */
  push(text) {
    let buf = this.#buf + text;
    let start = 0;
    let i = 0;
    if (this.#skipLF) {
      this.#skipLF = false;
      if (buf.charCodeAt(0) === 10) start = i = 1;
    }
    for (; i < buf.length; i++) {
      const c = buf.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.#line(buf.slice(start, i));
      if (c === 13) {
        if (i + 1 === buf.length) this.#skipLF = true;
        else if (buf.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    this.#buf = buf.slice(start);
  }

  #line(line) {
    if (line === '') return this.#dispatch();
    if (line.charCodeAt(0) === 58) {
      this.#handlers.onComment?.(line.slice(1));
      return;
    }
    const colon = line.indexOf(':');
    let field = line;
    let value = '';
    if (colon >= 0) {
      field = line.slice(0, colon);
      value = line.slice(colon + 1);
      if (value.charCodeAt(0) === 32) value = value.slice(1);
    }
    switch (field) {
      case 'data':
        this.#data += value + '\n';
        this.#hasData = true;
        break;
      case 'event':
        this.#type = value;
        break;
      case 'id':
        if (!value.includes('\0')) this.#idBuf = value;
        break;
      case 'retry':
        if (/^[0-9]+$/.test(value)) this.#handlers.onRetry?.(Number(value));
        break;
      default:
        break; // unknown fields are ignored
    }
  }

  #dispatch() {
    this.#handlers.onId?.(this.#idBuf);
    if (!this.#hasData) {
      this.#type = '';
      return;
    }
    const data = this.#data.slice(0, -1);
    const type = this.#type || 'message';
    this.#data = '';
    this.#hasData = false;
    this.#type = '';
    this.#handlers.onEvent?.({ type, data, lastEventId: this.#idBuf });
  }
}

/** A query string ("?a=1&b=2", or "" for none) of the parameters set. */
function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const text = q.toString();
  return text ? `?${text}` : '';
}

/** An error answered by the bridge as an RFC 9457 problem (or any non-2xx). */
export class ProblemError extends Error {
  constructor(status, problem) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.name = 'ProblemError';
    this.status = status;
    this.problem = problem ?? null;
  }
}

/**
 * AgentBridgeClient keeps a live copy of the bridge's sessions, sources and
 * recent diagnostics, and tells subscribers about every change.
 *
 * Connection states (state.connection.state):
 *   idle → connecting → live; on a drop: reconnecting (with retryAt) → live;
 *   unauthorized (401/403: no valid token or cookie; it stops retrying);
 *   closed (close() was called, or the bridge answered 204).
 */
export class AgentBridgeClient {
  #opts;
  #listeners = new Set();
  #sessions = new Map(); // key → {source, host, snapshot, since, sinceExact, lastEvent}
  #sources = new Map(); // id → {id, displayName, harnesses: [{id, displayName, enabled}], observes, push}
  #diagnostics = []; // {source, revision, diagnostic, at}
  #pendingSince = new Map(); // key → {status, at}: lifecycle times awaiting their upsert
  #lastEventId = null; // string, the resume cursor
  #connection = { state: 'idle', since: 0, error: null, retryAt: null, attempt: 0 };
  #retryBase = null; // from the stream's `retry:` field
  #abort = null;
  #timer = null;
  #watchdog = null;
  #lastByte = 0;
  #attempt = 0;
  #running = false;
  #generation = 0;
  #view = null;

  /**
   * @param {object} [opts]
   * @param {string} [opts.baseUrl] the bridge's origin; defaults to the page's.
   * @param {string} [opts.token] sent as `Authorization: Bearer`; omit in a browser (cookie).
   * @param {typeof fetch} [opts.fetch] defaults to the global fetch.
   * @param {Record<string,string>} [opts.filter] stream filters (source, harness, status, project, ancestorPid).
   * @param {number} [opts.initialDelay] first reconnect delay in ms (default 500).
   * @param {number} [opts.maxDelay] cap of the reconnect delay in ms (default 10000).
   * @param {number} [opts.idleTimeout] a stream silent this long (ms) is resumed (default 40000; the bridge pings every 15 s).
   * @param {number} [opts.maxDiagnostics] how many recent diagnostics to keep (default 100).
   * @param {() => number} [opts.now] clock in epoch ms.
   */
  constructor(opts = {}) {
    const f = opts.fetch ?? globalThis.fetch;
    if (typeof f !== 'function') throw new TypeError('agentbridge: no fetch available; pass opts.fetch');
    this.#opts = {
      baseUrl: opts.baseUrl ?? globalThis.location?.href,
      token: opts.token ?? null,
      fetch: (...a) => f(...a),
      filter: opts.filter ?? {},
      initialDelay: opts.initialDelay ?? 500,
      maxDelay: opts.maxDelay ?? 10000,
      idleTimeout: opts.idleTimeout ?? 40000,
      maxDiagnostics: opts.maxDiagnostics ?? 100,
      now: opts.now ?? Date.now,
    };
    if (!this.#opts.baseUrl) throw new TypeError('agentbridge: pass opts.baseUrl outside a browser');
  }

  /**
   * Calls listener(state, change) after every applied change, and once
   * right away with change {type: 'init'}. Returns the unsubscribe function.
   * change.type is one of: init, connection, sources, reset, upsert, remove,
   * diagnostic, lifecycle, harnesses.
   */
  subscribe(listener) {
    this.#listeners.add(listener);
    listener(this.state, { type: 'init' });
    return () => this.#listeners.delete(listener);
  }

  /**
   * The current state: {connection, revision, sessions, sources,
   * diagnostics}. sessions are {key, source, snapshot, activity, since,
   * sinceExact, lastEvent}: `activity` is the bridge's {statusSince, tool,
   * turnStartedAt, usage} beside the snapshot, or null; `since` is when the
   * session entered its status (epoch ms: activity.statusSince when the
   * bridge knows it); sinceExact is false when the bridge did not say and
   * `since` is only when this client first saw it so. The object is rebuilt after each change;
   * treat it as read-only.
   */
  get state() {
    if (!this.#view) {
      this.#view = Object.freeze({
        connection: Object.freeze({ ...this.#connection }),
        revision: this.#lastEventId === null ? null : Number(this.#lastEventId),
        sessions: Object.freeze([...this.#sessions].map(([key, s]) => Object.freeze({ key, ...s }))),
        sources: Object.freeze([...this.#sources.values()]),
        diagnostics: Object.freeze([...this.#diagnostics]),
      });
    }
    return this.#view;
  }

  /** Connects (once); later calls do nothing while running. */
  start() {
    if (this.#running) return;
    this.#running = true;
    this.#attempt = 0;
    this.#connect();
  }

  /** Stops streaming and releases every timer and connection. */
  close() {
    this.#running = false;
    this.#generation++;
    this.#stop();
    this.#setConnection({ state: 'closed', error: null, retryAt: null });
  }

  /**
   * Drops the stream and resumes it now with ?since (after a wake from
   * sleep, or when the network comes back). Does nothing when stopped.
   */
  reconnect() {
    if (!this.#running) return;
    this.#attempt = 0;
    this.#generation++;
    this.#stop();
    this.#connect();
  }

  /**
   * Resumes now if nothing, not even a heartbeat, arrived for `quietMs`
   * (default 20 s; the bridge pings at least every 15 s), or if a retry is
   * pending. Meant for page visibility, `online` and wake-up hooks.
   */
  checkAlive(quietMs = 20000) {
    if (!this.#running) return;
    const c = this.#connection.state;
    if (c === 'reconnecting' || (c === 'live' && this.#opts.now() - this.#lastByte > quietMs)) this.reconnect();
  }

  /**
   * Switches a harness on or off (POST /v1/sources/{source}/harnesses/{harness}).
   * Resolves with the bridge's answer; the stream then brings a `harnesses`
   * event and the source's fresh reset. Rejects with a ProblemError.
   */
  async setHarness(source, harness, enabled) {
    const path = `/v1/sources/${encodeURIComponent(source)}/harnesses/${encodeURIComponent(harness)}`;
    return this.#request('POST', path, { enabled: Boolean(enabled) });
  }

  /**
   * GET /v1/sessions/{source}/{id}: one entry of this bridge, with
   * `answerable` while its permission prompt can be answered.
   */
  async fetchSession(source, id) {
    return this.#request('GET', `/v1/sessions/${encodeURIComponent(source)}/${encodeURIComponent(id)}`);
  }

  /**
   * Answers a session's permission prompt (POST
   * /v1/sessions/{source}/{id}/waits/{waitId}/answer): decision "allow" or
   * "deny", with message the reason of a deny. Rejects with a ProblemError;
   * 409 when the wait is no longer open (its body's `state` says how it was
   * closed).
   */
  async answer(source, id, waitId, decision, message) {
    const path = `/v1/sessions/${encodeURIComponent(source)}/${encodeURIComponent(id)}/waits/${encodeURIComponent(waitId)}/answer`;
    const body = { decision };
    if (message) body.message = message;
    return this.#request('POST', path, body);
  }

  /** GET /v1/sessions with optional filters, as the bridge answers it. */
  async fetchSessions(filter = {}) {
    return this.#request('GET', `/v1/sessions${query(filter)}`);
  }

  /**
   * GET /v1/usage with its parameters (by, split, from, to, tz, …): a
   * UsageTable. Rejects with a ProblemError; 404 with the problem type
   * ending in `history-off` when the bridge keeps no history.
   */
  async fetchUsage(params = {}) {
    return this.#request('GET', `/v1/usage${query(params)}`);
  }

  /**
   * GET /v1/history with its parameters (from, to, limit, harness, …):
   * {sessions: [HistorySession]}, newest first. Rejects like fetchUsage.
   */
  async fetchHistory(params = {}) {
    return this.#request('GET', `/v1/history${query(params)}`);
  }

  // ---- internals ----

  #url(path) {
    return new URL(path, this.#opts.baseUrl);
  }

  #headers(extra) {
    const h = { ...extra };
    if (this.#opts.token) h.Authorization = `Bearer ${this.#opts.token}`;
    return h;
  }

  async #request(method, path, body, signal) {
    const init = {
      method,
      headers: this.#headers({ Accept: 'application/json' }),
      credentials: 'same-origin',
      cache: 'no-store',
      signal,
    };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const res = await this.#opts.fetch(this.#url(path), init);
    const text = await res.text();
    let json = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    if (!res.ok) throw new ProblemError(res.status, json);
    return json;
  }

  #stop() {
    clearTimeout(this.#timer);
    clearTimeout(this.#watchdog);
    this.#timer = this.#watchdog = null;
    this.#abort?.abort();
    this.#abort = null;
  }

  #emit(change) {
    this.#view = null;
    const state = this.state;
    for (const l of [...this.#listeners]) {
      try {
        l(state, change);
      } catch (err) {
        // A listener's bug must not break the stream.
        globalThis.reportError ? globalThis.reportError(err) : console.error(err);
      }
    }
  }

  #setConnection(patch) {
    const next = { ...this.#connection, ...patch };
    if (next.state !== this.#connection.state) next.since = this.#opts.now();
    next.attempt = this.#attempt;
    this.#connection = next;
    this.#emit({ type: 'connection' });
  }

  async #connect() {
    const gen = ++this.#generation;
    const abort = new AbortController();
    this.#abort = abort;
    const stale = () => gen !== this.#generation || !this.#running;
    if (this.#connection.state !== 'reconnecting') this.#setConnection({ state: 'connecting', retryAt: null });
    try {
      // Sources and diagnostics first: the stream's harnesses and
      // diagnostic events that follow are newer than these answers.
      const sources = await this.#request('GET', '/v1/sources', undefined, abort.signal);
      if (stale()) return;
      this.#applySources(sources);
      const diags = await this.#request('GET', '/v1/diagnostics', undefined, abort.signal).catch((err) => {
        if (err instanceof ProblemError && err.status !== 401 && err.status !== 403) return null;
        throw err;
      });
      if (stale()) return;
      if (diags) this.#applyDiagnosticList(diags);

      const url = this.#url('/v1/events');
      for (const [k, v] of Object.entries(this.#opts.filter)) if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
      if (this.#lastEventId !== null) url.searchParams.set('since', this.#lastEventId);
      const res = await this.#opts.fetch(url, {
        headers: this.#headers({ Accept: 'text/event-stream' }),
        credentials: 'same-origin',
        cache: 'no-store',
        signal: abort.signal,
      });
      if (stale()) return void res.body?.cancel().catch(() => {});
      if (res.status === 204) {
        this.#running = false;
        this.#setConnection({ state: 'closed', error: 'the bridge asked not to reconnect', retryAt: null });
        return;
      }
      if (!res.ok) {
        res.body?.cancel().catch(() => {});
        let problem = null;
        throw new ProblemError(res.status, problem);
      }
      const type = res.headers.get('content-type') || '';
      if (!type.toLowerCase().startsWith('text/event-stream')) {
        res.body?.cancel().catch(() => {});
        throw new Error(`unexpected content type ${type || '(none)'}`);
      }
      await this.#read(res, gen, abort);
    } catch (err) {
      if (stale()) return;
      if (err instanceof ProblemError && (err.status === 401 || err.status === 403)) {
        this.#running = false;
        this.#stop();
        this.#setConnection({ state: 'unauthorized', error: err.message, retryAt: null });
        return;
      }
      this.#scheduleRetry(err);
      return;
    }
    if (!stale()) this.#scheduleRetry(new Error('the stream ended'));
  }

  async #read(res, gen, abort) {
    const stale = () => gen !== this.#generation || !this.#running;
    let gotEvent = false;
    const parser = new SSEParser({
      onRetry: (ms) => {
        this.#retryBase = ms;
      },
      onEvent: (e) => {
        if (stale()) return;
        gotEvent = true;
        if (this.#attempt !== 0) this.#attempt = 0;
        this.#apply(e.type, e.data, e.lastEventId);
      },
    });
    this.#lastByte = this.#opts.now();
    this.#armWatchdog(gen, abort);
    this.#setConnection({ state: 'live', error: null, retryAt: null });
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done || stale()) break;
        this.#lastByte = this.#opts.now();
        parser.push(decoder.decode(value, { stream: true }));
      }
    } finally {
      // A newer connection owns the watchdog once this one is stale.
      if (!stale()) clearTimeout(this.#watchdog);
      reader.releaseLock?.();
    }
    if (gotEvent) this.#attempt = 0;
  }

  #armWatchdog(gen, abort) {
    clearTimeout(this.#watchdog);
    const wait = Math.max(1000, this.#opts.idleTimeout - (this.#opts.now() - this.#lastByte));
    this.#watchdog = setTimeout(() => {
      if (gen !== this.#generation || !this.#running) return;
      if (this.#opts.now() - this.#lastByte >= this.#opts.idleTimeout) {
        abort.abort(); // the read loop ends and a resume follows
        return;
      }
      this.#armWatchdog(gen, abort);
    }, wait);
    this.#watchdog.unref?.();
  }

  #scheduleRetry(err) {
    if (!this.#running) return;
    this.#generation++;
    this.#abort?.abort();
    this.#abort = null;
    const initial = this.#retryBase ?? this.#opts.initialDelay;
    const delay = backoffDelay(this.#attempt, { initial: Math.min(initial, this.#opts.maxDelay), max: this.#opts.maxDelay });
    this.#attempt++;
    const retryAt = this.#opts.now() + delay;
    this.#setConnection({ state: 'reconnecting', error: err?.message ?? String(err), retryAt });
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      if (this.#running) this.#connect();
    }, delay);
    this.#timer.unref?.();
  }

  // ---- applying what the bridge sends ----

  #applySources(body) {
    const list = Array.isArray(body) ? body : (body?.sources ?? []);
    this.#sources.clear();
    for (const s of list) {
      if (!s || typeof s.id !== 'string') continue;
      this.#sources.set(s.id, {
        id: s.id,
        displayName: s.displayName || s.id,
        push: Boolean(s.push),
        observes: s.observes ?? {},
        environmentVariables: s.environmentVariables ?? [],
        harnesses: (s.harnesses ?? []).map((h) => ({ id: h.id, displayName: h.displayName || h.id, enabled: h.enabled !== false })),
      });
    }
    // Sessions of sources the bridge no longer has would never be reset.
    for (const [key, s] of this.#sessions) if (!s.host && !this.#sources.has(s.source)) this.#sessions.delete(key);
    this.#emit({ type: 'sources' });
  }

  #applyDiagnosticList(body) {
    const list = Array.isArray(body) ? body : (body?.diagnostics ?? []);
    for (const d of list) this.#addDiagnostic(d.source, Number(d.revision), d.diagnostic, d.at, d.host);
    this.#emit({ type: 'diagnostic' });
  }

  #addDiagnostic(source, revision, diagnostic, at, host) {
    if (!diagnostic) return false;
    if (Number.isFinite(revision) && this.#diagnostics.some((d) => d.revision === revision && d.source === source)) return false;
    this.#diagnostics.push({ source, host: typeof host === 'string' ? host : '', revision, diagnostic, at: at ?? this.#opts.now() });
    this.#diagnostics.sort((a, b) => (a.revision || 0) - (b.revision || 0));
    const over = this.#diagnostics.length - this.#opts.maxDiagnostics;
    if (over > 0) this.#diagnostics.splice(0, over);
    return true;
  }

  #apply(name, raw, id) {
    let data;
    try {
      data = JSON.parse(raw);
    } catch {
      return; // the bridge sends one line of JSON; anything else is not ours
    }
    if (id !== '') this.#lastEventId = id;
    const revision = id === '' ? null : Number(id);
    const now = this.#opts.now();
    switch (name) {
      case 'reset': {
        const src = data.source;
        const host = typeof data.host === 'string' ? data.host : '';
        const fresh = new Map();
        for (const snap of data.sessions ?? []) {
          const key = sessionKey(src, snap.id, host);
          fresh.set(key, this.#next(key, src, snap, now, false, data.activity?.[snap.id], host, data.ended?.[snap.id]));
        }
        // A reset replaces the sessions of its source on its host only.
        for (const [key, s] of this.#sessions) if (s.source === src && (s.host ?? '') === host) this.#sessions.delete(key);
        for (const [key, s] of fresh) this.#sessions.set(key, s);
        if (!host && !this.#sources.has(src)) this.#sources.set(src, { id: src, displayName: src, push: false, observes: {}, environmentVariables: [], harnesses: [] });
        this.#emit({ type: 'reset', source: src, host, revision, count: fresh.size });
        break;
      }
      case 'upsert': {
        const snap = data.snapshot;
        if (!snap) return;
        const host = typeof data.host === 'string' ? data.host : '';
        const key = sessionKey(data.source, snap.id, host);
        this.#sessions.set(key, this.#next(key, data.source, snap, now, true, data.activity, host, data.ended));
        this.#emit({ type: 'upsert', source: data.source, host, sessionId: snap.id, revision });
        break;
      }
      case 'remove': {
        const host = typeof data.host === 'string' ? data.host : '';
        const key = sessionKey(data.source, data.sessionId, host);
        this.#sessions.delete(key);
        this.#pendingSince.delete(key);
        this.#emit({ type: 'remove', source: data.source, host, sessionId: data.sessionId, revision });
        break;
      }
      case 'diagnostic':
        if (this.#addDiagnostic(data.source, revision, data.diagnostic, now, data.host)) {
          this.#emit({ type: 'diagnostic', source: data.source, revision });
        }
        break;
      case 'lifecycle':
        this.#applyLifecycle(data, now, revision);
        break;
      case 'harnesses': {
        const s = this.#sources.get(data.source);
        const on = new Set(data.enabledHarnesses ?? []);
        if (s) s.harnesses = s.harnesses.map((h) => ({ ...h, enabled: on.has(h.id) }));
        this.#emit({ type: 'harnesses', source: data.source, enabledHarnesses: [...on], revision });
        break;
      }
      default:
        break; // an event this client does not know yet
    }
  }

  /**
   * Builds a session entry, keeping `since` while the shown status holds.
   * `ended` is the entry's end ({at, exitCode?, signal?, reason?}), if any.
   */
  #next(key, source, snap, now, live, activity, host = '', ended = null) {
    const prev = this.#sessions.get(key);
    const act = activity && typeof activity === 'object' ? activity : null;
    const end = ended && typeof ended === 'object' ? ended : null;
    const status = displayStatus(snap, end);
    const entry = { source, host, snapshot: snap, status, ended: end, activity: act, since: now, sinceExact: live && Boolean(prev), lastEvent: prev?.lastEvent ?? null };
    if (end && Number.isFinite(end.at) && end.at > 0) {
      entry.since = Math.min(end.at, now);
      entry.sinceExact = true;
    } else if (act && Number.isFinite(act.statusSince) && act.statusSince > 0) {
      entry.since = Math.min(act.statusSince, now); // the bridge knows: a reload sees the same
      entry.sinceExact = true;
    } else if (prev && prev.status === status) {
      entry.since = prev.since;
      entry.sinceExact = prev.sinceExact;
    } else {
      const pending = this.#pendingSince.get(key);
      if (pending && pending.status === status) {
        entry.since = pending.at;
        entry.sinceExact = true;
      } else if (status === 'done') {
        entry.since = snap.lastTurnEndedAt;
        entry.sinceExact = true;
      } else if (live && !prev) {
        entry.sinceExact = true; // it appeared just now, in this state
      }
    }
    this.#pendingSince.delete(key);
    return entry;
  }

  #applyLifecycle(data, now, revision) {
    const ev = data.event;
    if (!ev || typeof ev.kind !== 'string') return;
    const key = sessionKey(data.source, data.sessionId, typeof data.host === 'string' ? data.host : '');
    const status = ev.kind === 'wait.started' ? ev.state : KIND_STATUS[ev.kind];
    const at = Number.isFinite(ev.occurredAt) && ev.occurredAt > 0 ? ev.occurredAt : null;
    const s = this.#sessions.get(key);
    const lastEvent = { kind: ev.kind, name: ev.name ?? null, at: at ?? now };
    if (s) {
      s.lastEvent = lastEvent;
      // The upsert came first: take the agent's own time for the change.
      if (at && status && s.status === status && now - s.since < 5000) {
        s.since = Math.min(at, now);
        s.sinceExact = true;
      }
    }
    if (at && status) this.#pendingSince.set(key, { status, at: Math.min(at, now) });
    this.#emit({ type: 'lifecycle', source: data.source, sessionId: data.sessionId, event: ev, revision });
  }
}
