// The activity helpers of the dashboard: tokens and what a session's
// change should notify. Run: node --test web/test/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatTokens, notification, totalTokens } from '../static/view.js';

test('formatTokens is compact', () => {
  for (const [n, want] of [[0, '0'], [980, '980'], [1000, '1k'], [1234, '1.23k'], [12345, '12.3k'], [999999, '1000k'], [4561234, '4.56M'], [12e6, '12M'], [NaN, '0']]) {
    assert.equal(formatTokens(n), want, `formatTokens(${n})`);
  }
});

test('totalTokens adds every kind', () => {
  assert.equal(totalTokens({ inputTokens: 1, outputTokens: 2, cacheReadTokens: 3, cacheWriteTokens: 4 }), 10);
  assert.equal(totalTokens(null), 0);
});

test('notification tells a new wait, a block and a failed turn, once', () => {
  const run = { id: 's', harness: 'claude-code', title: 'Fix tests', status: 'running' };
  const wait = { ...run, status: 'waiting', waitingFor: 'approve Bash' };
  const cases = [
    { name: 'starts waiting', prev: run, next: wait, want: { event: 'waiting', title: 'Claude Code is waiting for you', body: 'Fix tests\napprove Bash' } },
    { name: 'the same wait goes on', prev: wait, next: { ...wait }, want: null },
    { name: 'another wait', prev: wait, next: { ...wait, waitingFor: 'approve Edit' }, want: { event: 'waiting', title: 'Claude Code is waiting for you', body: 'Fix tests\napprove Edit' } },
    { name: 'new to the page, waiting', prev: undefined, next: wait, want: { event: 'waiting', title: 'Claude Code is waiting for you', body: 'Fix tests\napprove Bash' } },
    { name: 'blocked without reason', prev: run, next: { ...run, status: 'blocked' }, want: { event: 'blocked', title: 'Claude Code is blocked', body: 'Fix tests\nIt cannot go on.' } },
    { name: 'a failed turn', prev: run, next: { ...run, status: 'idle', lastTurn: 'failed', lastTurnEndedAt: 5 }, want: { event: 'failed', title: 'Claude Code: the turn failed', body: 'Fix tests' } },
    { name: 'a failed turn with its error', prev: run, next: { ...run, status: 'idle', lastTurn: 'failed', lastTurnEndedAt: 5, error: 'API error: quota exceeded' }, want: { event: 'failed', title: 'Claude Code: the turn failed', body: 'Fix tests\nAPI error: quota exceeded' } },
    { name: 'the same failed turn', prev: { ...run, status: 'idle', lastTurn: 'failed', lastTurnEndedAt: 5 }, next: { ...run, status: 'idle', lastTurn: 'failed', lastTurnEndedAt: 5 }, want: null },
    { name: 'the next turn fails too', prev: { ...run, status: 'idle', lastTurn: 'failed', lastTurnEndedAt: 5 }, next: { ...run, status: 'idle', lastTurn: 'failed', lastTurnEndedAt: 9 }, want: { event: 'failed', title: 'Claude Code: the turn failed', body: 'Fix tests' } },
    { name: 'a completed turn', prev: run, next: { ...run, status: 'idle', lastTurn: 'completed', lastTurnEndedAt: 5 }, want: null },
    { name: 'running', prev: wait, next: run, want: null },
  ];
  for (const c of cases) assert.deepEqual(notification(c.prev, c.next, 'Claude Code'), c.want, c.name);
});
