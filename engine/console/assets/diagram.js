// The diagram: bpmn-js's viewer (vendored, window.BpmnJS) renders the
// file's own diagram interchange as SVG; each shape carries
// data-element-id. Markers are CSS classes on shapes, badges and causes
// are overlays.
import { h } from './app.js';

// The viewer is a classic script of 186 KB: only the diagram pages load
// it, when they ask (loadViewer), and the page's head has already started
// its download (a preload link the server adds on these pages), so it
// arrives while the page fetches its data.
let viewer;
export function loadViewer() {
  viewer ||= new Promise((resolve, reject) => {
    if (window.BpmnJS) { resolve(window.BpmnJS); return; }
    const s = document.createElement('script');
    s.src = new URL('../vendor/bpmn-viewer.production.min.js', import.meta.url).href;
    s.onload = () => (window.BpmnJS ? resolve(window.BpmnJS) : reject(new Error('the diagram viewer did not load')));
    s.onerror = () => reject(new Error('the diagram viewer did not load'));
    document.head.append(s);
  });
  return viewer;
}

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
  const BpmnJS = await loadViewer();
  const v = new BpmnJS({ container: el });
  await v.importXML(xml);
  const canvas = v.get('canvas');
  const overlays = v.get('overlays');
  const registry = v.get('elementRegistry');
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
