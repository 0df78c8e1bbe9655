// The console's entry module: helpers every page uses (the API client,
// the live feed, DOM building) and the router that picks the page module.
// Every change goes through the HTTP API (/v1); /console/ is read-only.

export class APIError extends Error {
  constructor(status, message, problem) { super(message); this.status = status; this.problem = problem; }
}

// api calls the HTTP API and returns the decoded JSON (or the text of a
// non-JSON answer). A refusal throws an APIError with the problem's detail.
export async function api(method, path, body, contentType) {
  const init = { method, headers: { Accept: 'application/json, application/problem+json, */*' } };
  if (body !== undefined) {
    if (contentType) { init.body = body; init.headers['Content-Type'] = contentType; }
    else { init.body = JSON.stringify(body); init.headers['Content-Type'] = 'application/json'; }
  }
  const res = await fetch(path, init);
  const text = await res.text();
  let data = text;
  if ((res.headers.get('Content-Type') || '').includes('json')) {
    try { data = text ? JSON.parse(text) : null; } catch { /* keep the text */ }
  }
  if (!res.ok) {
    const msg = (data && (data.detail || data.title)) || text || res.statusText;
    throw new APIError(res.status, `${res.status} ${typeof msg === 'string' ? msg : JSON.stringify(msg)}`, data);
  }
  return data;
}

// list takes the array out of a list answer: {"instances": [...]} or [...].
export function list(data, field) {
  if (Array.isArray(data)) return data;
  return (data && Array.isArray(data[field])) ? data[field] : [];
}

// h builds an element: h('a', {href: '/'}, 'text', child, ...).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export const q = (name) => new URLSearchParams(location.search).get(name) || '';
export const enc = encodeURIComponent;

export function time(t) {
  if (!t) return '';
  const d = new Date(t);
  return isNaN(d) ? String(t) : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

export const status = (s) => h('span', { class: `status ${s}` }, s);

export function instanceLink(id) { return h('a', { href: `/instances/${enc(id)}` }, id); }
export function processLink(id, version) {
  return h('a', { href: `/processes/${enc(id)}${version ? `?version=${version}` : ''}` }, id);
}

// filters renders a GET form whose fields keep the query's values.
export function filters(fields) {
  return h('form', { class: 'filters', method: 'get', role: 'search' },
    fields.map(([name, label, options]) => h('label', {}, label,
      options
        ? h('select', { name }, options.map((o) => h('option', { value: o, selected: q(name) === o }, o || 'any')))
        : h('input', { name, value: q(name), size: 14 }))),
    h('button', { type: 'submit' }, 'Filter'));
}

export function showError(el, err) {
  el.replaceChildren(h('p', { class: 'error', role: 'alert' }, err.message || String(err)));
}

// Live updates: one EventSource per page on the facts feed. onFacts calls
// fn with the facts that arrived, at most once a second. Below history
// level full some families of facts are not written at all (the feed's
// ready event says which): pollUnrecorded(family, fn) then calls fn every
// few seconds instead, for a page that follows what those facts would
// have announced.
const listeners = new Set();
const pollers = [];
let source, unrecorded = null;
export function pollUnrecorded(family, fn) {
  pollers.push([family, fn]);
  if (unrecorded) startPolling(family, fn);
}
function startPolling(family, fn) {
  if (unrecorded.includes(family)) setInterval(() => { Promise.resolve(fn()).catch(() => {}); }, 5000);
}
export function onFacts(fn) {
  listeners.add(fn);
  if (source) return;
  const badge = document.getElementById('live');
  source = new EventSource('/console/events');
  let batch = [], timer = null;
  source.addEventListener('ready', (e) => {
    badge.textContent = 'live'; badge.className = 'live on';
    if (unrecorded) return; // a reconnect
    unrecorded = JSON.parse(e.data || '{}').notRecorded || [];
    for (const [family, fn] of pollers) startPolling(family, fn);
  });
  source.addEventListener('fact', (e) => {
    batch.push(JSON.parse(e.data));
    if (timer) return;
    timer = setTimeout(() => {
      const facts = batch; batch = []; timer = null;
      for (const l of listeners) l(facts);
    }, 1000);
  });
  source.onerror = () => { badge.textContent = 'reconnecting…'; badge.className = 'live off'; };
  // Close the stream when the page goes: a browser keeps six connections
  // to a host, and streams left to the page's teardown used them up after
  // six page loads (the seventh never loaded).
  addEventListener('pagehide', () => { source.close(); source = null; });
  // A page brought back from the back-forward cache has no stream: load it afresh.
  addEventListener('pageshow', (e) => { if (e.persisted) location.reload(); });
}

// The damage banner: while the store has open damage records
// (docs/reliability.md, "A damaged store"), every page says so above its
// content and links the records. A role that may not read them sees none.
export async function refreshBanner(res) {
  try { res = res || await api('GET', '/v1/store/damage'); } catch { return; }
  const open = (res.records || []).filter((r) => r.status === 'open');
  let el = document.getElementById('damage');
  if (open.length === 0) { el?.remove(); return; }
  const names = open.map((r) => r.instance || r.process || (r.gap && r.gap.stream)).filter(Boolean);
  const shown = names.slice(0, 3).join(', ') + (names.length > 3 ? ` and ${names.length - 3} more` : '');
  const banner = h('div', { id: 'damage', class: 'damage', role: 'alert' },
    h('b', {}, 'Store damaged: '), `${open.length} open damage record(s)${shown ? ` (${shown})` : ''}. `,
    h('a', { href: '/store' }, 'See what was lost and act on it'));
  if (el) el.replaceWith(banner); else document.getElementById('main').before(banner);
}

const routes = [
  [/^\/$/, 'overview'],
  [/^\/processes\/([^/]+)$/, 'process'],
  [/^\/instances$/, 'instances'],
  [/^\/instances\/([^/]+)$/, 'instance'],
  [/^\/incidents$/, 'incidents'],
  [/^\/tasks$/, 'tasks'],
  [/^\/store$/, 'store'],
];

async function route() {
  const main = document.getElementById('main');
  for (const a of document.querySelectorAll('header nav a:not(.brand)')) {
    const p = a.getAttribute('href');
    if (p === '/' ? location.pathname === '/' : location.pathname.startsWith(p)) a.setAttribute('aria-current', 'page');
  }
  if (location.pathname !== '/store') refreshBanner(); // the store page shows it with its own answer
  for (const [re, name] of routes) {
    const m = location.pathname.match(re);
    if (!m) continue;
    performance.mark('app');
    const page = await import(`./pages/${name}.js`);
    performance.mark('page-module');
    try {
      await page.render(main, ...m.slice(1).map(decodeURIComponent));
    } catch (err) {
      showError(main, err);
    }
    performance.mark('rendered');
    document.body.dataset.readyMs = Math.round(performance.now()); // for the load measurement
    document.body.dataset.ready = name;
    return;
  }
  main.replaceChildren(h('h1', {}, 'Not found'));
}

route();
