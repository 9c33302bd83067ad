// Test helper: a fake Terminay host. It starts a runtime the way Terminay
// does, records every publisher call, keeps the sessions the calls add up
// to, and notes every broken publication rule.

/** The reset bound of the host. */
const MAX_RESET = 1024;

/**
 * @typedef {{ op: 'reset', sessions: any[] } | { op: 'upsert', session: any } | { op: 'remove', sessionId: string } | { op: 'diagnostic', diagnostic: { code: string, message: string } }} Call
 */

export class FakeHost {
  /**
   * @param {{ harnesses: readonly string[], enabled: readonly string[] }} opts
   *   harnesses: what the manifest declares; enabled: switched on at start
   */
  constructor(opts) {
    this.declared = new Set(opts.harnesses);
    this.enabled = [...opts.enabled];
    this.controller = new AbortController();
    /** @type {Call[]} */
    this.calls = [];
    /** @type {Map<string, any>} the sessions the host shows */
    this.sessions = new Map();
    /** @type {string[]} every broken rule */
    this.violations = [];
    /** @type {Set<(h: readonly string[]) => void>} */
    this.listeners = new Set();
    this.disposed = 0;
    /** the number of calls made after the signal aborted */
    this.callsAfterAbort = 0;
    /** calls since the last harness change that must begin with a reset */
    this.needReset = true;
    /** @type {Set<string>} session ids whose upsert the host refuses by throwing */
    this.refuse = new Set();
  }

  /** @param {any} s */
  check(s) {
    if (!s || typeof s.id !== 'string') this.violations.push('a snapshot without an id');
    else if (!this.declared.has(s.harness)) this.violations.push(`snapshot ${s.id} names an undeclared harness ${s.harness}`);
    else if (!this.enabled.includes(s.harness)) this.violations.push(`snapshot ${s.id} names the switched-off harness ${s.harness}`);
  }

  /**
   * @param {Call} call
   */
  record(call) {
    if (this.controller.signal.aborted) {
      this.callsAfterAbort++; // the host ignores it
      return false;
    }
    if (this.needReset && call.op !== 'reset' && call.op !== 'diagnostic') {
      this.violations.push(`${call.op} before the reset that must follow start or a harness change`);
    }
    this.calls.push(call);
    return true;
  }

  /** The publisher handed to the runtime. */
  get publisher() {
    return {
      /** @param {readonly any[]} sessions */
      reset: (sessions) => {
        if (!this.record({ op: 'reset', sessions: [...sessions] })) return;
        this.needReset = false;
        if (sessions.length > MAX_RESET) this.violations.push(`a reset of ${sessions.length} sessions`);
        const ids = new Set();
        this.sessions = new Map();
        for (const s of sessions) {
          this.check(s);
          if (ids.has(s.id)) this.violations.push(`session ${s.id} twice in one reset`);
          ids.add(s.id);
          this.sessions.set(s.id, structuredClone(s));
        }
      },
      /** @param {any} s */
      upsert: (s) => {
        if (this.refuse.has(s?.id)) throw new Error(`the host refuses ${s.id}`);
        if (!this.record({ op: 'upsert', session: s })) return;
        this.check(s);
        this.sessions.set(s.id, structuredClone(s));
      },
      /** @param {string} id */
      remove: (id) => {
        if (!this.record({ op: 'remove', sessionId: id })) return;
        this.sessions.delete(id);
      },
      /** @param {{ code: string, message: string }} d */
      diagnostic: (d) => {
        if (!this.record({ op: 'diagnostic', diagnostic: d })) return;
        if (!/^[a-z0-9]+(-[a-z0-9]+)*$/.test(d.code) || d.code.length > 64) this.violations.push(`diagnostic code ${d.code}`);
        if (d.message.length > 512 || /(^|\s)\/[^\s]/.test(d.message)) this.violations.push(`diagnostic message ${d.message}`);
      },
    };
  }

  /** The start object Terminay hands to runtime.start. */
  get start() {
    return {
      enabledHarnesses: Object.freeze([...this.enabled]),
      publisher: this.publisher,
      signal: this.controller.signal,
      /** @param {(h: readonly string[]) => void} listener */
      onEnabledHarnessesChanged: (listener) => {
        this.listeners.add(listener);
        return {
          dispose: () => {
            if (this.listeners.delete(listener)) this.disposed++;
          },
        };
      },
    };
  }

  /**
   * The user flips harness switches in Settings.
   * @param {readonly string[]} enabled
   */
  setEnabled(enabled) {
    this.enabled = [...enabled];
    this.needReset = true;
    for (const l of this.listeners) l(Object.freeze([...enabled]));
  }

  /** @param {string} code */
  diagnostics(code) {
    return this.calls.filter((c) => c.op === 'diagnostic' && c.diagnostic.code === code);
  }

  /** @param {Call['op']} op */
  count(op) {
    return this.calls.filter((c) => c.op === op).length;
  }

  abort() {
    this.controller.abort();
  }
}
