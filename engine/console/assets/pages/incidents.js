import { api, enc, filters, h, instanceLink, list, onFacts, processLink, q, status, time } from '../app.js';

const causes = ['', 'operation', 'expression', 'dataFlow', 'retriesExhausted', 'bpmnError', 'childFailed'];

// A page shows at most pageSize incidents (?limit= changes it); the API's
// cursors (?after=, ?before=) page through the rest.
const pageSize = 100;

export async function render(main) {
  const body = h('div', {});
  main.replaceChildren(h('h1', {}, 'Incidents'),
    filters([['instance', 'instance'], ['process', 'process'], ['node', 'node'], ['cause', 'cause', causes],
      ['state', 'state', ['open', 'closed', 'all']], ['olderThan', 'older than']]),
    body);
  const params = new URLSearchParams();
  for (const k of ['instance', 'process', 'node', 'cause', 'olderThan', 'after', 'before']) if (q(k)) params.set(k, q(k));
  params.set('state', q('state') || 'open');
  params.set('limit', q('limit') || String(pageSize));
  const load = async () => {
    const res = await api('GET', `/v1/incidents?${params}`);
    const items = list(res, 'incidents');
    body.replaceChildren(pager(res, items.length, 'pages'), table(items, load), items.length > 20 ? pager(res, items.length, 'pages, at the end') : '');
  };
  await load();
  let busy = false;
  onFacts(async (facts) => {
    if (busy || !facts.some((f) => f.subject.startsWith('jetbpm.fact.incident.'))) return;
    // Keep the answers shown: reload only when nothing is selected.
    if (body.querySelector('input[name=sel]:checked') || body.querySelector('.answer')) return;
    busy = true; try { await load(); } finally { busy = false; }
  });
}

// pager says how many incidents match and links the pages around this
// one (the same filters, the API's cursor).
function pager(res, shown, label) {
  const link = (cursor, value, text, rel) => {
    const p = new URLSearchParams(location.search);
    p.delete('after'); p.delete('before'); p.set(cursor, value);
    return h('a', { href: `?${p}`, rel }, text);
  };
  const total = typeof res.total === 'number' ? res.total : shown;
  return h('nav', { class: 'pager', 'aria-label': label },
    res.prev ? link('before', res.prev, '‹ Previous', 'prev') : h('span', { class: 'muted' }, '‹ Previous'),
    h('span', { class: 'muted' }, `${shown} shown of ${total} matching`),
    res.next ? link('after', res.next, 'Next ›', 'next') : h('span', { class: 'muted' }, 'Next ›'));
}

function table(items, reload) {
  if (items.length === 0) return h('p', { class: 'muted' }, 'No incident matches.');
  const all = h('input', { type: 'checkbox', 'aria-label': 'select all on this page', onchange: (e) => {
    for (const c of document.querySelectorAll('input[name=sel]')) c.checked = e.target.checked;
  } });
  const selected = () => [...document.querySelectorAll('input[name=sel]:checked')].map((c) => items.find((i) => i.id === c.value));
  const bulk = h('div', { class: 'bulk', role: 'group', 'aria-label': 'bulk actions' }, 'Selected rows:',
    h('button', { id: 'bulk-retry', onclick: () => each(selected(), 'retry') }, 'Retry'),
    h('button', { id: 'bulk-resolve', onclick: () => resolveDialog(selected(), null) }, 'Resolve…'),
    h('button', { id: 'bulk-abandon', class: 'danger', onclick: () => each(selected(), 'abandon') }, 'Abandon'));
  return h('div', {}, bulk,
    h('table', { class: 'wide', id: 'incidents' },
      h('thead', {}, h('tr', {}, h('th', {}, all), ['incident', 'process', 'node', 'cause', 'attempts', 'first failure', 'state', 'actions'].map((c) => h('th', {}, c)))),
      h('tbody', {}, items.map((i) => h('tr', { dataset: { incident: i.id } },
        h('td', {}, h('input', { type: 'checkbox', name: 'sel', value: i.id, 'aria-label': `select ${i.id}` })),
        h('td', {}, instanceLink(i.instanceId), h('div', { class: 'muted' }, i.id)),
        h('td', {}, processLink(i.processId, i.version), ` v${i.version}`),
        h('td', {}, i.nodeId),
        h('td', {}, h('b', {}, i.causeClass), h('div', { class: 'cause-text' }, (i.causeChain || []).at(-1) || '')),
        h('td', { class: 'num' }, i.attempts),
        h('td', {}, time(i.firstFailureAt)),
        h('td', { class: 'state' }, status(i.state)),
        h('td', {}, i.state === 'open' ? actionButtons(i, null) : '', h('div', { class: 'answer', role: 'status' })))))));
}

