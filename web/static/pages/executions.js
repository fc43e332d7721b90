// The executions page (#/executions): filters by job, item, result, source and start time, paged; and the
// execution rows the job page shares.
import { html, $, setHTML, patchRows, api, path, when, badge, outcome, duration, options, loadError, ApiError, SOURCES } from '../lib.js';
import { setQuery, refreshNow } from '../ui.js';
import { showFieldErrors, clearFieldErrors } from '../app.js';
import { replayLink } from './execution.js';

// items answered 202 Accepted: their lease, progress and messages (async.js)
export const asyncView = window.ejserverAsync({ html, badge, when });

export function executionRows(items, { showJob = true } = {}) {
  return items.map((e) => ({
    key: e.id,
    cls: e.completedAt && !e.success && e.state !== 'CANCELLED' ? 'row-failed' : '',
    cells: [
      html`<a href="#/executions/${encodeURIComponent(e.id)}" class="exec-link">${when(e.startedAt)}</a>`,
      ...(showJob ? [html`<a href="#/jobs/${encodeURIComponent(e.jobName)}">${e.jobName}</a>`] : []),
      String(e.shardingItem),
      html`<span class="source">${e.source}</span>${replayLink(e)}`,
      html`<span class="mono">${e.instanceId}</span>`,
      e.async ? asyncView.result(e) : outcome(e),
      String(e.attempts),
      e.async && asyncView.live(e) ? asyncView.runningFor(e) : duration(e.durationMs),
      executionDetails(e),
    ],
  }));
}

function executionDetails(e) {
  let summary = 'Response';
  if (e.failureCause) summary = e.state === 'CANCELLED' ? 'Cause' : 'Failure cause';
  else if (e.output) summary = 'Output';
  else if (e.async) summary = 'Details';
  const more = e.async ? asyncView.details(e, { summary }) : '';
  const trace = e.traceId ? html`<p class="trace">Trace <code data-trace-id>${e.traceId}</code></p>` : '';
  if (!e.failureCause && !e.responseExcerpt && !more) return trace || html`<span class="muted">—</span>`;
  // one box: on a phone a cell is a row of its label and its children, and a trace beside the disclosure
  // would push the card past the screen's edge
  return html`<div class="cell-stack">${trace}<details><summary>${summary}</summary>
    ${e.failureCause ? html`<p class="cause">${e.failureCause}</p>` : ''}
    ${more}
    ${e.responseExcerpt ? html`<pre class="excerpt">${e.responseExcerpt}</pre>` : ''}</details></div>`;
}

export const executionHead = (showJob = true) => html`<thead><tr>
  <th scope="col">Started</th>${showJob ? html`<th scope="col">Job</th>` : ''}<th scope="col">Item</th><th scope="col">Source</th>
  <th scope="col" class="opt">Instance</th><th scope="col">Result</th><th scope="col" class="opt">Attempts</th>
  <th scope="col" class="opt">Duration</th><th scope="col">Details</th></tr></thead>`;
export const executionCols = (showJob = true) => (showJob ? ['', '', '', '', 'opt', '', 'opt', 'opt', 'details'] : ['', '', '', 'opt', '', 'opt', 'opt', 'details']);

