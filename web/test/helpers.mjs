// Shared helpers of the node tests.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';

/** Resolves once pred(client.state) is true; rejects after timeoutMs. */
export function waitFor(client, pred, what = 'condition', timeoutMs = 10000) {
  return new Promise((resolve, reject) => {
    let unsub = () => {};
    const timer = setTimeout(() => {
      unsub();
      reject(new Error(`timed out waiting for ${what}; state: ${JSON.stringify(summary(client.state))}`));
    }, timeoutMs);
    let done = false;
    unsub = client.subscribe((state) => {
      if (done || !pred(state)) return;
      done = true;
      clearTimeout(timer);
      queueMicrotask(() => unsub());
      resolve(state);
    });
    if (done) unsub();
  });
}

/** A compact view of the client state for failure messages and comparisons. */
export function summary(state) {
  return {
    connection: state.connection.state,
    error: state.connection.error,
    revision: state.revision,
    sessions: state.sessions.map((s) => `${s.source}/${s.snapshot.id}:${s.snapshot.status}`).sort(),
  };
}

/** Records every change a client reports. */
export function recorder(client) {
  const changes = [];
  const unsub = client.subscribe((_, change) => changes.push(change));
  return { changes, unsub };
}

/** Returns a free TCP port on 127.0.0.1. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

export const PUSH_CONFIG = `push:
  - id: example-push
    displayName: Example Agent
    harnesses:
      - {id: example-agent, displayName: Example Agent}
      - {id: other-agent, displayName: Other Agent}
`;

/**
 * Starts the real bridge binary (AGENTBRIDGE_BIN) serving on a free port
 * with a push source, in a private home so that no agent on this machine
 * shows up. Resolves {url, base, token, dashboardUrl, stop, restart}.
 */
export async function startBridge({ token = 'test-token-0123456789', port } = {}) {
  const bin = process.env.AGENTBRIDGE_BIN;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentbridge-node-'));
  const home = path.join(dir, 'home');
  fs.mkdirSync(home);
  const config = path.join(dir, 'config.yaml');
  fs.writeFileSync(config, PUSH_CONFIG);
  port ??= await freePort();
  const env = {
    PATH: process.env.PATH,
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_STATE_HOME: path.join(home, '.local', 'state'),
    CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
    CODEX_HOME: path.join(home, '.codex'),
    AGENTBRIDGE_TOKEN: token,
  };
  const bridge = { base: `http://127.0.0.1:${port}`, token, port, proc: null, output: '', dashboardUrl: null, dir };

  bridge.start = async () => {
    bridge.output = '';
    bridge.dashboardUrl = null;
    const proc = spawn(bin, ['serve', '--listen', `127.0.0.1:${port}`, '--config', config], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    bridge.proc = proc;
    const onData = (b) => {
      bridge.output += b.toString();
      const m = bridge.output.match(/https?:\/\/\S+[?&]token=\S+/);
      if (m) bridge.dashboardUrl = m[0];
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    const deadline = Date.now() + 10000;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`bridge exited ${proc.exitCode}: ${bridge.output}`);
      try {
        const res = await fetch(`${bridge.base}/healthz`);
        if (res.ok) break;
      } catch {
        /* not up yet */
      }
      if (Date.now() > deadline) throw new Error(`bridge did not come up: ${bridge.output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  /** The dashboard URL as a user gets it: `agentbridge open --print`. */
  bridge.openPrint = () =>
    new Promise((resolve, reject) => {
      const p = spawn(bin, ['open', '--print', '--addr', `127.0.0.1:${port}`], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      p.stdout.on('data', (b) => (out += b));
      p.stderr.on('data', (b) => (err += b));
      p.on('exit', (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`agentbridge open --print exited ${code}: ${err}`))));
    });
  bridge.stop = async () => {
    const proc = bridge.proc;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(t);
  };
  bridge.cleanup = async () => {
    await bridge.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  /** POSTs publish ops (one or an array) to the push source. */
  bridge.publish = async (ops, source = 'example-push') => {
    const res = await fetch(`${bridge.base}/v1/sources/${source}/publish`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(ops),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`publish: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
  bridge.get = async (p) => {
    const res = await fetch(`${bridge.base}${p}`, { headers: { Authorization: `Bearer ${token}` } });
    if (!res.ok) throw new Error(`GET ${p}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  await bridge.start();
  return bridge;
}

/** Entries of GET /v1/sessions in the client's summary form. */
export function entriesSummary(body) {
  return body.sessions.map((e) => `${e.source}/${e.snapshot.id}:${e.snapshot.status}`).sort();
}
