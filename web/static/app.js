// app.js — the dashboard page. It renders what AgentBridgeClient holds and
// never speaks the protocol itself. Text from agents (titles, reasons,
// diagnostics) only ever goes into the DOM through textContent.

import { AgentBridgeClient, STATUSES } from './agentbridge-client.js';
import {
  STATUS_INFO,
  countByStatus,
  filterSessions,
  formatAgo,
  formatDuration,
  formatTokens,
  groupByProject,
  needsYou,
  notification,
  subagentSummary,
  subagentTree,
  totalTokens,
} from './view.js';
import { h, reconcile } from './dom.js';
import { initHistory } from './history.js';
import { parseHash } from './history-data.js';

const $ = (id) => document.getElementById(id);

// ---- token hygiene: the bridge trades ?token= for a cookie and redirects;
// should a token still be in the address bar, take it out of history.
{
  const u = new URL(location.href);
  if (u.searchParams.has('token')) {
    u.searchParams.delete('token');
    history.replaceState(null, '', u);
  }
}

// ---- filters, kept across reloads ----
const FILTER_KEY = 'agentbridge.filters.v1';
const filters = { statuses: new Set(), harnesses: new Set() };
try {
  const saved = JSON.parse(localStorage.getItem(FILTER_KEY) || '{}');
  for (const s of saved.statuses ?? []) if (STATUSES.includes(s)) filters.statuses.add(s);
  for (const x of saved.harnesses ?? []) if (typeof x === 'string') filters.harnesses.add(x);
} catch {
  /* storage unavailable or corrupt: start unfiltered */
}
function saveFilters() {
  try {
    localStorage.setItem(FILTER_KEY, JSON.stringify({ statuses: [...filters.statuses], harnesses: [...filters.harnesses] }));
  } catch {
    /* ignore */
  }
}

const client = new AgentBridgeClient();
let state = client.state;
const historyView = initHistory({ client, agentLabel });
let frame = 0;
const pending = new Map(); // "source/harness" → true while its switch POST runs
const openSubs = new Set(); // session keys whose subagent tree is open
const rows = new Map(); // session key → {sig, tr}
const groupsEl = new Map(); // cwd → tbody
const lastStatus = new Map(); // session key → status, for announcements

function scheduleRender() {
  if (!frame) frame = requestAnimationFrame(render);
}

client.subscribe((s, change) => {
  state = s;
  announce(change);
  notifyChange(change);
  scheduleRender();
  if (change.type === 'sources') historyView.relabel();
});

// ---- answering a permission prompt (opt-in on the bridge) ----
// A waiting session of this bridge whose hook waits for an answer has
// `answerable` on its entry (the stream's records do not carry it): the
// page reads the entry when a session starts waiting, and shows the
// request in full with Approve and Deny. A command that looks destructive
// asks for confirmation first, unless the user turned that off.
const CONFIRM_KEY = 'agentbridge.confirmRisky.v1';
let confirmRisky = true;
try {
  confirmRisky = localStorage.getItem(CONFIRM_KEY) !== '0';
} catch {
  /* storage unavailable: confirm */
}
const answerables = new Map(); // session key → {since, a: answerable | null}
const answering = new Set(); // session keys whose answer is being sent

// RISKY are the signs of a command that deletes, overwrites or publishes.
const RISKY = [
  /\brm\s+-\w*[rf]/i,
  /\bgit\s+(push|reset\s+--hard|clean\s+-\w*f|branch\s+-D)\b/i,
  /--force\b|\s-f\b/,
  /\b(sudo|dd|mkfs\w*|shred|truncate|chmod\s+-R|chown\s+-R)\b/i,
  /\bdrop\s+(table|database)\b/i,
  />\s*\/dev\/|>\s*[^|&]/,
  /\b(curl|wget)\b.*\|\s*(sh|bash)\b/i,
  /\b(npm|cargo|twine)\s+publish\b/i,
  /\bkubectl\s+delete\b|\bterraform\s+(apply|destroy)\b/i,
];
const risky = (text) => RISKY.some((re) => re.test(text || ''));

function renderConfirmToggle() {
  const btn = $('confirm-risky');
  btn.setAttribute('aria-checked', confirmRisky ? 'true' : 'false');
  btn.textContent = confirmRisky ? 'Confirm risky approvals' : 'Approve without confirming';
}

function toggleConfirm() {
  confirmRisky = !confirmRisky;
  try {
    localStorage.setItem(CONFIRM_KEY, confirmRisky ? '1' : '0');
  } catch {
    /* not remembered */
  }
  renderConfirmToggle();
  say(confirmRisky ? 'Risky approvals ask for confirmation' : 'Approvals no longer ask for confirmation');
}

