// The runtime against the real bridge (AGENTBRIDGE_BIN) and a recording fake
// host: what Terminay would be shown, and every publication rule.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { createBridgeSource, contribution, MAX_RESET_SESSIONS } from '../src/extension.js';
import { hostSessionId, hostSnapshot, NOT_SHOWN_CODE } from '../src/source.js';
import { TestBridge, bridgeBinary, freeAddr, snap, waitFor } from '../testkit/bridge.js';
import { TerminayHost } from '../testkit/host.js';
import { validateAgentSessionSnapshot } from '../src/rules.js';

const HARNESSES = contribution.harnesses.map((/** @type {{ id: string }} */ h) => h.id);
const skip = bridgeBinary() ? false : 'no agentbridge binary: run `make build` or set AGENTBRIDGE_BIN';
const fast = { min: 20, max: 200 };

/**
 * Starts a bridge, cleaned up after the test.
 * @param {import('node:test').TestContext} t
 * @param {{ addr?: string, token?: string }} [opts]
 */
async function bridge(t, opts) {
  const b = new TestBridge(opts);
  t.after(() => b.close());
  await b.start();
  return b;
}

/**
 * Starts the runtime for a fake host; the host is aborted after the test.
 * @param {import('node:test').TestContext} t
 * @param {{ addr: string, token: string }} b
 * @param {readonly string[]} enabled
 */
async function run(t, b, enabled) {
  const host = new TerminayHost({ harnesses: HARNESSES, enabled });
  /** @type {string[]} every request the runtime made */
  const requests = [];
  /** @type {() => void} */
  let stopped = () => {};
  const stoppedP = new Promise((resolve) => (stopped = () => resolve(undefined)));
  const runtime = createBridgeSource({
    harnesses: HARNESSES,
    addr: b.addr,
    token: b.token,
    env: {},
    backoff: fast,
    connectTimeout: 5_000,
    paceWindow: 300,
    onStopped: stopped,
    trace: (r) => requests.push(r),
  });
  t.after(async () => {
    host.abort();
    await stoppedP;
  });
  await host.start(runtime);
  return { host, stopped: stoppedP, requests };
}


/**
 * Waits until the host shows exactly what the bridge has.
 * @param {TerminayHost} host
 * @param {TestBridge} b
 */
async function converged(host, b) {
  /** @type {Map<string, any>} */
  let want = new Map();
  await waitFor(async () => {
    want = await b.hostReady(host.enabled);
    return JSON.stringify([...host.sessions].sort()) === JSON.stringify([...want].sort());
  }, 'the host to show what the bridge has').catch((err) => {
    assert.deepEqual(Object.fromEntries(host.sessions), Object.fromEntries(want), err.message);
  });
  assert.deepEqual(host.violations, []);
}

test('a reset after start, then the stream as upserts, removes and diagnostics', { skip }, async (t) => {
  const b = await bridge(t);
  await b.publish([{ op: 'reset', sessions: [snap('a'), snap('b', 'codex', { cwd: '/work/b' })] }]);
  const { host, requests } = await run(t, b, ['example-agent', 'codex']);

  assert.equal(host.calls[0].op, 'reset', 'the first call is the reset');
  assert.deepEqual(
    /** @type {any} */ (host.calls[0]).sessions.map((/** @type {any} */ s) => s.id).sort(),
    ['a', 'b'],
  );
  await converged(host, b);

  await b.publish([{ op: 'upsert', session: snap('c', 'example-agent', { status: 'waiting', waitingFor: 'Approve shell command' }) }]);
  await waitFor(() => host.sessions.get('c')?.status === 'waiting', 'upsert of c');

  await b.publish([{ op: 'remove', sessionId: 'a' }]);
  await waitFor(() => !host.sessions.has('a'), 'remove of a');

  // A lifecycle event reaches the host as the snapshot it produces, never as
  // an event of its own.
  await b.publish([{ op: 'event', sessionId: 'd', harness: 'example-agent', event: { kind: 'session.started', title: 'Fresh', pid: 4242, cwd: '/work/d' } }]);
  await b.publish([{ op: 'event', sessionId: 'd', event: { kind: 'turn.started', turnId: 't1' } }]);
  await waitFor(() => host.sessions.get('d')?.status === 'running', 'the folded snapshot of d');
  assert.equal(host.sessions.get('d').title, 'Fresh');

  await b.publish([{ op: 'diagnostic', diagnostic: { code: 'watch-failed', message: 'the journal watch failed' } }]);
  await waitFor(() => host.diagnostics('watch-failed').length === 1, 'the diagnostic');

  await converged(host, b);
  assert.equal(host.count('reset'), 1, 'no reset but the one after start');
  assert.deepEqual(
    requests.filter((r) => r.endsWith('/v1/sessions') || r.endsWith('/v1/events')),
    ['GET /v1/sessions', 'GET /v1/events'],
    'one listing and one stream: every change came through the stream',
  );
  for (const c of host.calls) assert.ok(['reset', 'upsert', 'remove', 'diagnostic'].includes(c.op));
});

