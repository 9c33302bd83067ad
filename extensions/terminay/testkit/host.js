// Test helper: a model of Terminay's extension host (API 3.x), built from its
// source (markwylde/terminay) so that a test fails where the real host would
// refuse what the extension publishes. Its parts, and where each comes from:
//
// - ChildSource: packages/server-core/src/extensions/child.ts (startSource,
//   the publisher, scheduleFlush, flushSource, publicationFrames,
//   sessionRequest). The publisher never validates and never throws; calls
//   after the start signal aborts are ignored. Calls merge per session id into
//   a pending batch (a reset replaces the pending batch and absorbs later
//   upserts and removes); the batch is flushed on setImmediate, one batch in
//   flight at a time, each frame waiting for its acknowledgement. A batch is
//   split only by size: 192 KiB of sessions per frame, a reset that does not
//   fit continues as upserts, removals ride on the last frame. A frame over
//   the child's 256 KiB message limit is never sent ({ok:false}). An
//   acknowledgement with resend:true makes the child send its whole live set
//   as a reset; {ok:false} without resend is simply dropped.
// - HostBridge: packages/server-core/src/activity/sessionSourceBridge.ts
//   (publish, validate, enqueue, setEnabledHarnesses, diagnostic). The whole
//   batch is checked before any of it applies: the reset with
//   validateAgentSessionReset, at most 1,024 upserts each through
//   validateAgentSessionSnapshot against the enabled harnesses, at most 1,024
//   removals of 1-256 characters; one bad value rejects all of it with
//   {ok:false} and no signal to the extension. More than 64 queued
//   publications, or an acknowledgement deadline (5 s) that passes, answer
//   resend:true. An invalid diagnostic is dropped. The validators are the port
//   in src/rules.js of packages/extension-api/src/validation.ts.
// - Harness switches: packages/server-core/src/extensions/sessionSources.ts
//   (reconcileNow): the host drops a switched-off harness's sessions first
//   (bridge.setEnabledHarnesses), then tells the source.
// - ForkedExtension: host.ts / child.ts activation. The extension runs in a
//   child process (testkit/child.js) whose environment holds only the
//   variables its manifest declares that are set on the server; the child
//   takes the module's default export's activate (else a named activate, else
//   a default function) and refuses a source id the manifest does not declare.
//
// What it records: every batch the host refused (violations), the largest
// reset, upsert and removal counts it was sent, valid diagnostics, and the
// live set the host holds.

import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { readFileSync } from 'node:fs';

import { LIMITS, validateAgentSessionReset, validateAgentSessionSnapshot, validateAgentSessionSourceDiagnostic } from '../src/rules.js';
import { installManifest } from './manifest.js';
import { stopProcess } from './bridge.js';

/** child.ts: sessions per frame, by size. */
export const PUBLICATION_BUDGET_BYTES = 192 * 1024;
/** child.ts: the largest message the child sends. */
export const MAX_MESSAGE_BYTES = 256 * 1024;

/** @param {unknown} v */
function jsonBytes(v) {
  return Buffer.byteLength(JSON.stringify(v));
}

/**
 * @typedef {{ reset?: unknown[], upserts?: unknown[], removals?: unknown[] }} Publication
 * @typedef {{ ok: boolean, resend?: boolean, failure?: string }} Ack
 * @typedef {{ call: string, failure: string, issues?: unknown[] }} Violation
 */

/** The host side of one session source (sessionSourceBridge.ts). */
export class HostBridge {
  /**
   * @param {{ harnesses: readonly string[], enabled: readonly string[], maximumQueued?: number, deadlineMs?: number, latency?: number }} opts
   *   latency: ms the host takes to apply a batch (it reads each session's cwd and process ancestry)
   */
  constructor(opts) {
    this.harnesses = new Set(opts.harnesses);
    this.enabled = new Set(opts.enabled.filter((h) => this.harnesses.has(h)));
    this.maximumQueued = opts.maximumQueued ?? 64;
    this.deadlineMs = opts.deadlineMs ?? 5_000;
    this.latency = opts.latency ?? 0;
    /** @type {Map<string, any>} the live set the host holds */
    this.sessions = new Map();
    this.queued = 0;
    this.generation = 0;
    /** @type {Promise<void>} */
    this.tail = Promise.resolve();
    /** @type {Violation[]} */
    this.violations = [];
    /** @type {Array<{ publication: Publication, ack: Ack }>} */
    this.publications = [];
    /** @type {Array<{ code: string, message: string }>} */
    this.diagnostics = [];
    this.max = { reset: 0, upserts: 0, removals: 0 };
    /** @type {Set<() => void>} */
    this.watchers = new Set();
  }