// learnAnswerable reads the entry of a waiting session of this bridge once
// per wait (per `since` and reason: a wait the journal showed first, then
// its hook, is read again when the hook names the tool).
async function learnAnswerable(s) {
  const wait = `${s.since}|${s.snapshot.waitingFor ?? ''}`;
  const known = answerables.get(s.key);
  if (known && known.wait === wait) return;
  answerables.set(s.key, { wait, a: null });
  try {
    const e = await client.fetchSession(s.source, s.snapshot.id);
    if (answerables.get(s.key)?.wait === wait && e?.answerable) {
      answerables.set(s.key, { wait, a: e.answerable });
      scheduleRender();
    }
  } catch {
    /* not answerable: the terminal answers */
  }
}

function answerableOf(s) {
  if (s.host || s.ended || s.snapshot.status !== 'waiting') return null;
  return answerables.get(s.key)?.a ?? null;
}

async function answerPrompt(s, a, decision) {
  let message;
  const what = a.request ? `${a.tool || 'the tool'}: ${a.request}` : a.tool || 'the tool';
  if (decision === 'allow' && confirmRisky && risky(a.request) && !window.confirm(`Allow ${what}?`)) return;
  if (decision === 'deny') {
    message = window.prompt(`Deny ${what}\nWhy? (the agent is told)`, '');
    if (message === null) return;
  }
  answering.add(s.key);
  scheduleRender();
  try {
    await client.answer(s.source, s.snapshot.id, a.waitId, decision, message);
    say(`${decision === 'allow' ? 'Allowed' : 'Denied'} ${what}`);
  } catch (err) {
    const closed = err.status === 409 ? `it was answered or closed meanwhile (${err.problem?.state ?? 'closed'})` : err.message;
    alertUser(`Could not ${decision} ${what}: ${closed}`);
  } finally {
    answering.delete(s.key);
    const known = answerables.get(s.key);
    if (known) known.a = null;
    scheduleRender();
  }
}

function answerBlock(s, a) {
  const busy = answering.has(s.key);
  const approve = h('button', { type: 'button', class: 'answer-allow', disabled: busy, text: 'Approve' });
  const deny = h('button', { type: 'button', class: 'answer-deny', disabled: busy, text: 'Deny' });
  approve.addEventListener('click', () => answerPrompt(s, a, 'allow'));
  deny.addEventListener('click', () => answerPrompt(s, a, 'deny'));
  return h(
    'div',
    { class: 'answer', role: 'group', 'aria-label': `Answer the prompt of ${s.snapshot.title || s.snapshot.id}` },
    a.request ? h('pre', { class: 'request', text: a.request }) : null,
    risky(a.request) ? h('span', { class: 'risky', text: 'looks destructive' }) : null,
    approve,
    deny,
  );
}

// ---- desktop notifications (opt-in, remembered) ----
// A session that starts waiting or blocked, or whose turn fails, raises a
// notification with the reason; a click brings this page forward and
// focuses the session's row. Resets (the page's first load, a reconnect)
// are the baseline and never notify.
const NOTIFY_KEY = 'agentbridge.notify.v1';
const seenSnap = new Map(); // session key → the snapshot last seen
let notifyOn = false;
try {
  notifyOn = localStorage.getItem(NOTIFY_KEY) === '1';
} catch {
  /* storage unavailable: off */
}
const canNotify = () => typeof Notification !== 'undefined' && Notification.permission === 'granted';

function renderNotifyToggle() {
  const btn = $('notify');
  const supported = typeof Notification !== 'undefined';
  const on = notifyOn && canNotify();
  btn.setAttribute('aria-checked', on ? 'true' : 'false');
  btn.disabled = !supported || Notification.permission === 'denied';
  btn.textContent = on ? 'Notifications on' : 'Notify me';
  btn.title = !supported
    ? 'This browser cannot show desktop notifications'
    : Notification.permission === 'denied'
      ? 'Notifications are blocked for this page in the browser settings'
      : 'A desktop notification when a session starts waiting or blocked, or a turn fails';
}

async function toggleNotify() {
  if (typeof Notification === 'undefined') return;
  let on = !(notifyOn && canNotify());
  if (on && Notification.permission !== 'granted') on = (await Notification.requestPermission()) === 'granted';
  notifyOn = on;
  try {
    localStorage.setItem(NOTIFY_KEY, on ? '1' : '0');
  } catch {
    /* not remembered */
  }
  renderNotifyToggle();
  say(on ? 'Desktop notifications on' : 'Desktop notifications off');
}

