// The workflow pages: #/workflows (every workflow), #/workflows/NAME (its definition drawn as a graph, its
// calendars and alert settings, its runs, a trigger form with the run's parameters; edit and delete for
// admins, the form is workflowform.js) and #/workflows/NAME/runs/ID (a run's graph: nodes coloured
// by state, edges with their `on` condition; cancel and retry). Buttons carry data-wf-action; one listener
// handles them.
import { html, $, setHTML, patchRows, api, path, when, badge, can, duration, loadError, quiet, ApiError, session } from '../lib.js';
import { announce, refreshNow, confirmAction } from '../ui.js';
import { alertsView } from '../app.js';
import { draw, edgeOn } from './dag.js';

const runHref = (wf, id) => `#/workflows/${encodeURIComponent(wf)}/runs/${encodeURIComponent(id)}`;
const ACTIVE = new Set(['PENDING', 'RUNNING']);

// cluster-wide objects: a scoped token is answered 404, so say why instead
function scoped(main, title) {
  if (session.caller && session.caller.scope) {
    setHTML(main, html`<div class="head"><h1 tabindex="-1">${title}</h1></div>
      <p class="msg">Workflows are cluster-wide: your token sees only the jobs of its scope (${session.caller.scope}).</p>`);
    return true;
  }
  return false;
}

const runLength = (r) => (r.startedAt && r.endedAt ? duration(new Date(r.endedAt) - new Date(r.startedAt)) : '—');

function nodeCounts(r) {
  const c = {};
  (r.nodes || []).forEach((n) => { c[n.state] = (c[n.state] || 0) + 1; });
  return Object.keys(c).sort().map((s) => html`<span class="badge st-${s}">${c[s]} ${s}</span> `);
}

export const runControls = (r) => (can('operate') ? html`<div class="row-actions">
  ${ACTIVE.has(r.state) ? html`<button type="button" class="small" data-wf-action="cancel" data-wf="${r.workflow}" data-run="${r.id}" aria-label="Cancel run ${r.id}">Cancel</button>` : ''}
  ${r.state === 'FAILED' || r.state === 'CANCELLED' ? html`<button type="button" class="small" data-wf-action="retry" data-wf="${r.workflow}" data-run="${r.id}" aria-label="Retry run ${r.id} from its failed nodes">Retry from failed</button>` : ''}
</div>` : '');

// ---- #/workflows

export function workflowsScreen(main) {
  if (scoped(main, 'Workflows')) return {};
  setHTML(main, html`
    <div class="head"><h1 tabindex="-1">Workflows</h1>${can('manage') ? html`<a class="button primary" href="#/create/workflow" id="wf-new">New workflow</a>` : ''}</div>
    <div id="wf-error"></div>
    <p class="hint">A workflow runs jobs after other jobs (a DAG of nodes). Define them here, with the API or
      <code>ejserver workflow apply -f workflows.yaml</code>.</p>
    <div class="table-wrap"><table class="data" id="wf-table">
      <caption class="sr-only">Workflows, their schedule and nodes</caption>
      <thead><tr><th scope="col">Workflow</th><th scope="col">Schedule</th><th scope="col">Overlap</th>
        <th scope="col">Nodes</th><th scope="col">State</th></tr></thead><tbody></tbody></table></div>`);
  return {
    live: true,
    async refresh() {
      try {
        const { data } = await api('GET', '/api/v1/workflows');
        setHTML($('#wf-error', main), '');
        const items = data.items || [];
        patchRows($('#wf-table tbody', main), items.map((w) => ({
          key: w.name,
          cls: w.disabled ? 'row-DISABLED' : '',
          cells: [
            html`<a href="#/workflows/${encodeURIComponent(w.name)}">${w.name}</a>`,
            w.cron ? html`<code>${w.cron}</code>${w.timeZone ? ` (${w.timeZone})` : ''}` : html`<span class="muted">on trigger only</span>`,
            w.overlap || 'skip',
            String((w.nodes || []).length),
            w.disabled ? badge('DISABLED') : badge('ENABLED'),
          ],
        })));
        if (!items.length) setHTML($('#wf-error', main), html`<p class="msg">No workflows yet.</p>`);
      } catch (e) {
        loadError($('#wf-error', main), e);
      }
    },
  };
}

