// Unit tests of the History view's pure parts (web/static/history-data.js):
// the usage table shaped into chart series, a session shaped into its
// timeline, the range and the view's address. Run: node --test web/test/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  dayKeys,
  dayLabel,
  formatCost,
  formatMinutes,
  formatCostTick,
  formatHash,
  parseHash,
  pricesWords,
  rangeFor,
  rangeParams,
  timeStep,
  timeline,
  usageCharts,
} from '../static/history-data.js';

const berlin = (iso) => Date.parse(iso); // ISO strings carry their offset
const row = (key, split, tokens, extra = {}) => ({
  key,
  split,
  usage: { inputTokens: tokens, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 },
  tokens,
  sessions: 1,
  turns: 1,
  activeMs: 0,
  waitingMs: 0,
  ...extra,
});
const cost = (usd, extra = {}) => ({ usd, estimate: true, pricesAsOf: '2026-11-20', ...extra });
const names = { 'claude-code': 'Claude Code', codex: 'Codex', gemini: 'Gemini CLI' };
const label = (k) => names[k] ?? k;

test('dayKeys lists every day of the range in its time zone', async (t) => {
  const cases = [
    { name: 'three days in Berlin', from: berlin('2026-12-01T00:00:00+01:00'), to: berlin('2026-12-04T00:00:00+01:00'), tz: 'Europe/Berlin', want: ['2026-12-01', '2026-12-02', '2026-12-03'] },
    { name: 'the same instants in UTC straddle a day more', from: berlin('2026-12-01T00:00:00+01:00'), to: berlin('2026-12-04T00:00:00+01:00'), tz: 'UTC', want: ['2026-11-30', '2026-12-01', '2026-12-02', '2026-12-03'] },
    { name: 'a day of 23 hours (New York springs forward)', from: Date.parse('2026-03-07T00:00:00-05:00'), to: Date.parse('2026-03-10T00:00:00-04:00'), tz: 'America/New_York', want: ['2026-03-07', '2026-03-08', '2026-03-09'] },
    { name: 'across a month and a year', from: Date.parse('2026-12-31T00:00:00Z'), to: Date.parse('2027-01-02T00:00:00Z'), tz: 'UTC', want: ['2026-12-31', '2027-01-01'] },
    { name: 'an empty range', from: 10, to: 10, tz: 'UTC', want: [] },
  ];
  for (const c of cases) await t.test(c.name, () => assert.deepEqual(dayKeys(c.from, c.to, c.tz), c.want));
});

