import { api, h, onFacts, pollUnrecorded, processLink, time } from '../app.js';

const statuses = ['active', 'incident', 'completed', 'failed', 'terminated'];

export async function render(main) {
  const recent = h('ol', { class: 'timeline', id: 'recent', 'aria-live': 'polite' });
  const body = h('div', {});
  main.replaceChildren(h('h1', {}, 'Overview'), body, h('h2', {}, 'Latest facts'), recent);
  const load = async () => body.replaceChildren(view(await api('GET', '/console/overview')));
  await load();
  // Below history level full, no instance fact comes to say the counts
  // moved: read them again every few seconds instead.
  pollUnrecorded('instance', load);
  onFacts(async (facts) => {
    for (const f of facts) {
      const [, , family, proc, kind] = f.subject.split('.');
      const who = f.fact?.instanceId || '';
      recent.prepend(h('li', {}, h('time', {}, time(f.fact?.time)), `${family} ${kind} · ${proc} · ${who}`));
    }
    while (recent.children.length > 20) recent.lastChild.remove();
    await load();
  });
}

function view(ov) {
  const t = ov.totals;
  const missing = ov.notRecorded || [];
  return h('div', {},
    missing.length === 0 ? '' : h('p', { class: 'note', id: 'history-note' },
      `History level ${ov.history}: ${missing.join(', ')} facts are not recorded; the latest facts below show the others only. The counts are read from the instances themselves.`),
    h('div', { class: 'cards' },
      h('div', { class: 'card' }, h('b', { id: 'total-active' }, t.instances.active), 'active instances'),
      h('div', { class: 'card' }, h('b', { id: 'total-incidents' }, h('a', { href: '/incidents?state=open' }, t.openIncidents)), 'open incidents'),
      h('div', { class: 'card' }, h('b', { id: 'total-tasks' }, h('a', { href: '/tasks' }, t.openTasks)), 'open tasks'),
      h('div', { class: 'card' }, h('b', {}, t.instances.completed), 'completed')),
    ov.processes.length === 0 ? h('p', { class: 'muted' }, 'No process is deployed yet.') :
      h('table', { class: 'wide', id: 'processes' },
        h('thead', {}, h('tr', {}, h('th', {}, 'process'), h('th', { class: 'num' }, 'version'),
          statuses.map((s) => h('th', { class: 'num' }, s)), h('th', { class: 'num' }, 'open incidents'), h('th', { class: 'num' }, 'open tasks'))),
        h('tbody', {}, ov.processes.map((p) => h('tr', { dataset: { process: p.id } },
          h('td', {}, processLink(p.id), p.name ? h('span', { class: 'muted' }, ` ${p.name}`) : null),
          h('td', { class: 'num' }, p.version || '–'),
          statuses.map((s) => h('td', { class: 'num', dataset: { status: s } },
            p.instances[s] ? h('a', { href: `/instances?process=${encodeURIComponent(p.id)}&status=${s}` }, p.instances[s]) : '0')),
          h('td', { class: 'num' }, p.openIncidents ? h('a', { href: `/incidents?process=${encodeURIComponent(p.id)}&state=open` }, p.openIncidents) : '0'),
          h('td', { class: 'num' }, p.openTasks))))),
    h('p', { class: 'muted' }, `Counted at ${time(ov.computedAt)} in ${ov.took}.`));
}
