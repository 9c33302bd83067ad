// The building blocks of the host's validators (validation.ts in
// @terminay/extension-api): closed objects, bounded strings, unique lists.
// Lengths are UTF-16 code units (string.length), as the host counts them.

/** @typedef {{ path: string, code: string, message: string }} SchemaIssue */

/** @param {unknown} v @returns {v is Record<string, unknown>} */
export function record(v) {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** @param {Record<string, unknown>} v @param {Set<string>} allowed @param {string} path @param {SchemaIssue[]} out */
export function closed(v, allowed, path, out) {
  for (const key of Object.keys(v)) {
    if (!allowed.has(key)) out.push({ path: `${path}.${key}`, code: 'unknown_field', message: 'Unknown field' });
  }
}

/** @param {unknown} v @param {string} path @param {SchemaIssue[]} out @param {number} [max] (EXTENSION_LIMITS.stringLength) @returns {v is string} */
export function string(v, path, out, max = 4_096) {
  if (typeof v !== 'string' || v.length === 0 || v.length > max) {
    out.push({ path, code: 'invalid_string', message: `Expected a non-empty string of at most ${max} characters` });
    return false;
  }
  return true;
}

/** @param {unknown[]} values @param {string} path @param {SchemaIssue[]} out */
export function unique(values, path, out) {
  const seen = new Set();
  values.forEach((v, i) => {
    if (seen.has(v)) out.push({ path: `${path}[${i}]`, code: 'duplicate', message: 'Duplicate value' });
    seen.add(v);
  });
}

