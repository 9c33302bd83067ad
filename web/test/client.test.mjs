// The client against the real bridge: AGENTBRIDGE_BIN names a built
// `agentbridge` binary (make nodetest builds it). Each test starts its own
// bridge with a push source in a private home.
//
//   go build -o bin/agentbridge ./cmd/agentbridge
//   AGENTBRIDGE_BIN=$PWD/bin/agentbridge node --test web/test/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentBridgeClient, ProblemError } from '../agentbridge-client.js';
import { startBridge, waitFor, recorder, summary, entriesSummary } from './helpers.mjs';

const haveBin = Boolean(process.env.AGENTBRIDGE_BIN);
const skip = haveBin ? false : process.env.CI ? false : 'AGENTBRIDGE_BIN is not set (make nodetest sets it)';
if (!haveBin && process.env.CI) {
  test('AGENTBRIDGE_BIN is set under CI', () => assert.fail('set AGENTBRIDGE_BIN to a built agentbridge binary'));
}

const fast = { initialDelay: 100, maxDelay: 1000 };
const snap = (id, status, extra = {}) => ({ id, harness: 'example-agent', cwd: '/work/app', status, ...extra });

async function setup(t) {
  const bridge = await startBridge();
  t.after(() => bridge.cleanup());
  const client = new AgentBridgeClient({ baseUrl: bridge.base, token: bridge.token, ...fast });
  t.after(() => client.close());
  return { bridge, client };
}

test('the initial reset shows what was published, as GET /v1/sessions has it', { skip }, async (t) => {
  const { bridge, client } = await setup(t);
  await bridge.publish({
    op: 'reset',
    sessions: [
      snap('s-wait', 'waiting', { title: 'Fix tests', waitingFor: 'Approve shell command', pid: 4242, model: 'm1' }),
      snap('s-run', 'running', { subagents: [{ id: 'sub-1', type: 'explore', status: 'running' }] }),
      { id: 's-other', harness: 'other-agent', status: 'idle' },
    ],
  });
  client.start();
  const state = await waitFor(client, (s) => s.connection.state === 'live' && s.sessions.length === 3, 'three sessions');
  const wait = state.sessions.find((s) => s.snapshot.id === 's-wait');
  assert.equal(wait.source, 'example-push');
  assert.equal(wait.snapshot.status, 'waiting');
  assert.equal(wait.snapshot.waitingFor, 'Approve shell command');
  assert.equal(wait.snapshot.pid, 4242);
  assert.deepEqual(state.sessions.find((s) => s.snapshot.id === 's-run').snapshot.subagents, [{ id: 'sub-1', type: 'explore', status: 'running' }]);

  const rest = await bridge.get('/v1/sessions');
  assert.deepEqual(summary(state).sessions, entriesSummary(rest));
  const src = state.sources.find((s) => s.id === 'example-push');
  assert.ok(src, 'the push source is listed');
  assert.deepEqual(
    src.harnesses.map((h) => [h.id, h.enabled]),
    [
      ['example-agent', true],
      ['other-agent', true],
    ],
  );
});

test('upserts, removes, diagnostics and lifecycle events arrive live', { skip }, async (t) => {
  const { bridge, client } = await setup(t);
  client.start();
  await waitFor(client, (s) => s.connection.state === 'live', 'live');
  const rec = recorder(client);

  await bridge.publish({ op: 'upsert', session: snap('s1', 'running', { title: 'Refactor' }) });
  await waitFor(client, (s) => s.sessions.some((x) => x.snapshot.id === 's1'), 'upsert');
  await bridge.publish({ op: 'event', sessionId: 's1', harness: 'example-agent', event: { kind: 'wait.started', waitId: 'w1', state: 'waiting', reason: 'Answer a question' } });
  let st = await waitFor(client, (s) => s.sessions.find((x) => x.snapshot.id === 's1')?.snapshot.status === 'waiting', 'wait.started folded');
  assert.equal(st.sessions.find((x) => x.snapshot.id === 's1').snapshot.waitingFor, 'Answer a question');

  await bridge.publish({ op: 'diagnostic', diagnostic: { code: 'journal-unreadable', message: 'a record was skipped' } });
  st = await waitFor(client, (s) => s.diagnostics.length === 1, 'diagnostic');
  assert.equal(st.diagnostics[0].source, 'example-push');
  assert.equal(st.diagnostics[0].diagnostic.code, 'journal-unreadable');

  await bridge.publish({ op: 'remove', sessionId: 's1' });
  st = await waitFor(client, (s) => s.sessions.length === 0, 'remove');
  assert.ok(rec.changes.some((c) => c.type === 'lifecycle' && c.event.kind === 'wait.started'), 'the lifecycle event is reported');
  assert.equal(st.revision, (await bridge.get('/v1/sessions')).revision, 'the client is at the bridge revision');
});