function notifyChange(change) {
  if (change.type === 'reset' || change.type === 'remove') {
    // The baseline: what the page holds now, notifying nothing.
    seenSnap.clear();
    for (const e of state.sessions) seenSnap.set(e.key, e.snapshot);
    return;
  }
  if (change.type !== 'upsert') return;
  const entry = state.sessions.find((x) => x.source === change.source && x.snapshot.id === change.sessionId);
  if (!entry) return;
  const prev = seenSnap.get(entry.key);
  seenSnap.set(entry.key, entry.snapshot);
  const n = notification(prev, entry.snapshot, harnessLabel(entry.source, entry.snapshot.harness));
  if (!n || !notifyOn || !canNotify()) return;
  const note = new Notification(n.title, { body: n.body, tag: entry.key, data: { key: entry.key } });
  note.onclick = () => {
    window.focus();
    focusSession(entry.key);
    note.close();
  };
}

function focusSession(key) {
  const tr = [...document.querySelectorAll('tr.row')].find((r) => r.dataset.key === key);
  if (!tr) return;
  tr.tabIndex = -1;
  tr.scrollIntoView({ block: 'center' });
  tr.focus();
  tr.classList.add('flash');
  setTimeout(() => tr.classList.remove('flash'), 2000);
}

// ---- announcements for screen readers: a session starts needing you ----
function announce(change) {
  if (change.type === 'upsert') {
    const entry = state.sessions.find((x) => x.source === change.source && x.snapshot.id === change.sessionId);
    if (!entry) return;
    const prev = lastStatus.get(entry.key);
    const st = entry.status;
    lastStatus.set(entry.key, st);
    if (prev !== st && needsYou(st)) {
      const who = entry.snapshot.title || entry.snapshot.id;
      say(`${who} is ${st}${entry.snapshot.waitingFor ? `: ${entry.snapshot.waitingFor}` : ''}`);
    }
  } else if (change.type === 'reset') {
    for (const e of state.sessions) lastStatus.set(e.key, e.status);
  } else if (change.type === 'harnesses') {
    const src = state.sources.find((x) => x.id === change.source);
    for (const hh of src?.harnesses ?? []) {
      const k = `${src.id}/${hh.id}`;
      if (pending.has(k)) {
        pending.delete(k);
        say(`${hh.displayName} switched ${hh.enabled ? 'on' : 'off'}`);
      }
    }
  }
}
function say(text) {
  const el = $('announce');
  el.textContent = '';
  setTimeout(() => (el.textContent = text), 50);
}
let alertTimer = 0;
function alertUser(text) {
  const el = $('alert');
  el.textContent = text;
  el.hidden = false;
  clearTimeout(alertTimer);
  alertTimer = setTimeout(() => (el.hidden = true), 6000);
}

// ---- rendering ----
function harnessLabel(source, harnessId) {
  const src = state.sources.find((x) => x.id === source);
  return src?.harnesses.find((x) => x.id === harnessId)?.displayName ?? harnessId;
}

function statusBadge(status, extraClass = '') {
  const info = STATUS_INFO[status] ?? { label: status, hint: '' };
  return h(
    'span',
    { class: `status s-${status} ${extraClass}`, title: info.hint },
    h('span', { class: `glyph g-${status}`, 'aria-hidden': 'true' }),
    info.label,
  );
}

function render() {
  frame = 0;
  renderConnection();
  renderFilters();
  renderSessions();
  renderHarnesses();
  renderDiagnostics();
  tick();
}

function renderConnection() {
  const c = state.connection;
  const conn = $('conn');
  const words = {
    idle: 'Starting…',
    connecting: 'Connecting…',
    live: 'Live',
    reconnecting: 'Reconnecting…',
    unauthorized: 'Not signed in',
    closed: 'Disconnected',
  };
  if (conn.dataset.state !== c.state) {
    conn.dataset.state = c.state;
    $('conn-text').textContent = words[c.state] ?? c.state;
  }
  $('conn-retry').hidden = c.state !== 'reconnecting';
  const offline = c.state !== 'live' && state.sessions.length > 0;
  $('stale').hidden = !offline;
  $('table').classList.toggle('dim', offline);
}

function chip(key, label, pressed, count, onClick, glyph) {
  const b = h(
    'button',
    { type: 'button', class: 'chip', 'aria-pressed': String(pressed), 'data-key': key, onclick: onClick },
    glyph ? h('span', { class: `glyph g-${glyph}`, 'aria-hidden': 'true' }) : null,
    h('span', { class: 'label', text: label }),
    h('span', { class: 'n', text: String(count) }),
  );
  return b;
}

