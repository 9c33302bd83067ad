// Test helper: the Terminay installer's manifest rules, ported from the host
// (package @terminay/extension-api 3.x, src/validation.ts:
// validateExtensionManifest, validateAgentSessionSourceContribution,
// parseExtensionManifest, assertManifestMatchesPackage; patterns and limits
// from src/constants.ts). The installer runs
// parseExtensionManifest(packageJson.terminay), then
// assertManifestMatchesPackage(manifest, packageJson). Only the contribution
// kind this extension uses (agentSessionSources) is checked in depth; the
// other kinds are accepted as keys, as 3.1 knows them.

import { closed, record, string, unique } from '../src/schema.js';

const EXTENSION_ID_PATTERN = /^[a-z0-9](?:[a-z0-9.-]{1,126}[a-z0-9])?$/;
const LOCAL_ID_PATTERN = /^[a-z][a-z0-9-]{0,63}$/;
const ENVIRONMENT_VARIABLE_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
const LIMITS = {
  extensionIdLength: 128,
  providerIdLength: 192,
  displayNameLength: 96,
  descriptionLength: 1_024,
  contributions: 32,
  permissions: 32,
  dependencies: 32,
  agentSourceHarnesses: 16,
  agentEnvironmentVariables: 32,
  agentEnvironmentVariableNameLength: 128,
};
const PERMISSIONS = new Set([
  'configuration:read',
  'configuration:write',
  'data:read',
  'data:write',
  'cache:write',
  'network',
  'secrets:resolve',
  'agent-observation',
  'mcp-registration',
  'worktree-observation',
]);
const MANIFEST_KEYS = new Set(['manifestVersion', 'id', 'displayName', 'description', 'api', 'engines', 'entrypoint', 'platforms', 'permissions', 'extensionDependencies', 'contributes']);
const CONTRIBUTION_KEYS = new Set(['agentSessionSources', 'mcpInstallTargets', 'languageServers', 'worktreeInsights']);

/** @typedef {import('../src/schema.js').SchemaIssue} SchemaIssue */

/** The installer's error: it names every issue. */
export class ExtensionSchemaError extends Error {
  /** @param {string} message @param {SchemaIssue[]} issues */
  constructor(message, issues) {
    super(`${message}: ${issues.map((i) => `${i.path} ${i.code}`).join(', ')}`);
    this.name = 'ExtensionSchemaError';
    this.issues = issues;
  }
}

/** @param {unknown} v @param {string} path @param {SchemaIssue[]} out */
function platforms(v, path, out) {
  if (v === undefined) return;
  if (!Array.isArray(v) || v.length === 0 || v.length > 3) {
    out.push({ path, code: 'invalid_array', message: 'Expected a bounded platform array' });
    return;
  }
  unique(v, path, out);
  v.forEach((p, i) => {
    if (!['darwin', 'linux', 'win32'].includes(String(p))) out.push({ path: `${path}[${i}]`, code: 'invalid_platform', message: 'Unsupported platform metadata' });
  });
}

/** @param {unknown} v @param {string} extensionId @param {SchemaIssue[]} out */
function namespacedId(v, extensionId, out) {
  const prefix = `${extensionId}/`;
  if (string(v, '$.id', out, LIMITS.providerIdLength) && !(v.startsWith(prefix) && LOCAL_ID_PATTERN.test(v.slice(prefix.length)))) {
    out.push({ path: '$.id', code: 'invalid_namespace', message: 'Contribution id must be namespaced by the extension id' });
  }
}

/**
 * validateAgentSessionSourceContribution.
 * @param {unknown} v
 * @param {string} extensionId
 * @returns {SchemaIssue[]}
 */