// ---- #/workflows/NAME

export function workflowScreen(main, r) {
  const name = r.parts[1];
  if (scoped(main, `Workflow ${name}`)) return {};
  const operate = can('operate');
  const manage = can('manage');
  setHTML(main, html`
    <p class="crumbs"><a href="#/workflows">Workflows</a> /</p>
    <div class="head"><h1 tabindex="-1">Workflow ${name}</h1>${manage ? html`<div class="row-actions">
      <a class="button" href="#/workflows/${encodeURIComponent(name)}/edit" id="wf-edit">Edit</a>
      <button type="button" class="danger" data-wf-action="delete" data-wf="${name}" id="wf-delete">Delete</button></div>` : ''}</div>
    <div id="wf-error"></div>
    <p id="wf-summary"></p>
    <dl class="facts" id="wf-settings"></dl>
    ${operate ? html`<section aria-labelledby="wf-trigger-h"><h2 id="wf-trigger-h">Run it now</h2>
      <form id="wf-trigger" class="filters" novalidate>
        <div class="field" data-field="parameters"><label for="wf-params">Parameters (a JSON object, optional)</label>
          <textarea id="wf-params" name="parameters" rows="2" spellcheck="false" aria-describedby="wf-params-error" placeholder='{"day": "2026-11-24"}'></textarea>
          <p class="error" id="wf-params-error" role="alert"></p></div>
        <button type="submit" class="primary" id="wf-trigger-btn">Trigger run</button>
      </form></section>` : ''}
    <section aria-labelledby="wf-runs-h"><h2 id="wf-runs-h">Runs</h2>
      <div class="table-wrap"><table class="data" id="wf-runs">
        <caption class="sr-only">The active runs and the last ended ones, newest first</caption>
        <thead><tr><th scope="col">Run</th><th scope="col">State</th><th scope="col">Trigger</th><th scope="col">Created</th>
          <th scope="col" class="opt">Took</th><th scope="col">Nodes</th><th scope="col">Attempt</th>${operate ? html`<th scope="col">Actions</th>` : ''}</tr></thead>
        <tbody></tbody></table></div></section>
    <section aria-labelledby="wf-def-h"><h2 id="wf-def-h">Definition</h2>
      <div class="dag-wrap" id="wf-graph"></div>
      <div class="table-wrap"><table class="data" id="wf-nodes">
        <caption class="sr-only">The workflow's nodes, their jobs and the edges from their parents</caption>
        <thead><tr><th scope="col">Node</th><th scope="col">Job</th><th scope="col">Job parameter</th><th scope="col">After</th></tr></thead>
        <tbody></tbody></table></div></section>`);
  const form = $('#wf-trigger', main);
  if (form) form.addEventListener('submit', (ev) => { ev.preventDefault(); trigger(name, form); });
  return {
    live: true,
    async refresh() {
      try {
        const [{ data: w }, { data: runs }] = await Promise.all([
          api('GET', `/api/v1/workflows/${path(name)}`),
          api('GET', `/api/v1/workflows/${path(name)}/runs`),
        ]);
        setHTML($('#wf-error', main), '');
        setHTML($('#wf-summary', main), html`${w.cron ? html`Scheduled <code>${w.cron}</code>${w.timeZone ? ` (${w.timeZone})` : ''}, overlap ${w.overlap || 'skip'}` : 'Runs on trigger only'}.
          ${w.disabled ? html` ${badge('DISABLED')} Triggers are refused.` : ''}`);
        setHTML($('#wf-settings', main), settings(w));
        draw($('#wf-graph', main), w.nodes || [], { label: `Workflow ${name}: its nodes and edges` });
        patchRows($('#wf-nodes tbody', main), (w.nodes || []).map((n) => ({
          key: n.name,
          cells: [n.name, html`<a href="#/jobs/${encodeURIComponent(n.job)}">${n.job}</a>`,
            n.jobParameter ? html`<code>${n.jobParameter}</code>` : html`<span class="muted">—</span>`,
            (n.after || []).length ? (n.after || []).map((a) => `${a.node} (${edgeOn(a)})`).join(', ') : html`<span class="muted">a root</span>`],
        })));
        patchRows($('#wf-runs tbody', main), (runs.items || []).map((x) => ({
          key: x.id,
          cls: x.state === 'FAILED' ? 'row-failed' : '',
          cells: [html`<a class="mono" href="${runHref(name, x.id)}">${x.id.slice(0, 8)}</a>`, badge(x.state), x.trigger || '—',
            when(x.createdAt), runLength(x), nodeCounts(x), String(x.attempt || 1), ...(operate ? [runControls(x)] : [])],
        })), ['', '', '', '', 'opt', '', '', 'actions']);
      } catch (e) {
        loadError($('#wf-error', main), e);
      }
    },
  };
}