/** Updates a chip in place (keeps focus) or makes it. */
function upsertChip(cache, key, label, pressed, count, onClick, glyph) {
  let b = cache.get(key);
  if (!b) {
    b = chip(key, label, pressed, count, onClick, glyph);
    cache.set(key, b);
  }
  b.setAttribute('aria-pressed', String(pressed));
  b.querySelector('.label').textContent = label;
  b.querySelector('.n').textContent = String(count);
  b.setAttribute('aria-label', `${label}: ${count} session${count === 1 ? '' : 's'}${pressed ? ', shown' : ''}`);
  return b;
}

const statusChips = new Map();
const harnessChips = new Map();
function toggle(set, key) {
  set.has(key) ? set.delete(key) : set.add(key);
  saveFilters();
  scheduleRender();
}

function renderFilters() {
  const byHarness = filterSessions(state.sessions, { harnesses: filters.harnesses });
  const counts = countByStatus(byHarness);
  reconcile(
    $('f-status'),
    STATUSES.map((st) =>
      upsertChip(statusChips, st, STATUS_INFO[st].label, filters.statuses.has(st), counts[st], () => toggle(filters.statuses, st), st),
    ),
  );

  const byStatus = filterSessions(state.sessions, { statuses: filters.statuses });
  const hcount = new Map();
  for (const s of byStatus) {
    const k = `${s.source}/${s.snapshot.harness}`;
    hcount.set(k, (hcount.get(k) ?? 0) + 1);
  }
  const keys = new Map(); // key → label
  for (const src of state.sources) for (const hh of src.harnesses) if (hh.enabled) keys.set(`${src.id}/${hh.id}`, hh.displayName);
  for (const s of state.sessions) {
    const k = `${s.source}/${s.snapshot.harness}`;
    if (!keys.has(k)) keys.set(k, harnessLabel(s.source, s.snapshot.harness));
  }
  for (const k of filters.harnesses) if (!keys.has(k)) keys.set(k, k.split('/')[1]);
  const labels = [...keys.values()];
  const chips = [...keys].map(([k, label]) => {
    const dup = labels.filter((l) => l === label).length > 1;
    return upsertChip(harnessChips, k, dup ? `${label} (${k.split('/')[0]})` : label, filters.harnesses.has(k), hcount.get(k) ?? 0, () =>
      toggle(filters.harnesses, k),
    );
  });
  reconcile($('f-harness'), chips);
  $('f-clear').hidden = filters.statuses.size === 0 && filters.harnesses.size === 0;

  // header summary
  const all = countByStatus(state.sessions);
  const sum = $('summary');
  const parts = [h('strong', { text: String(state.sessions.length) }), ` session${state.sessions.length === 1 ? '' : 's'}`];
  for (const st of ['waiting', 'blocked']) {
    if (all[st]) parts.push(' · ', h('span', { class: `hot ${st}`, text: `${all[st]} ${st}` }));
  }
  if (all.running) parts.push(` · ${all.running} running`);
  sum.replaceChildren(...parts);
  const tokens = state.sessions.reduce((n, e) => n + totalTokens(e.activity?.usage), 0);
  const anyUsage = state.sessions.some((e) => e.activity?.usage);
  $('tokens').textContent = anyUsage ? `${formatTokens(tokens)} tokens in all` : '';
  $('tokens').hidden = !anyUsage;
  renderNotifyToggle();
  const attention = all.waiting + all.blocked;
  document.title = attention ? `(${attention}) agentbridge` : 'agentbridge';
}

/** Words for the latest lifecycle event of a running session, if telling. */
function activityWords(ev) {
  if (!ev) return null;
  switch (ev.kind) {
    case 'tool.started':
      return ev.name ? `tool: ${ev.name}` : 'using a tool';
    case 'tool.finished':
      return 'tool finished';
    case 'turn.started':
      return 'turn started';
    case 'subagent.started':
      return 'subagent started';
    case 'subagent.done':
      return 'subagent finished';
    case 'wait.finished':
      return 'resumed';
    default:
      return null;
  }
}

function sessionSig(s) {
  return JSON.stringify([s.snapshot, s.status, s.ended, s.host, answerableOf(s)?.waitId, answering.has(s.key), s.activity, s.since, s.sinceExact, s.lastEvent?.kind, s.lastEvent?.name, harnessLabel(s.source, s.snapshot.harness)]);
}

