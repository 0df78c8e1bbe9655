import { api, enc, h, instanceLink, list, onFacts, q, status, time } from '../app.js';
import { loadFormViewer, schemaForm } from '../form.js';

// The task list: tasks a user holds or may claim (as a candidate user or
// through a group), as cards that fit a phone.
export async function render(main) {
  const user = q('user') || localStorage.getItem('jetbpm.user') || '';
  if (user) localStorage.setItem('jetbpm.user', user);
  const group = q('group');
  const body = h('div', { id: 'tasks' });
  main.replaceChildren(h('h1', {}, 'Tasks'),
    h('form', { class: 'filters', method: 'get', role: 'search' },
      h('label', {}, 'user', h('input', { name: 'user', value: user, size: 12, autocomplete: 'username' })),
      h('label', {}, 'group', h('input', { name: 'group', value: group, size: 12 })),
      h('label', {}, 'state', h('select', { name: 'state' }, ['open', 'completed', 'canceled', 'all'].map((s) => h('option', { value: s, selected: q('state') === s }, s)))),
      h('button', { type: 'submit' }, 'Show')),
    body);
  const load = async () => {
    const base = new URLSearchParams({ state: q('state') || 'open', limit: '200' });
    const queries = [];
    if (user) queries.push(new URLSearchParams({ ...Object.fromEntries(base), assignee: user }));
    if (user || group) {
      const p = new URLSearchParams(base);
      if (user) p.set('candidateUser', user);
      if (group) p.set('candidateGroup', group);
      queries.push(p);
    }
    if (queries.length === 0) queries.push(base);
    const seen = new Map();
    for (const res of await Promise.all(queries.map((p) => api('GET', `/v1/tasks?${p}`)))) {
      for (const t of list(res, 'tasks')) seen.set(t.id, t);
    }
    // Someone is filling in a form: keep the cards as they are.
    if (body.querySelector('.complete')) return;
    const tasks = [...seen.values()].sort((a, b) => (b.priority - a.priority) || a.createdAt.localeCompare(b.createdAt));
    body.replaceChildren(...(tasks.length ? tasks.map((t) => card(t, user, load)) : [h('p', { class: 'muted' }, 'No task here.')]));
    // A listed task has a form: load the form viewer now, after the list
    // is drawn, so "Complete…" does not wait for it (a failure shows then).
    if (tasks.some((t) => t.formEmbedded)) loadFormViewer().catch(() => {});
  };
  await load();
  onFacts((facts) => {
    if (!facts.some((f) => f.subject.startsWith('jetbpm.fact.task.'))) return;
    if (body.querySelector('.complete') || body.querySelector('.answer.err')) return; // keep what the user is doing
    load();
  });
}

function card(t, user, reload) {
  const out = h('div', { class: 'answer', role: 'status' });
  const open = t.state === 'created' || t.state === 'assigned';
  const mine = user && t.assignee === user;
  const run = async (op, body) => {
    out.className = 'answer'; out.textContent = `${op}…`;
    try {
      const rec = await api('POST', `/v1/tasks/${enc(t.id)}/${op}`, body);
      out.className = 'answer ok'; out.textContent = `engine: ${op} done, task ${rec.state}${rec.assignee ? `, held by ${rec.assignee}` : ''}`;
      setTimeout(() => reload(), 0);
      return true;
    } catch (err) {
      out.className = 'answer err'; out.textContent = `engine: ${err.message}`;
      return false;
    }
  };
  const needUser = () => {
    if (user) return true;
    out.className = 'answer err'; out.textContent = 'Enter your user name above first.';
    return false;
  };
  const el = h('article', { class: 'task', dataset: { task: t.id }, 'aria-label': t.name || t.nodeId },
    h('h3', {}, t.name || t.nodeId, ' ', status(t.state)),
    h('div', { class: 'meta' }, 'instance ', instanceLink(t.instanceId), ` · ${t.processId} v${t.version} · priority ${t.priority}`,
      t.dueDate ? ` · due ${time(t.dueDate)}` : '', ` · created ${time(t.createdAt)}`),
    h('div', { class: 'meta holder' }, t.assignee ? `held by ${t.assignee}` : 'nobody holds it',
      t.candidateGroups ? ` · groups ${t.candidateGroups.join(', ')}` : '', t.candidateUsers ? ` · users ${t.candidateUsers.join(', ')}` : ''),
    open ? h('div', { class: 'actions' },
      !t.assignee ? h('button', { class: 'primary', onclick: () => needUser() && run('claim', { user }) }, 'Claim') : '',
      t.assignee ? h('button', { onclick: () => run('unclaim', { user }) }, 'Unclaim') : '',
      h('button', { class: mine ? 'primary' : '', 'aria-expanded': 'false', onclick: async (e) => {
        if (!needUser()) return;
        const button = e.currentTarget;
        const f = el.querySelector('.complete');
        if (f) { (f.close || f.remove).call(f); button.setAttribute('aria-expanded', 'false'); return; }
        button.setAttribute('aria-expanded', 'true');
        button.disabled = true; // while the form loads
        try {
          el.insertBefore(await taskForm(t, (vars) => run('complete', { user, vars }), out), out);
        } finally {
          button.disabled = false;
        }
      } }, 'Complete…')) : '',
    out);
  return el;
}