  /**
   * Checks the whole batch (validate); undefined when it passes.
   * @param {Publication} p
   * @returns {Violation | undefined}
   */
  check(p) {
    if (typeof p !== 'object' || p === null) return { call: 'batch', failure: 'session source publication is invalid' };
    if (p.reset !== undefined) {
      const r = validateAgentSessionReset(p.reset, this.enabled);
      if (!r.ok) return { call: 'reset', failure: 'session source reset is invalid', issues: r.issues.slice(0, 20) };
    }
    const upserts = p.upserts ?? [];
    if (!Array.isArray(upserts) || upserts.length > LIMITS.agentSessionsPerReset) return { call: 'upserts', failure: `session source upserts are invalid (${upserts.length})` };
    for (const u of upserts) {
      const r = validateAgentSessionSnapshot(u, this.enabled);
      if (!r.ok) return { call: 'upsert', failure: 'session source snapshot is invalid', issues: r.issues };
    }
    const removals = p.removals ?? [];
    if (
      !Array.isArray(removals) ||
      removals.length > LIMITS.agentSessionsPerReset ||
      removals.some((id) => typeof id !== 'string' || id.length === 0 || id.length > LIMITS.agentSessionIdLength)
    ) {
      return { call: 'removals', failure: `session source removals are invalid (${removals.length})` };
    }
    return undefined;
  }

  /**
   * publish: one batch, validated whole, applied in order behind the
   * batches before it, within the acknowledgement deadline.
   * @param {Publication} p
   * @returns {Promise<Ack>}
   */
  async publish(p) {
    this.max.reset = Math.max(this.max.reset, p.reset?.length ?? 0);
    this.max.upserts = Math.max(this.max.upserts, p.upserts?.length ?? 0);
    this.max.removals = Math.max(this.max.removals, p.removals?.length ?? 0);
    /** @type {Ack} */
    let ack;
    const bad = this.check(p);
    if (this.queued >= this.maximumQueued) ack = { ok: false, resend: true, failure: 'session source publication queue is full' };
    else if (bad) {
      this.violations.push(bad);
      ack = { ok: false, failure: bad.failure };
    } else ack = await this.enqueue(p);
    this.publications.push({ publication: structuredClone(p), ack });
    this.changed();
    return ack;
  }

  /**
   * enqueue: serialized per source, bounded by the deadline.
   * @param {Publication} p
   * @returns {Promise<Ack>}
   */
  enqueue(p) {
    this.queued++;
    const prior = this.tail;
    /** @type {() => void} */
    let release = () => {};
    this.tail = new Promise((resolve) => (release = () => resolve(undefined)));
    const generation = this.generation;
    return (async () => {
      /** @type {ReturnType<typeof setTimeout> | undefined} */
      let timer;
      try {
        await prior;
        let expired = false;
        /** @type {Promise<Ack>} */
        const deadline = new Promise((resolve) => {
          timer = setTimeout(() => {
            expired = true;
            this.generation++;
            resolve({ ok: false, resend: true, failure: 'session source acknowledgement timed out' });
          }, this.deadlineMs);
        });
        const work = async () => {
          if (this.generation !== generation) return { ok: false, resend: true, failure: 'publication expired' };
          await new Promise((r) => (this.latency > 0 ? setTimeout(r, this.latency) : setImmediate(r)));
          if (expired || this.generation !== generation) return { ok: false, resend: true, failure: 'publication expired' };
          const next = new Map(p.reset === undefined ? this.sessions : undefined);
          for (const s of /** @type {any[]} */ (p.reset ?? [])) next.set(s.id, structuredClone(s));
          for (const s of /** @type {any[]} */ (p.upserts ?? [])) next.set(s.id, structuredClone(s));
          for (const id of /** @type {string[]} */ (p.removals ?? [])) next.delete(id);
          this.sessions = next;
          return { ok: true };
        };
        return await Promise.race([work(), deadline]);
      } finally {
        clearTimeout(timer);
        this.queued--;
        release();
      }
    })();
  }