function sessionRow(s) {
  const snap = s.snapshot;
  const st = s.status;
  const attn = needsYou(st);
  const untitled = !snap.title;

  const sessionCell = h(
    'td',
    { class: 'cell-session' },
    h('div', { class: `title${untitled ? ' untitled' : ''}`, text: snap.title || snap.id }),
  );
  const meta = [];
  if (!untitled) meta.push(h('span', { class: 'mono', text: snap.id }));
  // The snapshot names the tool running now; the activity says since when.
  const tool = snap.tool ? { name: snap.tool, since: s.activity?.tool?.name === snap.tool ? s.activity.tool.since : null } : st === 'running' ? s.activity?.tool : null;
  if (tool) {
    // The bridge says which tool runs, and since when: a reload sees it too.
    const since = Number.isFinite(tool.since) && tool.since > 0 ? tool.since : null;
    meta.push(
      h(
        'span',
        { class: 'activity tool' },
        'running ',
        h('strong', { class: 'tool-name', text: tool.name }),
        since ? ' for ' : null,
        since ? h('time', { datetime: new Date(since).toISOString(), 'data-since': since, 'data-exact': '1', title: `since ${new Date(since).toLocaleString()}` }) : null,
      ),
    );
  } else {
    const activity = st === 'running' ? activityWords(s.lastEvent) : null;
    if (activity) meta.push(h('span', { class: 'activity', text: activity }));
  }
  const used = s.activity?.usage;
  if (used) {
    const u = used;
    meta.push(
      h('span', {
        class: 'tokens-used',
        title: `input ${u.inputTokens ?? 0} · output ${u.outputTokens ?? 0} · cache read ${u.cacheReadTokens ?? 0} · cache write ${u.cacheWriteTokens ?? 0}`,
        text: `${formatTokens(totalTokens(u))} tokens`,
      }),
    );
  }
  if (meta.length) sessionCell.append(h('div', { class: 'meta' }, meta.flatMap((m, i) => (i ? [' · ', m] : [m]))));
  if (attn) {
    sessionCell.append(
      h(
        'p',
        { class: 'reason' },
        h('span', { class: 'lead', text: st === 'waiting' ? 'Waiting for: ' : 'Blocked: ' }),
        snap.waitingFor || (st === 'waiting' ? 'your input' : 'no reason given'),
      ),
    );
    const a = answerableOf(s);
    if (a) sessionCell.append(answerBlock(s, a));
  }
  if (snap.error && snap.lastTurn === 'failed' && !s.ended) {
    sessionCell.append(h('p', { class: 'reason error' }, h('span', { class: 'lead', text: 'Failed: ' }), snap.error));
  }
  if (s.ended) {
    const how = Number.isInteger(s.ended.exitCode) ? `exit code ${s.ended.exitCode}` : s.ended.signal ? `signal ${s.ended.signal}` : s.ended.reason || '';
    if (how) sessionCell.append(h('p', { class: 'reason ended', text: `Ended: ${how}` }));
  }
  if (snap.subagents?.length) {
    const sum = subagentSummary(snap.subagents);
    const words = [`${sum.total} subagent${sum.total === 1 ? '' : 's'}`];
    if (sum.running) words.push(`${sum.running} running`);
    if (sum.failed) words.push(`${sum.failed} failed`);
    const details = h(
      'details',
      { class: 'subs', open: openSubs.has(s.key) },
      h('summary', { text: words.join(' · ') }),
      h(
        'ul',
        { class: 'tree', 'aria-label': 'Subagents' },
        subagentTree(snap.subagents).map(({ sub: a, depth }) =>
          h(
            'li',
            depth ? { style: `margin-inline-start: ${depth * 1.25}em`, 'data-parent': a.parentId } : {},
            h('span', { class: `st st-${a.status}` }, h('span', { class: `glyph g-${a.status}`, 'aria-hidden': 'true' }), a.status),
            a.type ? h('span', { class: 'sub-type', text: a.type }) : null,
            h('span', { class: 'sub-title', text: a.title || a.id }),
          ),
        ),
      ),
    );
    details.addEventListener('toggle', () => (details.open ? openSubs.add(s.key) : openSubs.delete(s.key)));
    sessionCell.append(details);
  }

  const sinceTitle = s.sinceExact
    ? `${st} since ${new Date(s.since).toLocaleString()}`
    : `${st} at least since ${new Date(s.since).toLocaleString()} (when this page first saw it; the bridge does not say when it began)`;
  const forCell = h(
    'td',
    { class: 'num cell-for' },
    h('time', { datetime: new Date(s.since).toISOString(), title: sinceTitle, 'data-since': s.since, 'data-exact': s.sinceExact ? '1' : '0' }),
  );

  let turnCell;
  if (snap.lastTurn) {
    const glyph = snap.lastTurn;
    turnCell = h(
      'td',
      { 'data-label': 'Last turn' },
      h('span', { class: `outcome o-${snap.lastTurn}` }, h('span', { class: `glyph g-${glyph}`, 'aria-hidden': 'true' }), snap.lastTurn),
      snap.lastTurnEndedAt
        ? h('time', { class: 'ago', datetime: new Date(snap.lastTurnEndedAt).toISOString(), 'data-ago': snap.lastTurnEndedAt, title: new Date(snap.lastTurnEndedAt).toLocaleString() })
        : null,
    );
  } else {
    turnCell = h('td', { class: 'cell-noturn' }, h('span', { class: 'none', text: '—', 'aria-label': 'none' }));
  }

  return h(
    'tr',
    { class: `row st-${st}${attn ? ' attn' : ''}`, 'data-key': s.key, 'data-host': s.host || '', 'data-session': snap.id, 'data-status': st, 'data-harness': snap.harness },
    h('td', {}, statusBadge(st)),
    sessionCell,
    h(
      'td',
      { class: 'cell-agent' },
      h('div', { class: 'harness', text: harnessLabel(s.source, snap.harness) }),
      // A remote's session is labelled with its host.
      s.host ? h('div', { class: 'host', title: `on the remote ${s.host}`, text: `on ${s.host}` }) : null,
      snap.model ? h('div', { class: 'model', text: snap.model }) : null,
    ),
    forCell,
    turnCell,
    snap.pid ? h('td', { class: 'num mono cell-pid', 'data-label': 'PID', text: String(snap.pid) }) : h('td', { class: 'cell-pid' }, h('span', { class: 'none', text: '—' })),
  );
}

