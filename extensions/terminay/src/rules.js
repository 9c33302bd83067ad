// The Terminay host's rules for what a session source publishes, ported from
// the host's own validator (package @terminay/extension-api 3.x,
// src/validation.ts: validateAgentSessionSnapshot, validateAgentSessionReset,
// validateAgentSessionSourceDiagnostic; limits from src/constants.ts). The
// host checks a whole batch with these and silently drops all of it for one
// bad snapshot, so the extension checks every snapshot with them first.
// Lengths are UTF-16 code units (string.length), as the host counts them.

import { closed, record, string, unique } from './schema.js';

/** The host's EXTENSION_LIMITS entries for agent session sources. */
export const LIMITS = Object.freeze({
  agentSessionsPerReset: 1_024,
  agentSessionIdLength: 256,
  agentPathLength: 4_096,
  agentTitleLength: 512,
  agentModelLength: 256,
  agentWaitingForLength: 1_024,
  agentToolNameLength: 256,
  agentErrorLength: 1_024,
  agentSubagents: 64,
  agentSubagentTypeLength: 128,
  agentDiagnosticCodeLength: 64,
  agentDiagnosticLength: 512,
});

/** LOCAL_ID_PATTERN: harness ids and diagnostic codes. */
export const LOCAL_ID_PATTERN = /^[a-z][a-z0-9-]{0,63}$/;

/** The session statuses the host knows. */
export const SESSION_STATUSES = Object.freeze(['running', 'waiting', 'blocked', 'idle']);
/** How a turn ended, as the host says it. */
export const TURN_OUTCOMES = Object.freeze(['completed', 'failed', 'interrupted']);
/** A subagent's status. */
export const SUBAGENT_STATUSES = Object.freeze(['running', 'completed', 'failed', 'cancelled']);

const SNAPSHOT_KEYS = new Set(['id', 'harness', 'pid', 'cwd', 'title', 'model', 'status', 'waitingFor', 'tool', 'lastTurn', 'lastTurnEndedAt', 'error', 'subagents']);
const SUBAGENT_KEYS = new Set(['id', 'parentId', 'type', 'title', 'status']);
const PID_MAX = 2 ** 31 - 1;

/**
 * @typedef {import('./schema.js').SchemaIssue} SchemaIssue
 * @typedef {{ ok: true, value: any } | { ok: false, issues: SchemaIssue[] }} ValidationResult
 */

/** @param {unknown} v @param {string} path @param {number} min @param {number} max @param {SchemaIssue[]} out */
function boundedInteger(v, path, min, max, out) {
  if (!Number.isSafeInteger(v) || /** @type {number} */ (v) < min || /** @type {number} */ (v) > max) {
    out.push({ path, code: 'invalid_integer', message: `Expected an integer from ${min} through ${max}` });
  }
}

/** @param {unknown} v @param {string} path @param {SchemaIssue[]} out */
function localId(v, path, out) {
  if (string(v, path, out, 64) && !LOCAL_ID_PATTERN.test(v)) {
    out.push({ path, code: 'invalid_id', message: 'Use a lowercase kebab-case id' });
  }
}

/** @param {unknown} v @param {string} path @param {number} max @param {SchemaIssue[]} out */
function optionalText(v, path, max, out) {
  if (v !== undefined) string(v, path, out, max);
}

/** @param {unknown} v @param {string} path @param {readonly string[]} allowed @param {SchemaIssue[]} out */
function optionalEnum(v, path, allowed, out) {
  if (v !== undefined && !allowed.includes(/** @type {string} */ (v))) {
    out.push({ path, code: 'invalid_enum', message: `Expected one of ${allowed.join(', ')}` });
  }
}

/** @param {unknown} v @param {string} path @param {SchemaIssue[]} out */
function absolutePath(v, path, out) {
  if (string(v, path, out, LIMITS.agentPathLength) && (!v.startsWith('/') || v.includes('\0'))) {
    out.push({ path, code: 'invalid_path', message: 'Expected an absolute path' });
  }
}

/** @returns {ValidationResult} */
function invalidObject() {
  return { ok: false, issues: [{ path: '$', code: 'invalid_type', message: 'Expected an object' }] };
}

/**
 * validateAgentSessionSnapshot: one snapshot; when harnesses is given, its
 * harness must be one of them (the enabled set).
 * @param {unknown} value
 * @param {ReadonlySet<string> | readonly string[]} [harnesses]
 * @returns {ValidationResult}
 */
