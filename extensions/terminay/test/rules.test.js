// The port of the host's rules (src/rules.js), one row per rule and code,
// from the host's validation.ts and the 3.1 spec.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  LIMITS,
  boundedAgentText,
  validateAgentSessionReset,
  validateAgentSessionSnapshot,
  validateAgentSessionSourceDiagnostic,
} from '../src/rules.js';

const base = { id: 's1', harness: 'codex', pid: 4242, cwd: '/work/app' };
const emoji = '🙂'; // two UTF-16 units

/** @param {unknown} v @param {any} [h] */
function codes(v, h) {
  const r = validateAgentSessionSnapshot(v, h);
  return r.ok ? [] : r.issues.map((i) => `${i.path} ${i.code}`);
}

test('snapshot rules', async (t) => {
  /** @type {Array<[string, unknown, string[], any?]>} */
  const rows = [
    ['only identity, pid and cwd', base, []],
    ['every field', { ...base, title: 't', model: 'm', status: 'waiting', waitingFor: 'Approve', tool: 'Bash', lastTurn: 'failed', lastTurnEndedAt: 0, error: 'quota', subagents: [{ id: 'a', type: 'Explore', status: 'running' }, { id: 'b', parentId: 'a', type: 'x', title: 'y', status: 'cancelled' }] }, []],
    ['not an object', [], ['$ invalid_type']],
    ['unknown field', { ...base, activity: {} }, ['$.activity unknown_field']],
    ['no id', { ...base, id: undefined }, ['$.id invalid_string']],
    ['empty id', { ...base, id: '' }, ['$.id invalid_string']],
    ['id of 256 units', { ...base, id: 'x'.repeat(256) }, []],
    ['id of 257 units', { ...base, id: 'x'.repeat(257) }, ['$.id invalid_string']],
    ['id with any characters', { ...base, id: 'a b/c@d' }, []],
    ['harness pattern', { ...base, harness: 'Codex' }, ['$.harness invalid_id']],
    ['harness not enabled', base, ['$.harness harness_not_enabled'], ['claude-code']],
    ['harness enabled', base, [], new Set(['codex'])],
    ['no pid', { ...base, pid: undefined }, ['$.pid invalid_integer']],
    ['pid 0', { ...base, pid: 0 }, ['$.pid invalid_integer']],
    ['pid 2^31-1', { ...base, pid: 2 ** 31 - 1 }, []],
    ['pid 2^31', { ...base, pid: 2 ** 31 }, ['$.pid invalid_integer']],
    ['pid 1.5', { ...base, pid: 1.5 }, ['$.pid invalid_integer']],
    ['no cwd', { ...base, cwd: undefined }, ['$.cwd invalid_string']],
    ['relative cwd', { ...base, cwd: 'work' }, ['$.cwd invalid_path']],
    ['cwd with NUL', { ...base, cwd: '/a\0b' }, ['$.cwd invalid_path']],
    ['unclean cwd', { ...base, cwd: '/a//b/../c/' }, []],
    ['cwd of 4,097', { ...base, cwd: `/${'a'.repeat(4096)}` }, ['$.cwd invalid_string']],
    ['title of 512', { ...base, title: 't'.repeat(512) }, []],
    ['title of 513', { ...base, title: 't'.repeat(513) }, ['$.title invalid_string']],
    ['empty title', { ...base, title: '' }, ['$.title invalid_string']],
    ['title of 256 emoji (512 units)', { ...base, title: emoji.repeat(256) }, []],
    ['title of 257 emoji', { ...base, title: emoji.repeat(257) }, ['$.title invalid_string']],
    ['model of 257', { ...base, model: 'm'.repeat(257) }, ['$.model invalid_string']],
    ['status done', { ...base, status: 'done' }, ['$.status invalid_enum']],
    ['status exited', { ...base, status: 'exited' }, ['$.status invalid_enum']],
    ['waitingFor of 1,025', { ...base, waitingFor: 'w'.repeat(1025) }, ['$.waitingFor invalid_string']],
    ['waitingFor with running', { ...base, status: 'running', waitingFor: 'w' }, []],
    ['tool of 257', { ...base, tool: 't'.repeat(257) }, ['$.tool invalid_string']],
    ['lastTurn cancelled', { ...base, lastTurn: 'cancelled' }, ['$.lastTurn invalid_enum']],
    ['lastTurnEndedAt -1', { ...base, lastTurnEndedAt: -1 }, ['$.lastTurnEndedAt invalid_integer']],
    ['lastTurnEndedAt 2^53', { ...base, lastTurnEndedAt: 2 ** 53 }, ['$.lastTurnEndedAt invalid_integer']],
    ['error of 1,025', { ...base, error: 'e'.repeat(1025) }, ['$.error invalid_string']],
    ['65 subagents', { ...base, subagents: Array.from({ length: 65 }, (_, i) => ({ id: `a${i}`, type: 't', status: 'running' })) }, ['$.subagents invalid_array']],
    ['subagent without type', { ...base, subagents: [{ id: 'a', status: 'running' }] }, ['$.subagents[0].type invalid_string']],
    ['subagent type of 129', { ...base, subagents: [{ id: 'a', type: 't'.repeat(129), status: 'running' }] }, ['$.subagents[0].type invalid_string']],
    ['subagent status', { ...base, subagents: [{ id: 'a', type: 't', status: 'idle' }] }, ['$.subagents[0].status invalid_enum']],
    ['subagent unknown field', { ...base, subagents: [{ id: 'a', type: 't', status: 'running', model: 'x' }] }, ['$.subagents[0].model unknown_field']],
    ['subagent duplicate', { ...base, subagents: [{ id: 'a', type: 't', status: 'running' }, { id: 'a', type: 't', status: 'running' }] }, ['$.subagents[1] duplicate']],
    ['subagent empty parentId', { ...base, subagents: [{ id: 'a', parentId: '', type: 't', status: 'running' }] }, ['$.subagents[0].parentId invalid_string']],
    ['subagent not an object', { ...base, subagents: ['a'] }, ['$.subagents[0] invalid_type']],
  ];
  for (const [name, value, want, harnesses] of rows) {
    await t.test(name, () => assert.deepEqual(codes(value, harnesses), want));
  }
});

