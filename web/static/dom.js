// dom.js — the small DOM helpers the dashboard's views share. Text only
// ever goes in as text nodes or textContent, never as HTML.

/** Creates an element; string and number children become text nodes. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** Puts exactly `nodes` into `parent`, in order, moving only what must move. */
export function reconcile(parent, nodes, from = 0) {
  let i = from;
  for (const n of nodes) {
    const at = parent.children[i];
    if (at !== n) parent.insertBefore(n, at ?? null);
    i++;
  }
  while (parent.children.length > i) parent.lastElementChild.remove();
}