function renderSessions() {
  const table = $('table');
  const visible = filterSessions(state.sessions, filters);
  for (const s of visible) if (!s.host && s.snapshot.status === 'waiting') learnAnswerable(s);
  if (answerables.size) {
    const waiting = new Set(state.sessions.filter((s) => s.snapshot.status === 'waiting').map((s) => s.key));
    for (const k of answerables.keys()) if (!waiting.has(k)) answerables.delete(k);
  }
  const groups = groupByProject(visible);
  const seen = new Set();
  const bodies = groups.map((g) => {
    let tb = groupsEl.get(g.cwd);
    if (!tb) {
      tb = h('tbody', { 'data-cwd': g.cwd });
      tb.append(h('tr', { class: 'group' }, h('th', { colspan: '6', scope: 'rowgroup' })));
      groupsEl.set(g.cwd, tb);
    }
    const counts = [`${g.sessions.length} session${g.sessions.length === 1 ? '' : 's'}`];
    const hot = [];
    for (const st of ['waiting', 'blocked']) if (g.counts[st]) hot.push(h('span', { class: `hot ${st}`, text: `${g.counts[st]} ${st}` }));
    // replaceChildren would print a null child as "null": only real nodes.
    tb.firstElementChild.firstElementChild.replaceChildren(
      ...[
        h('span', { class: g.cwd ? 'name' : 'name plain', text: g.name }),
        g.cwd && g.cwd !== '/' ? h('span', { class: 'path', text: g.cwd }) : null,
        h('span', { class: 'gcounts' }, ...hot.flatMap((x) => [x, ' · ']), counts[0]),
      ].filter(Boolean),
    );
    const trs = g.sessions.map((s) => {
      seen.add(s.key);
      const sig = sessionSig(s);
      let r = rows.get(s.key);
      if (!r || r.sig !== sig) {
        r = { sig, tr: sessionRow(s) };
        rows.set(s.key, r);
      }
      return r.tr;
    });
    reconcile(tb, trs, 1);
    return tb;
  });
  for (const k of rows.keys()) if (!seen.has(k)) rows.delete(k);
  for (const [cwd, tb] of groupsEl) if (!groups.some((g) => g.cwd === cwd)) groupsEl.delete(cwd);
  reconcile(table, [table.tHead, ...bodies]);
  table.hidden = groups.length === 0;

  const empty = $('empty');
  const c = state.connection.state;
  if (groups.length) {
    empty.hidden = true;
  } else {
    empty.hidden = false;
    if (c === 'unauthorized') {
      empty.replaceChildren(
        h('strong', { text: 'Sign in to see your agents.' }),
        'This page needs the bridge’s token, and has none that the bridge accepts. On the machine the bridge runs on, run ',
        h('code', { text: 'agentbridge open' }),
        ': it opens the dashboard signed in. Elsewhere, ',
        h('code', { text: 'agentbridge open --print' }),
        ' prints the link (it ends in ',
        h('code', { text: '?token=…' }),
        ') to paste here. The bridge trades the token for a cookie and removes it from the address bar.',
      );
    } else if (state.sessions.length) {
      empty.replaceChildren(
        h('strong', { text: 'No sessions match the filters.' }),
        h('button', { type: 'button', class: 'link', onclick: clearFilters, text: 'Clear filters' }),
      );
    } else if (c === 'live') {
      empty.replaceChildren(
        h('strong', { text: 'No agent sessions right now.' }),
        'Start Claude Code, Codex or another agent and it shows up here, live. To try it without one, run ',
        h('code', { text: 'agentbridge demo' }),
        '.',
      );
    } else {
      empty.replaceChildren(h('strong', { text: c === 'reconnecting' ? 'Waiting for the bridge…' : 'Connecting to the bridge…' }));
    }
  }
}