  /**
   * The host-side filter: a harness switched off is dropped at once.
   * @param {readonly string[]} enabled
   */
  setEnabledHarnesses(enabled) {
    this.enabled = new Set(enabled.filter((h) => this.harnesses.has(h)));
    for (const [id, s] of this.sessions) if (!this.enabled.has(s.harness)) this.sessions.delete(id);
    this.changed();
  }

  /** @param {unknown} d */
  diagnostic(d) {
    const r = validateAgentSessionSourceDiagnostic(d);
    if (r.ok) this.diagnostics.push(/** @type {any} */ (structuredClone(d)));
    else this.violations.push({ call: 'diagnostic', failure: 'diagnostic is invalid', issues: r.issues });
    this.changed();
  }

  changed() {
    for (const w of this.watchers) w();
  }

  /**
   * Waits until cond() holds, re-checked on every change the host sees.
   * @param {() => boolean} cond
   * @param {string} what
   * @param {number} [timeout]
   */
  waitFor(cond, what, timeout = 10_000) {
    if (cond()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!cond()) return;
        done();
        resolve(undefined);
      };
      const t = setTimeout(() => {
        done();
        reject(new Error(`timed out waiting for ${what}`));
      }, timeout);
      const done = () => {
        clearTimeout(t);
        this.watchers.delete(check);
      };
      this.watchers.add(check);
    });
  }
}

/** The child side of one session source (child.ts). */
export class ChildSource {
  /**
   * @param {{ send: (frame: Record<string, unknown>) => Promise<Ack>, diagnostic: (d: unknown) => void, refused?: (v: Violation) => void }} io
   */
  constructor(io) {
    this.io = io;
    /** @type {AbortController | undefined} */
    this.controller = undefined;
    /** @type {readonly string[]} */
    this.enabled = [];
    /** @type {Set<(h: readonly string[]) => void>} */
    this.listeners = new Set();
    /** @type {Map<string, unknown>} */
    this.live = new Map();
    this.pending = this.empty();
    this.flushing = false;
    this.sequence = 0;
    /** calls the publisher ignored because the signal had aborted */
    this.ignored = 0;
    /** @type {Array<{ op: string, [k: string]: any }>} every call the source made, for the tests (the host keeps no such list) */
    this.calls = [];
    /** subscriptions the source disposed */
    this.disposed = 0;
  }

  /** @returns {{ reset?: Map<string, unknown>, upserts: Map<string, unknown>, removals: Set<string> }} */
  empty() {
    return { upserts: new Map(), removals: new Set() };
  }

  /** @param {unknown} s */
  sessionId(s) {
    const id = s && typeof s === 'object' ? /** @type {any} */ (s).id : undefined;
    return typeof id === 'string' ? id : `invalid:${++this.sequence}`;
  }

