import { api, enc, h, instanceLink, list, onFacts, pollUnrecorded, processLink, showError, status, time } from '../app.js';
import { draw, loadViewer } from '../diagram.js';
import { actionButtons } from './incidents.js';

// handled marks a promise's failure as seen (another await reports it),
// so an early failure of one fetch is not also an unhandled rejection.
const handled = (p) => { p.catch(() => {}); return p; };

export async function render(main, id) {
  const page = h('div', {});
  main.replaceChildren(h('p', { id: 'action-answer', class: 'answer', role: 'status' }), page);
  let shownTimeline = null; // a redraw keeps it until the new one is there
  const load = async () => {
    // Every fetch starts at once (the document once the instance names its
    // version); the page is drawn when the instance, its incidents and
    // tasks are there, the timeline and the diagram as each arrives.
    const vP = api('GET', `/v1/instances/${enc(id)}`);
    const incsP = handled(api('GET', `/v1/incidents?instance=${enc(id)}&state=all`).then((d) => list(d, 'incidents')));
    const tasksP = handled(api('GET', `/v1/tasks?instanceId=${enc(id)}&state=all&limit=1000`).then((d) => list(d, 'tasks')));
    const tlP = handled(api('GET', `/console/instances/${enc(id)}/timeline`));
    const xmlP = vP.then((v) => api('GET', `/v1/processes/${enc(v.processId)}/diagram?version=${v.version}`)).catch((err) => err);
    loadViewer().catch(() => {}); // draw reports a failure
    const [v, incs, tasks] = await Promise.all([vP, incsP, tasksP]);
    const timelineBox = h('div', {}, shownTimeline || h('p', { class: 'muted' }, 'Reading the facts…'));
    const diagram = h('div', { class: 'diagram', id: 'diagram' });
    const answer = h('div', { role: 'status', id: 'cancel-answer' });
    const live = v.status === 'active' || v.status === 'incident';
    page.replaceChildren(
      h('h1', {}, `Instance ${v.id} `, status(v.status)),
      h('p', {}, 'process ', processLink(v.processId, v.version), ` version ${v.version}`,
        v.businessKey ? ` · business key ${v.businessKey}` : '',
        ` · started ${time(v.startedAt)}`, v.endedAt ? ` · ended ${time(v.endedAt)}` : '',
        v.parentInstance ? [' · called by ', instanceLink(v.parentInstance)] : ''),
      v.failure ? h('p', { class: 'error' }, `failed${v.failure.node ? ` at ${v.failure.node}` : ''}: ${v.failure.message}`) : '',
      live ? h('p', {}, h('button', { class: 'danger', id: 'cancel', onclick: () => cancel(v.id, answer) }, 'Cancel instance'), answer) : '',
      diagram,
      h('p', { class: 'muted' }, h('span', { class: 'swatch active' }), 'active', h('span', { class: 'swatch incident' }),
        'incident', h('span', { class: 'swatch passed' }), 'passed (the completed path: nodes left, flows taken)'),
      h('div', { class: 'grid2' },
        h('section', {}, h('h2', {}, 'Incidents'), incidentsView(incs, live, load)),
        h('section', {}, h('h2', {}, 'Variables'), varsView(v.variables),
          live ? varsEditor(v, load) : '',
          (v.calledInstances || []).length ? [h('h2', {}, 'Called instances'), h('ul', {}, v.calledInstances.map((c) => h('li', {}, instanceLink(c))))] : '',
          tasks.length ? [h('h2', {}, 'User tasks'), h('ul', { id: 'tasks' }, tasks.map((t) => h('li', {}, `${t.name || t.nodeId} `, status(t.state),
            t.assignee ? ` · ${t.assignee}` : '', t.completedBy ? ` · completed by ${t.completedBy}` : '')))] : '')),
      h('h2', {}, 'Timeline'), timelineBox);

    const timelineDrawn = tlP.then((tl) => { shownTimeline = timeline(tl); timelineBox.replaceChildren(shownTimeline); });
    const xml = await xmlP;
    if (xml instanceof Error) {
      diagram.replaceChildren(h('p', { class: 'nodiagram' }, xml.message));
      await timelineDrawn;
      return;
    }
    const marks = {};
    const mark = (n, c) => { (marks[n] ||= []).push(c); };
    for (const n of v.passed || []) mark(n, 'passed');
    for (const n of v.activeNodes || []) mark(n, 'active');
    const notes = {};
    for (const i of v.incidents || []) { mark(i.nodeId, 'incident'); notes[i.nodeId] = `${i.causeClass}: ${i.cause}`; }
    await Promise.all([draw(diagram, xml, { marks, notes }), timelineDrawn]);
  };
  await load();
  onFacts((facts) => { if (facts.some((f) => f.fact?.instanceId === id)) load().catch((e) => showError(page, e)); });
  pollUnrecorded('instance', () => load().catch((e) => showError(page, e)));
}