export function agentSessionSourceIssues(v, extensionId) {
  /** @type {SchemaIssue[]} */
  const out = [];
  if (!record(v)) return [{ path: '$', code: 'invalid_type', message: 'Expected an object' }];
  closed(v, new Set(['id', 'displayName', 'description', 'platforms', 'harnesses', 'environmentVariables']), '$', out);
  namespacedId(v.id, extensionId, out);
  string(v.displayName, '$.displayName', out, LIMITS.displayNameLength);
  if (v.description !== undefined) string(v.description, '$.description', out, LIMITS.descriptionLength);
  platforms(v.platforms, '$.platforms', out);
  if (!Array.isArray(v.harnesses) || v.harnesses.length === 0 || v.harnesses.length > LIMITS.agentSourceHarnesses) {
    out.push({ path: '$.harnesses', code: 'invalid_array', message: 'Expected one or more bounded harnesses' });
  } else {
    /** @type {unknown[]} */
    const ids = [];
    v.harnesses.forEach((/** @type {unknown} */ h, /** @type {number} */ i) => {
      const path = `$.harnesses[${i}]`;
      if (!record(h)) {
        out.push({ path, code: 'invalid_type', message: 'Expected an object' });
        return;
      }
      closed(h, new Set(['id', 'displayName']), path, out);
      if (string(h.id, `${path}.id`, out, 64) && !LOCAL_ID_PATTERN.test(h.id)) out.push({ path: `${path}.id`, code: 'invalid_id', message: 'Use a lowercase kebab-case id' });
      string(h.displayName, `${path}.displayName`, out, LIMITS.displayNameLength);
      ids.push(h.id);
    });
    unique(ids, '$.harnesses', out);
  }
  const env = v.environmentVariables;
  if (env !== undefined) {
    if (!Array.isArray(env) || env.length === 0 || env.length > LIMITS.agentEnvironmentVariables) {
      out.push({ path: '$.environmentVariables', code: 'invalid_array', message: 'Expected bounded environment-variable names' });
    } else {
      unique(env, '$.environmentVariables', out);
      env.forEach((name, i) => {
        const path = `$.environmentVariables[${i}]`;
        if (string(name, path, out, LIMITS.agentEnvironmentVariableNameLength) && !ENVIRONMENT_VARIABLE_NAME_PATTERN.test(name)) {
          out.push({ path, code: 'invalid_environment_variable', message: 'Expected an identifier-like environment-variable name' });
        }
      });
    }
  }
  return out;
}

/**
 * validateExtensionManifest, as far as this extension's contribution goes.
 * @param {unknown} value
 * @returns {SchemaIssue[]}
 */