test('more than 1,024 sessions: a full reset, then upserts for the rest, never over a cap', { skip }, async (t) => {
  const b = await bridge(t);
  const first = Array.from({ length: 1000 }, (_, i) => snap(`s${i}`));
  const more = Array.from({ length: 300 }, (_, i) => ({ op: 'upsert', session: snap(`u${i}`, 'codex') }));
  await b.publish([{ op: 'reset', sessions: first }, ...more]);
  const { host } = await run(t, b, ['example-agent', 'codex']);

  const reset = /** @type {any} */ (host.calls[0]);
  assert.equal(reset.op, 'reset');
  assert.equal(reset.sessions.length, MAX_RESET_SESSIONS);
  await converged(host, b);
  assert.equal(host.sessions.size, 1300);
  assert.equal(host.calls.slice(1).filter((c) => c.op === 'upsert').length, 1300 - MAX_RESET_SESSIONS);
  assert.ok(host.max.reset <= MAX_RESET_SESSIONS && host.max.upserts <= MAX_RESET_SESSIONS, JSON.stringify(host.max));

  // A harness change resets again, under the same bound.
  host.setEnabled(['example-agent']);
  await host.waitFor(() => host.count('reset') === 2, 'the reset after the switch');
  const second = /** @type {any} */ (host.calls.findLast((c) => c.op === 'reset'));
  assert.ok(second.sessions.length > 0 && second.sessions.length <= MAX_RESET_SESSIONS);
  await converged(host, b);
  assert.equal(host.sessions.size, 1000);
});

test('a switched-off harness is never shown, and the switch reaches the bridge', { skip }, async (t) => {
  const b = await bridge(t);
  await b.publish([{ op: 'reset', sessions: [snap('e1'), snap('c1', 'codex')] }]);
  const { host } = await run(t, b, ['example-agent']);

  await host.waitFor(() => host.sessions.size === 1, 'the reset to apply');
  assert.deepEqual([...host.sessions.keys()], ['e1']);
  await waitFor(async () => (await b.switches()).codex === false, 'codex switched off in the bridge');
  assert.equal((await b.switches())['example-agent'], true);

  // The user switches codex on: a reset at once, the bridge is told, and
  // codex sessions published from then on are shown.
  const before = host.count('reset');
  host.setEnabled(['example-agent', 'codex']);
  assert.equal(host.count('reset'), before + 1, 'a reset right after the change');
  await waitFor(async () => (await b.switches()).codex === true, 'codex switched on in the bridge');
  await b.publish([{ op: 'upsert', session: snap('c2', 'codex') }]);
  await waitFor(() => host.sessions.has('c2'), 'the codex session');
  await converged(host, b);

  // And off again: its sessions go at once, nothing of it comes after.
  host.setEnabled(['example-agent']);
  assert.ok(![...host.sessions.values()].some((s) => s.harness === 'codex'));
  await waitFor(async () => (await b.switches()).codex === false, 'codex switched off again');
  await b.publish([{ op: 'upsert', session: snap('e2') }]);
  await waitFor(() => host.sessions.has('e2'), 'the next example-agent session');
  await converged(host, b);
});

test('resumes after the bridge restarts', { skip }, async (t) => {
  const b = await bridge(t);
  await b.publish([{ op: 'reset', sessions: [snap('old1'), snap('old2')] }]);
  const { host } = await run(t, b, ['example-agent', 'codex']);
  await converged(host, b);

  await b.stop();
  await b.start(); // same address and token; a new run knows nothing yet
  await b.publish([{ op: 'reset', sessions: [snap('old2', 'example-agent', { status: 'idle', lastTurn: 'completed', lastTurnEndedAt: 1_700_000_000_000 }), snap('new1', 'codex')] }]);
  await converged(host, b);
  assert.equal(host.sessions.get('old2').status, 'idle');
  assert.equal(host.sessions.get('old2').lastTurn, 'completed');
  assert.ok(!host.sessions.has('old1'), 'a session the new run does not know is removed');

  // The stream is followed again: live changes keep coming.
  await b.publish([{ op: 'upsert', session: snap('new2') }]);
  await waitFor(() => host.sessions.has('new2'), 'a live upsert after the restart');
  await converged(host, b);
});

