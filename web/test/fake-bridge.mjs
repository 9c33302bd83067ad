// A small in-memory stand-in for the bridge's stream protocol (docs/contract.md sections 3 and 4),
// used to test client behaviour the real bridge cannot be made to show on
// demand (CR line endings, a cut stream, a 204, a wrong content type) and
// to preview the page while developing:
//
//   node web/test/fake-bridge.mjs --serve 7399    # then open http://127.0.0.1:7399/
//
// (node --test runs every file in web/test/; without --serve this one does nothing.)
//
// The real bridge is what web/test/client.test.mjs runs against.

import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const STATIC = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'static');
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };

/** Starts a fake bridge; resolves {url, port, state, publish, close, server}. */
export async function startFakeBridge({ port = 0, token = null, sources, hooks = {} } = {}) {
  const state = {
    rev: Date.now() * 1000,
    ring: [], // {rev, name, data}
    sessions: new Map(), // source → Map(id → snapshot)
    diagnostics: [],
    sources: sources ?? [
      {
        id: 'example-push',
        displayName: 'Example Agent',
        push: true,
        environmentVariables: [],
        observes: { waiting: 'observed' },
        harnesses: [
          { id: 'example-agent', displayName: 'Example Agent', enabled: true },
          { id: 'other-agent', displayName: 'Other Agent', enabled: true },
        ],
      },
    ],
    clients: new Set(),
    requests: [],
  };
  for (const s of state.sources) state.sessions.set(s.id, new Map());
  /** @type {Map<string, object>} source + NUL + id -> the entry's ended */
  state.ended = new Map();
  const endedOf = (src, id) => state.ended.get(`${src}\u0000${id}`);
  const endedMap = (src) => {
    const out = {};
    for (const id of state.sessions.get(src).keys()) if (endedOf(src, id)) out[id] = endedOf(src, id);
    return Object.keys(out).length ? { ended: out } : {};
  };

  const record = (name, data) => {
    const r = { rev: ++state.rev, name, data: JSON.stringify(data) };
    state.ring.push(r);
    if (state.ring.length > 1000) state.ring.shift();
    for (const c of state.clients) c.send(r);
    return r;
  };
  const enabled = (src) => state.sources.find((s) => s.id === src).harnesses.filter((h) => h.enabled).map((h) => h.id);
  const resetData = (src) => ({ source: src, sessions: [...state.sessions.get(src).values()], ...endedMap(src) });
  const resetRecord = (src) => record('reset', resetData(src));

  /** Applies one publish op the way the hub would. */
  const publish = (src, op) => {
    const m = state.sessions.get(src);
    switch (op.op) {
      case 'reset':
        m.clear();
        for (const s of op.sessions) m.set(s.id, s);
        return resetRecord(src);
      case 'upsert':
        m.set(op.session.id, op.session);
        state.ended.delete(`${src}\u0000${op.session.id}`);
        return record('upsert', { source: src, snapshot: op.session });
      case 'end': {
        // The session's process is gone: it lingers, idle, with its end
        // beside the snapshot (entry.ended), as the bridge keeps it.
        const snap = { ...m.get(op.sessionId), status: 'idle' };
        delete snap.waitingFor;
        delete snap.tool;
        m.set(op.sessionId, snap);
        state.ended.set(`${src}\u0000${op.sessionId}`, op.ended);
        return record('upsert', { source: src, snapshot: snap, ended: op.ended });
      }
      case 'remove':
        m.delete(op.sessionId);
        return record('remove', { source: src, sessionId: op.sessionId });
      case 'diagnostic': {
        const r = record('diagnostic', { source: src, diagnostic: op.diagnostic });
        state.diagnostics.push({ source: src, revision: r.rev, diagnostic: op.diagnostic, at: Date.now() });
        return r;
      }
      default:
        throw new Error(`fake bridge: op ${op.op}`);
    }
  };

  const server = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://x');
    state.requests.push({ method: req.method, url: u.pathname + u.search, headers: req.headers });
    if (hooks.onRequest?.(req, res, u)) return;
    const json = (status, body) => {
      res.writeHead(status, { 'Content-Type': status >= 400 ? 'application/problem+json' : 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (u.pathname.startsWith('/v1/') && token && req.headers.authorization !== `Bearer ${token}` && !String(req.headers.cookie).includes(`agentbridge_token=${token}`)) {
      return json(401, { type: 'about:blank', title: 'Unauthorized', status: 401, detail: 'missing or wrong token' });
    }
    if (u.pathname === '/v1/sources') return json(200, { sources: state.sources });
    if (u.pathname === '/v1/diagnostics') return json(200, { diagnostics: state.diagnostics });
    if (u.pathname === '/v1/sessions') {
      const sessions = [];
      for (const [source, m] of state.sessions) for (const snapshot of m.values()) sessions.push({ source, snapshot, ...(endedOf(source, snapshot.id) ? { ended: endedOf(source, snapshot.id) } : {}) });
      return json(200, { revision: state.rev, sessions });
    }
    let m = u.pathname.match(/^\/v1\/sources\/([a-z0-9-]+)\/harnesses\/([a-z0-9-]+)$/);
    if (m && req.method === 'POST') {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const src = state.sources.find((s) => s.id === m[1]);
        const h = src?.harnesses.find((x) => x.id === m[2]);
        if (!h) return json(404, { title: 'Not Found', status: 404, detail: 'unknown harness' });
        h.enabled = JSON.parse(body).enabled;
        record('harnesses', { source: src.id, enabledHarnesses: enabled(src.id) });
        const sm = state.sessions.get(src.id);
        for (const [id, s] of sm) if (s.harness === h.id && !h.enabled) sm.delete(id);
        resetRecord(src.id);
        json(200, { ...h });
      });
      return;
    }
    m = u.pathname.match(/^\/v1\/sources\/([a-z0-9-]+)\/publish$/);
    if (m && req.method === 'POST') {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const ops = [].concat(JSON.parse(body));
        for (const op of ops) publish(m[1], op);
        json(200, { revision: state.rev });
      });
      return;
    }
    if (u.pathname === '/v1/events') {
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store' });
      const send = (r) => res.write(`id: ${r.rev}\nevent: ${r.name}\ndata: ${r.data}\n\n`);
      res.write('retry: 300\n\n');
      const since = u.searchParams.get('since') ?? req.headers['last-event-id'];
      const first = state.ring[0];
      if (since && first && Number(since) >= first.rev - 1 && Number(since) <= state.rev) {
        for (const r of state.ring) if (r.rev > Number(since)) send(r);
      } else {
        for (const src of state.sources) send({ rev: state.rev, name: 'reset', data: JSON.stringify(resetData(src.id)) });
      }
      const c = { send, res };
      state.clients.add(c);
      const ping = setInterval(() => res.write(': ping\n\n'), 15000);
      req.on('close', () => {
        clearInterval(ping);
        state.clients.delete(c);
      });
      return;
    }
    if (req.method === 'GET') {
      const file = u.pathname === '/' ? 'index.html' : u.pathname.slice(1);
      const p = path.join(STATIC, path.normalize(file));
      if (p.startsWith(STATIC) && fs.existsSync(p) && fs.statSync(p).isFile()) {
        res.writeHead(200, { 'Content-Type': TYPES[path.extname(p)] ?? 'application/octet-stream' });
        return res.end(fs.readFileSync(p));
      }
    }
    json(404, { title: 'Not Found', status: 404 });
  });
  await new Promise((r) => server.listen(port, '127.0.0.1', r));
  const actual = server.address().port;
  return {
    url: `http://127.0.0.1:${actual}`,
    port: actual,
    state,
    server,
    publish,
    /** Cuts every open stream, as a crashing bridge would. */
    dropStreams() {
      for (const c of state.clients) c.res.destroy();
      state.clients.clear();
    },
    close() {
      for (const c of state.clients) c.res.destroy();
      server.closeAllConnections?.();
      return new Promise((r) => server.close(r));
    },
  };
}

