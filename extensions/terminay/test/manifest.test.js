// The package installs as Terminay's installer checks it (testkit/manifest.js,
// the host's manifest rules), with every variable the extension reads declared.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import defaultExport, { activate, contribution } from '../src/extension.js';
import { installManifest, manifestIssues } from '../testkit/manifest.js';

test('the package installs: the host manifest rules, the entrypoint exported', () => {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  const m = installManifest(pkg);
  assert.equal(m.id, 'dev.agentbridge.terminay');
  assert.match(m.api, /^\^3(\.|$)/);
  assert.ok(m.permissions.includes('agent-observation'));
  assert.equal(contribution.id, 'dev.agentbridge.terminay/sessions');
  assert.equal(typeof defaultExport.activate, 'function');
  assert.equal(defaultExport.activate, activate);

  // The rules themselves refuse what the host refuses.
  assert.throws(() => installManifest({ ...pkg, terminay: undefined }), /must contain a terminay manifest/);
  assert.throws(() => installManifest({ ...pkg, exports: { '.': './other.js' } }), /entrypoint_not_exported/);
  assert.deepEqual(manifestIssues({ ...m, permissions: [] }).map((i) => i.code), ['missing_permission']);
  assert.deepEqual(manifestIssues({ ...m, contributes: { agentProviders: [] } }).map((i) => i.code), ['unknown_field', 'missing_contribution']);
  // The host SDK's hostile fixtures that apply to this kind (fixtures.ts).
  const source = (/** @type {string} */ id) => ({ ...m, contributes: { agentSessionSources: [{ ...contribution, id }] } });
  assert.deepEqual(manifestIssues(source('example.other/agents')).map((i) => i.code), ['invalid_namespace'], 'wrong namespace');
  assert.deepEqual(manifestIssues(source('terminal.create')).map((i) => i.code), ['invalid_namespace'], 'core collision');
  assert.deepEqual(manifestIssues({ ...m, permissions: ['server:everything', 'agent-observation'] }).map((i) => i.code), ['unknown_permission']);
  assert.deepEqual(manifestIssues({ ...m, manifestVersion: 2 }).map((i) => i.code), ['unsupported_version']);
  assert.deepEqual(manifestIssues({ ...m, entrypoint: '../escape.js' }).map((i) => i.code), ['unsafe_entrypoint']);
  assert.deepEqual(manifestIssues({ ...m, main: 'x' }).map((i) => i.code), ['unknown_field']);
  const env = [...contribution.environmentVariables, 'bad-name'];
  const withBad = { ...m, contributes: { agentSessionSources: [{ ...contribution, environmentVariables: env }] } };
  assert.deepEqual(manifestIssues(withBad).map((i) => i.code), ['invalid_environment_variable']);
});

test('every environment variable the extension reads is declared', () => {
  // The host passes a child only the variables its manifest declares.
  const read = new Set();
  for (const file of ['bridge.js', 'source.js', 'extension.js', 'pacer.js', 'rules.js']) {
    const text = readFileSync(new URL(`../src/${file}`, import.meta.url), 'utf8');
    for (const m of text.matchAll(/\benv\.([A-Z_][A-Z0-9_]*)/g)) read.add(m[1]);
  }
  read.add('HOME'); // os.homedir() falls back on it
  assert.ok(read.size >= 4, `found ${[...read]}`);
  for (const name of read) assert.ok(contribution.environmentVariables.includes(name), `${name} is declared`);
});
