// history-data.js — the History view's pure parts: the range asked for,
// the address (hash) of the view, GET /v1/usage's table shaped into chart
// series, a session of GET /v1/history shaped into timeline bars, and the
// words for costs. No DOM and no Chart.js here, so node's test runner
// covers it (web/test/history.test.mjs).

import { totalTokens } from './view.js';

/** The ranges the view offers, in days. */
export const RANGES = Object.freeze([7, 30, 90]);

/** The range shown when the address names none (or one not offered). */
export const DEFAULT_RANGE = 7;

/**
 * Reads the view's address from location.hash: "#history" opens the
 * History view, with "?days=30" its range and "source", "id" and "host"
 * the session whose timeline is open. Anything else ("", "#sessions", the
 * skip link's target) is the live view.
 * Returns {view: 'live'|'history', days, session: {source, id, host} | null}.
 */
export function parseHash(hash) {
  const h = String(hash ?? '').replace(/^#/, '');
  const [path, query = ''] = h.split('?', 2);
  if (path !== 'history') return { view: 'live', days: DEFAULT_RANGE, session: null };
  const q = new URLSearchParams(query);
  const d = Number(q.get('days'));
  const days = RANGES.includes(d) ? d : DEFAULT_RANGE;
  const source = q.get('source');
  const id = q.get('id');
  const session = source && id ? { source, id, host: q.get('host') ?? '' } : null;
  return { view: 'history', days, session };
}

/** The hash of the History view with a range and an open session (or none). */
export function formatHash({ days = DEFAULT_RANGE, session = null } = {}) {
  const q = new URLSearchParams({ days: String(days) });
  if (session) {
    q.set('source', session.source);
    q.set('id', session.id);
    if (session.host) q.set('host', session.host);
  }
  return `#history?${q}`;
}

/**
 * The range of the last `days` days in the page's time zone: from the
 * midnight that starts the first of them to the midnight that ends today.
 * Returns {from, to} in epoch ms.
 */
export function rangeFor(days, now = Date.now()) {
  const start = new Date(now);
  start.setHours(0, 0, 0, 0);
  start.setDate(start.getDate() - (days - 1));
  const end = new Date(now);
  end.setHours(0, 0, 0, 0);
  end.setDate(end.getDate() + 1);
  return { from: start.getTime(), to: end.getTime() };
}

/**
 * The query parameters of a range for GET /v1/usage and /v1/history: from
 * and to as RFC 3339 instants, tz the IANA zone days are counted in (left
 * out when unknown: the bridge's own).
 */
export function rangeParams({ from, to }, tz = '') {
  const p = { from: new Date(from).toISOString(), to: new Date(to).toISOString() };
  if (tz) p.tz = tz;
  return p;
}

/** The page's IANA time zone ("" when the browser does not say). */
export function localZone() {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || '';
  } catch {
    return '';
  }
}

const dayFormats = new Map();
/** The date (YYYY-MM-DD) of an instant in an IANA time zone ("": local). */
export function dayKey(ms, tz = '') {
  if (!tz) {
    const d = new Date(ms);
    return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
  }
  let f = dayFormats.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit' });
    dayFormats.set(tz, f);
  }
  const p = Object.fromEntries(f.formatToParts(new Date(ms)).map((x) => [x.type, x.value]));
  return `${p.year}-${p.month}-${p.day}`;
}

/** The day after a YYYY-MM-DD date. */
function nextDay(key) {
  const [y, m, d] = key.split('-').map(Number);
  const t = new Date(Date.UTC(y, m - 1, d + 1));
  return t.toISOString().slice(0, 10);
}

/**
 * Every date (YYYY-MM-DD) of [from, to) in the time zone tz, in order:
 * the days a usage table by day covers, those without a row included.
 */
