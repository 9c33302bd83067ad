// Unit tests of the pure parts: the event-stream parser, the backoff and
// the view helpers. Run: node --test web/test/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SSEParser, backoffDelay, sessionKey, displayStatus } from '../agentbridge-client.js';
import { formatDuration, formatAgo, groupByProject, filterSessions, projectName, countByStatus, subagentTree } from '../static/view.js';

function parseAll(chunks) {
  const events = [];
  const retries = [];
  const comments = [];
  const p = new SSEParser({ onEvent: (e) => events.push(e), onRetry: (ms) => retries.push(ms), onComment: (c) => comments.push(c) });
  for (const c of chunks) p.push(c);
  return { events, retries, comments, lastEventId: p.lastEventId };
}

test('SSEParser follows the WHATWG event-stream rules', async (t) => {
  const cases = [
    {
      name: 'one event',
      chunks: ['id: 7\nevent: upsert\ndata: {"a":1}\n\n'],
      events: [{ type: 'upsert', data: '{"a":1}', lastEventId: '7' }],
    },
    {
      name: 'split anywhere, even inside CRLF',
      chunks: ['id: 1\r', '\nevent: res', 'et\r\ndata: x\r', '\n\r', '\n'],
      events: [{ type: 'reset', data: 'x', lastEventId: '1' }],
    },
    {
      name: 'CR-only line ends',
      chunks: ['data: a\rdata: b\r\r'],
      events: [{ type: 'message', data: 'a\nb', lastEventId: '' }],
    },
    {
      name: 'comments and retry are not events',
      chunks: ['retry: 2500\n: ping\n\n: ping\n\nid: 9\nevent: remove\ndata: {}\n\n'],
      events: [{ type: 'remove', data: '{}', lastEventId: '9' }],
      retries: [2500],
      comments: [' ping', ' ping'],
    },
    {
      name: 'a bad retry is ignored',
      chunks: ['retry: 2s\ndata: x\n\n'],
      events: [{ type: 'message', data: 'x', lastEventId: '' }],
      retries: [],
    },
    {
      name: 'the id persists; an id holding NUL is ignored',
      chunks: ['id: 5\ndata: a\n\nid: 6\0\ndata: b\n\n'],
      events: [
        { type: 'message', data: 'a', lastEventId: '5' },
        { type: 'message', data: 'b', lastEventId: '5' },
      ],
    },
    {
      name: 'an incomplete last event is dropped',
      chunks: ['data: a\n\ndata: cut'],
      events: [{ type: 'message', data: 'a', lastEventId: '' }],
    },
    {
      name: 'no space after the colon, and a field without colon',
      chunks: ['event:upsert\ndata:{}\ndata\n\n'],
      events: [{ type: 'upsert', data: '{}\n', lastEventId: '' }],
    },
    {
      name: 'event type resets after each dispatch',
      chunks: ['event: upsert\ndata: 1\n\ndata: 2\n\n'],
      events: [
        { type: 'upsert', data: '1', lastEventId: '' },
        { type: 'message', data: '2', lastEventId: '' },
      ],
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const got = parseAll(c.chunks);
      assert.deepEqual(got.events, c.events);
      if (c.retries) assert.deepEqual(got.retries, c.retries);
      if (c.comments) assert.deepEqual(got.comments, c.comments);
    });
  }
});

test('SSEParser handles a large event split into many chunks', () => {
  const data = JSON.stringify({ source: 's', sessions: Array.from({ length: 1024 }, (_, i) => ({ id: `s${i}`, status: 'idle' })) });
  const text = `id: 42\nevent: reset\ndata: ${data}\n\n`;
  const chunks = [];
  for (let i = 0; i < text.length; i += 997) chunks.push(text.slice(i, i + 997));
  const got = parseAll(chunks);
  assert.equal(got.events.length, 1);
  assert.equal(JSON.parse(got.events[0].data).sessions.length, 1024);
});

test('backoffDelay grows and is capped', () => {
  const mid = () => 0.5; // no jitter
  assert.deepEqual(
    [0, 1, 2, 3, 4, 5, 40].map((a) => backoffDelay(a, { initial: 500, max: 10000, random: mid })),
    [500, 1000, 2000, 4000, 8000, 10000, 10000],
  );
  for (let i = 0; i < 100; i++) {
    const d = backoffDelay(2, { initial: 500, max: 10000 });
    assert.ok(d >= 1600 && d <= 2400, `jittered delay ${d}`);
  }
  assert.ok(backoffDelay(10, { initial: 500, max: 3000, random: () => 0.999 }) <= 3000);
});

test('formatDuration and formatAgo read compactly', () => {
  const cases = [
    [-5, '0s'],
    [999, '0s'],
    [1000, '1s'],
    [59_999, '59s'],
    [60_000, '1m 00s'],
    [3_599_000, '59m 59s'],
    [3_600_000, '1h 00m'],
    [90_061_000, '1d 1h'],
  ];
  for (const [ms, want] of cases) assert.equal(formatDuration(ms), want, `${ms} ms`);
  assert.equal(formatAgo(500), 'just now');
  assert.equal(formatAgo(185_000), '3m ago');
});

