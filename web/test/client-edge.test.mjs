// Client behaviour at the protocol's edges, against the in-memory fake
// bridge (the real bridge cannot be made to cut a stream, go silent, or
// answer 204 on demand). The main tests run against the real bridge in
// client.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentBridgeClient } from '../agentbridge-client.js';
import { startFakeBridge } from './fake-bridge.mjs';
import { waitFor, recorder } from './helpers.mjs';

const snap = (id, status, extra = {}) => ({ id, harness: 'example-agent', status, ...extra });
const fast = { initialDelay: 50, maxDelay: 400 };

test('a cut stream resumes with since and replays exactly what it missed', async (t) => {
  let down = false;
  const fb = await startFakeBridge({
    hooks: {
      onRequest(req, res) {
        if (down) res.destroy(); // as if nothing listened
        return down;
      },
    },
  });
  t.after(() => fb.close());
  fb.publish('example-push', { op: 'reset', sessions: [snap('a', 'running')] });
  const client = new AgentBridgeClient({ baseUrl: fb.url, ...fast });
  t.after(() => client.close());
  client.start();
  await waitFor(client, (s) => s.connection.state === 'live' && s.sessions.length === 1, 'first reset');
  const seenRev = client.state.revision;

  const rec = recorder(client);
  // Cut the stream, then change things while the client is away.
  down = true;
  fb.dropStreams();
  await waitFor(client, (s) => s.connection.state === 'reconnecting', 'reconnecting');
  fb.publish('example-push', { op: 'upsert', session: snap('a', 'waiting', { waitingFor: 'Approve' }) });
  fb.publish('example-push', { op: 'upsert', session: snap('b', 'idle') });
  await waitFor(client, (s) => s.connection.attempt >= 2, 'a failed retry');
  down = false;

  await waitFor(client, (s) => s.connection.state === 'live' && s.sessions.length === 2, 'resumed');
  const streams = fb.state.requests.filter((r) => r.url.startsWith('/v1/events'));
  assert.equal(streams.at(-1).url, `/v1/events?since=${seenRev}`);
  const applied = rec.changes.filter((c) => ['reset', 'upsert', 'remove'].includes(c.type));
  assert.deepEqual(
    applied.map((c) => `${c.type}:${c.sessionId ?? ''}`),
    ['upsert:a', 'upsert:b'],
    'only the missed events, no reset, no duplicate',
  );
  const a = client.state.sessions.find((s) => s.snapshot.id === 'a');
  assert.equal(a.snapshot.waitingFor, 'Approve');
  assert.equal(client.state.revision, fb.state.rev);
});

test('a stream that goes silent (no heartbeat) is resumed', async (t) => {
  let silent = true;
  const fb = await startFakeBridge({
    hooks: {
      onRequest(req, res, u) {
        if (u.pathname !== '/v1/events' || !silent) return false;
        silent = false;
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        res.write(`id: ${fb.state.rev}\nevent: reset\ndata: {"source":"example-push","sessions":[]}\n\n`);
        return true; // then nothing, ever: a dead peer after sleep looks like this
      },
    },
  });
  t.after(() => fb.close());
  const client = new AgentBridgeClient({ baseUrl: fb.url, ...fast, idleTimeout: 1000 });
  t.after(() => client.close());
  client.start();
  await waitFor(client, (s) => s.connection.state === 'live', 'live');
  fb.publish('example-push', { op: 'upsert', session: snap('late', 'running') });
  await waitFor(client, (s) => s.sessions.some((x) => x.snapshot.id === 'late'), 'the event sent while silent');
  assert.equal(fb.state.requests.filter((r) => r.url.startsWith('/v1/events')).length, 2);
});

test('answers that end or pause the stream', async (t) => {
  const cases = [
    { name: '401 stops retrying and says unauthorized', status: 401, want: 'unauthorized', retries: false },
    { name: '403 stops retrying and says unauthorized', status: 403, want: 'unauthorized', retries: false },
    { name: '204 means do not reconnect', status: 204, want: 'closed', retries: false },
    { name: '503 is retried', status: 503, want: 'reconnecting', retries: true },
    { name: 'a wrong content type is retried', status: 200, type: 'text/html', want: 'reconnecting', retries: true },
  ];
  for (const c of cases) {
    await t.test(c.name, async (t) => {
      let calls = 0;
      const fb = await startFakeBridge({
        hooks: {
          onRequest(req, res, u) {
            if (u.pathname !== '/v1/events') return false;
            calls++;
            res.writeHead(c.status, c.type ? { 'Content-Type': c.type } : {});
            res.end(c.status === 204 ? undefined : 'no');
            return true;
          },
        },
      });
      t.after(() => fb.close());
      const client = new AgentBridgeClient({ baseUrl: fb.url, ...fast });
      t.after(() => client.close());
      client.start();
      await waitFor(client, (s) => s.connection.state === c.want, c.want);
      if (c.retries) {
        await waitFor(client, () => calls >= 3, 'three attempts');
        assert.ok(client.state.connection.error, 'the reason is kept for display');
      } else {
        await new Promise((r) => setTimeout(r, 300));
        assert.equal(calls, 1, 'no retry');
      }
    });
  }
});

test('a bearer token is sent on every request', async (t) => {
  const fb = await startFakeBridge({ token: 's3cret' });
  t.after(() => fb.close());
  const good = new AgentBridgeClient({ baseUrl: fb.url, token: 's3cret', ...fast });
  t.after(() => good.close());
  good.start();
  await waitFor(good, (s) => s.connection.state === 'live', 'live with the token');
  for (const r of fb.state.requests) assert.equal(r.headers.authorization, 'Bearer s3cret', r.url);
  const bad = new AgentBridgeClient({ baseUrl: fb.url, token: 'wrong', ...fast });
  t.after(() => bad.close());
  bad.start();
  await waitFor(bad, (s) => s.connection.state === 'unauthorized', 'unauthorized with a wrong token');
});

