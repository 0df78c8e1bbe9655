import { api, h, onFacts, pollUnrecorded, processLink, time } from '../app.js';

const statuses = ['active', 'incident', 'completed', 'failed', 'terminated'];

export async function render(main) {
  const recent = h('ol', { class: 'timeline', id: 'recent', 'aria-live': 'polite' });
  const body = h('div', {});
  const cluster = h('div', { id: 'cluster-panel' });
  main.replaceChildren(h('h1', {}, 'Overview'), body, h('h2', {}, 'Cluster'), cluster, h('h2', {}, 'Latest facts'), recent);
  const load = async () => body.replaceChildren(view(await api('GET', '/console/overview')));
  await load();
  // The nodes and their partitions: read again every 5 s while the page
  // shows (a read costs the server two requests per partition).
  const loadCluster = async () => {
    if (!cluster.isConnected) return;
    try { cluster.replaceChildren(clusterView(await api('GET', '/v1/cluster'))); } catch (err) { cluster.replaceChildren(h('p', { class: 'muted' }, `Cluster: ${err.message}`)); }
    setTimeout(loadCluster, 5000);
  };
  await loadCluster();
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

// clusterView shows the engine nodes (docs/engine.md §6.1) and each
// partition's holder and backlog.
function clusterView(c) {
  const short = (id) => (id ? h('code', { title: id }, id.slice(0, 8)) : h('span', { class: 'status failed' }, 'none'));
  const age = (s) => (s < 1 ? `${Math.round(s * 1000)} ms` : `${s.toFixed(1)} s`);
  return h('div', {},
    h('p', { class: 'muted', id: 'cluster-summary' },
      `${c.nodes.length} engine node${c.nodes.length === 1 ? ' shares' : 's share'} ${c.partitions} partitions; answered by `, short(c.node), '.'),
    h('table', { class: 'wide', id: 'cluster-nodes' },
      h('thead', {}, h('tr', {}, h('th', {}, 'node'), h('th', {}, 'host'), h('th', { class: 'num' }, 'pid'), h('th', {}, 'started'), h('th', {}, 'holds'))),
      h('tbody', {}, c.nodes.map((n) => h('tr', { dataset: { node: n.id } },
        h('td', {}, short(n.id)), h('td', {}, n.host || '–'), h('td', { class: 'num' }, n.pid || '–'),
        h('td', {}, time(n.started)), h('td', {}, n.holds.length ? n.holds.join(', ') : '–'))))),
    h('table', { class: 'wide', id: 'cluster' },
      h('thead', {}, h('tr', {}, h('th', { class: 'num' }, 'partition'), h('th', {}, 'holder'), h('th', {}, 'since'),
        h('th', { class: 'num' }, 'pending'), h('th', { class: 'num' }, 'oldest'))),
      h('tbody', {}, c.partition.map((p) => h('tr', { dataset: { partition: p.partition } },
        h('td', { class: 'num' }, p.partition), h('td', { class: 'holder' }, short(p.node)), h('td', {}, p.since ? time(p.since) : '–'),
        h('td', { class: 'num' }, p.pending), h('td', { class: 'num' }, p.pending ? age(p.oldestSeconds) : '–'))))));
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
