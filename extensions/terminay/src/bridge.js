// The agentbridge HTTP client: finds the bridge and its token the way the
// agentbridge CLI does, and reads its event stream as JSON lines.

import { readFileSync, statSync } from 'node:fs';
import http from 'node:http';
import { homedir } from 'node:os';
import { join, isAbsolute } from 'node:path';

/** The longest stream line accepted (a reset of 1,024 large snapshots fits). */
const MAX_LINE = 64 << 20;

/** The address the bridge listens on when nothing else is configured. */
export const DEFAULT_ADDR = '127.0.0.1:7391';

/**
 * @typedef {object} BridgeOptions
 * @property {string} [addr] host:port of the bridge (default: AGENTBRIDGE_ADDR, else 127.0.0.1:7391)
 * @property {string} [token] bearer token (default: AGENTBRIDGE_TOKEN, else the bridge's token file)
 * @property {Record<string, string | undefined>} [env] environment to read (default: process.env)
 * @property {typeof fetch} [fetch] fetch implementation for the JSON requests (default: the global one)
 * @property {(request: string) => void} [trace] told "METHOD /path" of every request (for tests)
 */

/**
 * A stream event as GET /v1/events?format=ndjson sends it.
 * @typedef {{ id: number, event: string, data: any }} StreamEvent
 */

/** An HTTP answer that was not 2xx. */
export class BridgeHTTPError extends Error {
  /**
   * @param {number} status
   * @param {string} message
   */
  constructor(status, message) {
    super(message);
    this.name = 'BridgeHTTPError';
    this.status = status;
  }
}

/**
 * The token file the bridge keeps: $XDG_STATE_HOME/agentbridge/token, else
 * ~/.local/state/agentbridge/token.
 * @param {Record<string, string | undefined>} env
 * @returns {string}
 */
export function tokenFile(env) {
  const state = env.XDG_STATE_HOME;
  if (state && isAbsolute(state)) return join(state, 'agentbridge', 'token');
  return join(env.HOME || homedir(), '.local', 'state', 'agentbridge', 'token');
}

/**
 * Reads the bridge's token: AGENTBRIDGE_TOKEN, else the token file. A file
 * that others can read is refused, as the bridge itself refuses it. Returns
 * '' when there is none (the bridge may run with auth none).
 * @param {Record<string, string | undefined>} env
 * @returns {string}
 */
export function readToken(env) {
  if (env.AGENTBRIDGE_TOKEN) return env.AGENTBRIDGE_TOKEN.trim();
  const file = tokenFile(env);
  try {
    if ((statSync(file).mode & 0o077) !== 0) return '';
    return readFileSync(file, 'utf8').trim();
  } catch {
    return '';
  }
}

/** A client of one bridge. */
export class Bridge {
  /** @param {BridgeOptions} [options] */
  constructor(options = {}) {
    const env = options.env ?? process.env;
    /** @type {string} */
    this.addr = options.addr || env.AGENTBRIDGE_ADDR || DEFAULT_ADDR;
    this.base = `http://${this.addr}`;
    this.env = env;
    this.fixedToken = options.token;
    this.fetch = options.fetch ?? globalThis.fetch;
    this.trace = options.trace;
  }

  /** @returns {Record<string, string>} */
  headers() {
    // Read on every request: the bridge makes its token file on first start,
    // which may come after Terminay's.
    const token = this.fixedToken ?? readToken(this.env);
    /** @type {Record<string, string>} */
    const h = { Accept: 'application/json' };
    if (token) h.Authorization = `Bearer ${token}`;
    return h;
  }

  /**
   * Sends a request; a non-2xx answer becomes a BridgeHTTPError.
   * @param {string} method
   * @param {string} path
   * @param {{ body?: unknown, signal?: AbortSignal, accept?: string }} [opts]
   * @returns {Promise<Response>}
   */
  async request(method, path, opts = {}) {
    const headers = this.headers();
    if (opts.accept) headers.Accept = opts.accept;
    /** @type {RequestInit} */
    const init = { method, headers, signal: opts.signal };
    if (opts.body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(opts.body);
    }
    this.trace?.(`${method} ${path.split('?')[0]}`);
    const res = await this.fetch(this.base + path, init);
    if (!res.ok) {
      let detail = '';
      try {
        const p = await res.json();
        detail = [p.title, p.detail].filter(Boolean).join(': ');
      } catch {
        // not a problem document
      }
      throw new BridgeHTTPError(res.status, `agentbridge answered ${res.status}${detail ? ` (${detail})` : ''}`);
    }
    return res;
  }

