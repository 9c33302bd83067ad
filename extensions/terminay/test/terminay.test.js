// Done-when: the installed extension, run the way Terminay runs it (the
// installer's manifest checks, a child process with only the declared
// environment, the child's batching publisher, the host's whole-batch
// validation and acknowledgements: testkit/host.js), against a live bridge
// (AGENTBRIDGE_BIN) whose sessions are in every state a user meets. The host
// must refuse nothing and hold exactly the bridge's host-ready sessions.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { NOT_SHOWN_CODE } from '../src/source.js';
import { TestBridge, bridgeBinary, snap } from '../testkit/bridge.js';
import { ForkedExtension, PACKAGE_DIR } from '../testkit/host.js';

const skip = bridgeBinary() ? false : 'no agentbridge binary: run `make build` or set AGENTBRIDGE_BIN';
const BOTH = ['example-agent', 'codex'];
/** A generous bound on one change reaching the host (an event wait, not a timing claim). */
const CHANGE = 3_000;

/**
 * A bridge and the extension installed against it.
 * @param {import('node:test').TestContext} t
 */
async function setup(t) {
  const b = new TestBridge();
  t.after(() => b.close());
  await b.start();
  const home = mkdtempSync(join(tmpdir(), 'terminay-home-'));
  t.after(() => rmSync(home, { recursive: true, force: true }));
  const ext = new ForkedExtension({
    packageDir: PACKAGE_DIR,
    serverEnv: {
      AGENTBRIDGE_ADDR: b.addr,
      AGENTBRIDGE_TOKEN: b.token,
      HOME: home,
      XDG_STATE_HOME: join(home, 'state'),
      PATH: process.env.PATH,
      AGENTBRIDGE_UNDECLARED: 'never passed',
    },
  });
  t.after(() => ext.stop());
  return { b, ext };
}

/**
 * Waits until the host holds exactly the bridge's host-ready sessions, field
 * by field, and has refused nothing.
 * @param {ForkedExtension} ext
 * @param {TestBridge} b
 */