export function executionsScreen(main, r) {
  const q = r.query;
  let cursors = []; // the cursors of the pages before this one
  let cursor = '';
  const limit = q.get('limit') || '50'; // the page size (the API bounds it)
  setHTML(main, html`
    <div class="head"><h1 tabindex="-1">Executions</h1></div>
    <form class="filters" id="exec-filters" role="search" novalidate>
      <div class="field" data-field="job"><label for="exec-job">Job</label>
        <input id="exec-job" name="job" value="${q.get('job') || ''}" list="exec-jobs" autocomplete="off" aria-describedby="exec-job-error">
        <datalist id="exec-jobs"></datalist><p class="error" id="exec-job-error"></p></div>
      <div class="field narrow" data-field="item"><label for="exec-item">Item</label>
        <input id="exec-item" name="item" value="${q.get('item') || ''}" inputmode="numeric" autocomplete="off" aria-describedby="exec-item-error">
        <p class="error" id="exec-item-error"></p></div>
      <div class="field" data-field="success"><label for="exec-success">Result</label>
        <select id="exec-success" name="success">${options(['', 'true', 'false'], q.get('success') || '', { '': 'Any result', true: 'Succeeded', false: 'Failed' })}</select>
        <p class="error" id="exec-success-error"></p></div>
      <div class="field" data-field="source"><label for="exec-source">Source</label>
        <select id="exec-source" name="source">${options(['', ...SOURCES], q.get('source') || '', { '': 'Any source' })}</select>
        <p class="error" id="exec-source-error"></p></div>
      <div class="field" data-field="from"><label for="exec-from">Started from</label>
        <input id="exec-from" name="from" type="datetime-local" step="1" value="${q.get('from') || ''}" aria-describedby="exec-from-error">
        <p class="error" id="exec-from-error"></p></div>
      <div class="field" data-field="to"><label for="exec-to">Started before</label>
        <input id="exec-to" name="to" type="datetime-local" step="1" value="${q.get('to') || ''}" aria-describedby="exec-to-error">
        <p class="error" id="exec-to-error"></p></div>
      <div class="field buttons-field"><button type="reset">Clear filters</button></div>
    </form>
    <div id="exec-error"></div>
    <div class="table-wrap">
      <table class="data" id="exec-table">
        <caption class="sr-only">Executions, newest first</caption>
        ${executionHead(true)}
        <tbody></tbody>
      </table>
    </div>
    <p class="empty" id="exec-empty" hidden>No execution matches these filters.</p>
    <div class="pager" id="exec-pager"></div>`);
  const form = $('#exec-filters', main);
  const values = () => Object.fromEntries(['job', 'item', 'success', 'source', 'from', 'to'].map((k) => [k, form.elements.namedItem(k).value.trim()]));
  let debounce = 0;
  const changed = () => {
    clearTimeout(debounce);
    debounce = setTimeout(() => {
      cursors = [];
      cursor = '';
      setQuery({ ...values(), limit: limit === '50' ? '' : limit });
      refreshNow();
    }, 300);
  };
  form.addEventListener('input', changed);
  form.addEventListener('change', changed);
  form.addEventListener('reset', () => setTimeout(changed));
  form.addEventListener('submit', (ev) => ev.preventDefault());
  api('GET', '/api/v1/jobs?limit=1000').then(({ data }) => {
    setHTML($('#exec-jobs', main), data.items.map((j) => html`<option value="${j.jobName}"></option>`));
  }).catch(() => {});
  return {
    live: true,
    page(c) {
      if (c === 'newer') cursor = cursors.pop() || '';
      else {
        cursors.push(cursor);
        cursor = c;
      }
      refreshNow();
    },
    async refresh() {
      const v = values();
      const p = new URLSearchParams({ limit });
      ['item', 'success', 'source'].forEach((k) => { if (v[k]) p.set(k, v[k]); });
      ['from', 'to'].forEach((k) => {
        if (!v[k]) return;
        const d = new Date(v[k]);
        p.set(k, Number.isNaN(d.getTime()) ? v[k] : d.toISOString());
      });
      if (cursor) p.set('cursor', cursor);
      const url = v.job ? `/api/v1/jobs/${path(v.job)}/executions?${p}` : `/api/v1/executions?${p}`;
      let data;
      try {
        data = (await api('GET', url)).data;
      } catch (e) {
        if (e instanceof ApiError) {
          const fields = showFieldErrors(form, e);
          if (!fields) loadError($('#exec-error', main), e);
          patchRows($('#exec-table tbody', main), []);
          $('#exec-empty', main).hidden = true;
          return;
        }
        throw e;
      }
      clearFieldErrors(form);
      setHTML($('#exec-error', main), '');
      patchRows($('#exec-table tbody', main), executionRows(data.items), executionCols(true));
      $('#exec-empty', main).hidden = data.items.length > 0;
      setHTML($('#exec-pager', main), html`
        ${cursor ? html`<button type="button" data-action="page" data-cursor="newer">Newer</button>` : ''}
        ${data.nextCursor ? html`<button type="button" data-action="page" data-cursor="${data.nextCursor}">Older</button>` : ''}`);
    },
    fail: (e) => loadError($('#exec-error', main), e),
  };
}