export function dayKeys(from, to, tz = '') {
  if (!(to > from)) return [];
  const first = dayKey(from, tz);
  const last = dayKey(to - 1, tz);
  const out = [first];
  for (let k = first; k < last && out.length < 1000; ) out.push((k = nextDay(k)));
  return out;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
/** A date's short label: "2026-12-03" → "Dec 3". */
export function dayLabel(key) {
  const [, m, d] = String(key).split('-').map(Number);
  return m >= 1 && m <= 12 && d ? `${MONTHS[m - 1]} ${d}` : String(key);
}

/** The mark added to the label of a day with tokens of no known price. */
export const UNPRICED_MARK = ' *';

/** The tokens of a row (its `tokens`, or its usage's counts summed). */
function rowTokens(row) {
  return Number.isFinite(row.tokens) ? row.tokens : totalTokens(row.usage);
}

/** The tokens of a row that no price covers. */
function unpricedTokens(row) {
  if (row.cost) return row.cost.unpricedTokens ?? 0;
  return rowTokens(row);
}

/**
 * Shapes a UsageTable by day split by harness into the History view's
 * three charts. Every day of the table's range is a point (a day without
 * a row is 0); the agents (split keys) are ordered by their tokens over
 * the range, most first, then by their time waiting, then by name, with the rows of no agent ("")
 * last; every chart lists them in that order, so an agent keeps its place
 * and colour. `label(key)` names an agent ("" → "unknown agent").
 *
 * Returns {days, keys, labels, tokens, cost, waiting, unpriced, pricesAsOf, empty}:
 * tokens, cost (USD of the tokens with a known price) and waiting (minutes)
 * are [{key, label, data}] with one number per day; unpriced[i] counts day
 * i's tokens whose model has no known price; pricesAsOf lists the price
 * tables' dates the costs used; empty is true when nothing was recorded.
 */
export function usageCharts(table, { label = (k) => k } = {}) {
  const days = dayKeys(table?.from ?? 0, table?.to ?? 0, table?.tz ?? '');
  const rows = Array.isArray(table?.rows) ? table.rows : [];
  // Rows of days outside the range (a clock change, a table from another
  // zone) still count: they get their own point, in order.
  const extra = new Set(rows.map((r) => r.key).filter((k) => !days.includes(k)));
  if (extra.size) {
    days.push(...extra);
    days.sort();
  }
  const index = new Map(days.map((d, i) => [d, i]));

  const byTokens = new Map();
  const byWaiting = new Map();
  for (const r of rows) {
    const k = r.split ?? '';
    byTokens.set(k, (byTokens.get(k) ?? 0) + rowTokens(r));
    byWaiting.set(k, (byWaiting.get(k) ?? 0) + (r.waitingMs ?? 0));
  }
  const keys = [...byTokens.keys()].sort(
    (a, b) => (a === '') - (b === '') || byTokens.get(b) - byTokens.get(a) || byWaiting.get(b) - byWaiting.get(a) || a.localeCompare(b),
  );

  const series = () => keys.map((key) => ({ key, label: key ? label(key) : 'unknown agent', data: days.map(() => 0) }));
  const tokens = series();
  const cost = series();
  const waiting = series();
  const unpriced = days.map(() => 0);
  const asOf = new Set();
  const at = new Map(keys.map((k, i) => [k, i]));
  for (const r of rows) {
    const d = index.get(r.key);
    const k = at.get(r.split ?? '');
    tokens[k].data[d] += rowTokens(r);
    if (r.cost) {
      cost[k].data[d] += r.cost.usd ?? 0;
      if (r.cost.pricesAsOf) asOf.add(r.cost.pricesAsOf);
    }
    unpriced[d] += unpricedTokens(r);
    waiting[k].data[d] += (r.waitingMs ?? 0) / 60000;
  }
  // Drop the noise of summing floats (0.1 + 0.2), keeping micro-dollars.
  for (const s of cost) s.data = s.data.map((v) => Math.round(v * 1e6) / 1e6);
  const empty = rows.every((r) => !rowTokens(r) && !r.turns && !r.sessions && !r.waitingMs);
  return {
    days,
    keys,
    labels: days.map((d, i) => dayLabel(d) + (unpriced[i] > 0 ? UNPRICED_MARK : '')),
    tokens,
    cost,
    waiting,
    unpriced,
    pricesAsOf: [...asOf].sort(),
    empty,
  };
}

/** The words for the price tables' dates: "prices of 2026-11-20", "your prices". */
export function pricesWords(asOf) {
  if (!asOf?.length) return 'no known prices in this range';
  return asOf.map((d) => (d === 'config' ? 'your configured prices' : `prices of ${d}`)).join(' and ');
}

/**
 * Formats an estimated cost: "~$0.42", "~$12", "<$0.01"; null (no known
 * price) is "—".
 */
export function formatCost(usd) {
  if (usd === null || usd === undefined || !Number.isFinite(usd)) return '—';
  if (usd === 0) return '$0';
  if (usd < 0.01) return '<$0.01';
  if (usd < 100) return `~$${usd.toFixed(2)}`;
  return `~$${Math.round(usd).toLocaleString('en-US')}`;
}

/**
 * Words for dollars on a cost axis: "$0.00", "$1.20", "$12": two decimals
 * below $10, so that neighbouring ticks never read the same.
 */
export function formatCostTick(usd) {
  const v = Number(usd);
  return `$${v < 10 ? v.toFixed(2) : v.toFixed(0)}`;
}

const STEPS_MS = [1, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400].map((s) => s * 1000);

/**
 * A step for a time axis spanning spanMs: the smallest of 1 s, 5 s, 10 s,
 * 30 s, 1, 2, 5, 10, 15, 30 min, 1, 2, 3, 6, 12 h and whole days that
 * puts at most maxTicks steps in the span.
 */
export function timeStep(spanMs, maxTicks = 8) {
  for (const s of STEPS_MS) if (spanMs / s <= maxTicks) return s;
  const day = STEPS_MS.at(-1);
  return Math.ceil(spanMs / maxTicks / day) * day;
}

/** Words for minutes on an axis: "0", "30s", "45m", "1h", "1h 30m". */
export function formatMinutes(min) {
  if (!Number.isFinite(min) || min <= 0) return '0';
  if (min < 1) return `${Math.round(min * 60)}s`;
  const total = Math.round(min);
  if (total < 60) return `${total}m`;
  const h = Math.floor(total / 60);
  const m = total % 60;
  return m ? `${h}h ${String(m).padStart(2, '0')}m` : `${h}h`;
}

/** The outcomes a turn's bar is coloured by; "running" for one not ended. */
export const TURN_OUTCOMES = Object.freeze(['success', 'error', 'cancelled', 'running']);

/** Words for a turn's outcome. */
export const OUTCOME_WORDS = Object.freeze({ success: 'completed', error: 'failed', cancelled: 'cancelled', running: 'running' });

/**
 * Shapes one session of GET /v1/history into its timeline: a bar per turn
 * (start to end, its outcome) and per wait (start to end, on their own
 * row). What has no end yet (a turn still running, a wait not answered)
 * ends at `now` while the session may go on, and at the session's last
 * event once it ended; such a bar is `open`. A start the bridge did not see
 * is the session's start. Returns {turns, waits, min, max}: turns are
 * {index, start, end, open, outcome, model, tokens, tools, waits},
 * waits {turn, start, end, open, state, reason, answered}; min and max
 * bound them all.
 */
export function timeline(session, now = Date.now()) {
  const first = session?.startedAt || 0;
  const stop = session?.ended ? Math.max(session.lastAt || 0, session.ended.at || 0) : now;
  const turns = [];
  const waits = [];
  let min = Infinity;
  let max = -Infinity;
  const span = (start, end) => {
    const s = start || first || end || stop;
    const open = !end;
    const e = Math.max(s, end || stop);
    min = Math.min(min, s);
    max = Math.max(max, e);
    return { start: s, end: e, open };
  };
  for (const t of session?.turns ?? []) {
    // An ended turn whose outcome is not one of ours reads completed.
    const known = t.outcome && t.outcome !== 'running' && TURN_OUTCOMES.includes(t.outcome);
    const outcome = known ? t.outcome : t.endedAt ? 'success' : 'running';
    turns.push({
      index: t.index,
      ...span(t.startedAt, t.endedAt),
      outcome,
      model: t.model ?? '',
      tokens: totalTokens(t.usage),
      tools: t.tools ?? 0,
      waits: (t.waits ?? []).length,
    });
    for (const w of t.waits ?? []) {
      waits.push({ turn: t.index, ...span(w.startedAt, w.endedAt), state: w.state || 'waiting', reason: w.reason ?? '', answered: w.answered ?? '' });
    }
  }
  if (!turns.length) min = max = first || now;
  return { turns, waits, min, max };
}

/** The key of a session in the History view: its source, id and host. */
export function historyKey(s) {
  return `${s.host ?? ''}\u0000${s.source}\u0000${s.id}`;
}

/** The last path segment of a project root ("" for none). */
export function projectLabel(project) {
  if (!project) return '';
  const p = project.replace(/\/+$/, '');
  return p.slice(p.lastIndexOf('/') + 1) || project;
}
