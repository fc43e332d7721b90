// The workflow form (#/create/workflow, #/workflows/NAME/edit): unscoped admins create and replace a
// workflow's definition here. The body sent is the API's workflow JSON: the schedule's fields are inputs, the
// nodes (with their edges) and the alert settings are JSON text areas; the API checks everything (cycles,
// unknown jobs, unreachable nodes, calendars) and its field errors are shown next to the field they name
// (nodes[1].job on the Nodes box). The definition's graph is drawn again as the nodes are typed.
import { html, $, setHTML, api, path, can, loadError, session, ApiError } from '../lib.js';
import { field, text, select, check, showFieldErrors, submitForm, loadForEditing } from '../app.js';
import { draw } from './dag.js';

const EXAMPLE_NODES = [
  { name: 'extract', job: 'extract' },
  { name: 'report', job: 'report', after: [{ node: 'extract', on: 'success' }] },
];
const EXAMPLE_ALERTS = { rules: [{ on: ['WORKFLOW_FAILED', 'RECOVERED'], channels: ['oncall'] }] };

const names = (s) => s.split(/[\s,]+/).map((x) => x.trim()).filter(Boolean);
const pretty = (v) => JSON.stringify(v, null, 2);

function json(id, name, label, value, hint, rows) {
  return field(id, name, label, html`<textarea id="${id}" name="${name}" rows="${rows}" autocomplete="off" spellcheck="false"
    class="mono" aria-describedby="${id}-hint ${id}-error">${value}</textarea>`, hint);
}

// parseJSON reads a JSON text area: '' is undefined (when optional), otherwise the value or a field error.
export function parseJSON(s, { optional, want }) {
  if (!s.trim()) return optional ? { value: undefined } : { error: `is empty: give ${want}` };
  let v;
  try {
    v = JSON.parse(s);
  } catch (e) {
    return { error: `not JSON: ${e.message}` };
  }
  const isArray = Array.isArray(v);
  if (v === null || typeof v !== 'object' || (want === 'a JSON array' ? !isArray : isArray)) return { error: `must be ${want}` };
  return { value: v };
}

// workflowBody is the API's workflow JSON from the form, or the fields the browser can tell are wrong.
export function workflowBody(form) {
  const v = (n) => form.elements.namedItem(n).value.trim();
  const body = { name: v('name') };
  const errs = [];
  for (const k of ['description', 'cron', 'timeZone']) if (v(k)) body[k] = v(k);
  body.overlap = v('overlap');
  if (form.elements.namedItem('disabled').checked) body.disabled = true;
  for (const k of ['excludeCalendars', 'includeCalendars']) if (names(v(k)).length) body[k] = names(v(k));
  const nodes = parseJSON(v('nodes'), { want: 'a JSON array' });
  if (nodes.error) errs.push({ field: 'nodes', message: nodes.error });
  else body.nodes = nodes.value;
  const alerts = parseJSON(v('alerts'), { optional: true, want: 'a JSON object' });
  if (alerts.error) errs.push({ field: 'alerts', message: alerts.error });
  else if (alerts.value) body.alerts = alerts.value;
  return { body, errs };
}

export function workflowFormScreen(main, r) {
  const editing = r.parts[0] === 'workflows' ? r.parts[1] : '';
  const title = editing ? `Edit workflow ${editing}` : 'New workflow';
  if (session.caller && session.caller.scope) {
    setHTML(main, html`<div class="head"><h1 tabindex="-1">${title}</h1></div>
      <p class="msg">Workflows are cluster-wide: your token sees only the jobs of its scope (${session.caller.scope}).</p>`);
    return {};
  }
  setHTML(main, html`
    <p class="crumbs"><a href="#/workflows">Workflows</a> /${editing ? html` <a href="#/workflows/${encodeURIComponent(editing)}">${editing}</a> /` : ''}</p>
    <div class="head"><h1 tabindex="-1">${title}</h1></div>
    <div id="wf-form-slot"></div>`);
  return {
    live: false,
    async refresh() {
      const slot = $('#wf-form-slot', main);
      if (!can('manage')) {
        setHTML(slot, html`<p class="msg">Only an admin token creates and edits workflows.</p>`);
        return;
      }
      const loaded = editing ? await loadForEditing(slot, `/api/v1/workflows/${path(editing)}`) : { data: null, etag: null };
      if (loaded) renderForm(slot, loaded.data, loaded.etag);
    },
    fail: (e) => loadError($('#wf-form-slot', main), e),
  };
}