test('switching a harness off drops its sessions through the reset that follows', { skip }, async (t) => {
  const { bridge, client } = await setup(t);
  await bridge.publish({ op: 'reset', sessions: [snap('keep', 'running'), { id: 'gone', harness: 'other-agent', status: 'waiting', waitingFor: 'input' }] });
  client.start();
  await waitFor(client, (s) => s.sessions.length === 2, 'both sessions');
  const rec = recorder(client);

  await client.setHarness('example-push', 'other-agent', false);
  const st = await waitFor(client, (s) => s.sessions.length === 1, 'the other-agent session gone');
  assert.equal(st.sessions[0].snapshot.id, 'keep');
  const h = st.sources.find((s) => s.id === 'example-push').harnesses.find((x) => x.id === 'other-agent');
  assert.equal(h.enabled, false);
  const types = rec.changes.map((c) => c.type);
  assert.ok(types.includes('harnesses'), `a harnesses event: ${types}`);
  assert.ok(types.includes('reset'), `a reset follows: ${types}`);

  await assert.rejects(
    bridge.publish({ op: 'upsert', session: { id: 'x', harness: 'other-agent', status: 'idle' } }),
    /harness_not_enabled/,
  );
  await client.setHarness('example-push', 'other-agent', true);
  await waitFor(client, (s) => s.sources.find((x) => x.id === 'example-push').harnesses.every((x) => x.enabled), 'switched back on');
  await assert.rejects(client.setHarness('example-push', 'no-such-harness', true), (err) => err instanceof ProblemError && err.status === 404);
});

test('the client resumes after the bridge restarts', { skip }, async (t) => {
  const { bridge, client } = await setup(t);
  await bridge.publish({ op: 'reset', sessions: [snap('before', 'running')] });
  client.start();
  await waitFor(client, (s) => s.sessions.length === 1, 'first run');
  const revBefore = client.state.revision;

  await bridge.stop();
  await waitFor(client, (s) => s.connection.state === 'reconnecting', 'reconnecting');
  await bridge.start();
  // The new run knows nothing of the old session: its reset must clear it.
  await waitFor(client, (s) => s.connection.state === 'live' && s.sessions.length === 0, 'live again, reset applied');
  await bridge.publish({ op: 'upsert', session: snap('after', 'waiting', { waitingFor: 'Approve' }) });
  const st = await waitFor(client, (s) => s.sessions.some((x) => x.snapshot.id === 'after'), 'a session of the new run');
  assert.ok(st.revision > revBefore, `revisions grow across restarts: ${revBefore} → ${st.revision}`);
  assert.deepEqual(summary(st).sessions, entriesSummary(await bridge.get('/v1/sessions')));
});

test('a dropped stream resumes with since and nothing is lost or repeated', { skip }, async (t) => {
  const { bridge, client } = await setup(t);
  await bridge.publish({ op: 'reset', sessions: [snap('a', 'running')] });
  client.start();
  await waitFor(client, (s) => s.sessions.length === 1, 'first reset');
  const rec = recorder(client);
  // Drop the stream and publish while it is being re-opened.
  client.reconnect();
  await bridge.publish({ op: 'upsert', session: snap('b', 'idle') });
  await bridge.publish({ op: 'upsert', session: snap('a', 'idle', { lastTurn: 'completed', lastTurnEndedAt: Date.now() }) });
  const st = await waitFor(client, (s) => s.connection.state === 'live' && s.sessions.length === 2 && s.sessions.every((x) => x.snapshot.status !== 'running'), 'caught up');
  assert.deepEqual(summary(st).sessions, entriesSummary(await bridge.get('/v1/sessions')));
  const applied = rec.changes.filter((c) => c.type === 'upsert').map((c) => c.sessionId);
  assert.deepEqual(applied, ['b', 'a'], 'each missed upsert once, in order');
});

test('a wrong token is refused and not retried', { skip }, async (t) => {
  const bridge = await startBridge();
  t.after(() => bridge.cleanup());
  const client = new AgentBridgeClient({ baseUrl: bridge.base, token: 'not-the-token', ...fast });
  t.after(() => client.close());
  client.start();
  const st = await waitFor(client, (s) => s.connection.state === 'unauthorized', 'unauthorized');
  assert.equal(st.sessions.length, 0);
});

test('the dashboard URL of `agentbridge open --print` trades its token for a cookie the client can use', { skip }, async (t) => {
  const bridge = await startBridge();
  t.after(() => bridge.cleanup());
  const printed = new URL(await bridge.openPrint());
  assert.equal(printed.searchParams.get('token'), bridge.token);
  assert.equal(bridge.output.includes(bridge.token), false, 'serve prints no token to a pipe');

  const res = await fetch(`${bridge.base}${printed.pathname}${printed.search}`, { redirect: 'manual' });
  assert.ok(res.status >= 300 && res.status < 400, `a redirect, got ${res.status}`);
  const location = new URL(res.headers.get('location'), bridge.base);
  assert.equal(location.searchParams.has('token'), false, 'the token is stripped from the URL');
  const cookie = res.headers.get('set-cookie') ?? '';
  assert.match(cookie, /HttpOnly/i);
  assert.match(cookie, /SameSite=Strict/i);
  const pair = cookie.split(';')[0];

  // A browser-like client: no token, only the cookie.
  const withCookie = (url, init = {}) => fetch(url, { ...init, headers: { ...init.headers, Cookie: pair } });
  const client = new AgentBridgeClient({ baseUrl: bridge.base, fetch: withCookie, ...fast });
  t.after(() => client.close());
  await bridge.publish({ op: 'upsert', session: snap('c1', 'waiting', { waitingFor: 'Approve' }) });
  client.start();
  await waitFor(client, (s) => s.connection.state === 'live' && s.sessions.length === 1, 'live with the cookie');
  await client.setHarness('example-push', 'example-agent', false);
  await waitFor(client, (s) => s.sessions.length === 0, 'a cookie may switch harnesses');
});