test('reset rules', () => {
  assert.ok(validateAgentSessionReset([]).ok);
  const many = Array.from({ length: 1024 }, (_, i) => ({ ...base, id: `s${i}` }));
  assert.ok(validateAgentSessionReset(many).ok);
  const over = validateAgentSessionReset([...many, { ...base, id: 'x' }]);
  assert.deepEqual(over.ok ? [] : over.issues.map((i) => i.code), ['invalid_array']);
  const dup = validateAgentSessionReset([base, base]);
  assert.deepEqual(dup.ok ? [] : dup.issues.map((i) => `${i.path} ${i.code}`), ['$[1] duplicate']);
  const bad = validateAgentSessionReset([base, { ...base, id: 's2', status: 'done' }]);
  assert.deepEqual(bad.ok ? [] : bad.issues.map((i) => `${i.path} ${i.code}`), ['$[1].status invalid_enum']);
});

test('diagnostic rules', () => {
  assert.ok(validateAgentSessionSourceDiagnostic({ code: 'bridge-unavailable', message: 'm' }).ok);
  /** @type {Array<[unknown, string[]]>} */
  const rows = [
    [{ code: 'Bad', message: 'm' }, ['$.code invalid_id']],
    [{ code: 'a'.repeat(65), message: 'm' }, ['$.code invalid_string']],
    [{ code: 'ok', message: '' }, ['$.message invalid_string']],
    [{ code: 'ok', message: 'm'.repeat(513) }, ['$.message invalid_string']],
    [{ code: 'ok', message: 'm', extra: 1 }, ['$.extra unknown_field']],
  ];
  for (const [v, want] of rows) {
    const r = validateAgentSessionSourceDiagnostic(v);
    assert.deepEqual(r.ok ? [] : r.issues.map((i) => `${i.path} ${i.code}`), want);
  }
});

test('boundedAgentText cuts by UTF-16 units, never inside a surrogate pair', () => {
  // The host SDK's own cases (extension-api.test.mjs).
  assert.equal(boundedAgentText('hello', 10), 'hello');
  assert.equal(boundedAgentText('hello', 3), 'hel');
  assert.equal(boundedAgentText('a\u{1F600}', 2), 'a');
  assert.equal(boundedAgentText('', 3), undefined);
  assert.equal(boundedAgentText(42, 3), undefined);
  // A long emoji title.
  const cut = /** @type {string} */ (boundedAgentText(emoji.repeat(300), LIMITS.agentTitleLength));
  assert.equal(cut, emoji.repeat(256));
  const odd = /** @type {string} */ (boundedAgentText(`a${emoji.repeat(300)}`, LIMITS.agentTitleLength));
  assert.equal(odd, `a${emoji.repeat(255)}`, 'the pair that does not fit is dropped whole');
  assert.equal(boundedAgentText(emoji, 1), undefined, 'nothing is left of a lone pair');
});
