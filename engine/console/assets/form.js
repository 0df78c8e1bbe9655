// Task forms: form-js's viewer (vendored, window.FormViewer) renders the
// Camunda Forms schema a task's BPMN file holds (GET /v1/tasks/{id}/form,
// docs/forms.md), as Camunda 8's Tasklist does.
import { h } from './app.js';

// The viewer is a classic script of 470 KB: it loads, with its
// stylesheet, once a listed task has a form (the task list asks after
// drawing) or a form is opened; a task list without forms never loads it.
let viewer;
export function loadFormViewer() {
  viewer ||= new Promise((resolve, reject) => {
    if (window.FormViewer) { resolve(window.FormViewer); return; }
    const vendor = (f) => new URL(`../vendor/${f}`, import.meta.url).href;
    document.head.append(h('link', { rel: 'stylesheet', href: vendor('form-js.css') }));
    const s = document.createElement('script');
    s.src = vendor('form-viewer.umd.min.js');
    s.onload = () => (window.FormViewer ? resolve(window.FormViewer) : reject(new Error('the form viewer did not load')));
    s.onerror = () => reject(new Error('the form viewer did not load'));
    document.head.append(s);
  }).catch((err) => { viewer = undefined; throw err; });
  return viewer;
}

// schemaForm renders schema into a new element with data (the task's
// variables) filled in, and a submit button. On submit form-js validates;
// a valid form's data goes to submit, which returns whether the task was
// completed. It returns the element.
export async function schemaForm(schema, data, submit) {
  const { Form } = await loadFormViewer();
  const container = h('div', { class: 'fjs' });
  const form = new Form({ container });
  await form.importSchema(schema, data || {});
  const send = h('button', { class: 'primary', type: 'button', onclick: () => form.submit() }, 'Complete task');
  const el = h('div', { class: 'complete schema' }, container, h('div', {}, send));
  el.close = () => { form.destroy(); el.remove(); }; // the card's toggle closes it so
  // form.submit() (the button, or Enter in a field) validates and emits
  // submit; form-js shows the errors next to the fields.
  form.on('submit', async ({ data: values, errors }) => {
    if (Object.keys(errors).length > 0 || send.disabled) return;
    send.disabled = true;
    try {
      if (await submit(values)) el.close();
    } finally {
      send.disabled = false;
    }
  });
  return el;
}