const switchRows = new Map(); // "source/harness" → {row, btn}
const sourceBlocks = new Map(); // source id → element
function renderHarnesses() {
  const counts = new Map();
  for (const s of state.sessions) {
    const k = `${s.source}/${s.snapshot.harness}`;
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  const blocks = state.sources.map((src) => {
    let block = sourceBlocks.get(src.id);
    if (!block) {
      block = h('div', { class: 'source', 'data-source': src.id }, h('h3', {}, h('span'), h('span', { class: 'src-id' })), h('div', { class: 'hlist' }), h('p', { class: 'observes' }));
      sourceBlocks.set(src.id, block);
    }
    const [head, list, obs] = block.children;
    // A source with one harness of its own name needs no heading of its own.
    const single = src.harnesses.length === 1 && src.harnesses[0].displayName === src.displayName;
    head.classList.toggle('visually-hidden', single);
    head.firstChild.textContent = src.displayName;
    head.lastChild.textContent = src.push ? `${src.id} · push` : src.id;
    // observes values are {how, from?}; older bridges sent the level alone.
    const notes = Object.entries(src.observes ?? {})
      .map(([k, v]) => [k, typeof v === 'string' ? { how: v } : v ?? {}])
      .filter(([, v]) => v.how !== 'observed')
      .map(([k, v]) => `${k}: ${v.how}`);
    obs.textContent = notes.length ? notes.join(' · ') : '';
    obs.hidden = notes.length === 0;
    const items = src.harnesses.map((hh) => {
      const k = `${src.id}/${hh.id}`;
      let r = switchRows.get(k);
      if (!r) {
        const labelId = `h-${src.id}-${hh.id}`;
        const btn = h(
          'button',
          { type: 'button', class: 'switch', role: 'switch', 'aria-labelledby': labelId, 'data-source': src.id, 'data-harness': hh.id },
          h('span', { class: 'state' }),
          h('span', { class: 'track', 'aria-hidden': 'true' }, h('span', { class: 'thumb' })),
        );
        btn.addEventListener('click', () => flip(src.id, hh.id, btn));
        const row = h('div', { class: 'hrow' }, h('div', { class: 'hname' }, h('span', { class: 'hn', id: labelId }), h('span', { class: 'hs' })), btn);
        r = { row, btn };
        switchRows.set(k, r);
      }
      r.row.querySelector('.hn').textContent = hh.displayName;
      const n = counts.get(k) ?? 0;
      r.row.querySelector('.hs').textContent = hh.enabled ? `${n} session${n === 1 ? '' : 's'}` : 'not watched';
      r.btn.setAttribute('aria-checked', String(hh.enabled));
      r.btn.querySelector('.state').textContent = hh.enabled ? 'On' : 'Off';
      const busy = pending.has(k);
      r.btn.setAttribute('aria-busy', String(busy));
      return r.row;
    });
    reconcile(list, items);
    return block;
  });
  const root = $('harnesses');
  reconcile(root, blocks);
  if (!blocks.length) {
    const c = state.connection.state;
    const note = c === 'unauthorized' ? 'Signed out: sign in to see and switch the harnesses.' : c === 'live' ? 'No sources.' : '…';
    root.replaceChildren(h('p', { class: 'panel-note', 'data-state': c, text: note }));
  }
}

async function flip(source, harness, btn) {
  const k = `${source}/${harness}`;
  if (pending.has(k)) return;
  const on = btn.getAttribute('aria-checked') !== 'true';
  pending.set(k, true);
  scheduleRender();
  try {
    await client.setHarness(source, harness, on);
  } catch (err) {
    pending.delete(k);
    alertUser(`Could not switch ${harnessLabel(source, harness)} ${on ? 'on' : 'off'}: ${err.message}`);
  }
  // The harnesses event that follows clears `pending`; this is the fallback
  // when the stream is down.
  setTimeout(() => {
    if (pending.delete(k)) scheduleRender();
  }, 5000);
  scheduleRender();
}

const diagItems = new Map(); // "source/revision" → li
function renderDiagnostics() {
  const list = state.diagnostics.slice().reverse();
  const items = list.map((d) => {
    const k = `${d.source}/${d.host ?? ''}/${d.revision}/${d.diagnostic.code}`;
    let li = diagItems.get(k);
    if (!li) {
      const at = new Date(d.at);
      li = h(
        'li',
        {},
        h(
          'div',
          { class: 'dhead' },
          h('span', { class: 'dcode', text: d.diagnostic.code }),
          h('span', { class: 'dsrc', text: d.host ? `${d.source} · ${d.host}` : d.source }),
          h('time', { datetime: at.toISOString(), title: at.toLocaleString(), text: at.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false }) }),
        ),
        h('p', { class: 'dmsg', text: d.diagnostic.message }),
      );
      diagItems.set(k, li);
    }
    return li;
  });
  const keep = new Set(items);
  for (const [k, li] of diagItems) if (!keep.has(li)) diagItems.delete(k);
  reconcile($('diagnostics'), items);
  $('diagnostics-empty').hidden = items.length > 0;
  $('diagnostics-count').textContent = items.length ? `(${items.length})` : '';
}

