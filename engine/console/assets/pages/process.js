import { api, enc, h, onFacts, q, showError } from '../app.js';
import { draw, loadViewer } from '../diagram.js';

export async function render(main, id) {
  const infoP = api('GET', `/v1/processes/${enc(id)}${q('version') ? `?version=${enc(q('version'))}` : ''}`);
  loadViewer().catch(() => {}); // draw reports a failure
  const info = await infoP;
  const version = info.version;
  const versions = (info.versions || [version]).slice().reverse();
  const diagram = h('div', { class: 'diagram', id: 'diagram' });
  const table = h('div', {});
  const answer = h('div', { role: 'status', id: 'deploy-answer' });
  const picker = h('select', { id: 'version', 'aria-label': 'version',
    onchange: (e) => { location.search = `?version=${e.target.value}`; } },
    versions.map((v) => h('option', { value: v, selected: v === version }, `version ${v}`)));
  const file = h('input', { type: 'file', accept: '.bpmn,.xml,application/xml', id: 'deploy-file',
    onchange: () => file.files[0] && deploy(file.files[0], answer) });
  const drop = h('div', { class: 'drop', id: 'drop' }, 'Drop a .bpmn file here to deploy it, or ',
    h('label', {}, 'choose one ', file));
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault(); drop.classList.remove('over');
    if (e.dataTransfer.files[0]) deploy(e.dataTransfer.files[0], answer);
  });
  main.replaceChildren(
    h('h1', {}, `Process ${id}`, info.name ? h('span', { class: 'muted' }, ` ${info.name}`) : null),
    h('p', {}, picker, ' ', h('a', { href: `/instances?process=${enc(id)}` }, 'instances'), ' · ',
      h('a', { href: `/incidents?process=${enc(id)}&state=open` }, 'open incidents'),
      info.deployedAt ? h('span', { class: 'muted' }, ` · deployed ${new Date(info.deployedAt).toISOString()}`) : null),
    diagram, h('h2', {}, 'Nodes with tokens'), table, h('h2', {}, 'Deploy'), drop, answer);

  // The document and the counts are fetched together; the table is drawn
  // when the counts are there, the diagram when the viewer is too.
  // A version without a diagram of its own comes laid out by the server.
  const xmlP = api('GET', `/v1/processes/${enc(id)}/diagram?version=${version}`).catch((err) => {
    diagram.replaceChildren(h('p', { class: 'nodiagram' }, err.message));
    return null;
  });
  const load = async () => {
    const { nodes } = await api('GET', `/console/processes/${enc(id)}/nodes?version=${version}`);
    const drawn = xmlP.then((xml) => typeof xml === 'string' && draw(diagram, xml, { badges: nodes }));
    const rows = Object.entries(nodes).sort();
    table.replaceChildren(rows.length === 0 ? h('p', { class: 'muted' }, 'No token is on any node of this version.') :
      h('table', { id: 'nodes' }, h('thead', {}, h('tr', {}, h('th', {}, 'node'), h('th', { class: 'num' }, 'active'), h('th', { class: 'num' }, 'incidents'))),
        h('tbody', {}, rows.map(([n, c]) => h('tr', {}, h('td', {}, n), h('td', { class: 'num' }, c.active),
          h('td', { class: 'num' }, c.incidents ? h('a', { href: `/incidents?process=${enc(id)}&node=${enc(n)}&state=open` }, c.incidents) : 0))))));
    await drawn;
  };
  await load();
  onFacts((facts) => { if (facts.some((f) => f.subject.split('.')[3] === id)) load().catch((e) => showError(table, e)); });
}

async function deploy(file, answer) {
  answer.replaceChildren(h('p', { class: 'muted' }, `Deploying ${file.name}…`));
  try {
    const res = await api('POST', `/v1/deployments?name=${enc(file.name)}`, await file.text(), 'application/xml');
    const deps = res.deployments || [];
    answer.replaceChildren(h('p', { class: 'answer ok' }, `Deployed ${file.name}: `,
      deps.map((d, i) => [i ? ', ' : '', h('a', { href: `/processes/${enc(d.processId)}?version=${d.version}` }, `${d.processId} v${d.version}`),
        d.new ? ' (new)' : ' (unchanged)'])));
  } catch (err) {
    answer.replaceChildren(h('pre', { class: 'error', role: 'alert' }, err.message));
  }
}