export function validateAgentSessionSnapshot(value, harnesses) {
  /** @type {SchemaIssue[]} */
  const out = [];
  if (!record(value)) return invalidObject();
  closed(value, SNAPSHOT_KEYS, '$', out);
  string(value.id, '$.id', out, LIMITS.agentSessionIdLength);
  localId(value.harness, '$.harness', out);
  if (harnesses !== undefined && typeof value.harness === 'string') {
    const has = harnesses instanceof Set ? harnesses.has(value.harness) : /** @type {readonly string[]} */ (harnesses).includes(value.harness);
    if (!has) out.push({ path: '$.harness', code: 'harness_not_enabled', message: 'Harness is undeclared or switched off' });
  }
  boundedInteger(value.pid, '$.pid', 1, PID_MAX, out);
  absolutePath(value.cwd, '$.cwd', out);
  optionalText(value.title, '$.title', LIMITS.agentTitleLength, out);
  optionalText(value.model, '$.model', LIMITS.agentModelLength, out);
  optionalEnum(value.status, '$.status', SESSION_STATUSES, out);
  optionalText(value.waitingFor, '$.waitingFor', LIMITS.agentWaitingForLength, out);
  optionalText(value.tool, '$.tool', LIMITS.agentToolNameLength, out);
  optionalEnum(value.lastTurn, '$.lastTurn', TURN_OUTCOMES, out);
  if (value.lastTurnEndedAt !== undefined) boundedInteger(value.lastTurnEndedAt, '$.lastTurnEndedAt', 0, Number.MAX_SAFE_INTEGER, out);
  optionalText(value.error, '$.error', LIMITS.agentErrorLength, out);
  if (value.subagents !== undefined) {
    if (!Array.isArray(value.subagents) || value.subagents.length > LIMITS.agentSubagents) {
      out.push({ path: '$.subagents', code: 'invalid_array', message: 'Expected a bounded subagent array' });
    } else {
      /** @type {unknown[]} */
      const ids = [];
      value.subagents.forEach((sub, i) => {
        const path = `$.subagents[${i}]`;
        if (!record(sub)) {
          out.push({ path, code: 'invalid_type', message: 'Expected an object' });
          return;
        }
        closed(sub, SUBAGENT_KEYS, path, out);
        string(sub.id, `${path}.id`, out, LIMITS.agentSessionIdLength);
        optionalText(sub.parentId, `${path}.parentId`, LIMITS.agentSessionIdLength, out);
        string(sub.type, `${path}.type`, out, LIMITS.agentSubagentTypeLength);
        optionalText(sub.title, `${path}.title`, LIMITS.agentTitleLength, out);
        if (!SUBAGENT_STATUSES.includes(/** @type {string} */ (sub.status))) {
          out.push({ path: `${path}.status`, code: 'invalid_enum', message: `Expected one of ${SUBAGENT_STATUSES.join(', ')}` });
        }
        ids.push(sub.id);
      });
      unique(ids, '$.subagents', out);
    }
  }
  return out.length === 0 ? { ok: true, value } : { ok: false, issues: out };
}

/**
 * validateAgentSessionReset: at most 1,024 snapshots, each valid, no id twice.
 * @param {unknown} value
 * @param {ReadonlySet<string> | readonly string[]} [harnesses]
 * @returns {ValidationResult}
 */
export function validateAgentSessionReset(value, harnesses) {
  if (!Array.isArray(value) || value.length > LIMITS.agentSessionsPerReset) {
    return { ok: false, issues: [{ path: '$', code: 'invalid_array', message: 'Expected a bounded session array' }] };
  }
  /** @type {SchemaIssue[]} */
  const out = [];
  /** @type {unknown[]} */
  const ids = [];
  value.forEach((session, i) => {
    const r = validateAgentSessionSnapshot(session, harnesses);
    if (!r.ok) out.push(...r.issues.map((issue) => ({ ...issue, path: `$[${i}]${issue.path.slice(1)}` })));
    if (record(session)) ids.push(session.id);
  });
  unique(ids, '$', out);
  return out.length === 0 ? { ok: true, value } : { ok: false, issues: out };
}

/**
 * validateAgentSessionSourceDiagnostic: a kebab-case code, a bounded message.
 * @param {unknown} value
 * @returns {ValidationResult}
 */
export function validateAgentSessionSourceDiagnostic(value) {
  /** @type {SchemaIssue[]} */
  const out = [];
  if (!record(value)) return invalidObject();
  closed(value, new Set(['code', 'message']), '$', out);
  if (string(value.code, '$.code', out, LIMITS.agentDiagnosticCodeLength) && !LOCAL_ID_PATTERN.test(value.code)) {
    out.push({ path: '$.code', code: 'invalid_id', message: 'Use a lowercase kebab-case code' });
  }
  string(value.message, '$.message', out, LIMITS.agentDiagnosticLength);
  return out.length === 0 ? { ok: true, value } : { ok: false, issues: out };
}

/**
 * boundedAgentText: display text cut to at most max UTF-16 units, never
 * between the two halves of a surrogate pair (as the host's SDK helper of
 * that name cuts it: no ellipsis). Undefined for anything that is not a
 * non-empty string. Never used for ids.
 * @param {unknown} text
 * @param {number} max
 * @returns {string | undefined}
 */
export function boundedAgentText(text, max) {
  if (typeof text !== 'string' || text === '') return undefined;
  if (text.length <= max) return text;
  let end = max;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--; // a high surrogate whose pair would be cut off
  return end > 0 ? text.slice(0, end) : undefined;
}