  /**
   * startSource: runs runtime.start with a fresh publisher.
   * @param {{ start(start: unknown): unknown }} runtime
   * @param {readonly string[]} enabled
   */
  async start(runtime, enabled) {
    this.controller?.abort();
    const controller = new AbortController();
    this.controller = controller;
    this.enabled = Object.freeze([...enabled]);
    this.listeners.clear();
    this.live = new Map();
    this.pending = this.empty();
    const active = () => {
      if (!controller.signal.aborted && this.controller === controller) return true;
      this.ignored++;
      return false;
    };
    const publisher = Object.freeze({
      /** @param {readonly unknown[]} sessions */
      reset: (sessions) => {
        if (!active() || !Array.isArray(sessions)) return;
        this.calls.push({ op: 'reset', sessions: structuredClone([...sessions]) });
        const reset = new Map(sessions.map((s) => [this.sessionId(s), s]));
        this.live = new Map(reset);
        this.pending = { reset, upserts: new Map(), removals: new Set() };
        this.scheduleFlush();
      },
      /** @param {unknown} session */
      upsert: (session) => {
        if (!active()) return;
        this.calls.push({ op: 'upsert', session: structuredClone(session) });
        const id = this.sessionId(session);
        this.live.set(id, session);
        if (this.pending.reset !== undefined) this.pending.reset.set(id, session);
        else {
          this.pending.removals.delete(id);
          this.pending.upserts.set(id, session);
        }
        this.scheduleFlush();
      },
      /** @param {unknown} id */
      remove: (id) => {
        if (!active() || typeof id !== 'string') return;
        this.calls.push({ op: 'remove', sessionId: id });
        this.live.delete(id);
        if (this.pending.reset !== undefined) this.pending.reset.delete(id);
        else {
          this.pending.upserts.delete(id);
          this.pending.removals.add(id);
        }
        this.scheduleFlush();
      },
      /** @param {unknown} d */
      diagnostic: (d) => {
        if (!active()) return;
        this.calls.push({ op: 'diagnostic', diagnostic: structuredClone(d) });
        this.io.diagnostic(d);
      },
    });
    await runtime.start(
      Object.freeze({
        enabledHarnesses: this.enabled,
        publisher,
        signal: controller.signal,
        /** @param {(h: readonly string[]) => void} listener */
        onEnabledHarnessesChanged: (listener) => {
          if (typeof listener !== 'function') throw new TypeError('harness listener must be a function');
          this.listeners.add(listener);
          let disposed = false;
          return Object.freeze({
            dispose: () => {
              if (!disposed) this.disposed++;
              disposed = true;
              this.listeners.delete(listener);
            },
          });
        },
      }),
    );
  }

  /** stopSource: aborts the signal; the publisher ignores every later call. */
  stop() {
    this.controller?.abort();
    this.controller = undefined;
    this.listeners.clear();
  }

  /**
   * setSourceHarnesses: tells the source's listeners.
   * @param {readonly string[]} enabled
   */
  setHarnesses(enabled) {
    this.enabled = Object.freeze([...enabled]);
    for (const l of [...this.listeners]) l(this.enabled);
  }

  hasPending() {
    return this.pending.reset !== undefined || this.pending.upserts.size > 0 || this.pending.removals.size > 0;
  }

  scheduleFlush() {
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => {
      void this.flush().finally(() => {
        this.flushing = false;
        if (this.hasPending() && this.controller !== undefined) this.scheduleFlush();
      });
    });
  }

  async flush() {
    while (this.hasPending() && this.controller !== undefined) {
      const controller = this.controller;
      const batch = this.pending;
      this.pending = this.empty();
      for (const frame of this.frames(batch)) {
        const ack = await this.request(frame);
        if (this.controller !== controller) return;
        if (ack.resend === true) {
          // The host dropped what it had queued: send the whole live set.
          this.pending = { reset: new Map(this.live), upserts: new Map(), removals: new Set() };
          break;
        }
      }
    }
  }

  /**
   * publicationFrames: one batch in frames under the budget.
   * @param {{ reset?: Map<string, unknown>, upserts: Map<string, unknown>, removals: Set<string> }} batch
   */
  frames(batch) {
    /** @type {Record<string, unknown>[]} */
    const frames = [];
    /** @type {unknown[]} */
    let current = [];
    let bytes = 0;
    let resetOpen = batch.reset !== undefined;
    const close = () => {
      frames.push(resetOpen ? { reset: current } : { upserts: current });
      resetOpen = false;
      current = [];
      bytes = 0;
    };
    for (const s of [...(batch.reset?.values() ?? []), ...batch.upserts.values()]) {
      const size = jsonBytes(s);
      if (current.length > 0 && bytes + size > PUBLICATION_BUDGET_BYTES) close();
      current.push(s);
      bytes += size;
    }
    if (current.length > 0 || resetOpen || batch.removals.size > 0) close();
    if (batch.removals.size > 0) frames[frames.length - 1].removals = [...batch.removals];
    return frames;
  }

  /**
   * sessionRequest: a frame the child cannot send is answered {ok:false}.
   * @param {Record<string, unknown>} frame
   * @returns {Promise<Ack>}
   */
  async request(frame) {
    const size = jsonBytes({ protocolVersion: 1, kind: 'agent.source.publish', id: `agent:${++this.sequence}`, payload: frame });
    if (size > MAX_MESSAGE_BYTES) {
      this.io.refused?.({ call: 'frame', failure: `a publication frame of ${size} bytes, over the child's ${MAX_MESSAGE_BYTES}` });
      return { ok: false };
    }
    try {
      return await this.io.send(frame);
    } catch {
      return { ok: false };
    }
  }
}