function renderForm(slot, w, etag) {
  const editing = !!w;
  const d = w || { overlap: 'skip', nodes: EXAMPLE_NODES };
  const alerts = d.alerts && Object.keys(d.alerts).length ? pretty(d.alerts) : '';
  setHTML(slot, html`
    <form id="wf-form" class="job-form" novalidate>
      <p class="hint">The fields are the API's (<code>POST /api/v1/workflows</code>). The API checks the whole
        definition and its messages appear next to the fields.</p>
      <fieldset><legend>Workflow</legend>
        ${text('wf-f-name', 'name', 'Name', d.name || '', { hint: '1-100 of A-Z a-z 0-9 _ . -', ...(editing ? { readonly: 'readonly' } : {}) })}
        ${text('wf-f-description', 'description', 'Description', d.description || '')}
      </fieldset>
      <fieldset><legend>Schedule</legend>
        ${text('wf-f-cron', 'cron', 'Cron', d.cron || '', { hint: 'as a job\'s (0 0 2 * * ?); empty: runs only when triggered' })}
        ${text('wf-f-timeZone', 'timeZone', 'Time zone', d.timeZone || '', { hint: 'IANA name or GMT+8; empty: UTC' })}
        ${select('wf-f-overlap', 'overlap', 'Overlap', ['skip', 'allow', 'replace'], d.overlap || 'skip',
          'what a scheduled run does while an earlier one still goes: skip (recorded SKIPPED), allow, replace (cancel it)')}
        ${check('wf-f-disabled', 'disabled', 'Disabled (no scheduled runs, triggers refused)', d.disabled)}
        ${text('wf-f-exclude', 'excludeCalendars', 'Exclude calendars', (d.excludeCalendars || []).join(', '),
          { hint: 'calendar names, comma-separated: no scheduled run on their days (recorded SKIPPED)' })}
        ${text('wf-f-include', 'includeCalendars', 'Only on calendars', (d.includeCalendars || []).join(', '),
          { hint: 'calendar names, comma-separated: scheduled runs only on their days' })}
      </fieldset>
      <fieldset><legend>Nodes</legend>
        ${json('wf-f-nodes', 'nodes', 'Nodes (a JSON array)', pretty(d.nodes || []),
          'each {"name", "job", "jobParameter"?, "after"?: [{"node", "on": "success" | "failure" | "always"}]}', 12)}
        <div class="dag-wrap" id="wf-f-graph" aria-live="polite"></div>
      </fieldset>
      <fieldset><legend>Alerts</legend>
        ${json('wf-f-alerts', 'alerts', 'Alert settings (a JSON object, optional)', alerts,
          html`rules on WORKFLOW_FAILED, RUNNING_LONG, RECOVERED and runningLongerThanSeconds, e.g. <code>${JSON.stringify(EXAMPLE_ALERTS)}</code>`, 4)}
      </fieldset>
      <div class="field" data-field="body"><p class="error" id="wf-f-body-error"></p></div>
      <div class="buttons">
        <button type="submit" class="primary" id="wf-f-save">${editing ? 'Save changes' : 'Create workflow'}</button>
        <a class="button" href="${editing ? `#/workflows/${encodeURIComponent(w.name)}` : '#/workflows'}">Cancel</a>
      </div>
    </form>`);
  const form = $('#wf-form', slot);
  const graph = () => {
    const p = parseJSON(form.elements.namedItem('nodes').value, { want: 'a JSON array' });
    if (!p.value) return;
    try {
      draw($('#wf-f-graph', form), p.value.filter((n) => n && typeof n.name === 'string'), { label: 'The nodes as typed' });
    } catch (e) {
      setHTML($('#wf-f-graph', form), ''); // a definition dagre can't lay out (a cycle, say): the API says what is wrong
    }
  };
  form.elements.namedItem('nodes').addEventListener('change', graph);
  graph();
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const { body, errs } = workflowBody(form);
    if (errs.length) {
      showFieldErrors(form, new ApiError(400, { title: 'Not valid', errors: errs }), { summary: true });
      return;
    }
    submitForm(form, () => (editing
      ? api('PUT', `/api/v1/workflows/${path(w.name)}`, { body, headers: etag ? { 'If-Match': etag } : {} })
      : api('POST', '/api/v1/workflows', { body })), {
      message: (res) => `${editing ? 'Saved' : 'Created'} workflow ${res.data.name}.`,
      then: (res) => { location.hash = `#/workflows/${encodeURIComponent(res.data.name)}`; },
    });
  });
  if (!editing) $('#wf-f-name', form).focus();
}