function varsView(vars) {
  const rows = Object.entries(vars || {}).sort(([a], [b]) => a.localeCompare(b));
  if (rows.length === 0) return h('p', { class: 'muted' }, 'No variables.');
  return h('table', { class: 'kv', id: 'variables' }, h('tbody', {}, rows.map(([k, val]) => h('tr', {}, h('td', {}, k), h('td', {}, JSON.stringify(val))))));
}

// varsEditor lets an operator write variables of a live instance: a JSON
// object started from the current variables; only the names added or
// changed are sent (POST /v1/instances/{id}/variables), so a conditional
// event sees just those writes. Errors show in the form.
function varsEditor(v, reload) {
  const area = h('textarea', { id: 'set-vars-json', 'aria-label': 'variables (JSON object)' }, JSON.stringify(v.variables || {}, null, 2));
  const err = h('p', { class: 'error', role: 'alert', id: 'set-vars-error', hidden: true });
  const fail = (msg) => { err.hidden = false; err.textContent = msg; };
  const submit = h('button', { class: 'primary', id: 'set-vars-submit', type: 'submit' }, 'Set variables');
  const form = h('form', {}, h('p', { class: 'muted' },
    'Edit the JSON object: the names you add or change are written to the instance\'s process-level scope. A variable cannot be removed.'),
  area, err, h('p', {}, submit));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    err.hidden = true;
    let next;
    try {
      next = JSON.parse(area.value);
    } catch (x) {
      return fail(`Variables: not valid JSON: ${x.message}`);
    }
    if (typeof next !== 'object' || next === null || Array.isArray(next)) return fail('Variables: want a JSON object');
    const old = v.variables || {};
    const gone = Object.keys(old).filter((k) => !(k in next));
    if (gone.length) return fail(`Variables cannot be removed (${gone.join(', ')}); set them to null instead`);
    const changed = Object.fromEntries(Object.entries(next).filter(([k, val]) => !(k in old) || JSON.stringify(val) !== JSON.stringify(old[k])));
    if (Object.keys(changed).length === 0) return fail('Nothing changed');
    submit.disabled = true;
    try {
      await api('POST', `/v1/instances/${enc(v.id)}/variables`, { vars: changed });
      document.getElementById('action-answer')?.replaceChildren(h('span', { class: 'answer ok' }, `engine: variables set (${Object.keys(changed).sort().join(', ')})`));
      await reload();
    } catch (x) {
      submit.disabled = false;
      fail(x.message);
    }
  });
  return h('details', { id: 'set-vars' }, h('summary', {}, 'Set variables…'), form);
}

function incidentsView(incs, live, reload) {
  if (incs.length === 0) return h('p', { class: 'muted' }, 'No incidents.');
  return h('div', { id: 'incidents' }, incs.map((i) => h('div', { class: 'task', dataset: { incident: i.id } },
    h('h3', {}, i.nodeId, ' ', status(i.state), ' ', h('span', { class: 'muted' }, i.causeClass)),
    h('div', { class: 'meta' }, `${i.id} · ${i.attempts} attempt(s) · first ${time(i.firstFailureAt)}`),
    h('ol', {}, (i.causeChain || []).map((c) => h('li', {}, c))),
    h('details', {}, h('summary', {}, 'history'), h('ol', {}, (i.history || []).map((e) => h('li', {}, `${time(e.time)} ${e.kind}${e.detail ? `: ${e.detail}` : ''}`)))),
    live && i.state === 'open' ? actionButtons(i, reload) : '')));
}

function timeline(tl) {
  const facts = tl.facts || [];
  const missing = tl.notRecorded || [];
  // A history level below full writes some facts not at all: say so, or
  // a short timeline reads as all that happened.
  const note = missing.length === 0 ? '' : h('p', { class: 'note', id: 'history-note' },
    `History level ${tl.history}: ${missing.join(', ')} facts are not recorded, so this timeline shows ${facts.length ? 'only the others' : 'none of them'}. `,
    'The instance\'s state above is complete; serve --history full records the timeline.');
  if (facts.length === 0) return h('div', {}, note, h('p', { class: 'muted' }, 'No facts kept for this instance.'));
  return h('div', {}, note, h('ol', { class: 'timeline', id: 'timeline' }, facts.map((f) => {
    const [, , family, , kind] = f.subject.split('.');
    const x = f.fact || {};
    const what = x.nodeId ? ` at ${x.nodeId}` : '';
    const detail = x.detail || x.error || (x.user ? `by ${x.user}` : '') || '';
    return h('li', {}, h('time', {}, time(x.time)), `${family} ${kind}${what}`, detail ? h('span', { class: 'muted' }, ` — ${detail}`) : '');
  }), tl.truncated ? h('li', { class: 'muted' }, 'older facts only (the list is cut)') : ''));
}

async function cancel(id, answer) {
  if (!confirm(`Cancel instance ${id}?`)) return;
  try {
    const v = await api('POST', `/v1/instances/${enc(id)}/cancel`, { reason: 'cancelled in the console' });
    answer.replaceChildren(h('span', { class: 'answer ok' }, ` engine: ${v.status || 'cancelled'}`));
  } catch (err) {
    answer.replaceChildren(h('span', { class: 'answer err', role: 'alert' }, ` ${err.message}`));
  }
}