/** What a test reads of the host: its live set, refusals and diagnostics. */
class HostView {
  /** @param {HostBridge} bridge */
  constructor(bridge) {
    this.bridge = bridge;
  }

  /** @returns {Map<string, any>} the live set the host holds */
  get sessions() {
    return this.bridge.sessions;
  }

  get violations() {
    return this.bridge.violations;
  }

  /** @param {string} [code] */
  diagnostics(code) {
    return this.bridge.diagnostics.filter((d) => code === undefined || d.code === code);
  }

  /** The largest reset, upserts and removals of one batch the host was sent. */
  get max() {
    return this.bridge.max;
  }

  /**
   * @param {() => boolean} cond
   * @param {string} what
   * @param {number} [timeout]
   */
  waitFor(cond, what, timeout) {
    return this.bridge.waitFor(cond, what, timeout);
  }
}

/**
 * Terminay running one session source in this process: the child's publisher
 * wired to the host's bridge (acknowledgements are asynchronous, as over IPC).
 */
export class TerminayHost extends HostView {
  /**
   * @param {{ harnesses: readonly string[], enabled: readonly string[], maximumQueued?: number, deadlineMs?: number, latency?: number }} opts
   */
  constructor(opts) {
    super(new HostBridge(opts));
    this.child = new ChildSource({
      send: (frame) => this.bridge.publish(frame),
      diagnostic: (d) => this.bridge.diagnostic(d),
      refused: (v) => this.bridge.violations.push(v),
    });
    this.enabled = [...opts.enabled];
  }

  /**
   * Starts the runtime as the host does.
   * @param {{ start(start: unknown): unknown }} runtime
   */
  start(runtime) {
    return this.child.start(runtime, this.enabled);
  }

  /**
   * The user flips harness switches: the host drops the sessions of a
   * harness switched off, then tells the source.
   * @param {readonly string[]} enabled
   */
  setEnabled(enabled) {
    this.enabled = [...enabled];
    this.bridge.setEnabledHarnesses(enabled);
    this.child.setHarnesses(enabled);
  }

  /** The start signal aborts (the source is stopped). */
  abort() {
    this.child.stop();
  }

  get listeners() {
    return this.child.listeners;
  }

  /** Every publisher call the source made, in order. */
  get calls() {
    return this.child.calls;
  }

  /** @param {string} op */
  count(op) {
    return this.child.calls.filter((c) => c.op === op).length;
  }

  /** Calls the source made after its signal aborted (the host ignores them). */
  get callsAfterAbort() {
    return this.child.ignored;
  }

  get disposed() {
    return this.child.disposed;
  }
}

/**
 * The environment Terminay gives an extension's child: only the variables
 * its session sources declare, and only those set on the server.
 * @param {Record<string, any>} manifest
 * @param {Record<string, string | undefined>} serverEnv
 */
export function childEnvironment(manifest, serverEnv) {
  /** @type {Record<string, string>} */
  const env = {};
  for (const source of manifest.contributes.agentSessionSources ?? []) {
    for (const name of source.environmentVariables ?? []) {
      const v = serverEnv[name];
      if (typeof v === 'string') env[name] = v;
    }
  }
  return env;
}

