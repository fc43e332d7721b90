// The jobs page (#/jobs): every job's status, schedule, next fire and last result; search and a status filter.
import { html, $, setHTML, patchRows, api, when, badge, outcome, options, plural, canWrite, can, STATUSES } from '../lib.js';
import { setQuery, refreshNow, announce } from '../ui.js';

export function jobsScreen(main, r) {
  let cursor = r.query.get('cursor') || '';
  const write = canWrite();
  setHTML(main, html`
    <div class="head">
      <h1 tabindex="-1">Jobs</h1>
      ${can('manage') ? html`<a class="button primary" href="#/create">New job</a>` : ''}
    </div>
    <form class="filters" role="search" id="jobs-filters" novalidate>
      <div class="field"><label for="jobs-q">Search</label>
        <input id="jobs-q" name="q" type="search" value="${r.query.get('q') || ''}" placeholder="name, description or label" autocomplete="off"></div>
      <div class="field"><label for="jobs-status">Status</label>
        <select id="jobs-status" name="status">${options(['', ...STATUSES], r.query.get('status') || '', { '': 'Any status' })}</select></div>
    </form>
    <p class="count" id="jobs-count"></p>
    <div class="table-wrap">
      <table class="data" id="jobs-table">
        <caption class="sr-only">Jobs, their status, schedule and recent results</caption>
        <thead><tr>
          <th scope="col">Job</th><th scope="col">Status</th><th scope="col" class="opt">Schedule</th><th scope="col">Next fire</th>
          <th scope="col" class="opt">Last result</th><th scope="col" class="opt">Last hour</th><th scope="col" class="opt">Last day</th>
          <th scope="col" class="opt">Instances</th>${write ? html`<th scope="col">Actions</th>` : ''}
        </tr></thead>
        <tbody></tbody>
      </table>
    </div>
    <p class="empty" id="jobs-empty" hidden></p>
    <div class="pager" id="jobs-pager"></div>`);
  const form = $('#jobs-filters', main);
  let debounce = 0;
  const filters = () => ({ q: $('#jobs-q', main).value.trim(), status: $('#jobs-status', main).value });
  const onChange = () => {
    clearTimeout(debounce);
    debounce = setTimeout(() => {
      cursor = '';
      setQuery(filters());
      refreshNow();
    }, 250);
  };
  form.addEventListener('input', onChange);
  form.addEventListener('submit', (ev) => ev.preventDefault());
  const cols = ['', '', 'opt', '', 'opt', 'opt', 'opt', 'opt', 'actions'];
  const counts = (ok, failed) => html`<span class="ok-count">${ok} ok</span> / <span class="${failed ? 'fail-count' : ''}">${failed} failed</span>`;
  return {
    live: true,
    page(c) {
      cursor = c;
      setQuery({ ...filters(), cursor });
      refreshNow();
    },
    async refresh() {
      const f = filters();
      const q = new URLSearchParams({ limit: '100' });
      if (f.q) q.set('q', f.q);
      if (f.status) q.set('status', f.status);
      if (cursor) q.set('cursor', cursor);
      const { data } = await api('GET', `/api/v1/jobs?${q}`);
      const rows = data.items.map((j) => {
        const last = j.lastResult;
        const stats = j.stats;
        return {
          key: j.jobName,
          cls: j.status === 'OK' ? '' : `row-${j.status}`,
          cells: [
            html`<a href="#/jobs/${encodeURIComponent(j.jobName)}">${j.jobName}</a>${j.description ? html`<br><small class="muted">${j.description}</small>` : ''}`,
            html`${badge(j.status)}${j.problems && j.problems.length ? html`<br><small class="warn">${j.problems.join('; ')}</small>` : ''}`,
            html`${j.cron ? html`<code>${j.cron}</code><br>` : ''}<small>${j.cronDescription || ''}${j.timeZone && j.timeZone !== 'UTC' ? ` (${j.timeZone})` : ''}</small>`,
            when(j.nextFireTime),
            last ? html`${outcome(last)}<br><small class="muted">${when(last.completedAt || last.startedAt, { short: true })}</small>` : html`<span class="muted">none yet</span>`,
            stats ? counts(stats.lastHourSuccess, stats.lastHourFailure) : html`<span class="muted">—</span>`,
            stats ? counts(stats.lastDaySuccess, stats.lastDayFailure) : html`<span class="muted">—</span>`,
            String(j.instanceCount),
            ...(write ? [html`<div class="row-actions">
              <button type="button" class="small" data-action="trigger" data-job="${j.jobName}" data-total="${j.shardingTotalCount}" data-params="${j.shardingItemParameters || ''}" data-param="${j.jobParameter || ''}" aria-label="Trigger ${j.jobName}">Trigger…</button>
              ${j.disabled
                ? html`<button type="button" class="small" data-action="enable-job" data-job="${j.jobName}" aria-label="Enable ${j.jobName}">Enable</button>`
                : html`<button type="button" class="small" data-action="disable-job" data-job="${j.jobName}" aria-label="Disable ${j.jobName}">Disable</button>`}
            </div>`] : []),
          ],
        };
      });
      patchRows($('#jobs-table tbody', main), rows, cols);
      $('#jobs-count', main).textContent = `${plural(data.total, 'job')}${f.q || f.status ? ' match' : ''}`;
      const empty = $('#jobs-empty', main);
      empty.hidden = data.items.length > 0;
      empty.textContent = f.q || f.status ? 'No job matches these filters.' : 'No jobs yet.';
      setHTML($('#jobs-pager', main), html`
        ${cursor ? html`<button type="button" data-action="page" data-cursor="">First page</button>` : ''}
        ${data.nextCursor ? html`<button type="button" data-action="page" data-cursor="${data.nextCursor}">Next page</button>` : ''}`);
    },
    fail: (e) => announce(e.message, 'error'),
  };
}