// settings are a workflow's calendars and alert settings, as facts.
function settings(w) {
  const cals = (label, list) => (list && list.length ? html`<div><dt>${label}</dt><dd>${list.map((c, i) => html`${i ? ', ' : ''}<a href="#/calendars">${c}</a>`)}</dd></div>` : '');
  const a = w.alerts || {};
  const rules = a.rules || [];
  return html`${cals('Excludes calendars', w.excludeCalendars)}${cals('Only on calendars', w.includeCalendars)}
    ${!(w.excludeCalendars || []).length && !(w.includeCalendars || []).length ? html`<div><dt>Calendars</dt><dd class="muted">none</dd></div>` : ''}
    <div class="wide"><dt>Alert rules</dt><dd id="wf-alert-rules">${rules.length
      ? html`<ul class="plain">${rules.map((r) => html`<li><code>${alertsView().ruleLine(r)}</code></li>`)}</ul>`
      : html`none: the cluster's <a href="#/alerts">default rules</a> apply`}</dd></div>
    ${a.runningLongerThanSeconds ? html`<div><dt>Running long after</dt><dd>${String(a.runningLongerThanSeconds)} s</dd></div>` : ''}`;
}

// parseParameters reads the trigger form's parameters: '' is none, else a JSON object (a field error if not).
export function parseParameters(s) {
  if (!s.trim()) return { value: null };
  let v;
  try {
    v = JSON.parse(s);
  } catch (e) {
    return { error: `not JSON: ${e.message}` };
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return { error: 'must be a JSON object, like {"day": "2026-11-24"}' };
  return { value: v };
}

async function trigger(name, form) {
  const input = $('#wf-params', form);
  const err = $('#wf-params-error', form);
  const p = parseParameters(input.value);
  err.textContent = p.error ? `parameters: ${p.error}` : '';
  input.toggleAttribute('aria-invalid', !!p.error);
  if (p.error) return;
  const btn = $('#wf-trigger-btn', form);
  btn.disabled = true;
  try {
    const { data } = await api('POST', `/api/v1/workflows/${path(name)}/runs`, { body: p.value ? { parameters: p.value } : {} });
    announce(html`Run <a href="${runHref(name, data.id)}">${data.id.slice(0, 8)}</a> of ${name} triggered.`);
    refreshNow();
  } catch (e) {
    if (e instanceof ApiError && e.status === 400) {
      err.textContent = e.message;
      input.setAttribute('aria-invalid', 'true');
    } else if (!quiet(e)) announce(e.message, 'error');
  } finally {
    btn.disabled = false;
  }
}

// ---- #/workflows/NAME/runs/ID

export function runScreen(main, r) {
  const name = r.parts[1];
  const id = r.parts[3];
  if (scoped(main, `Run ${id}`)) return {};
  setHTML(main, html`
    <p class="crumbs"><a href="#/workflows">Workflows</a> / <a href="#/workflows/${encodeURIComponent(name)}">${name}</a> /</p>
    <div class="head"><h1 tabindex="-1">Run <span class="mono">${id.slice(0, 8)}</span> of ${name}</h1><div id="run-controls"></div></div>
    <div id="run-error"></div>
    <dl class="facts" id="run-facts"></dl>
    <section aria-labelledby="run-graph-h"><h2 id="run-graph-h">Graph</h2>
      <ul class="legend dag-legend" aria-label="Node states">${['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'SKIPPED', 'CANCELLED'].map((s) => html`<li><span class="dag-key dag-${s}"></span>${s}</li>`)}</ul>
      <div class="dag-wrap" id="run-graph"></div></section>
    <section aria-labelledby="run-nodes-h"><h2 id="run-nodes-h">Nodes</h2>
      <div class="table-wrap"><table class="data" id="run-nodes">
        <caption class="sr-only">The run's nodes: state, fire and error</caption>
        <thead><tr><th scope="col">Node</th><th scope="col">State</th><th scope="col">Job</th><th scope="col">Fired</th>
          <th scope="col" class="opt">Took</th><th scope="col">Items</th><th scope="col">Error</th></tr></thead>
        <tbody></tbody></table></div></section>`);
  return {
    live: true,
    async refresh() {
      try {
        const { data: run } = await api('GET', `/api/v1/workflows/${path(name)}/runs/${path(id)}`);
        setHTML($('#run-error', main), '');
        setHTML($('#run-controls', main), runControls(run));
        setHTML($('#run-facts', main), html`<div><dt>State</dt><dd id="run-state">${badge(run.state)}</dd></div>
          <div><dt>Trigger</dt><dd>${run.trigger || '—'}</dd></div><div><dt>Attempt</dt><dd>${String(run.attempt || 1)}</dd></div>
          <div><dt>Created</dt><dd>${when(run.createdAt)}</dd></div><div><dt>Took</dt><dd>${runLength(run)}</dd></div>
          ${run.parameters ? html`<div><dt>Parameters</dt><dd><code>${JSON.stringify(run.parameters)}</code></dd></div>` : ''}`);
        draw($('#run-graph', main), run.nodes || [], {
          label: `Run ${id} of ${name}: ${(run.nodes || []).map((n) => `${n.name} ${n.state}`).join(', ')}`,
          href: (n) => (n.fire ? `#/jobs/${encodeURIComponent(n.job)}/fires/${encodeURIComponent(n.fire)}` : ''),
        });
        patchRows($('#run-nodes tbody', main), (run.nodes || []).map((n) => ({
          key: n.name,
          cls: n.state === 'FAILED' ? 'row-failed' : '',
          cells: [n.name, badge(n.state), html`<a href="#/jobs/${encodeURIComponent(n.job)}">${n.job}</a>`,
            n.fire ? html`<a href="#/jobs/${encodeURIComponent(n.job)}/fires/${encodeURIComponent(n.fire)}">${when(n.firedAt)}</a>` : html`<span class="muted">—</span>`,
            n.firedAt && n.endedAt ? duration(new Date(n.endedAt) - new Date(n.firedAt)) : '—',
            n.items ? String(n.items) : '—', n.error ? html`<span class="cause">${n.error}</span>` : html`<span class="muted">—</span>`],
        })), ['', '', '', '', 'opt', '', '']);
      } catch (e) {
        loadError($('#run-error', main), e);
      }
    },
  };
}