test('usageCharts shapes a usage table by day split by agent', async (t) => {
  const range = { from: berlin('2026-12-01T00:00:00+01:00'), to: berlin('2026-12-04T00:00:00+01:00'), tz: 'Europe/Berlin' };
  const table = (rows) => ({ by: 'day', split: 'harness', ...range, rows, total: {} });
  const cases = [
    {
      name: 'missing days are filled with zeros',
      rows: [row('2026-12-01', 'codex', 1200, { cost: cost(0.5) }), row('2026-12-03', 'codex', 300, { cost: cost(0.25) })],
      check: (c) => {
        assert.deepEqual(c.days, ['2026-12-01', '2026-12-02', '2026-12-03']);
        assert.deepEqual(c.labels, ['Dec 1', 'Dec 2', 'Dec 3']);
        assert.deepEqual(c.tokens.map((s) => [s.label, s.data]), [['Codex', [1200, 0, 300]]]);
        assert.deepEqual(c.cost[0].data, [0.5, 0, 0.25]);
        assert.deepEqual(c.unpriced, [0, 0, 0]);
      },
    },
    {
      name: 'unknown cost: no price is 0 dollars, its tokens counted and its day marked',
      rows: [
        row('2026-12-01', 'codex', 1000, { cost: cost(1.25) }),
        row('2026-12-02', 'gemini', 700), // no known price at all
        row('2026-12-03', 'claude-code', 900, { cost: cost(2.5, { unpricedTokens: 400 }) }), // partly priced
      ],
      check: (c) => {
        assert.deepEqual(c.unpriced, [0, 700, 400]);
        assert.deepEqual(c.labels, ['Dec 1', 'Dec 2 *', 'Dec 3 *']);
        const byKey = Object.fromEntries(c.cost.map((s) => [s.key, s.data]));
        assert.deepEqual(byKey, { codex: [1.25, 0, 0], 'claude-code': [0, 0, 2.5], gemini: [0, 0, 0] });
        assert.deepEqual(c.pricesAsOf, ['2026-11-20']);
      },
    },
    {
      name: 'agents ordered by tokens, then time waiting, then name; no agent last',
      rows: [
        row('2026-12-01', 'gemini', 100),
        row('2026-12-01', '', 5000),
        row('2026-12-02', 'claude-code', 100, { waitingMs: 60000 }),
        row('2026-12-02', 'codex', 300),
        row('2026-12-03', 'aider', 100),
        row('2026-12-03', 'codex', 10),
      ],
      check: (c) => {
        assert.deepEqual(c.keys, ['codex', 'claude-code', 'aider', 'gemini', '']);
        for (const chart of [c.tokens, c.cost, c.waiting]) assert.deepEqual(chart.map((s) => s.key), c.keys);
        assert.deepEqual(c.tokens.map((s) => s.label), ['Codex', 'Claude Code', 'aider', 'Gemini CLI', 'unknown agent']);
        assert.deepEqual(c.tokens[0].data, [0, 300, 10]);
      },
    },
    {
      name: 'time waiting in minutes, summed per agent and day',
      rows: [row('2026-12-02', 'codex', 10, { waitingMs: 90000 }), row('2026-12-02', 'codex', 10, { waitingMs: 30000 })],
      check: (c) => assert.deepEqual(c.waiting[0].data, [0, 2, 0]),
    },
    {
      name: 'costs summed without float noise, prices of two dates',
      rows: [row('2026-12-01', 'codex', 1, { cost: cost(0.1) }), row('2026-12-01', 'codex', 1, { cost: cost(0.2, { pricesAsOf: 'config' }) })],
      check: (c) => {
        assert.equal(c.cost[0].data[0], 0.3);
        assert.deepEqual(c.pricesAsOf, ['2026-11-20', 'config']);
        assert.equal(pricesWords(c.pricesAsOf), 'prices of 2026-11-20 and your configured prices');
      },
    },
    {
      name: 'a row of a day outside the range gets its own point',
      rows: [row('2026-12-02', 'codex', 5), row('2026-12-05', 'codex', 7)],
      check: (c) => {
        assert.deepEqual(c.days, ['2026-12-01', '2026-12-02', '2026-12-03', '2026-12-05']);
        assert.deepEqual(c.tokens[0].data, [0, 5, 0, 7]);
      },
    },
    {
      name: 'no rows: every day at zero, and empty',
      rows: [],
      check: (c) => {
        assert.equal(c.empty, true);
        assert.equal(c.days.length, 3);
        assert.deepEqual(c.tokens, []);
        assert.equal(pricesWords(c.pricesAsOf), 'no known prices in this range');
      },
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const got = usageCharts(table(c.rows), { label });
      if (c.rows.length) assert.equal(got.empty, false);
      c.check(got);
    });
  }
});