export function manifestIssues(value) {
  if (!record(value)) return [{ path: '$', code: 'invalid_type', message: 'Expected an object' }];
  /** @type {SchemaIssue[]} */
  const out = [];
  closed(value, MANIFEST_KEYS, '$', out);
  if (value.manifestVersion !== 1) out.push({ path: '$.manifestVersion', code: 'unsupported_version', message: 'Only manifest version 1 is supported' });
  if (string(value.id, '$.id', out, LIMITS.extensionIdLength) && !EXTENSION_ID_PATTERN.test(value.id)) out.push({ path: '$.id', code: 'invalid_id', message: 'Use lowercase DNS-style characters' });
  string(value.displayName, '$.displayName', out, LIMITS.displayNameLength);
  if (value.description !== undefined) string(value.description, '$.description', out, LIMITS.descriptionLength);
  string(value.api, '$.api', out, 64);
  if (string(value.entrypoint, '$.entrypoint', out, 256)) {
    const e = value.entrypoint;
    if (e.startsWith('/') || e.startsWith('\\') || e.includes('\\') || e.split('/').includes('..') || !e.endsWith('.js')) {
      out.push({ path: '$.entrypoint', code: 'unsafe_entrypoint', message: 'Entrypoint must be a relative, non-escaping .js path using forward slashes' });
    }
  }
  if (!record(value.engines)) out.push({ path: '$.engines', code: 'invalid_type', message: 'Expected an object' });
  else {
    closed(value.engines, new Set(['terminay', 'node']), '$.engines', out);
    string(value.engines.terminay, '$.engines.terminay', out, 64);
    string(value.engines.node, '$.engines.node', out, 64);
  }
  if (!Array.isArray(value.permissions) || value.permissions.length > LIMITS.permissions) {
    out.push({ path: '$.permissions', code: 'invalid_array', message: 'Expected a bounded permission array' });
  } else {
    unique(value.permissions, '$.permissions', out);
    value.permissions.forEach((p, i) => {
      if (!PERMISSIONS.has(p)) out.push({ path: `$.permissions[${i}]`, code: 'unknown_permission', message: 'Unknown permission' });
    });
  }
  platforms(value.platforms, '$.platforms', out);
  if (!record(value.contributes)) out.push({ path: '$.contributes', code: 'invalid_type', message: 'Expected an object' });
  else {
    closed(value.contributes, CONTRIBUTION_KEYS, '$.contributes', out);
    const extensionId = typeof value.id === 'string' ? value.id : '';
    const sources = value.contributes.agentSessionSources;
    if ([...CONTRIBUTION_KEYS].every((k) => value.contributes[k] === undefined)) {
      out.push({ path: '$.contributes', code: 'missing_contribution', message: 'Declare at least one supported contribution' });
    }
    if (sources !== undefined) {
      const path = '$.contributes.agentSessionSources';
      if (!Array.isArray(sources) || sources.length === 0 || sources.length > LIMITS.contributions) {
        out.push({ path, code: 'invalid_array', message: 'Expected one or more bounded contributions' });
      } else {
        /** @type {unknown[]} */
        const ids = [];
        sources.forEach((item, i) => {
          for (const issue of agentSessionSourceIssues(item, extensionId)) out.push({ ...issue, path: `${path}[${i}]${issue.path.slice(1)}` });
          if (record(item)) ids.push(item.id);
        });
        unique(ids, path, out);
      }
    }
    if (Array.isArray(value.permissions) && Array.isArray(sources) && sources.length > 0 && !value.permissions.includes('agent-observation')) {
      out.push({ path: '$.permissions', code: 'missing_permission', message: 'Agent session sources require agent-observation' });
    }
  }
  return out;
}

/**
 * parseExtensionManifest: the manifest, or an ExtensionSchemaError.
 * @param {unknown} value
 */
export function parseExtensionManifest(value) {
  const issues = manifestIssues(value);
  if (issues.length > 0) throw new ExtensionSchemaError('Invalid Terminay extension manifest', issues);
  return /** @type {Record<string, any>} */ (value);
}

/**
 * assertManifestMatchesPackage: the package has a name, a version and
 * exports that include ./<entrypoint>.
 * @param {Record<string, any>} manifest
 * @param {unknown} packageJson
 */
export function assertManifestMatchesPackage(manifest, packageJson) {
  if (!record(packageJson)) throw new ExtensionSchemaError('Invalid package.json', [{ path: '$', code: 'invalid_type', message: 'Expected object' }]);
  if (typeof packageJson.name !== 'string' || typeof packageJson.version !== 'string') {
    throw new ExtensionSchemaError('Invalid package identity', [{ path: '$', code: 'missing_package_identity', message: 'Package name and version are required' }]);
  }
  if (!record(packageJson.exports)) {
    throw new ExtensionSchemaError('Missing package exports', [{ path: '$.exports', code: 'missing_exports', message: 'Extension entrypoint must be exported' }]);
  }
  const want = `./${manifest.entrypoint}`;
  const exported = Object.values(packageJson.exports).some((e) => e === want || (record(e) && Object.values(e).includes(want)));
  if (!exported) {
    throw new ExtensionSchemaError('Entrypoint is not exported', [{ path: '$.exports', code: 'entrypoint_not_exported', message: `${manifest.entrypoint} must be exported` }]);
  }
}

/**
 * What the installer does with a package.json: the manifest it accepts.
 * @param {unknown} packageJson
 */
export function installManifest(packageJson) {
  if (!record(packageJson) || packageJson.terminay === undefined) throw new Error('package.json must contain a terminay manifest');
  const manifest = parseExtensionManifest(packageJson.terminay);
  assertManifestMatchesPackage(manifest, packageJson);
  return manifest;
}