// ---- cancel and retry (the runs list's rows and the run page)

document.addEventListener('click', async (ev) => {
  const btn = ev.target.closest('[data-wf-action]');
  if (!btn) return;
  const { wfAction, wf, run } = btn.dataset;
  if (wfAction === 'delete') {
    if (!(await confirmAction({ title: `Delete workflow ${wf}?`, body: 'Its definition and the runs ZooKeeper holds go; node fires going on finish.',
      confirm: 'Delete workflow', danger: true }))) return;
    try {
      await api('DELETE', `/api/v1/workflows/${path(wf)}`);
      announce(`Workflow ${wf} deleted.`);
      location.hash = '#/workflows';
    } catch (e) {
      if (!quiet(e)) announce(e.message, 'error');
    }
    return;
  }
  const url = `/api/v1/workflows/${path(wf)}/runs/${path(run)}/${wfAction}`;
  if (wfAction === 'cancel' && !(await confirmAction({ title: `Cancel run ${run.slice(0, 8)} of ${wf}?`,
    body: 'No node fires any more; fires going on finish and their ends are ignored.', confirm: 'Cancel run', danger: true }))) return;
  try {
    await api('POST', url);
    announce(wfAction === 'cancel' ? `Run ${run.slice(0, 8)} of ${wf} cancelled.` : `Run ${run.slice(0, 8)} of ${wf} goes again from its failed nodes.`);
    refreshNow();
  } catch (e) {
    if (!quiet(e)) announce(e.message, 'error');
  }
});
