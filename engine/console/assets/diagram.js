// The diagram: bpmn-js's viewer (vendored, window.BpmnJS) renders the
// file's own diagram interchange as SVG; each shape carries
// data-element-id. Markers are CSS classes on shapes, badges and causes
// are overlays.
import { h } from './app.js';

// draw renders xml into el and marks it: marks maps a node id to classes
// ('active', 'incident', 'passed'), badges maps a node id to
// {active, incidents}, notes maps a node id to a text shown under it.
// It returns false when the file has no diagram.
export async function draw(el, xml, { marks = {}, badges = {}, notes = {} } = {}) {
  el.replaceChildren();
  if (!/<([\w-]+:)?BPMNDiagram[\s>]/.test(xml) || !/<([\w-]+:)?BPMNShape[\s>]/.test(xml)) {
    el.append(h('p', { class: 'nodiagram', role: 'note' }, 'No diagram in this file: it has no BPMN diagram interchange (DI) to draw.'));
    return false;
  }
  if (!window.BpmnJS) throw new Error('the diagram viewer did not load');
  const viewer = new window.BpmnJS({ container: el });
  await viewer.importXML(xml);
  const canvas = viewer.get('canvas');
  const overlays = viewer.get('overlays');
  const registry = viewer.get('elementRegistry');
  canvas.zoom('fit-viewport', 'auto');
  for (const [id, classes] of Object.entries(marks)) {
    if (!registry.get(id)) continue;
    for (const c of classes) canvas.addMarker(id, c);
  }
  for (const [id, b] of Object.entries(badges)) {
    if (!registry.get(id) || (!b.active && !b.incidents)) continue;
    overlays.add(id, 'counts', {
      position: { top: -12, right: 12 },
      html: h('div', { class: 'badges' },
        b.active ? h('span', { class: 'badge active', title: `${b.active} active` }, b.active) : null,
        b.incidents ? h('span', { class: 'badge incident', title: `${b.incidents} incidents` }, b.incidents) : null),
    });
  }
  for (const [id, text] of Object.entries(notes)) {
    if (!registry.get(id)) continue;
    overlays.add(id, 'cause', { position: { bottom: -6, left: 0 }, html: h('div', { class: 'cause', role: 'note' }, text) });
  }
  return true;
}