test('time in state: kept while the status holds, exact for live changes', async (t) => {
  let now = 1_000_000;
  const fb = await startFakeBridge();
  t.after(() => fb.close());
  fb.publish('example-push', { op: 'reset', sessions: [snap('a', 'running'), snap('d', 'idle', { lastTurn: 'completed', lastTurnEndedAt: 900_000 })] });
  const client = new AgentBridgeClient({ baseUrl: fb.url, ...fast, now: () => now });
  t.after(() => client.close());
  client.start();
  await waitFor(client, (s) => s.sessions.length === 2, 'reset');
  const get = (id) => client.state.sessions.find((s) => s.snapshot.id === id);
  assert.deepEqual([get('a').since, get('a').sinceExact], [1_000_000, false], 'first seen in a reset: a lower bound');
  assert.deepEqual([get('d').since, get('d').sinceExact], [900_000, true], 'done: the turn end the agent gave');

  now = 1_005_000;
  fb.publish('example-push', { op: 'upsert', session: snap('a', 'running', { title: 'retitled' }) });
  await waitFor(client, () => get('a').snapshot.title === 'retitled', 'retitle');
  assert.equal(get('a').since, 1_000_000, 'same status keeps its start');

  now = 1_009_000;
  fb.publish('example-push', { op: 'upsert', session: snap('a', 'waiting') });
  await waitFor(client, () => get('a').snapshot.status === 'waiting', 'waiting');
  assert.deepEqual([get('a').since, get('a').sinceExact], [1_009_000, true]);
});

test('close releases the connection and timers', async (t) => {
  const fb = await startFakeBridge();
  t.after(() => fb.close());
  const client = new AgentBridgeClient({ baseUrl: fb.url, ...fast });
  client.start();
  await waitFor(client, (s) => s.connection.state === 'live', 'live');
  client.close();
  assert.equal(client.state.connection.state, 'closed');
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(fb.state.clients.size, 0, 'the stream is closed on the server side');
});

test('an ended session: shown ended from entry.ended, live and after a reload', async (t) => {
  const fb = await startFakeBridge();
  t.after(() => fb.close());
  fb.publish('example-push', { op: 'reset', sessions: [snap('a', 'running', { pid: 7, cwd: '/w', tool: 'Bash' }), snap('b', 'idle', { lastTurn: 'failed', lastTurnEndedAt: 5, error: 'quota exceeded' })] });
  const client = new AgentBridgeClient({ baseUrl: fb.url, ...fast });
  t.after(() => client.close());
  client.start();
  await waitFor(client, (s) => s.sessions.length === 2, 'reset');
  const get = (c, id) => c.state.sessions.find((s) => s.snapshot.id === id);
  assert.equal(get(client, 'a').status, 'running');
  assert.equal(get(client, 'b').status, 'done', 'idle with a finished turn is done');

  fb.publish('example-push', { op: 'end', sessionId: 'a', ended: { at: 1_700_000_000_000, exitCode: 0 } });
  await waitFor(client, () => get(client, 'a').status === 'ended', 'the end');
  assert.deepEqual(get(client, 'a').ended, { at: 1_700_000_000_000, exitCode: 0 });
  assert.equal(get(client, 'a').since, 1_700_000_000_000, 'ended since its end');
  assert.equal(get(client, 'a').snapshot.status, 'idle');

  // A page loaded now sees the same, from the reset.
  const late = new AgentBridgeClient({ baseUrl: fb.url, ...fast });
  t.after(() => late.close());
  late.start();
  await waitFor(late, (s) => s.sessions.length === 2, 'the late reset');
  assert.equal(get(late, 'a').status, 'ended');
  assert.deepEqual(get(late, 'a').ended, { at: 1_700_000_000_000, exitCode: 0 });
  assert.equal(get(late, 'b').status, 'done');
});

test('answer posts the decision to the wait, and a closed wait rejects with its state', async (t) => {
  const posted = [];
  const fb = await startFakeBridge({
    hooks: {
      onRequest(req, res, u) {
        if (!u.pathname.endsWith('/answer')) return false;
        let body = '';
        req.on('data', (c) => (body += c));
        req.on('end', () => {
          posted.push({ path: u.pathname, type: req.headers['content-type'], body: JSON.parse(body) });
          const closed = posted.length > 1;
          res.writeHead(closed ? 409 : 200, { 'Content-Type': closed ? 'application/problem+json' : 'application/json' });
          res.end(JSON.stringify(closed ? { title: 'The wait is closed', status: 409, state: 'answered' } : { waitId: 'w1', state: 'answered', decision: 'deny' }));
        });
        return true;
      },
    },
  });
  t.after(() => fb.close());
  const client = new AgentBridgeClient({ baseUrl: fb.url, ...fast });
  t.after(() => client.close());
  const ok = await client.answer('claude-code', 'a/b c', 'w1', 'deny', 'not on a Friday');
  assert.deepEqual(ok, { waitId: 'w1', state: 'answered', decision: 'deny' });
  assert.deepEqual(posted[0], {
    path: '/v1/sessions/claude-code/a%2Fb%20c/waits/w1/answer',
    type: 'application/json',
    body: { decision: 'deny', message: 'not on a Friday' },
  });
  await assert.rejects(client.answer('claude-code', 'a/b c', 'w1', 'allow'), (err) => err.status === 409 && err.problem.state === 'answered');
  assert.deepEqual(posted[1].body, { decision: 'allow' }, 'no message with allow');
});
