// view.js — pure helpers the dashboard uses to order, group and word what
// the client holds. No DOM here, so node's test runner covers it.

import { STATUSES } from './agentbridge-client.js';

/** Words shown next to each status colour, and what each means. */
export const STATUS_INFO = Object.freeze({
  waiting: { label: 'waiting', hint: 'needs you: approval or input' },
  blocked: { label: 'blocked', hint: 'cannot go on' },
  running: { label: 'running', hint: 'a turn is in progress' },
  idle: { label: 'idle', hint: 'known, no turn yet' },
  done: { label: 'done', hint: 'turn ended; awaits the next prompt' },
  ended: { label: 'ended', hint: 'the session ended: its process is gone' },
});

const RANK = Object.fromEntries(STATUSES.map((s, i) => [s, i]));

/** Returns the urgency rank of a status: lower is more urgent. */
export function statusRank(status) {
  return RANK[status] ?? STATUSES.length;
}

/** True for the statuses that need the user. */
export function needsYou(status) {
  return status === 'waiting' || status === 'blocked';
}

/**
 * Formats a duration in ms compactly: "0s", "12s", "3m 04s", "2h 05m",
 * "3d 4h". Negative durations (clock skew) read as "0s".
 */
export function formatDuration(ms) {
  if (!Number.isFinite(ms) || ms < 1000) return '0s';
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h ${String(m % 60).padStart(2, '0')}m`;
  const d = Math.floor(h / 24);
  return `${d}d ${h % 24}h`;
}

/** Formats "how long ago", e.g. "3m ago"; under a second is "just now". */
export function formatAgo(ms) {
  if (!Number.isFinite(ms) || ms < 1000) return 'just now';
  return `${formatDuration(ms).split(' ')[0]} ago`;
}

/** The last path segment of a cwd, for the group heading. */
export function projectName(cwd) {
  if (!cwd) return 'No working directory';
  if (cwd === '/') return '/';
  return cwd.slice(cwd.lastIndexOf('/') + 1) || cwd;
}

/**
 * Filters sessions: `harnesses` and `statuses` are Sets; an empty Set lets
 * everything through. Harness keys are "source/harness".
 */
export function filterSessions(sessions, { harnesses = new Set(), statuses = new Set() } = {}) {
  return sessions.filter(
    (s) =>
      (harnesses.size === 0 || harnesses.has(`${s.source}/${s.snapshot.harness}`)) &&
      (statuses.size === 0 || statuses.has(s.status)),
  );
}

/**
 * Groups sessions by project (cwd). Groups that need the user come first,
 * then by their most urgent session, then by name; inside a group, by
 * urgency, then the longest in its state first, then title.
 * Returns [{cwd, name, sessions, counts}].
 */
export function groupByProject(sessions) {
  const groups = new Map();
  for (const s of sessions) {
    const cwd = s.snapshot.cwd || '';
    let g = groups.get(cwd);
    if (!g) groups.set(cwd, (g = { cwd, name: projectName(cwd), sessions: [], counts: {} }));
    g.sessions.push(s);
    g.counts[s.status] = (g.counts[s.status] ?? 0) + 1;
  }
  const label = (s) => s.snapshot.title || s.snapshot.id;
  for (const g of groups.values()) {
    g.sessions.sort(
      (a, b) =>
        statusRank(a.status) - statusRank(b.status) ||
        a.since - b.since ||
        label(a).localeCompare(label(b)) ||
        a.key.localeCompare(b.key),
    );
  }
  const top = (g) => Math.min(...g.sessions.map((s) => statusRank(s.status)));
  return [...groups.values()].sort(
    (a, b) => top(a) - top(b) || (a.cwd === '') - (b.cwd === '') || a.name.localeCompare(b.name) || a.cwd.localeCompare(b.cwd),
  );
}

/** Counts sessions per status. */
export function countByStatus(sessions) {
  const counts = Object.fromEntries(STATUSES.map((s) => [s, 0]));
  for (const s of sessions) counts[s.status] = (counts[s.status] ?? 0) + 1;
  return counts;
}

/** Summarises subagents: {total, running, failed}. */
export function subagentSummary(subagents = []) {
  let running = 0;
  let failed = 0;
  for (const a of subagents) {
    if (a.status === 'running') running++;
    if (a.status === 'failed') failed++;
  }
  return { total: subagents.length, running, failed };
}

/**
 * Orders subagents as their tree: each after its parent (`parentId` naming
 * another subagent of the session), with its depth; one whose parent is not
 * in the list hangs under the session (depth 0), as Terminay shows it.
 */
export function subagentTree(subagents = []) {
  const ids = new Set(subagents.map((a) => a.id));
  const children = new Map();
  const roots = [];
  for (const a of subagents) {
    if (a.parentId !== undefined && a.parentId !== a.id && ids.has(a.parentId)) {
      if (!children.has(a.parentId)) children.set(a.parentId, []);
      children.get(a.parentId).push(a);
    } else roots.push(a);
  }
  const out = [];
  const seen = new Set();
  const walk = (a, depth) => {
    if (seen.has(a.id)) return;
    seen.add(a.id);
    out.push({ sub: a, depth });
    for (const c of children.get(a.id) ?? []) walk(c, depth + 1);
  };
  for (const a of roots) walk(a, 0);
  // A cycle of parents has no root: show what is left flat.
  for (const a of subagents) if (!seen.has(a.id)) walk(a, 0);
  return out;
}

/** The tokens of a usage object, all kinds together; 0 when none. */
export function totalTokens(usage) {
  if (!usage) return 0;
  return (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0) + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0);
}

/** Formats a token count compactly: "980", "12.3k", "4.56M". */
export function formatTokens(n) {
  if (!Number.isFinite(n) || n < 1000) return String(Math.max(0, Math.round(n || 0)));
  if (n < 1e6) return `${(n / 1e3).toFixed(n < 1e4 ? 2 : 1).replace(/\.?0+$/, '')}k`;
  return `${(n / 1e6).toFixed(n < 1e7 ? 2 : 1).replace(/\.?0+$/, '')}M`;
}

/**
 * What a session's new snapshot should tell the user, after `prev` (the
 * snapshot this page held before; undefined for a session new to it):
 * {event, title, body} when it starts waiting or blocked (a new wait: the
 * same wait going on says nothing) or a turn ends failed; else null.
 */
export function notification(prev, next, agent) {
  const who = agent || next.harness;
  const what = next.title || next.id;
  if (next.status === 'waiting' || next.status === 'blocked') {
    if (prev && prev.status === next.status && (prev.waitingFor ?? '') === (next.waitingFor ?? '')) return null;
    const reason = next.waitingFor || (next.status === 'waiting' ? 'It needs your input.' : 'It cannot go on.');
    return { event: next.status, title: `${who} ${next.status === 'waiting' ? 'is waiting for you' : 'is blocked'}`, body: `${what}\n${reason}` };
  }
  if (next.status === 'idle' && next.lastTurn === 'failed' && next.lastTurnEndedAt > 0) {
    if (prev && prev.lastTurn === 'failed' && prev.lastTurnEndedAt === next.lastTurnEndedAt) return null;
    return { event: 'failed', title: `${who}: the turn failed`, body: next.error ? `${what}\n${next.error}` : what };
  }
  return null;
}