  /**
   * GET a JSON document.
   * @param {string} path
   * @param {AbortSignal} [signal]
   */
  async getJSON(path, signal) {
    const res = await this.request('GET', path, { signal });
    return res.json();
  }

  /**
   * Lists the bridge's sources with their harness switches.
   * @param {AbortSignal} [signal]
   * @returns {Promise<Array<{ id: string, harnesses: Array<{ id: string, enabled: boolean }> }>>}
   */
  async sources(signal) {
    const body = await this.getJSON('/v1/sources', signal);
    return Array.isArray(body?.sources) ? body.sources : [];
  }

  /**
   * Lists every session and the revision the list is at.
   * @param {AbortSignal} [signal]
   * @returns {Promise<{ revision: number, sessions: Array<{ source: string, snapshot: any }> }>}
   */
  async sessions(signal) {
    const body = await this.getJSON('/v1/sessions', signal);
    return { revision: Number(body?.revision) || 0, sessions: Array.isArray(body?.sessions) ? body.sessions : [] };
  }

  /**
   * Switches one harness of one source.
   * @param {string} source
   * @param {string} harness
   * @param {boolean} enabled
   * @param {AbortSignal} [signal]
   */
  async setHarness(source, harness, enabled, signal) {
    const res = await this.request('POST', `/v1/sources/${encodeURIComponent(source)}/harnesses/${encodeURIComponent(harness)}`, {
      body: { enabled },
      signal,
    });
    await res.body?.cancel();
  }

  /**
   * Follows the event stream after revision since, calling onEvent for each
   * event in order, until the stream ends (resolves) or fails or signal
   * aborts (rejects). The stream has a connection of its own (node:http, not
   * fetch), so that an abort closes its socket at once and the bridge sees
   * the client leave.
   * @param {number} since
   * @param {(ev: StreamEvent) => void} onEvent
   * @param {AbortSignal} signal
   * @param {() => void} [opened] called once the bridge answers with the stream
   * @returns {Promise<void>}
   */
  follow(since, onEvent, signal, opened) {
    const q = new URLSearchParams({ format: 'ndjson' });
    if (since > 0) q.set('since', String(since));
    const path = `/v1/events?${q}`;
    this.trace?.(`GET ${path.split('?')[0]}`);
    return new Promise((resolve, reject) => {
      const headers = { ...this.headers(), Accept: 'application/x-ndjson' };
      const req = http.get(new URL(this.base + path), { headers, signal, agent: false }, (res) => {
        if (res.statusCode !== 200) {
          const status = res.statusCode ?? 0;
          res.resume();
          req.destroy();
          reject(new BridgeHTTPError(status, `agentbridge answered ${status}`));
          return;
        }
        opened?.();
        res.setEncoding('utf8');
        let buf = '';
        /** @param {unknown} err */
        const fail = (err) => {
          req.destroy();
          reject(err);
        };
        res.on('data', (/** @type {string} */ chunk) => {
          buf += chunk;
          let nl;
          while ((nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl).trim();
            buf = buf.slice(nl + 1);
            if (line === '') continue;
            try {
              onEvent(parseLine(line));
            } catch (err) {
              fail(err);
              return;
            }
          }
          if (buf.length > MAX_LINE) fail(new Error('agentbridge sent an over-long stream line'));
        });
        res.on('error', reject);
        res.on('close', () => (res.complete ? resolve() : reject(new Error('the stream from agentbridge broke off'))));
      });
      req.on('error', reject);
    });
  }
}

/**
 * Decodes one line of the ndjson stream.
 * @param {string} line
 * @returns {StreamEvent}
 */
export function parseLine(line) {
  const ev = JSON.parse(line);
  const id = typeof ev?.id === 'string' ? Number(ev.id) : ev?.id;
  if (!Number.isSafeInteger(id) || id <= 0 || typeof ev.event !== 'string' || ev.data === undefined) {
    throw new Error('agentbridge sent a malformed stream line');
  }
  return { id, event: ev.event, data: ev.data };
}