// ---- the 1 s clock: relative times, the retry countdown, wake-up ----
let lastTick = Date.now();
function tick() {
  const now = Date.now();
  for (const el of document.querySelectorAll('time[data-since]')) {
    const d = formatDuration(now - Number(el.dataset.since));
    el.textContent = el.dataset.exact === '1' ? d : `≥ ${d}`;
  }
  for (const el of document.querySelectorAll('time[data-ago]')) el.textContent = formatAgo(now - Number(el.dataset.ago));
  const c = state.connection;
  const detail = $('conn-detail');
  if (c.state === 'reconnecting' && c.retryAt) {
    const secs = Math.max(0, Math.ceil((c.retryAt - now) / 1000));
    detail.textContent = secs > 0 ? `retry in ${secs}s` : 'retrying…';
  } else if (c.state === 'live' && state.revision !== null) {
    detail.textContent = '';
  } else {
    detail.textContent = '';
  }
}
setInterval(() => {
  const now = Date.now();
  // A jump of the clock means the machine slept: resume at once.
  if (now - lastTick > 10000) client.checkAlive(0);
  lastTick = now;
  tick();
}, 1000);

function clearFilters() {
  filters.statuses.clear();
  filters.harnesses.clear();
  saveFilters();
  scheduleRender();
}

$('f-clear').addEventListener('click', clearFilters);
$('notify').addEventListener('click', toggleNotify);
$('confirm-risky').addEventListener('click', toggleConfirm);
renderConfirmToggle();
$('conn-retry').addEventListener('click', () => client.reconnect());
window.addEventListener('online', () => client.checkAlive(0));
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible') client.checkAlive();
});
window.addEventListener('pageshow', (e) => {
  if (e.persisted) client.reconnect();
});

// ---- the views: Live (the sessions now) and History, by the address's
// hash (#history?days=30&source=…&id=…), so a view can be linked.
/** An agent's name from the sources' harnesses (its id when none says). */
function agentLabel(harnessId) {
  for (const src of state.sources) {
    const hh = src.harnesses.find((x) => x.id === harnessId);
    if (hh) return hh.displayName;
  }
  return harnessId;
}
function route() {
  const r = parseHash(location.hash);
  const hist = r.view === 'history';
  $('live-view').hidden = hist;
  $('history-view').hidden = !hist;
  for (const [id, on] of [['tab-live', !hist], ['tab-history', hist]]) {
    if (on) $(id).setAttribute('aria-current', 'page');
    else $(id).removeAttribute('aria-current');
  }
  if (hist) {
    // The tab goes back to this range (and session) from the live view.
    $('tab-history').setAttribute('href', location.hash);
    historyView.show(r);
  } else historyView.hide();
}
window.addEventListener('hashchange', route);
route();

// Exposed for the browser test and for curious users in the console.
window.agentbridge = { client };
client.start();
scheduleRender();
