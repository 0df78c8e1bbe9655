import { api, enc, h, instanceLink, processLink, q, refreshBanner, status, time } from '../app.js';

// The store's damage records (docs/reliability.md, "A damaged store"):
// open ones first, each with the operator's actions — dismiss with a
// reason; recreate a lost instance — and the engine's answer beside them.
// "Check now" runs the store check (operator).
export async function render(main) {
  const body = h('div', {});
  const summary = h('p', { id: 'check-answer', class: 'answer', role: 'status' });
  const all = q('all') === '1';
  // The records are not in the facts feed: the page shows them as loaded.
  const badge = document.getElementById('live');
  badge.textContent = 'as loaded'; badge.title = 'damage records are not live: Check now or reload';
  main.replaceChildren(h('h1', {}, 'Store damage'),
    h('p', { class: 'muted' }, 'What the engine found lost or damaged in its store, and what was done about it. ',
      all ? h('a', { href: '/store' }, 'Show open records only') : h('a', { href: '/store?all=1' }, 'Show closed records too')),
    h('div', { class: 'bulk' }, h('button', { id: 'check-now', onclick: () => check(summary, load) }, 'Check now'), summary),
    body);
  const load = async (res) => {
    res = res || await api('GET', '/v1/store/damage');
    const recs = (res.records || []).filter((r) => all || r.status === 'open');
    recs.sort((a, b) => (a.status === 'open' ? 0 : 1) - (b.status === 'open' ? 0 : 1) || String(b.detected).localeCompare(String(a.detected)));
    body.replaceChildren(recs.length ? table(recs, load)
      : h('p', { class: 'muted', id: 'store-whole' }, res.open ? '' : 'The store is whole: no open damage records.'));
    refreshBanner(res);
  };
  await load();
}

async function check(out, load) {
  out.className = 'answer'; out.textContent = 'checking…';
  try {
    const res = await api('POST', '/v1/store/check', {});
    const r = res.report || {}, n = r.read || {};
    const back = (r.rearmed || []).length;
    out.className = res.open || back ? 'answer err' : 'answer ok';
    out.textContent = `engine: read ${n.checkpoints || 0} checkpoints, ${n.jobs || 0} jobs, ${n.timers || 0} timers; ` +
      `${res.open} open record(s)${back ? `; ${back} lost job(s) or timer(s) put back` : ''}`;
    await load(res);
  } catch (err) {
    out.className = 'answer err'; out.textContent = `engine: ${err.message}`;
  }
}

const kinds = { instance: 'lost instance', damaged: 'damaged instance', stream: 'stream went back', definition: 'lost definition', wait: 'lost job or timer' };

function table(recs, load) {
  return h('table', { class: 'wide', id: 'damage-records' },
    h('thead', {}, h('tr', {}, ['record', 'what', 'known', 'detected', 'status', 'actions'].map((c) => h('th', {}, c)))),
    h('tbody', {}, recs.map((r) => h('tr', { dataset: { record: key(r) } },
      h('td', {}, h('b', {}, kinds[r.kind] || r.kind), h('div', { class: 'muted' }, key(r))),
      h('td', {}, r.instance ? instanceLink(r.instance) : '', r.gap ? r.gap.stream : '',
        h('div', { class: 'cause-text' }, r.detail)),
      h('td', {}, r.process ? [processLink(r.process, r.version), r.version ? ` v${r.version}` : ''] : '',
        r.element ? h('div', {}, `at ${r.element}`) : '',
        (r.traces || []).map((t) => h('div', { class: 'muted' }, `from ${t.source} ${t.id}`)),
        r.vars ? h('div', { class: 'muted' }, `variables ${JSON.stringify(r.vars)}`) : ''),
      h('td', {}, time(r.detected)),
      h('td', { class: 'state' }, status(r.status), r.reason ? h('div', { class: 'muted' }, r.reason) : ''),
      h('td', {}, r.status === 'open' ? actions(r, load) : '', h('div', { class: 'answer', role: 'status' }))))));
}

// key is a record's key in the lost bucket, as the engine names it.
function key(r) {
  switch (r.kind) {
    case 'stream': return `stream.${r.gap.stream}.${r.gap.found}`;
    case 'definition': return `definition.${r.process}`;
    case 'wait': return `wait.${r.instance}.${r.wait}`;
    default: return `instance.${r.instance}`;
  }
}

function actions(r, load) {
  const k = key(r);
  const reason = h('input', { name: 'reason', size: 24, placeholder: 'reason', 'aria-label': `reason to dismiss ${k}`, required: true });
  const form = h('form', { class: 'actions', dataset: { actions: k }, onsubmit: (e) => {
    e.preventDefault();
    act(k, 'dismiss', { reason: reason.value }, load);
  } }, reason, h('button', { type: 'submit', class: 'danger' }, 'Dismiss'));
  if (r.kind === 'instance' || r.kind === 'damaged') {
    form.append(h('button', { type: 'button', class: 'primary', onclick: () => act(k, 'recreate', {}, load) }, 'Recreate'));
  }
  return form;
}

async function act(k, action, body, load) {
  const out = document.querySelector(`tr[data-record="${CSS.escape(k)}"] .answer`);
  out.className = 'answer'; out.textContent = `${action}…`;
  try {
    const res = await api('POST', `/v1/store/damage/${enc(k)}/${action}`, body);
    const msg = action === 'recreate' ? `engine: recreated as ${res.id}` : 'engine: dismissed';
    await load();
    const box = document.getElementById('check-answer');
    box.className = 'answer ok'; box.textContent = `${k}: ${msg}`;
  } catch (err) {
    out.className = 'answer err'; out.textContent = `engine: ${err.message}`;
  }
}