// taskForm is the form the task's BPMN file holds, rendered by form-js,
// else (its form lives elsewhere, or it has none) the one generated from
// its variables. A form that fails to load says so and falls back.
async function taskForm(t, submit, out) {
  if (!t.formEmbedded) return completeForm(t, submit);
  try {
    const { schema } = await api('GET', `/v1/tasks/${enc(t.id)}/form`);
    return await schemaForm(schema, t.variables, submit);
  } catch (err) {
    out.className = 'answer err'; out.textContent = `The task's form could not be shown (${err.message}); here is one made from its variables.`;
    return completeForm(t, submit);
  }
}

// completeForm is generated from the task's variables: a checkbox for a
// boolean, a number field for a number, a text field for a string, JSON
// for the rest; one more named field adds a variable.
function completeForm(t, submit) {
  const vars = t.variables || {};
  const fields = Object.entries(vars).map(([name, v]) => {
    const id = `f-${t.id}-${name}`;
    let input;
    if (typeof v === 'boolean') input = h('input', { type: 'checkbox', id, name, checked: v });
    else if (typeof v === 'number') input = h('input', { type: 'number', step: 'any', id, name, value: v });
    else if (typeof v === 'string') input = h('input', { id, name, value: v });
    else input = h('textarea', { id, name, dataset: { json: '1' } }, JSON.stringify(v, null, 2));
    return h('label', { for: id }, name, input);
  });
  const extraName = h('input', { name: '__name', placeholder: 'name', 'aria-label': 'new variable name' });
  const extraValue = h('input', { name: '__value', placeholder: 'value (JSON or text)', 'aria-label': 'new variable value' });
  const err = h('p', { class: 'error', role: 'alert', hidden: true });
  const form = h('form', { class: 'complete' }, ...fields,
    h('div', { class: 'bulk' }, 'Add variable', extraName, extraValue), err,
    h('div', {}, h('button', { class: 'primary', type: 'submit' }, 'Complete task')));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const out = {};
    try {
      for (const el of form.querySelectorAll('input[name]:not([name^="__"]), textarea[name]')) {
        if (el.type === 'checkbox') out[el.name] = el.checked;
        else if (el.type === 'number') { if (el.value === '') throw new Error(`${el.name}: a number`); out[el.name] = Number(el.value); }
        else if (el.dataset.json) out[el.name] = JSON.parse(el.value);
        else out[el.name] = el.value;
      }
      if (extraName.value) {
        try { out[extraName.value] = JSON.parse(extraValue.value); } catch { out[extraName.value] = extraValue.value; }
      }
    } catch (x) {
      err.hidden = false; err.textContent = x.message; return;
    }
    if (await submit(out)) form.remove();
  });
  return form;
}