/**
 * An installed extension running in a child process of its own, as Terminay
 * runs it: the installer's manifest checks, a declared-only environment, the
 * module's default export activated in the child, and the child's publisher
 * talking to a HostBridge here over IPC.
 */
export class ForkedExtension extends HostView {
  /**
   * @param {{ packageDir: string, serverEnv: Record<string, string | undefined>, enabled?: readonly string[], latency?: number }} opts
   */
  constructor(opts) {
    const pkg = JSON.parse(readFileSync(join(opts.packageDir, 'package.json'), 'utf8'));
    const manifest = installManifest(pkg);
    const contribution = manifest.contributes.agentSessionSources[0];
    const harnesses = contribution.harnesses.map((/** @type {{ id: string }} */ h) => h.id);
    const enabled = [...(opts.enabled ?? harnesses)];
    super(new HostBridge({ harnesses, enabled, latency: opts.latency }));
    this.manifest = manifest;
    this.contribution = contribution;
    this.sourceId = contribution.id;
    this.enabled = enabled;
    this.env = childEnvironment(this.manifest, opts.serverEnv);
    this.entrypoint = join(opts.packageDir, this.manifest.entrypoint);
    /** @type {import('node:child_process').ChildProcess | undefined} */
    this.proc = undefined;
    /** @type {Map<string, (v: any) => void>} */
    this.replies = new Map();
    this.seq = 0;
    this.stderr = '';
  }

  /**
   * @param {string} kind
   * @param {Record<string, unknown>} payload
   */
  call(kind, payload) {
    const id = `host:${++this.seq}`;
    return new Promise((resolve, reject) => {
      this.replies.set(id, (m) => (m.kind === 'failure' ? reject(new Error(m.payload?.message)) : resolve(m.payload)));
      this.proc?.send({ protocolVersion: 1, kind, id, payload });
    });
  }

  /** Forks the child, activates the extension and starts its source. */
  async start() {
    const child = fileURLToPath(new URL('./child.js', import.meta.url));
    const proc = fork(child, [], { env: this.env, stdio: ['ignore', 'ignore', 'pipe', 'ipc'], execPath: process.execPath });
    this.proc = proc;
    proc.stderr?.setEncoding('utf8');
    proc.stderr?.on('data', (s) => (this.stderr = (this.stderr + s).slice(-8192)));
    proc.on('message', (/** @type {any} */ m) => {
      if (m?.kind === 'agent.source.publish') {
        void this.bridge.publish(m.payload).then((ack) => proc.connected && proc.send({ protocolVersion: 1, kind: 'agent.source.ack', id: m.id, payload: ack }));
      } else if (m?.kind === 'agent.source.diagnostic') {
        this.bridge.diagnostic(m.payload?.diagnostic);
      } else if (m?.kind === 'frame.refused') {
        this.bridge.violations.push(m.payload);
      } else if (typeof m?.id === 'string' && this.replies.has(m.id)) {
        const r = this.replies.get(m.id);
        this.replies.delete(m.id);
        r?.(m);
      }
    });
    const ready = await this.call('activate', {
      entrypoint: this.entrypoint,
      extensionId: this.manifest.id,
      agentSessionSources: this.manifest.contributes.agentSessionSources,
    });
    await this.call('agent.source.start', { sourceId: this.sourceId, enabledHarnesses: this.enabled });
    return ready;
  }

  /** What the child's process sees of an environment variable. */
  envOf(/** @type {string} */ name) {
    return this.call('env', { name });
  }

  /**
   * Harness switches: the host drops first, then tells the source.
   * @param {readonly string[]} enabled
   */
  async setEnabled(enabled) {
    this.enabled = [...enabled];
    this.bridge.setEnabledHarnesses(enabled);
    await this.call('agent.source.harnesses', { sourceId: this.sourceId, enabledHarnesses: this.enabled });
  }

  /** Stops the source and the child. */
  async stop() {
    const proc = this.proc;
    this.proc = undefined;
    await stopProcess(proc);
  }
}

/** The extension package's directory. */
export const PACKAGE_DIR = dirname(fileURLToPath(new URL('../package.json', import.meta.url)));