// actionButtons are an open incident's retry, resolve and abandon; the
// engine's answer shows beside them. reload, when set, runs after a
// success (the instance page redraws).
export function actionButtons(inc, reload) {
  const wrap = h('div', { class: 'actions', dataset: { actions: inc.id } },
    h('button', { class: 'primary', onclick: () => act(inc, 'retry', undefined, reload) }, 'Retry'),
    h('button', { onclick: () => resolveDialog([inc], reload) }, 'Resolve…'),
    h('button', { class: 'danger', onclick: () => act(inc, 'abandon', undefined, reload) }, 'Abandon'));
  return wrap;
}

function answerFor(id) {
  return document.querySelector(`[data-incident="${CSS.escape(id)}"] .answer`) ||
    (() => { const a = h('div', { class: 'answer', role: 'status' }); document.querySelector(`[data-actions="${CSS.escape(id)}"]`)?.after(a); return a; })();
}

async function act(inc, action, vars, reload) {
  const out = answerFor(inc.id);
  out.className = 'answer'; out.textContent = `${action}…`;
  try {
    const rec = await api('POST', `/v1/incidents/${enc(inc.id)}/${action}`, vars === undefined ? {} : { vars });
    const last = (rec.history || []).at(-1);
    const msg = `engine: ${action} done, incident ${rec.state}${last ? ` (${last.kind}${last.detail ? `: ${last.detail}` : ''})` : ''}`;
    out.className = 'answer ok';
    out.textContent = msg;
    settleRow(inc.id, rec.state);
    if (reload) {
      // The page redraws; its own status line keeps the answer.
      await reload();
      const box = document.getElementById('action-answer');
      if (box) { box.className = 'answer ok'; box.textContent = `${inc.id}: ${msg}`; }
    }
  } catch (err) {
    out.className = 'answer err';
    out.textContent = `engine: ${err.message}`;
  }
}

// settleRow shows an incident's new state in its row of the list, and
// takes away its actions and selection once it is no longer open.
function settleRow(id, state) {
  const row = document.querySelector(`tr[data-incident="${CSS.escape(id)}"]`);
  if (!row) return;
  row.querySelector('td.state')?.replaceChildren(status(state));
  if (state === 'open') return;
  row.querySelector(`[data-actions="${CSS.escape(id)}"]`)?.remove();
  const sel = row.querySelector('input[name=sel]');
  if (sel) { sel.checked = false; sel.disabled = true; }
}

async function each(incs, action) {
  for (const i of incs.filter(Boolean)) await act(i, action);
}

// resolveDialog edits the variables to set before resolving: a JSON
// object, started from the variables the node saw at its last failure.
async function resolveDialog(incs, reload) {
  incs = incs.filter(Boolean);
  if (incs.length === 0) return;
  let start = {};
  if (incs.length === 1) {
    try {
      const full = await api('GET', `/v1/incidents/${enc(incs[0].id)}`);
      start = (full.variables || []).at(-1)?.variables || {};
    } catch { /* start empty */ }
  }
  const area = h('textarea', { id: 'resolve-vars', 'aria-label': 'variables (JSON object)' }, JSON.stringify(start, null, 2));
  const err = h('p', { class: 'error', role: 'alert', hidden: true });
  const dlg = h('dialog', { id: 'resolve-dialog', 'aria-labelledby': 'resolve-title' },
    h('form', { method: 'dialog' },
      h('h2', { id: 'resolve-title' }, `Resolve ${incs.length === 1 ? incs[0].id : `${incs.length} incidents`}`),
      h('p', { class: 'muted' }, 'These variables are set, then the instance continues after the node as if it had completed.'),
      area, err,
      h('p', {}, h('button', { class: 'primary', id: 'resolve-submit', value: 'ok' }, 'Resolve'), ' ',
        h('button', { value: 'cancel', formnovalidate: true }, 'Cancel'))));
  document.body.append(dlg);
  dlg.addEventListener('close', async () => {
    dlg.remove();
    if (dlg.returnValue !== 'ok') return;
    for (const i of incs) await act(i, 'resolve', JSON.parse(area.value || '{}'), reload);
  });
  dlg.querySelector('form').addEventListener('submit', (e) => {
    if (e.submitter?.value !== 'ok') return;
    try {
      const v = JSON.parse(area.value || '{}');
      if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('want a JSON object');
    } catch (x) {
      e.preventDefault(); err.hidden = false; err.textContent = `Variables: ${x.message}`;
    }
  });
  dlg.showModal();
  area.focus();
}