test('timeline: a bar per turn and per wait, open ones ended sensibly', async (t) => {
  const T = 1_800_000_000_000;
  const turn = (index, startedAt, endedAt, outcome, waits = [], extra = {}) => ({ index, startedAt, endedAt, outcome, usage: { inputTokens: 10, outputTokens: 5 }, tools: 2, waits, ...extra });
  const now = T + 3_600_000;
  const cases = [
    {
      name: 'ended turns by outcome, waits on their own row',
      session: {
        startedAt: T,
        lastAt: T + 400_000,
        ended: { at: T + 400_000 },
        turns: [
          turn(0, T, T + 100_000, 'success', [{ state: 'waiting', reason: 'Approve: make test', startedAt: T + 20_000, endedAt: T + 50_000, answered: 'answered' }]),
          turn(1, T + 200_000, T + 300_000, 'error'),
          turn(2, T + 310_000, T + 400_000, 'cancelled'),
        ],
      },
      want: {
        turns: [
          [0, T, T + 100_000, false, 'success'],
          [1, T + 200_000, T + 300_000, false, 'error'],
          [2, T + 310_000, T + 400_000, false, 'cancelled'],
        ],
        waits: [[0, T + 20_000, T + 50_000, false, 'waiting']],
        min: T,
        max: T + 400_000,
      },
    },
    {
      name: 'a wait without end in an ended session ends at its last event',
      session: {
        startedAt: T,
        lastAt: T + 90_000,
        ended: { at: T + 90_000, exitCode: 0 },
        turns: [turn(0, T, 0, '', [{ state: 'blocked', startedAt: T + 60_000 }])],
      },
      want: { turns: [[0, T, T + 90_000, true, 'running']], waits: [[0, T + 60_000, T + 90_000, true, 'blocked']], min: T, max: T + 90_000 },
    },
    {
      name: 'a wait without end in a session going on lasts until now',
      session: { startedAt: T, lastAt: T + 60_000, turns: [turn(0, T, 0, '', [{ state: 'waiting', startedAt: T + 60_000 }])] },
      want: { turns: [[0, T, now, true, 'running']], waits: [[0, T + 60_000, now, true, 'waiting']], min: T, max: now },
    },
    {
      name: 'a start the bridge did not see is the session start; an unknown outcome of an ended turn reads completed',
      session: { startedAt: T, lastAt: T + 5000, ended: { at: T + 5000 }, turns: [turn(0, 0, T + 5000, 'mystery')] },
      want: { turns: [[0, T, T + 5000, false, 'success']], waits: [], min: T, max: T + 5000 },
    },
    {
      name: 'no turns: an empty timeline at the session start',
      session: { startedAt: T, lastAt: T, turns: [] },
      want: { turns: [], waits: [], min: T, max: T },
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const got = timeline(c.session, now);
      assert.deepEqual(got.turns.map((x) => [x.index, x.start, x.end, x.open, x.outcome]), c.want.turns);
      assert.deepEqual(got.waits.map((x) => [x.turn, x.start, x.end, x.open, x.state]), c.want.waits);
      assert.equal(got.min, c.want.min);
      assert.equal(got.max, c.want.max);
    });
  }
  await t.test('a turn carries its tokens, tools and waits', () => {
    const got = timeline({ startedAt: T, turns: [turn(0, T, T + 1, 'success', [{ startedAt: T, endedAt: T + 1 }], { model: 'm1' })] }, now);
    assert.deepEqual({ ...got.turns[0] }, { index: 0, start: T, end: T + 1, open: false, outcome: 'success', model: 'm1', tokens: 15, tools: 2, waits: 1 });
  });
});

test('the view address round-trips and falls back to the live view', async (t) => {
  const cases = [
    { hash: '', want: { view: 'live', days: 7, session: null } },
    { hash: '#sessions', want: { view: 'live', days: 7, session: null } },
    { hash: '#live', want: { view: 'live', days: 7, session: null } },
    { hash: '#history', want: { view: 'history', days: 7, session: null } },
    { hash: '#history?days=30', want: { view: 'history', days: 30, session: null } },
    { hash: '#history?days=12', want: { view: 'history', days: 7, session: null } },
    { hash: '#history?days=90&source=claude-code&id=a%2Fb%20c', want: { view: 'history', days: 90, session: { source: 'claude-code', id: 'a/b c', host: '' } } },
    { hash: '#history?days=7&source=s&id=i&host=devbox', want: { view: 'history', days: 7, session: { source: 's', id: 'i', host: 'devbox' } } },
  ];
  for (const c of cases) {
    await t.test(c.hash || '(none)', () => {
      const got = parseHash(c.hash);
      assert.deepEqual(got, c.want);
      if (got.view === 'history') assert.deepEqual(parseHash(formatHash(got)), got);
    });
  }
});

