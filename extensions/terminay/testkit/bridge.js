// Test helper: runs the real agentbridge binary with a push source, on a
// loopback port of its own, with a home and a token of its own.

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The push source every test bridge declares. */
export const PUSH_SOURCE = 'test-push';

/** Its harnesses: ids the extension's manifest declares. */
export const PUSH_HARNESSES = ['example-agent', 'codex'];

/**
 * The bridge binary: AGENTBRIDGE_BIN (the Makefile sets it), else the one
 * `make build` leaves in bin/. Undefined when there is none.
 */
export function bridgeBinary() {
  if (process.env.AGENTBRIDGE_BIN) return process.env.AGENTBRIDGE_BIN;
  const local = fileURLToPath(new URL('../../../bin/agentbridge', import.meta.url));
  return existsSync(local) ? local : undefined;
}

/** A loopback host:port where nothing listens (yet). */
export async function freeAddr() {
  const srv = createServer();
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve(undefined)));
  const { port } = /** @type {import('node:net').AddressInfo} */ (srv.address());
  await new Promise((resolve) => srv.close(() => resolve(undefined)));
  return `127.0.0.1:${port}`;
}

/**
 * Waits until cond() is true, checking every 10 ms, for up to timeout ms.
 * @param {() => boolean | Promise<boolean>} cond
 * @param {string} what
 * @param {number} [timeout]
 */
export async function waitFor(cond, what, timeout = 10_000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Ends a child process (SIGTERM) and waits for it to exit.
 * @param {import('node:child_process').ChildProcess | undefined} child
 */
export async function stopProcess(child) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  await new Promise((resolve) => {
    child.once('exit', resolve);
    child.kill('SIGTERM');
  });
}

/** A running test bridge. */
export class TestBridge {
  /**
   * @param {{ addr?: string, token?: string, remotes?: { id: string, bridge: TestBridge }[] }} [opts]
   *   remotes: other test bridges this one follows (config remotes, over HTTP)
   */
  constructor(opts = {}) {
    this.bin = bridgeBinary();
    if (!this.bin) throw new Error('no agentbridge binary: run `make build` or set AGENTBRIDGE_BIN');
    this.dir = mkdtempSync(join(tmpdir(), 'agentbridge-terminay-'));
    this.token = opts.token ?? randomBytes(24).toString('base64url');
    this.addr = opts.addr ?? '';
    this.config = join(this.dir, 'config.yaml');
    writeFileSync(
      this.config,
      [
        'sources:',
        '  claude-code: {enabled: false}',
        '  codex: {enabled: false}',
        '  kiro: {enabled: false}',
        '  pi: {enabled: false}',
        '  vibe: {enabled: false}',
        'push:',
        `  - id: ${PUSH_SOURCE}`,
        '    displayName: Test Push',
        '    harnesses:',
        ...PUSH_HARNESSES.map((h) => `      - {id: ${h}, displayName: ${h}}`),
        ...(opts.remotes?.length ? ['remotes:'] : []),
        ...(opts.remotes ?? []).map((r) => {
          const tokenFile = join(this.dir, `${r.id}.token`);
          writeFileSync(tokenFile, r.bridge.token, { mode: 0o600 });
          return `  - {id: ${r.id}, url: "http://${r.bridge.addr}", tokenFile: "${tokenFile}"}`;
        }),
        '',
      ].join('\n'),
    );
    /** @type {import('node:child_process').ChildProcess | undefined} */
    this.child = undefined;
    this.stderr = '';
  }

  /** Starts the bridge (again, on the same address) and waits until it answers. */
  async start() {
    if (!this.addr) this.addr = await freeAddr();
    /** @type {Record<string, string>} */
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: this.dir,
      XDG_CONFIG_HOME: join(this.dir, 'config'),
      XDG_STATE_HOME: join(this.dir, 'state'),
      AGENTBRIDGE_TOKEN: this.token,
    };
    const child = spawn(this.bin, ['serve', '--listen', this.addr, '--config', this.config], {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.child = child;
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (s) => {
      this.stderr = (this.stderr + s).slice(-8192);
    });
    /** @type {Error | undefined} */
    let exited;
    child.on('exit', (code, signal) => {
      exited = new Error(`agentbridge exited (${code ?? signal}): ${this.stderr}`);
    });
    await waitFor(async () => {
      if (exited) throw exited;
      try {
        const res = await fetch(`http://${this.addr}/healthz`);
        await res.body?.cancel();
        return res.ok;
      } catch {
        return false;
      }
    }, 'agentbridge to answer');
  }

  /** Stops the bridge process and waits for it to exit. */
  async stop() {
    const child = this.child;
    this.child = undefined;
    await stopProcess(child);
  }

  /** Stops the bridge and removes its files. */
  async close() {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /**
   * Calls the bridge's API with the token.
   * @param {string} method
   * @param {string} path
   * @param {unknown} [body]
   */
  async api(method, path, body) {
    /** @type {Record<string, string>} */
    const headers = { Authorization: `Bearer ${this.token}` };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(`http://${this.addr}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  }

  /**
   * Publishes ops to the push source, all or nothing.
   * @param {unknown[]} ops
   */
  publish(ops) {
    return this.api('POST', `/v1/sources/${PUSH_SOURCE}/publish`, ops);
  }

  /** The bridge's sessions, by id. */
  async sessions() {
    const body = await this.api('GET', '/v1/sessions');
    return new Map(body.sessions.map((/** @type {any} */ e) => [e.snapshot.id, e.snapshot]));
  }

  /**
   * The sessions Terminay can be shown (host-ready): with a pid and a cwd,
   * not ended, of an enabled harness; by id, as the bridge has them.
   * @param {readonly string[]} enabled
   */
  async hostReady(enabled) {
    const body = await this.api('GET', '/v1/sessions');
    return new Map(
      body.sessions
        .filter((/** @type {any} */ e) => !e.ended && e.snapshot.pid > 0 && typeof e.snapshot.cwd === 'string' && enabled.includes(e.snapshot.harness))
        .map((/** @type {any} */ e) => [e.snapshot.id, e.snapshot]),
    );
  }

  /**
   * The value of a metric without labels, from GET /metrics.
   * @param {string} name
   */
  async metric(name) {
    const res = await fetch(`http://${this.addr}/metrics`, { headers: { Authorization: `Bearer ${this.token}` } });
    const text = await res.text();
    if (!res.ok) throw new Error(`GET /metrics: ${res.status} ${text}`);
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    if (!line) throw new Error(`no metric ${name}`);
    return Number(line.slice(name.length + 1));
  }

  /** The push source's harness switches, by harness id. */
  async switches() {
    const body = await this.api('GET', '/v1/sources');
    const src = body.sources.find((/** @type {any} */ s) => s.id === PUSH_SOURCE);
    return Object.fromEntries(src.harnesses.map((/** @type {any} */ h) => [h.id, h.enabled]));
  }
}

/**
 * A snapshot for the push source.
 * @param {string} id
 * @param {string} [harness]
 * @param {Record<string, unknown>} [extra]
 */
export function snap(id, harness = 'example-agent', extra = {}) {
  return { id, harness, pid: 4242, cwd: `/work/${id}`, status: 'running', title: `Session ${id}`, ...extra };
}