test('no bridge at start: an empty reset and a diagnostic, then the sessions once it runs', { skip }, async (t) => {
  const addr = await freeAddr();
  const b = new TestBridge({ addr });
  t.after(() => b.close());
  const { host } = await run(t, b, ['example-agent']);
  assert.deepEqual(host.calls[0], { op: 'reset', sessions: [] });
  const diag = host.diagnostics('bridge-unavailable');
  assert.equal(diag.length, 1);
  assert.match(/** @type {any} */ (diag[0]).message, new RegExp(addr.replace(/\./g, '\\.')));

  await b.start();
  await b.publish([{ op: 'reset', sessions: [snap('late')] }]);
  await waitFor(() => host.sessions.has('late'), 'the session of the bridge started late');
  assert.equal(host.diagnostics('bridge-unavailable').length, 1, 'the outage is reported once');
  await converged(host, b);
});

test('a wrong token is reported, not retried silently', { skip }, async (t) => {
  const b = await bridge(t);
  const { host } = await run(t, { addr: b.addr, token: 'wrong-token-0123456789' }, ['example-agent']);
  assert.deepEqual(host.calls[0], { op: 'reset', sessions: [] });
  const d = host.diagnostics('bridge-unauthorized');
  assert.equal(d.length, 1);
  assert.ok(!/** @type {any} */ (d[0]).message.includes('wrong-token'), 'the message does not show the token');
});

test('a session Terminay cannot take is not published, is counted, and stops nothing', { skip }, async (t) => {
  const b = await bridge(t);
  const { host, requests } = await run(t, b, ['example-agent']);
  // No pid: the host would refuse it, and every valid snapshot beside it.
  await b.publish([{ op: 'upsert', session: snap('bad', 'example-agent', { pid: undefined }) }, { op: 'upsert', session: snap('good') }]);
  await host.waitFor(() => host.sessions.has('good'), 'the session beside the unpublishable one');
  assert.ok(!host.sessions.has('bad'));
  await host.waitFor(() => host.diagnostics(NOT_SHOWN_CODE).length === 1, 'the count of what is not shown');
  assert.equal(host.diagnostics(NOT_SHOWN_CODE)[0].message, '1 agentbridge session is not shown: 1 with no process bound');
  assert.equal(requests.filter((r) => r === 'GET /v1/events').length, 1, 'the stream was not reconnected');

  // Once it has a process, it is shown.
  await b.publish([{ op: 'upsert', session: snap('bad', 'example-agent', { status: 'waiting', waitingFor: 'Approve' }) }]);
  await host.waitFor(() => host.sessions.get('bad')?.status === 'waiting', 'the session once it is host-ready');
  await converged(host, b);
});

test('abort releases the stream and the subscription; later calls are ignored', { skip }, async (t) => {
  const b = await bridge(t);
  await b.publish([{ op: 'reset', sessions: [snap('a')] }]);
  const { host, stopped } = await run(t, b, ['example-agent']);
  await waitFor(async () => (await b.metric('agentbridge_stream_clients')) === 1, 'the bridge to see the stream');

  host.abort();
  await stopped;
  await waitFor(async () => (await b.metric('agentbridge_stream_clients')) === 0, 'the bridge to see the stream closed');
  assert.equal(host.listeners.size, 0, 'the harness subscription is disposed');
  assert.equal(host.disposed, 1);

  const calls = host.calls.length;
  await b.publish([{ op: 'upsert', session: snap('after') }]);
  host.setEnabled(['example-agent', 'codex']); // no listener is left to hear it
  await new Promise((r) => setTimeout(r, 100)); // a stream still open would deliver by now
  assert.equal(host.calls.length, calls, 'nothing is published after abort');
  assert.equal(host.callsAfterAbort, 0, 'the runtime itself makes no calls after abort');
});