test('formatCost words an estimate', async (t) => {
  const cases = [
    [null, '—'],
    [undefined, '—'],
    [0, '$0'],
    [0.004, '<$0.01'],
    [0.42, '~$0.42'],
    [12.345, '~$12.35'],
    [1234.5, '~$1,235'],
  ];
  for (const [usd, want] of cases) await t.test(String(usd), () => assert.equal(formatCost(usd), want));
});

test('rangeFor covers the last n days up to the end of today', async (t) => {
  const now = Date.now();
  for (const days of [7, 30, 90]) {
    await t.test(`${days} days`, () => {
      const r = rangeFor(days, now);
      const keys = dayKeys(r.from, r.to);
      assert.equal(keys.length, days);
      assert.equal(keys.at(-1), dayKeys(now, now + 1)[0]);
      assert.ok(r.from <= now && now < r.to);
      const p = rangeParams(r, 'Europe/Berlin');
      assert.equal(Date.parse(p.from), r.from);
      assert.equal(Date.parse(p.to), r.to);
      assert.equal(p.tz, 'Europe/Berlin');
      assert.equal('tz' in rangeParams(r, ''), false);
    });
  }
  assert.equal(dayLabel('2026-01-09'), 'Jan 9');
});

test('axis steps and minutes read as a clock would', async (t) => {
  const min = 60_000;
  const steps = [
    [40 * min, 5 * min],
    [8 * min, min],
    [30_000, 5000],
    [10 * 3600_000, 2 * 3600_000],
    [3 * 86400_000, 12 * 3600_000],
    [30 * 86400_000, 4 * 86400_000],
  ];
  for (const [span, want] of steps) await t.test(`step of ${span} ms`, () => assert.equal(timeStep(span), want));
  const words = [
    [0, '0'],
    [-3, '0'],
    [0.25, '15s'],
    [0.5, '30s'],
    [5, '5m'],
    [59.6, '1h'],
    [62, '1h 02m'],
    [120, '2h'],
  ];
  for (const [m, want] of words) await t.test(`${m} minutes`, () => assert.equal(formatMinutes(m), want));
  // neighbouring cost ticks never read the same
  for (const [v, want] of [[0, '$0.00'], [0.2, '$0.20'], [1.2, '$1.20'], [1.4, '$1.40'], [9.5, '$9.50'], [12, '$12'], [150, '$150']]) {
    await t.test(`cost tick ${v}`, () => assert.equal(formatCostTick(v), want));
  }
});

test('the client asks for usage and history with the token, and reports history off', async (t) => {
  const { AgentBridgeClient, ProblemError } = await import('../static/agentbridge-client.js');
  const asked = [];
  let answer = { status: 200, body: { rows: [] } };
  const fetch = async (url, init) => {
    asked.push({ url: String(url), auth: init.headers.Authorization, method: init.method });
    return new Response(JSON.stringify(answer.body), { status: answer.status, headers: { 'Content-Type': 'application/json' } });
  };
  const client = new AgentBridgeClient({ baseUrl: 'http://127.0.0.1:7391/', token: 'tok', fetch });
  await t.test('usage: the parameters set, none empty', async () => {
    await client.fetchUsage({ by: 'day', split: 'harness', from: '2026-12-01T00:00:00.000Z', to: undefined, tz: '' });
    assert.deepEqual(asked.at(-1), { url: 'http://127.0.0.1:7391/v1/usage?by=day&split=harness&from=2026-12-01T00%3A00%3A00.000Z', auth: 'Bearer tok', method: 'GET' });
  });
  await t.test('history', async () => {
    answer = { status: 200, body: { sessions: [{ id: 'a' }] } };
    const got = await client.fetchHistory({ from: 'x', limit: 200 });
    assert.equal(asked.at(-1).url, 'http://127.0.0.1:7391/v1/history?from=x&limit=200');
    assert.deepEqual(got, { sessions: [{ id: 'a' }] });
  });
  await t.test('history off is a 404 problem', async () => {
    answer = { status: 404, body: { type: 'urn:agentbridge:problem:history-off', title: 'History is off', status: 404, detail: 'off' } };
    await assert.rejects(client.fetchUsage({ by: 'day' }), (err) => err instanceof ProblemError && err.status === 404 && err.problem.type.endsWith('history-off'));
  });
});