// Run directly: a preview with sample sessions that change every few seconds.
if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--serve') {
  const port = Number(process.argv[3] ?? 7399);
  const fb = await startFakeBridge({ port });
  const now = Date.now();
  fb.publish('example-push', {
    op: 'reset',
    sessions: [
      { id: 'sess-1', harness: 'example-agent', pid: 4012, cwd: '/home/ana/src/payments', title: 'Fix flaky settlement tests', model: 'example-large', status: 'waiting', waitingFor: 'Approve shell command: make test', tool: 'Bash', lastTurn: 'completed', lastTurnEndedAt: now - 600000, subagents: [{ id: 'sub-1', type: 'explore', title: 'Find callers of settle()', status: 'running' }, { id: 'sub-3', parentId: 'sub-1', type: 'grep', status: 'running' }, { id: 'sub-2', type: 'review', status: 'completed' }] },
      { id: 'sess-2', harness: 'example-agent', pid: 4077, cwd: '/home/ana/src/payments', title: 'Refactor ledger export', model: 'example-large', status: 'running' },
      { id: 'sess-3', harness: 'other-agent', pid: 5120, cwd: '/home/ana/src/site', title: 'Update landing page copy', model: 'other-mini', status: 'idle', lastTurn: 'completed', lastTurnEndedAt: now - 125000 },
      { id: 'sess-4', harness: 'other-agent', cwd: '/home/ana/src/site', title: 'Migrate CI to new runners', status: 'blocked', waitingFor: 'Rate limit reached; retry after 14:05', lastTurn: 'failed', lastTurnEndedAt: now - 30000, error: 'API error 429: rate limit reached' },
      { id: 'b7f1c2e0-51aa-4c55-9d1e-2f8a5e7d9c01', harness: 'example-agent', pid: 3999, cwd: '/home/ana/notes', status: 'idle' },
      { id: 'sess-6', harness: 'other-agent', cwd: '/home/ana/src/site', title: 'Old investigation', status: 'idle', lastTurn: 'interrupted', lastTurnEndedAt: now - 7200000 },
    ],
  });
  fb.publish('example-push', { op: 'diagnostic', diagnostic: { code: 'journal-unreadable', message: 'one journal record could not be parsed and was skipped' } });
  let flip = false;
  setInterval(() => {
    flip = !flip;
    fb.publish('example-push', { op: 'upsert', session: { id: 'sess-2', harness: 'example-agent', pid: 4077, cwd: '/home/ana/src/payments', title: 'Refactor ledger export', model: 'example-large', status: flip ? 'waiting' : 'running', ...(flip ? { waitingFor: 'Answer a question: keep CSV format?' } : {}) } });
  }, 8000).unref();
  console.log(`fake bridge on ${fb.url}/`);
}
