// history.js — the dashboard's History view: tokens, estimated cost and
// time waiting for you per day, stacked by agent (GET /v1/usage by day,
// split by harness), the sessions of the range (GET /v1/history) and the
// timeline of one session's turns and waits. The charts are Chart.js
// (vendor/chart.umd.min.js, loaded by index.html as window.Chart); their
// colours come from the page's CSS variables, so they follow the light
// and dark themes. Text from agents goes in through textContent only.

import { formatDuration, formatTokens, totalTokens } from './view.js';
import {
  OUTCOME_WORDS,
  RANGES,
  TURN_OUTCOMES,
  UNPRICED_MARK,
  formatCost,
  formatCostTick,
  formatHash,
  formatMinutes,
  historyKey,
  localZone,
  pricesWords,
  projectLabel,
  rangeFor,
  rangeParams,
  timeStep,
  timeline,
  usageCharts,
} from './history-data.js';
import { h, reconcile } from './dom.js';

const $ = (id) => document.getElementById(id);

/** How many sessions the table lists at most. */
const SESSION_LIMIT = 200;

/** The theme's colours, read from the CSS variables now in force. */
function theme() {
  const cs = getComputedStyle(document.documentElement);
  const v = (name) => cs.getPropertyValue(name).trim();
  return {
    text: v('--muted'),
    strong: v('--text'),
    grid: v('--border'),
    surface: v('--surface'),
    font: getComputedStyle(document.body).fontFamily,
    series: Array.from({ length: 8 }, (_, i) => v(`--series-${i + 1}`)),
    outcome: { success: v('--done-line'), error: v('--blocked-line'), cancelled: v('--idle-line'), running: v('--running-line') },
    waiting: v('--waiting-line'),
    blocked: v('--blocked-line'),
  };
}

/** A colour with alpha (hex #rrggbb only; others are kept). */
function fade(color, alpha) {
  const m = /^#([0-9a-f]{6})$/i.exec(color);
  if (!m) return color;
  const n = parseInt(m[1], 16);
  return `rgba(${n >> 16}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`;
}

function clock(ms, withDay, withSeconds = false) {
  const d = new Date(ms);
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', ...(withSeconds ? { second: '2-digit' } : {}), hour12: false });
  return withDay ? `${d.toLocaleDateString([], { month: 'short', day: 'numeric' })} ${time}` : time;
}

/**
 * Sets up the History view. `agentLabel(harnessId)` names an agent.
 * Returns {show(route), hide(), relabel()}: show fetches what the route's
 * range needs (on entering the view, for another range, or on Refresh)
 * and opens its session's timeline.
 */
