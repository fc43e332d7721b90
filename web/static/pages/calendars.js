// The calendars page (#/calendars): the cluster's named calendars (Quartz's holiday and annual days, with a
// time zone) that jobs exclude (excludeCalendars) or are restricted to (includeCalendars). Admins create,
// replace and delete them here; a calendar a job names can't be deleted (the error names the jobs).
import { api, html, setHTML, $, can, path, ApiError } from '../lib.js';

const EXAMPLE = { name: 'cn-holidays', timeZone: 'Asia/Shanghai', dates: ['2026-01-01'],
  ranges: [{ from: '2026-10-01', to: '2026-10-07' }], annual: ['12-25'] };

const days = (c) => [
  ...(c.dates || []),
  ...(c.ranges || []).map((r) => `${r.from} – ${r.to}`),
  ...(c.annual || []).map((d) => `every ${d}`),
].join(', ');

export function calendarsScreen(main) {
  const admin = can('administer');
  setHTML(main, html`
    <div class="head"><h1 tabindex="-1">Calendars</h1></div>
    <p class="muted">Days jobs skip (<code>excludeCalendars</code>) or keep to (<code>includeCalendars</code>),
      read in each calendar's time zone. Every peer applies a change to the next fires.</p>
    <div id="cal-error" role="alert"></div>
    <table class="list"><thead><tr><th scope="col">Name</th><th scope="col">Time zone</th><th scope="col">Days</th>
      <th scope="col">Description</th>${admin ? html`<th scope="col"><span class="sr-only">Actions</span></th>` : ''}</tr></thead>
      <tbody id="cal-rows"></tbody></table>
    ${admin ? html`
    <section aria-labelledby="cal-edit-h">
      <h2 id="cal-edit-h">Create or replace a calendar</h2>
      <form id="cal-form" novalidate>
        <div class="field">
          <label for="cal-json">Calendar (JSON, as the API takes it)</label>
          <textarea id="cal-json" rows="8" spellcheck="false" aria-describedby="cal-json-error">${JSON.stringify(EXAMPLE, null, 2)}</textarea>
          <p class="error" id="cal-json-error" role="alert"></p>
        </div>
        <button type="submit" class="primary">Save</button>
      </form>
    </section>` : ''}`);
  let names = [];
  const fail = (e) => setHTML($('#cal-error', main), html`<p class="msg msg-error">${e.message}</p>`);
  const load = async () => {
    const { data } = await api('GET', '/api/v1/calendars');
    names = data.items.map((c) => c.name);
    setHTML($('#cal-rows', main), data.items.length ? html`${data.items.map((c) => html`<tr>
      <td><code>${c.name}</code></td><td>${c.timeZone || 'UTC'}</td><td>${days(c)}</td><td>${c.description || ''}</td>
      ${admin ? html`<td><button type="button" data-edit="${c.name}">Edit</button>
        <button type="button" class="danger" data-delete="${c.name}">Delete</button></td>` : ''}</tr>`)}`
      : html`<tr><td colspan="5" class="muted">No calendars yet.</td></tr>`);
    setHTML($('#cal-error', main), '');
  };
  if (admin) {
    main.addEventListener('click', async (ev) => {
      const edit = ev.target.closest('[data-edit]');
      const del = ev.target.closest('[data-delete]');
      try {
        if (edit) {
          const { data } = await api('GET', `/api/v1/calendars/${path(edit.dataset.edit)}`);
          delete data.version;
          $('#cal-json', main).value = JSON.stringify(data, null, 2);
          $('#cal-json', main).focus();
        } else if (del && confirm(`Delete calendar ${del.dataset.delete}?`)) {
          await api('DELETE', `/api/v1/calendars/${path(del.dataset.delete)}`);
          await load();
        }
      } catch (e) {
        fail(e);
      }
    });
    $('#cal-form', main).addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const err = $('#cal-json-error', main);
      let body;
      try {
        body = JSON.parse($('#cal-json', main).value);
      } catch (e) {
        err.textContent = `Not JSON: ${e.message}`;
        return;
      }
      try {
        const exists = names.includes(body.name);
        await api(exists ? 'PUT' : 'POST', exists ? `/api/v1/calendars/${path(body.name)}` : '/api/v1/calendars', { body });
        err.textContent = '';
        await load();
      } catch (e) {
        err.textContent = e instanceof ApiError ? e.message : String(e);
      }
    });
  }
  return { live: false, refresh: load, fail };
}