async function converged(ext, b) {
  /** @type {Map<string, any>} */
  let want = new Map();
  const deadline = Date.now() + 15_000;
  for (;;) {
    want = await b.hostReady(ext.enabled);
    const have = Object.fromEntries([...ext.sessions].sort(([a], [c]) => a.localeCompare(c)));
    const wantObj = Object.fromEntries([...want].sort(([a], [c]) => a.localeCompare(c)));
    if (JSON.stringify(have) === JSON.stringify(wantObj)) break;
    if (Date.now() > deadline) {
      assert.deepEqual(have, wantObj, 'the host holds the bridge host-ready sessions');
      break;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.deepEqual(ext.violations, [], 'the host refused nothing');
  return want;
}

/**
 * Push events for one session (the bridge folds them as it folds journals).
 * @param {TestBridge} b
 * @param {string} id
 * @param {string} harness
 * @param {Array<Record<string, unknown>>} events
 */
function events(b, id, harness, events) {
  return b.publish(events.map((event, i) => ({ op: 'event', sessionId: id, ...(i === 0 ? { harness } : {}), event })));
}

// A title at the host's limit, all surrogate pairs (the bridge refuses
// longer ones on its push intake; its journal sources bound them the same way).
const emojiTitle = `S${'🚀'.repeat(255)}`;

test('every state a user meets: the host takes all of it and holds what the bridge has', { skip }, async (t) => {
  const { b, ext } = await setup(t);
  const start = (/** @type {string} */ id, /** @type {Record<string, unknown>} */ extra = {}) => ({ kind: 'session.started', title: `Session ${id}`, pid: 4242, cwd: `/work/${id}`, ...extra });
  await events(b, 'tool', 'example-agent', [start('tool'), { kind: 'turn.started', turnId: 't1' }, { kind: 'tool.started', toolId: 'u1', name: 'Bash' }]);
  await events(b, 'wait', 'codex', [start('wait'), { kind: 'turn.started', turnId: 't1' }, { kind: 'wait.started', waitId: 'w1', state: 'waiting', reason: 'Approve shell command: make test' }]);
  await events(b, 'block', 'example-agent', [start('block'), { kind: 'turn.started', turnId: 't1' }, { kind: 'wait.started', waitId: 'w1', state: 'blocked', reason: 'Rate limit reached' }]);
  await events(b, 'ok', 'example-agent', [start('ok'), { kind: 'turn.started', turnId: 't1' }, { kind: 'agent.done', outcome: 'success' }]);
  await events(b, 'fail', 'codex', [start('fail'), { kind: 'turn.started', turnId: 't1' }, { kind: 'agent.done', outcome: 'error', summary: 'API error 429: quota exceeded' }]);
  await events(b, 'int', 'example-agent', [start('int'), { kind: 'turn.started', turnId: 't1' }, { kind: 'agent.done', outcome: 'cancelled' }]);
  await events(b, 'gone', 'example-agent', [start('gone'), { kind: 'turn.started', turnId: 't1' }, { kind: 'agent.exited', exitCode: 0 }]);
  await events(b, 'subs', 'codex', [
    start('subs'),
    { kind: 'turn.started', turnId: 't1' },
    { kind: 'subagent.started', subagentId: 'explore-1', parentAgentId: 'subs', type: 'Explore', title: 'Find callers' },
    { kind: 'subagent.started', subagentId: 'nested-1', parentAgentId: 'explore-1' },
    { kind: 'subagent.done', subagentId: 'explore-1', outcome: 'success' },
  ]);
  await events(b, 'nopid', 'example-agent', [{ kind: 'session.started', title: 'no process', cwd: '/work/nopid' }]);
  await events(b, 'nocwd', 'example-agent', [{ kind: 'session.started', title: 'no cwd', pid: 4243 }]);
  await events(b, 'emoji', 'codex', [start('emoji', { title: emojiTitle })]);

  await ext.start();
  const want = await converged(ext, b);
  const host = ext.sessions;
  assert.deepEqual([...host.keys()].sort(), ['block', 'emoji', 'fail', 'int', 'ok', 'subs', 'tool', 'wait']);
  assert.equal(host.get('tool').tool, 'Bash');
  assert.equal(host.get('tool').status, 'running');
  assert.equal(host.get('wait').status, 'waiting');
  assert.equal(host.get('block').status, 'blocked');
  for (const [id, turn] of [['ok', 'completed'], ['fail', 'failed'], ['int', 'interrupted']]) {
    assert.equal(host.get(id).status, 'idle', id);
    assert.equal(host.get(id).lastTurn, turn, id);
    assert.ok(host.get(id).lastTurnEndedAt > 0, `${id} says when its turn ended`);
  }
  assert.match(host.get('fail').error, /quota exceeded/);
  assert.deepEqual(
    host.get('subs').subagents.map((/** @type {any} */ s) => [s.id, s.parentId, s.type, s.status]),
    [
      ['explore-1', undefined, 'Explore', 'completed'],
      ['nested-1', 'explore-1', 'subagent', 'running'],
    ],
  );
  const title = host.get('emoji').title;
  assert.equal(title, emojiTitle, 'a title within the limit is not cut');
  assert.ok(title.length <= 512, `title of ${title.length} UTF-16 units`);
  assert.ok(!/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(title), 'no half of a surrogate pair');
  assert.equal(want.size, 8);

  // What it cannot show is counted once, with reasons and no paths.
  await ext.waitFor(() => ext.bridge.diagnostics.some((d) => d.code === NOT_SHOWN_CODE), 'the not-shown count');
  const last = ext.bridge.diagnostics.filter((d) => d.code === NOT_SHOWN_CODE).at(-1);
  assert.equal(last?.message, '2 agentbridge sessions are not shown: 1 with no process bound, 1 with no working directory');

  // Changes reach the host: running → waiting → idle, an exit, a new session.
  await events(b, 'tool', 'example-agent', [{ kind: 'wait.started', waitId: 'w2', state: 'waiting', reason: 'Approve Edit' }]);
  await ext.waitFor(() => ext.sessions.get('tool')?.status === 'waiting', 'running → waiting', CHANGE);
  await events(b, 'tool', 'example-agent', [{ kind: 'wait.finished', waitId: 'w2' }, { kind: 'agent.done', outcome: 'success' }]);
  await ext.waitFor(() => ext.sessions.get('tool')?.status === 'idle' && ext.sessions.get('tool')?.lastTurn === 'completed', 'waiting → idle', CHANGE);
  await events(b, 'wait', 'codex', [{ kind: 'agent.exited', signal: 'SIGTERM' }]);
  await ext.waitFor(() => !ext.sessions.has('wait'), 'an exit', CHANGE);
  await events(b, 'fresh', 'example-agent', [start('fresh'), { kind: 'turn.started', turnId: 't1' }]);
  await ext.waitFor(() => ext.sessions.get('fresh')?.status === 'running', 'a new session', CHANGE);
  await converged(ext, b);

  // A harness switched off empties it at once; on again refills it.
  await ext.setEnabled(['example-agent']);
  assert.ok(![...ext.sessions.values()].some((s) => s.harness === 'codex'), 'codex is gone at once');
  await ext.waitFor(() => ext.sessions.size > 0, 'the example-agent sessions stay');
  await converged(ext, b);
  await ext.setEnabled(BOTH);
  await ext.waitFor(() => ext.sessions.has('fail') && ext.sessions.has('subs'), 'codex refilled', 10_000);
  await converged(ext, b);
});

test('the child gets only the declared environment, and finds the bridge through it', { skip }, async (t) => {
  const { b, ext } = await setup(t);
  await b.publish([{ op: 'reset', sessions: [snap('a')] }]);
  await ext.start();
  const seen = /** @type {{ value: string | null, names: string[] }} */ (await ext.envOf('AGENTBRIDGE_UNDECLARED'));
  assert.equal(seen.value, null, 'an undeclared variable never reaches the child');
  assert.deepEqual(seen.names, ['AGENTBRIDGE_ADDR', 'AGENTBRIDGE_TOKEN', 'HOME', 'XDG_STATE_HOME']);
  await converged(ext, b);
  assert.ok(ext.sessions.has('a'));
});

test('1,500 sessions all arrive, no reset or batch over the host caps', { skip }, async (t) => {
  const { b, ext } = await setup(t);
  const all = Array.from({ length: 1500 }, (_, i) => snap(`s${String(i).padStart(4, '0')}`, i % 2 ? 'codex' : 'example-agent'));
  await b.publish([{ op: 'reset', sessions: all.slice(0, 1024) }, ...all.slice(1024).map((session) => ({ op: 'upsert', session }))]);
  await ext.start();
  await ext.waitFor(() => ext.sessions.size === 1500, 'all 1,500 sessions', 30_000);
  await converged(ext, b);
  assert.ok(ext.bridge.max.reset <= 1024, `a reset of ${ext.bridge.max.reset}`);
  assert.ok(ext.bridge.max.upserts <= 1024, `${ext.bridge.max.upserts} upserts in one batch`);
  assert.ok(ext.bridge.max.removals <= 1024, `${ext.bridge.max.removals} removals in one batch`);

  // A change to each of them, at once: still no batch over a cap.
  await b.publish(all.slice(0, 1024).map((s) => ({ op: 'upsert', session: { ...s, status: 'waiting', waitingFor: 'Approve' } })));
  await b.publish(all.slice(1024).map((s) => ({ op: 'upsert', session: { ...s, status: 'waiting', waitingFor: 'Approve' } })));
  await ext.waitFor(() => [...ext.sessions.values()].every((s) => s.status === 'waiting'), 'every session waiting', 30_000);
  await converged(ext, b);
  assert.ok(ext.bridge.max.upserts <= 1024, `${ext.bridge.max.upserts} upserts in one batch`);
});
