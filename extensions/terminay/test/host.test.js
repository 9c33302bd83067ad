// The test host refuses what Terminay refuses (testkit/host.js), and the
// pacer keeps the extension within the host's caps under it.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { Pacer } from '../src/pacer.js';
import { TerminayHost } from '../testkit/host.js';

const H = ['codex', 'claude-code'];
/** @param {string} id @param {Record<string, unknown>} [extra] */
const s = (id, extra = {}) => ({ id, harness: 'codex', pid: 100, cwd: '/w', ...extra });

/**
 * A runtime that hands its start to the test.
 * @returns {{ runtime: { start(st: any): void }, started: Promise<any> }}
 */
function capture() {
  /** @type {(v: any) => void} */
  let resolve = () => {};
  const started = new Promise((r) => (resolve = r));
  return { runtime: { start: (st) => resolve(st) }, started };
}

test('one bad snapshot drops its whole batch, silently', async () => {
  const host = new TerminayHost({ harnesses: H, enabled: H });
  const { runtime, started } = capture();
  await host.start(runtime);
  const { publisher } = await started;
  publisher.reset([s('a')]);
  await host.waitFor(() => host.sessions.has('a'), 'the reset');
  // The same turn: one batch. The publisher does not throw.
  publisher.upsert(s('b'));
  publisher.upsert(s('c', { status: 'done' }));
  publisher.remove('a');
  await host.waitFor(() => host.violations.length === 1, 'the refusal');
  assert.deepEqual([...host.sessions.keys()], ['a'], 'nothing of the batch applied');
  assert.equal(host.violations[0].call, 'upsert');
  // The child carries on: the next batch is taken.
  publisher.upsert(s('d'));
  await host.waitFor(() => host.sessions.has('d'), 'the next batch');
});

test('a reset absorbs the calls after it; frames split at 192 KiB; a reset that does not fit goes on as upserts', async () => {
  const host = new TerminayHost({ harnesses: H, enabled: H });
  const { runtime, started } = capture();
  await host.start(runtime);
  const { publisher } = await started;
  const big = 'x'.repeat(400);
  publisher.reset(Array.from({ length: 600 }, (_, i) => s(`r${i}`, { title: big })));
  publisher.upsert(s('late'));
  publisher.remove('r0');
  await host.waitFor(() => host.sessions.size === 600, 'the reset and its upserts');
  const pubs = host.bridge.publications.map((p) => Object.keys(p.publication).filter((k) => k !== 'sourceId'));
  assert.deepEqual(pubs[0], ['reset'], 'the first frame carries the reset');
  assert.ok(pubs.length >= 2 && pubs.slice(1).every((k) => k.join() === 'upserts'), JSON.stringify(pubs));
  assert.ok(host.sessions.has('late') && !host.sessions.has('r0'), 'the later calls were merged into the reset');
  assert.deepEqual(host.violations, []);
});

test('a reset of more than 1,024 small sessions that fits one frame is refused whole', async () => {
  const host = new TerminayHost({ harnesses: H, enabled: H });
  const { runtime, started } = capture();
  await host.start(runtime);
  const { publisher } = await started;
  publisher.reset(Array.from({ length: 1024 }, (_, i) => s(`a${i}`)));
  // Made at once after it, these upserts join the pending reset.
  for (let i = 0; i < 10; i++) publisher.upsert(s(`b${i}`));
  await host.waitFor(() => host.violations.length > 0, 'the refusal');
  assert.equal(host.violations[0].call, 'reset');
  assert.equal(host.sessions.size, 0);
});

test('an acknowledgement deadline that passes makes the child resend its live set', async () => {
  const host = new TerminayHost({ harnesses: H, enabled: H, deadlineMs: 50, latency: 200 });
  const { runtime, started } = capture();
  await host.start(runtime);
  const { publisher } = await started;
  publisher.reset([s('a')]);
  await host.waitFor(() => host.bridge.publications.some((p) => p.ack.resend === true), 'a resend request');
  host.bridge.latency = 0;
  await host.waitFor(() => host.sessions.has('a'), 'the live set, resent');
});

test('a harness switched off is dropped by the host before the source hears of it', async () => {
  const host = new TerminayHost({ harnesses: H, enabled: H });
  const { runtime, started } = capture();
  await host.start(runtime);
  const st = await started;
  st.publisher.reset([s('a'), s('b', { harness: 'claude-code' })]);
  await host.waitFor(() => host.sessions.size === 2, 'the reset');
  /** @type {string[][]} */
  const heard = [];
  st.onEnabledHarnessesChanged((/** @type {readonly string[]} */ h) => heard.push([...host.sessions.keys()]));
  host.setEnabled(['claude-code']);
  assert.deepEqual(heard, [['b']]);
  // A snapshot of the switched-off harness is refused from now on.
  st.publisher.upsert(s('c'));
  await host.waitFor(() => host.violations.length === 1, 'the refusal');
  assert.deepEqual(host.violations[0].issues?.map((/** @type {any} */ i) => i.code), ['harness_not_enabled']);
});

test('the pacer: bursts of thousands of changes under slow acknowledgements never break a cap', async () => {
  const host = new TerminayHost({ harnesses: H, enabled: H, latency: 60 });
  const { runtime, started } = capture();
  await host.start(runtime);
  const st = await started;
  const pacer = new Pacer(st.publisher, st.signal, { window: 300 });
  pacer.reset(new Map(Array.from({ length: 1500 }, (_, i) => [`a${i}`, s(`a${i}`)])));
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < 1500; i++) pacer.set(`a${i}`, s(`a${i}`, { status: round % 2 ? 'running' : 'waiting' }));
    for (let i = 0; i < 1200; i++) pacer.set(`gone${round}-${i}`, undefined);
    await new Promise((r) => setTimeout(r, 20));
  }
  for (let i = 0; i < 1100; i++) pacer.set(`a${i}`, undefined);
  await host.waitFor(() => host.sessions.size === 400 && [...host.sessions.values()].every((v) => v.status === 'waiting'), 'the last state', 20_000).catch((err) => {
    throw new Error(`${err.message}: ${host.sessions.size} sessions, ${JSON.stringify(host.violations.slice(0, 2))}, dirty ${pacer.dirty.size}`);
  });
  pacer.stop();
  assert.deepEqual(host.violations, []);
  assert.ok(host.max.reset <= 1024 && host.max.upserts <= 1024 && host.max.removals <= 1024, JSON.stringify(host.max));
});

test('the pacer: a window starts only once the child can have taken the batch', async () => {
  let now = 0;
  /** @type {string[]} */
  const calls = [];
  const publisher = {
    reset: (/** @type {any[]} */ l) => calls.push(`reset ${l.length}`),
    upsert: () => calls.push('upsert'),
    remove: () => calls.push('remove'),
    diagnostic: () => {},
  };
  const pacer = new Pacer(publisher, new AbortController().signal, { window: 100, now: () => now });
  pacer.reset(new Map(Array.from({ length: 1500 }, (_, i) => [`a${i}`, s(`a${i}`)])));
  assert.deepEqual(calls, ['reset 1024']);
  // This process stays busy past the window: the child has not taken the
  // reset yet, so nothing more may join it.
  now = 1_000;
  pacer.flush();
  assert.deepEqual(calls, ['reset 1024']);
  await new Promise((r) => setImmediate(r)); // the child's flush, then the window starts
  now = 1_050;
  pacer.flush();
  assert.equal(calls.length, 1, 'the window is not over');
  now = 1_101;
  pacer.flush();
  assert.equal(calls.filter((c) => c === 'upsert').length, 476);
  pacer.stop();
});