function entry(source, snapshot, since = 0, ended = null) {
  return { key: sessionKey(source, snapshot.id), source, snapshot, status: displayStatus(snapshot, ended), ended, since, sinceExact: true };
}

test('groupByProject puts what needs you first', () => {
  const sessions = [
    entry('s', { id: 'a', harness: 'h', cwd: '/p/zeta', status: 'running' }),
    entry('s', { id: 'b', harness: 'h', cwd: '/p/alpha', status: 'idle', lastTurn: 'completed', lastTurnEndedAt: 3 }),
    entry('s', { id: 'g', harness: 'h', cwd: '/p/alpha', status: 'idle' }, 0, { at: 4, exitCode: 0 }),
    entry('s', { id: 'c', harness: 'h', cwd: '/p/zeta', status: 'waiting', title: 'needs approval' }),
    entry('s', { id: 'd', harness: 'h', status: 'idle' }),
    entry('s', { id: 'e', harness: 'h', cwd: '/p/alpha', status: 'blocked' }, 5),
    entry('s', { id: 'f', harness: 'h', cwd: '/p/alpha', status: 'blocked' }, 1),
  ];
  const groups = groupByProject(sessions);
  assert.deepEqual(
    groups.map((g) => [g.name, g.sessions.map((s) => s.snapshot.id)]),
    [
      ['zeta', ['c', 'a']], // waiting outranks blocked
      ['alpha', ['f', 'e', 'b', 'g']], // longest blocked first, ended last
      ['No working directory', ['d']],
    ],
  );
  assert.deepEqual(groups[1].counts, { blocked: 2, done: 1, ended: 1 });
});

test('filterSessions: empty sets let everything through', () => {
  const sessions = [
    entry('s1', { id: 'a', harness: 'x', status: 'running' }),
    entry('s1', { id: 'b', harness: 'y', status: 'waiting' }),
    entry('s2', { id: 'c', harness: 'x', status: 'waiting' }),
  ];
  const ids = (f) => filterSessions(sessions, f).map((s) => s.snapshot.id);
  assert.deepEqual(ids({}), ['a', 'b', 'c']);
  assert.deepEqual(ids({ statuses: new Set(['waiting']) }), ['b', 'c']);
  assert.deepEqual(ids({ harnesses: new Set(['s1/x']) }), ['a']);
  assert.deepEqual(ids({ harnesses: new Set(['s1/x', 's2/x']), statuses: new Set(['waiting']) }), ['c']);
  assert.equal(countByStatus(sessions).waiting, 2);
});

test('projectName', () => {
  assert.equal(projectName('/home/u/src/app'), 'app');
  assert.equal(projectName('/'), '/');
  assert.equal(projectName(''), 'No working directory');
});

test('sessionKey keeps the same id on two hosts apart', () => {
  assert.equal(sessionKey('codex', 'a'), sessionKey('codex', 'a', ''));
  assert.notEqual(sessionKey('codex', 'a'), sessionKey('codex', 'a', 'devbox'));
  assert.notEqual(sessionKey('codex', 'a', 'devbox'), sessionKey('codex', 'a', 'nas'));
});

test('displayStatus: done from idle and a finished turn, ended from the entry', () => {
  /** @type {Array<[any, any, string]>} */
  const rows = [
    [{ status: 'running' }, null, 'running'],
    [{ status: 'waiting' }, null, 'waiting'],
    [{ status: 'blocked' }, null, 'blocked'],
    [{ status: 'idle' }, null, 'idle'],
    [{}, null, 'idle'],
    [{ status: 'idle', lastTurn: 'completed', lastTurnEndedAt: 5 }, null, 'done'],
    [{ status: 'idle', lastTurn: 'failed', lastTurnEndedAt: 5 }, null, 'done'],
    [{ status: 'idle', lastTurn: 'interrupted', lastTurnEndedAt: 5 }, null, 'done'],
    [{ status: 'idle', lastTurn: 'completed' }, null, 'idle'],
    [{ status: 'running', lastTurn: 'completed', lastTurnEndedAt: 5 }, null, 'running'],
    [{ status: 'idle', lastTurn: 'completed', lastTurnEndedAt: 5 }, { at: 9, exitCode: 0 }, 'ended'],
  ];
  for (const [snap, ended, want] of rows) assert.equal(displayStatus(snap, ended), want, JSON.stringify([snap, ended]));
});

test('subagentTree: children after their parent, unknown parents at the top', () => {
  const subs = [
    { id: 'c', parentId: 'b', type: 't', status: 'running' },
    { id: 'a', type: 't', status: 'completed' },
    { id: 'b', parentId: 'a', type: 't', status: 'running' },
    { id: 'x', parentId: 'nobody', type: 'subagent', status: 'failed' },
    { id: 'p', parentId: 'q', type: 't', status: 'running' },
    { id: 'q', parentId: 'p', type: 't', status: 'running' },
  ];
  assert.deepEqual(
    subagentTree(subs).map(({ sub, depth }) => `${sub.id}:${depth}`),
    ['a:0', 'b:1', 'c:2', 'x:0', 'p:0', 'q:1'],
  );
});
