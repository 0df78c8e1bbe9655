import { api, enc, filters, h, instanceLink, list, onFacts, pollUnrecorded, processLink, q, status, time } from '../app.js';

export async function render(main) {
  const body = h('div', {});
  main.replaceChildren(h('h1', {}, 'Instances'),
    filters([['process', 'process'], ['status', 'status', ['', 'active', 'incident', 'completed', 'failed', 'terminated']], ['limit', 'limit']]),
    body);
  const params = new URLSearchParams();
  if (q('process')) params.set('processId', q('process'));
  if (q('status')) params.set('status', q('status'));
  params.set('limit', q('limit') || '100');
  const load = async () => {
    const items = list(await api('GET', `/v1/instances?${params}`), 'instances');
    body.replaceChildren(items.length === 0 ? h('p', { class: 'muted' }, 'No instance matches.') :
      h('table', { class: 'wide', id: 'instances' },
        h('thead', {}, h('tr', {}, ['instance', 'process', 'status', 'active nodes', 'incidents', 'started', 'ended'].map((c) => h('th', {}, c)))),
        h('tbody', {}, items.map((v) => h('tr', { dataset: { instance: v.id } },
          h('td', {}, instanceLink(v.id)), h('td', {}, processLink(v.processId, v.version), ` v${v.version}`),
          h('td', {}, status(v.status)), h('td', {}, (v.activeNodes || []).join(', ')),
          h('td', {}, (v.incidents || []).length || ''), h('td', {}, time(v.startedAt)), h('td', {}, time(v.endedAt)))))),
      h('p', { class: 'muted' }, `${items.length} shown (newest first, at most ${enc(params.get('limit'))}).`));
  };
  await load();
  onFacts((facts) => { if (facts.some((f) => f.subject.startsWith('jetbpm.fact.instance.'))) load(); });
  pollUnrecorded('instance', load);
}
