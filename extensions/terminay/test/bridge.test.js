// Unit tests of the bridge client and the manifest; no bridge needed.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync, chmodSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Bridge, readToken, tokenFile, manifest, contribution, SOURCE_ID, activate } from '../src/extension.js';
import { parseLine } from '../src/bridge.js';

test('the manifest declares one source with the bridge harnesses', () => {
  assert.deepEqual(manifest.permissions, ['agent-observation']);
  assert.equal(manifest.contributes.agentSessionSources.length, 1);
  assert.match(SOURCE_ID, /^[a-z0-9.-]+\/[a-z0-9-]+$/);
  // The full list is checked against the bridge's source registry by a Go
  // test (sources/all); here: the first agents, ids unique and well formed.
  const ids = contribution.harnesses.map((/** @type {{id: string}} */ h) => h.id);
  for (const id of ['claude-code', 'codex', 'example-agent']) assert.ok(ids.includes(id), `${id} is declared`);
  assert.equal(new Set(ids).size, ids.length, 'harness ids are unique');
  for (const id of ids) assert.match(id, /^[a-z][a-z0-9-]{0,63}$/);
  for (const v of ['CLAUDE_CONFIG_DIR', 'CODEX_HOME', 'EXAMPLE_AGENT_HOME']) {
    assert.ok(contribution.environmentVariables.includes(v), `${v} is declared`);
  }
});

test('activate registers the runtime under the manifest source id', () => {
  /** @type {any[]} */
  const registered = [];
  activate({ agents: { registerSessionSource: (id, runtime) => registered.push([id, runtime]) } });
  assert.equal(registered.length, 1);
  assert.equal(registered[0][0], SOURCE_ID);
  assert.equal(typeof registered[0][1].start, 'function');
});

test('parseLine', async (t) => {
  const good = [
    ['{"id":17,"event":"upsert","data":{"source":"codex"}}', { id: 17, event: 'upsert', data: { source: 'codex' } }],
    ['{"id":"18","event":"remove","data":{}}', { id: 18, event: 'remove', data: {} }],
  ];
  for (const [line, want] of good) {
    await t.test(String(line), () => assert.deepEqual(parseLine(/** @type {string} */ (line)), want));
  }
  const bad = [
    'not json',
    '{"id":0,"event":"x","data":{}}',
    '{"id":-2,"event":"x","data":{}}',
    '{"id":9007199254740993,"event":"x","data":{}}',
    '{"id":1,"data":{}}',
    '{"id":1,"event":"x"}',
    '[1]',
  ];
  for (const line of bad) {
    await t.test(line, () => assert.throws(() => parseLine(line)));
  }
});

test('token and address discovery', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'agentbridge-token-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const state = join(dir, 'state');
  mkdirSync(join(state, 'agentbridge'), { recursive: true });
  const file = join(state, 'agentbridge', 'token');

  await t.test('token file under XDG_STATE_HOME', () => {
    assert.equal(tokenFile({ XDG_STATE_HOME: state, HOME: dir }), file);
    assert.equal(tokenFile({ HOME: dir }), join(dir, '.local', 'state', 'agentbridge', 'token'));
    assert.equal(tokenFile({ XDG_STATE_HOME: 'relative', HOME: dir }), join(dir, '.local', 'state', 'agentbridge', 'token'));
  });
  await t.test('no token anywhere', () => {
    assert.equal(readToken({ XDG_STATE_HOME: state }), '');
  });
  await t.test('the file, trimmed', () => {
    writeFileSync(file, 'file-token-0123456789\n', { mode: 0o600 });
    chmodSync(file, 0o600);
    assert.equal(readToken({ XDG_STATE_HOME: state }), 'file-token-0123456789');
  });
  await t.test('AGENTBRIDGE_TOKEN wins', () => {
    assert.equal(readToken({ XDG_STATE_HOME: state, AGENTBRIDGE_TOKEN: 'env-token-0123456789' }), 'env-token-0123456789');
  });
  await t.test('a file others can read is refused', () => {
    chmodSync(file, 0o644);
    assert.equal(readToken({ XDG_STATE_HOME: state }), '');
  });
  await t.test('address: option, then AGENTBRIDGE_ADDR, then the default', () => {
    assert.equal(new Bridge({ env: {} }).addr, '127.0.0.1:7391');
    assert.equal(new Bridge({ env: { AGENTBRIDGE_ADDR: '127.0.0.1:9000' } }).addr, '127.0.0.1:9000');
    assert.equal(new Bridge({ addr: '[::1]:1', env: { AGENTBRIDGE_ADDR: '127.0.0.1:9000' } }).addr, '[::1]:1');
  });
});