test('an already aborted signal: nothing is published', { skip }, async (t) => {
  const b = await bridge(t);
  const controller = new AbortController();
  controller.abort();
  /** @type {string[]} */
  const calls = [];
  let listeners = 0;
  let stopped = false;
  const runtime = createBridgeSource({ harnesses: HARNESSES, addr: b.addr, token: b.token, env: {}, onStopped: () => (stopped = true) });
  const record = (/** @type {string} */ op) => () => calls.push(op);
  await runtime.start({
    enabledHarnesses: ['example-agent'],
    publisher: { reset: record('reset'), upsert: record('upsert'), remove: record('remove'), diagnostic: record('diagnostic') },
    signal: controller.signal,
    onEnabledHarnessesChanged: () => {
      listeners++;
      return { dispose: () => listeners-- };
    },
  });
  assert.ok(stopped);
  assert.deepEqual(calls, []);
  assert.equal(listeners, 0);
});

test('sessions of a remote keep their ids distinct per host', { skip }, async (t) => {
  const devbox = await bridge(t);
  await devbox.publish([{ op: 'reset', sessions: [snap('a'), snap('r', 'codex')] }]);
  const b = new TestBridge({ remotes: [{ id: 'devbox', bridge: devbox }] });
  t.after(() => b.close());
  await b.start();
  await b.publish([{ op: 'reset', sessions: [snap('a')] }]);
  const { host } = await run(t, b, ['example-agent', 'codex']);

  // The same id on two machines is two sessions: the remote's is <id>@<host>.
  await waitFor(() => host.sessions.has('a') && host.sessions.has('a@devbox') && host.sessions.has('r@devbox'), 'the remote sessions');
  await devbox.publish([{ op: 'upsert', session: snap('a', 'example-agent', { status: 'waiting', waitingFor: 'Approve' }) }]);
  await waitFor(() => host.sessions.get('a@devbox')?.status === 'waiting', 'the remote upsert');
  assert.equal(host.sessions.get('a').status, 'running', 'the local session is untouched');
  // A remote's reset replaces its own sessions only.
  await devbox.publish([{ op: 'reset', sessions: [] }]);
  await waitFor(() => !host.sessions.has('a@devbox') && !host.sessions.has('r@devbox'), 'the remote reset');
  assert.ok(host.sessions.has('a'), 'the local session stays');
});

test("hostSessionId: <id>@<host>, never over the host's 256 UTF-16 units", () => {
  assert.equal(hostSessionId('a', undefined), 'a');
  assert.equal(hostSessionId('a', ''), 'a');
  assert.equal(hostSessionId('a', 'devbox'), 'a@devbox');
  assert.equal(hostSessionId('x'.repeat(249), 'devbox'), `${'x'.repeat(249)}@devbox`);
  assert.equal(hostSessionId('x'.repeat(250), 'devbox'), undefined);
});

test('hostSnapshot: host-ready sessions only, bounded text, never a cut id', () => {
  const declared = new Set(['codex', 'claude-code']);
  const base = { id: 's1', harness: 'codex', pid: 4242, cwd: '/work/app' };
  const emoji = '🙂';
  /** @param {Record<string, unknown>} snapshot @param {unknown} [ended] */
  const e = (snapshot, ended) => ({ source: 'codex', host: '', snapshot: { ...base, status: 'running', ...snapshot }, ended: ended !== undefined });
  assert.deepEqual(hostSnapshot('s1', e({ pid: undefined }), declared), { reason: 'no-process' });
  assert.deepEqual(hostSnapshot('s1', e({ cwd: undefined }), declared), { reason: 'no-cwd' });
  assert.deepEqual(hostSnapshot('s1', e({}, { at: 1 }), declared), { reason: 'ended' });
  assert.deepEqual(hostSnapshot('s1', e({ status: 'exited' }), declared), { reason: 'ended' });
  assert.deepEqual(hostSnapshot('s1', e({ pid: 2 ** 31 }), declared), { reason: 'no-process' });
  assert.deepEqual(hostSnapshot('x'.repeat(257), e({}), declared), { reason: 'invalid' });

  const r = hostSnapshot('s1', e({ title: emoji.repeat(600), tool: 'Bash', error: 'e'.repeat(2000), lastTurn: 'cancelled', subagents: [{ id: 'a', status: 'running' }, { id: 'b', parentId: 'a', type: 'Plan', status: 'completed' }] }), declared);
  assert.ok('snapshot' in r);
  const s = /** @type {any} */ (r).snapshot;
  assert.equal(s.title, emoji.repeat(256));
  assert.equal(s.error.length, 1024);
  assert.equal(s.lastTurn, 'interrupted');
  assert.deepEqual(s.subagents, [{ id: 'a', type: 'subagent', status: 'running' }, { id: 'b', parentId: 'a', type: 'Plan', status: 'completed' }]);
  assert.ok(validateAgentSessionSnapshot(s, declared).ok);
});