export function initHistory({ client, agentLabel = (id) => id }) {
  const charts = {}; // name → Chart
  let data = null; // {days, usage, shaped, sessions, range}
  let route = null; // the route shown
  let loading = 0; // the generation of the load in flight
  let visible = false;

  const rangeButtons = RANGES.map((d) =>
    h('button', { type: 'button', class: 'chip', 'data-days': d, 'aria-pressed': 'false', onclick: () => go({ days: d, session: null }), text: `${d} days` }),
  );
  reconcile($('hist-ranges'), rangeButtons);
  $('hist-refresh').addEventListener('click', () => route && load(route.days));
  $('hist-close').addEventListener('click', () => go({ days: route?.days, session: null }));

  function go(r) {
    location.hash = formatHash({ days: r.days ?? route?.days, session: r.session });
  }

  // The timeline's ticks thin out on a narrow screen.
  const narrow = window.matchMedia('(max-width: 760px)');
  narrow.addEventListener?.('change', () => {
    if (visible && data && !$('hist-body').hidden) renderTimeline();
  });

  // The charts follow the theme as it changes.
  const dark = window.matchMedia?.('(prefers-color-scheme: dark)');
  dark?.addEventListener?.('change', () => {
    if (visible && data) draw();
  });

  function setState(kind, ...content) {
    const box = $('hist-empty');
    box.hidden = kind === 'ok';
    box.dataset.state = kind;
    box.replaceChildren(...content);
    $('hist-body').hidden = kind !== 'ok';
  }

  async function load(days) {
    const gen = ++loading;
    const range = rangeFor(days);
    const tz = localZone();
    $('hist-status').textContent = 'Loading…';
    try {
      const params = rangeParams(range, tz);
      const [usage, hist] = await Promise.all([
        client.fetchUsage({ by: 'day', split: 'harness', ...params }),
        client.fetchHistory({ from: params.from, to: params.to, limit: SESSION_LIMIT }), // tz is usage's alone
      ]);
      if (gen !== loading) return;
      const sessions = (hist?.sessions ?? []).slice().sort((a, b) => (b.startedAt || 0) - (a.startedAt || 0));
      data = { days, range, tz, usage, sessions, shaped: shape(usage, range, tz) };
      $('hist-status').textContent = '';
      if (data.shaped.empty && sessions.length === 0) {
        setState(
          'empty',
          h('strong', { text: 'No history yet.' }),
          `The bridge records every session it sees; nothing was recorded in the last ${days} days. Run an agent (or `,
          h('code', { text: 'agentbridge demo' }),
          ') and come back.',
        );
        destroyCharts();
        return;
      }
      setState('ok');
      draw();
    } catch (err) {
      if (gen !== loading) return;
      data = null;
      destroyCharts();
      $('hist-status').textContent = '';
      const type = err?.problem?.type ?? '';
      if (err?.status === 404 && (type.endsWith('history-off') || err?.problem?.code === 'history-off')) {
        // The bridge's own words say why (its setting, or no state directory).
        const why = err.problem?.detail;
        setState(
          'off',
          h('strong', { text: 'History is off.' }),
          why ? `The bridge says: ${why}. ` : 'This bridge keeps no history. ',
          'History is on by default; without ',
          h('code', { text: 'history.enabled: false' }),
          ' in the configuration, a restarted bridge records sessions from then on.',
        );
      } else if (err?.status === 401 || err?.status === 403) {
        setState('unauthorized', h('strong', { text: 'Sign in to see the history.' }), 'Open the dashboard with ', h('code', { text: 'agentbridge open' }), '.');
      } else {
        setState('error', h('strong', { text: 'Could not load the history.' }), String(err?.message ?? err));
      }
    }
  }

  // The table says its range and zone; a bridge that does not, the asked.
  function shape(usage, range, tz) {
    return usageCharts({ tz, ...usage, from: usage?.from || range.from, to: usage?.to || range.to }, { label: agentLabel });
  }

  function destroyCharts() {
    for (const [k, c] of Object.entries(charts)) {
      c.destroy();
      delete charts[k];
    }
  }

  /** Makes or updates the chart on canvas id with config. */
  function chart(id, config) {
    const c = charts[id];
    if (c) {
      c.data = config.data;
      c.options = config.options;
      c.update('none');
      return c;
    }
    charts[id] = new window.Chart($(id), config);
    return charts[id];
  }

  function baseOptions(t, { stacked = true, y = {} } = {}) {
    return {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      interaction: { mode: 'index', intersect: false },
      color: t.text,
      font: { family: t.font },
      plugins: {
        legend: { position: 'bottom', labels: { color: t.strong, boxWidth: 12, boxHeight: 12, font: { family: t.font } } },
        tooltip: { backgroundColor: t.surface, titleColor: t.strong, bodyColor: t.strong, footerColor: t.text, borderColor: t.grid, borderWidth: 1 },
      },
      scales: {
        x: { stacked, ticks: { color: t.text, font: { family: t.font }, maxRotation: 0, autoSkip: true }, grid: { color: t.grid, display: false }, border: { color: t.grid } },
        y: { stacked, beginAtZero: true, ticks: { color: t.text, font: { family: t.font } }, grid: { color: t.grid }, border: { color: t.grid }, ...y },
      },
    };
  }

  function bars(series, t) {
    return series.map((s, i) => ({
      key: s.key,
      label: s.label,
      data: s.data,
      backgroundColor: t.series[i % t.series.length],
      borderColor: t.series[i % t.series.length],
      borderWidth: 0,
      maxBarThickness: 42,
    }));
  }

  function draw() {
    if (!window.Chart) {
      setState('error', h('strong', { text: 'The charts could not load.' }), 'vendor/chart.umd.min.js did not run.');
      return;
    }
    const t = theme();
    const s = data.shaped;
    const tok = baseOptions(t, { y: { ticks: { color: t.text, callback: (v) => formatTokens(v) } } });
    tok.plugins.tooltip.callbacks = { label: (c) => `${c.dataset.label}: ${formatTokens(c.parsed.y)} tokens` };
    chart('chart-tokens', { type: 'bar', data: { labels: s.labels, datasets: bars(s.tokens, t) }, options: tok });

    const cost = baseOptions(t, { y: { ticks: { color: t.text, callback: formatCostTick } } });
    cost.plugins.tooltip.callbacks = {
      label: (c) =>
        c.dataset.type === 'line' ? `${formatTokens(s.unpriced[c.dataIndex])} tokens with no known price, not counted` : `${c.dataset.label}: ${formatCost(c.parsed.y)}`,
    };
    const costSets = bars(s.cost, t);
    // A day with tokens of no known price gets a mark on its axis (its
    // label's mark may be skipped when the labels do not all fit).
    if (s.unpriced.some((n) => n > 0)) {
      costSets.push({
        type: 'line',
        label: 'price unknown',
        data: s.unpriced.map((n) => (n > 0 ? 0 : null)),
        stack: 'unpriced',
        showLine: false,
        clip: false,
        pointStyle: 'triangle',
        pointRadius: 8,
        pointHoverRadius: 9,
        backgroundColor: t.text,
        borderColor: t.text,
      });
    }
    chart('chart-cost', { type: 'bar', data: { labels: s.labels, datasets: costSets }, options: cost });
    const unpricedDays = s.unpriced.filter((n) => n > 0).length;
    $('cost-note').textContent =
      `An estimate from ${pricesWords(s.pricesAsOf)}, not a bill.` +
      (unpricedDays ? ` Days marked${UNPRICED_MARK} had tokens of a model with no known price (${formatTokens(s.unpriced.reduce((a, b) => a + b, 0))} in all); those are not counted.` : '');
    $('chart-cost').dataset.unpricedDays = String(unpricedDays);

    const most = Math.max(0, ...s.days.map((_, i) => s.waiting.reduce((n, x) => n + x.data[i], 0)));
    const wait = baseOptions(t, { y: { ticks: { color: t.text, stepSize: Math.max(1, timeStep(most * 60000, 6) / 60000), callback: (v) => formatMinutes(v) } } });
    wait.plugins.tooltip.callbacks = { label: (c) => `${c.dataset.label}: ${formatDuration(c.parsed.y * 60000)}` };
    chart('chart-waiting', { type: 'bar', data: { labels: s.labels, datasets: bars(s.waiting, t) }, options: wait });

    renderSessions();
    renderTimeline(t);
  }

  function renderSessions() {
    const body = $('hist-rows');
    const open = route?.session;
    const rows = data.sessions.map((s) => {
      const selected = !!open && open.source === s.source && open.id === s.id && (open.host ?? '') === (s.host ?? '');
      const session = { source: s.source, id: s.id, host: s.host ?? '' };
      const pick = () => go({ session });
      const cost = s.cost ? formatCost(s.cost.usd) : '—';
      const costTitle = s.cost
        ? `estimated from ${pricesWords([s.cost.pricesAsOf])}${s.cost.unpricedTokens ? `; ${formatTokens(s.cost.unpricedTokens)} tokens with no known price not counted` : ''}`
        : 'no known price for its model';
      const tokens = totalTokens(s.usage);
      const tr = h(
        'tr',
        { class: selected ? 'hrow-session selected' : 'hrow-session', 'data-key': historyKey(s), 'aria-selected': selected ? 'true' : 'false', onclick: pick },
        h('td', { class: 'num' }, s.startedAt ? h('time', { datetime: new Date(s.startedAt).toISOString(), text: clock(s.startedAt, true) }) : '—'),
        h('td', {}, h('span', { text: agentLabel(s.harness) }), s.host ? h('span', { class: 'host', text: ` on ${s.host}` }) : null),
        h('td', { class: 'mono', title: s.project || s.cwd || '', text: projectLabel(s.project || s.cwd) || '—' }),
        h('td', { class: 'num', text: String(s.turns?.length ?? 0) }),
        h('td', { class: 'num', text: formatDuration(s.activeMs ?? 0) }),
        h('td', { class: 'num', text: formatDuration(s.waitingMs ?? 0) }),
        h('td', { class: 'num', title: `${tokens} tokens`, text: formatTokens(tokens) }),
        h('td', { class: 'num', title: costTitle, text: cost }),
        h('td', { class: 'hist-title' }, h('button', { type: 'button', class: 'link', 'aria-label': `Timeline of ${s.title || s.id}`, text: s.title || s.id })),
      );
      tr.querySelector('button').addEventListener('click', (e) => {
        e.stopPropagation();
        pick();
      });
      return tr;
    });
    reconcile(body, rows);
    $('hist-sessions-empty').hidden = rows.length > 0;
    const n = data.sessions.length;
    $('hist-sessions-heading').textContent = n >= SESSION_LIMIT ? `Sessions (the newest ${SESSION_LIMIT})` : `Sessions (${n})`;
  }

  function renderTimeline(t = theme()) {
    const box = $('hist-timeline');
    const open = route?.session;
    const s = open && data?.sessions.find((x) => x.source === open.source && x.id === open.id && (x.host ?? '') === (open.host ?? ''));
    if (!s) {
      box.hidden = true;
      charts['chart-timeline']?.destroy();
      delete charts['chart-timeline'];
      return;
    }
    const wasHidden = box.hidden;
    box.hidden = false;
    $('timeline-title').textContent = s.title || s.id;
    const meta = [agentLabel(s.harness), s.model, projectLabel(s.project || s.cwd), s.startedAt ? `started ${clock(s.startedAt, true)}` : ''];
    $('timeline-meta').textContent = meta.filter(Boolean).join(' · ');
    const tl = timeline(s);
    const multiDay = tl.max - tl.min > 20 * 3600 * 1000;
    const datasets = TURN_OUTCOMES.filter((o) => tl.turns.some((x) => x.outcome === o)).map((o) => ({
      label: `turn ${OUTCOME_WORDS[o]}`,
      outcome: o,
      data: tl.turns.filter((x) => x.outcome === o).map((x) => ({ x: [x.start, x.end], y: 'Turns', item: x })),
      backgroundColor: (c) => (c.raw?.item?.open ? fade(t.outcome[o], 0.45) : t.outcome[o]),
      borderColor: t.outcome[o],
      borderWidth: 1,
      grouped: false,
      minBarLength: 3,
      barPercentage: 0.7,
      categoryPercentage: 1,
    }));
    datasets.push({
      label: 'waiting for you',
      data: tl.waits.map((w) => ({ x: [w.start, w.end], y: 'Waits', item: w })),
      backgroundColor: (c) => {
        const col = c.raw?.item?.state === 'blocked' ? t.blocked : t.waiting;
        return c.raw?.item?.open ? fade(col, 0.45) : col;
      },
      borderColor: t.waiting,
      borderWidth: 1,
      grouped: false,
      minBarLength: 3,
      barPercentage: 0.7,
      categoryPercentage: 1,
    });
    const opts = baseOptions(t, { stacked: false });
    opts.indexAxis = 'y';
    opts.interaction = { mode: 'nearest', intersect: true };
    const step = timeStep(tl.max - tl.min, narrow.matches ? 4 : 8);
    opts.scales.x = {
      ...opts.scales.x,
      type: 'linear',
      min: tl.min,
      max: tl.max,
      grid: { color: t.grid },
      ticks: { color: t.text, stepSize: step, includeBounds: false, autoSkip: true, callback: (v) => clock(v, multiDay, step < 60000) },
    };
    opts.scales.y = { ...opts.scales.y, type: 'category', labels: ['Turns', 'Waits'], beginAtZero: false, grid: { display: false } };
    opts.plugins.tooltip.callbacks = {
      title: (items) => {
        const it = items[0]?.raw?.item;
        if (!it) return '';
        return it.turn === undefined ? `Turn ${it.index + 1}: ${OUTCOME_WORDS[it.outcome]}` : `Waited${it.state === 'blocked' ? ' (blocked)' : ''}`;
      },
      label: (c) => {
        const it = c.raw.item;
        const span = `${clock(it.start, multiDay)}–${it.open ? 'no end seen yet' : clock(it.end, multiDay)} (${formatDuration(it.end - it.start)})`;
        if (it.turn === undefined) return [span, `${formatTokens(it.tokens)} tokens · ${it.tools} tool calls${it.model ? ` · ${it.model}` : ''}`];
        return [span, it.reason, it.answered ? `ended: ${it.answered}` : ''].filter(Boolean);
      },
    };
    chart('chart-timeline', { type: 'bar', data: { labels: ['Turns', 'Waits'], datasets }, options: opts });
    const byOutcome = TURN_OUTCOMES.map((o) => [OUTCOME_WORDS[o], tl.turns.filter((x) => x.outcome === o).length]).filter(([, n]) => n);
    $('chart-timeline').setAttribute(
      'aria-label',
      `The timeline of ${s.title || s.id}: ${tl.turns.length} turn${tl.turns.length === 1 ? '' : 's'}` +
        (byOutcome.length ? ` (${byOutcome.map(([w, n]) => `${n} ${w}`).join(', ')})` : '') +
        `, ${tl.waits.length} wait${tl.waits.length === 1 ? '' : 's'} for you`,
    );
    if (wasHidden) box.scrollIntoView({ block: 'nearest' });
  }

  return {
    show(r) {
      // Entering the view, or another range: ask again (the history grows).
      const again = !visible || !route || route.days !== r.days || !data;
      visible = true;
      route = r;
      for (const b of rangeButtons) b.setAttribute('aria-pressed', String(Number(b.dataset.days) === r.days));
      if (again) load(r.days);
      else if (!$('hist-body').hidden) draw(); // the theme may have changed meanwhile
    },
    hide() {
      visible = false;
    },
    /** Names the agents again (the sources arrived or changed). */
    relabel() {
      if (!data) return;
      data.shaped = shape(data.usage, data.range, data.tz);
      if (visible && !$('hist-body').hidden) draw();
    },
  };
}
