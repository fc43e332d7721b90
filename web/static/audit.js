// The console's audit trail page (#/audit): who changed what, when, from where, newest first, with each
// config change's field-level difference (secrets only as "changed"), filters and "older" paging. app.js
// calls ejserverAudit once with its helpers and routes #/audit to the screen it returns. Everything renders
// through html``, which escapes: details and values come from configs and requests.
'use strict';

window.ejserverAudit = (h) => {
  const { html, $, setHTML, api, quiet, announce, when } = h;

  function outcome(e) {
    const cls = e.outcome === 'ok' ? 'SUCCEEDED' : 'FAILED';
    return html`<span class="badge st-${cls}">${e.outcome}${e.status ? ` ${e.status}` : ''}</span>${e.count > 1 ? html` <small>×${e.count}</small>` : ''}`;
  }

  function object(e) {
    const parts = [];
    if (e.job) parts.push(e.job);
    if (typeof e.item === 'number') parts.push(`item ${e.item}`);
    if (e.server) parts.push(`server ${e.server}`);
    if (e.channel) parts.push(`channel ${e.channel}`);
    return parts.join(' · ');
  }

  function actor(e) {
    const who = e.actor || (e.actorKind === 'open' ? 'anyone (no tokens)' : 'unknown');
    const more = [e.actorKind, e.role, e.scope, e.source].filter(Boolean).join(' · ');
    return html`${who}<br><small class="muted">${more}</small>`;
  }

  function changes(e) {
    const rows = (e.changes || []).map((c) => (c.before || c.after
      ? html`<li><code>${c.field}</code>: <del>${c.before || '∅'}</del> → <ins>${c.after || '∅'}</ins>${c.note ? html` <small>(${c.note})</small>` : ''}</li>`
      : html`<li><code>${c.field}</code> <small>${c.note}</small></li>`));
    if (!rows.length && !e.detail) return html`<span class="muted">—</span>`;
    const list = rows.length ? html`<ul class="changes">${rows}</ul>` : '';
    if (rows.length > 3) return html`${e.detail ? html`<p>${e.detail}</p>` : ''}<details><summary>${rows.length} fields</summary>${list}</details>`;
    return html`${e.detail ? html`<p>${e.detail}</p>` : ''}${list}`;
  }

  function screen(main) {
    setHTML(main, html`
      <div class="head"><h1 tabindex="-1">Audit trail</h1></div>
      <p class="hint">Every change through the API, the jobs file's applies, refused requests (folded per source per minute) and changes made directly in ZooKeeper, newest first. Secrets show only as changed.</p>
      <form id="audit-filter" class="filters" role="search" aria-label="Filter the audit trail">
        <label>Job <input name="job" spellcheck="false"></label>
        <label>Actor <input name="actor" spellcheck="false"></label>
        <label>Action <input name="action" list="audit-actions" spellcheck="false"></label>
        <datalist id="audit-actions">${['job.create', 'job.replace', 'job.delete', 'job.enable', 'job.disable', 'job.trigger',
          'item.enable', 'item.disable', 'job.server.enable', 'job.server.disable', 'server.enable', 'server.disable',
          'channel.create', 'channel.replace', 'channel.delete', 'channel.test', 'jobsfile.apply', 'auth.denied',
          'zookeeper.job.config', 'zookeeper.job.create', 'zookeeper.job.delete', 'zookeeper.server.state'].map((a) => html`<option value="${a}">`)}</datalist>
        <button type="submit">Filter</button>
      </form>
      <div class="table-wrap">
        <table class="data" id="audit-table">
          <caption class="sr-only">The audit trail, newest first</caption>
          <thead><tr><th scope="col">Time</th><th scope="col">Actor</th><th scope="col">Action</th><th scope="col">Object</th>
            <th scope="col">Outcome</th><th scope="col">What</th></tr></thead>
          <tbody></tbody>
        </table>
      </div>
      <p><button type="button" id="audit-older" hidden>Older entries</button></p>`);
    const form = $('#audit-filter', main);
    const tbody = $('#audit-table tbody', main);
    const older = $('#audit-older', main);
    let cursor = '';

    const query = (more) => {
      const q = new URLSearchParams({ limit: '50' });
      for (const k of ['job', 'actor', 'action']) {
        const v = form.elements[k].value.trim();
        if (v) q.set(k, v);
      }
      if (more && cursor) q.set('cursor', cursor);
      return q;
    };
    const row = (e) => html`<tr data-key="${e.id}"><td>${when(e.time, { short: true })}</td><td>${actor(e)}</td><td><code>${e.action}</code></td>
      <td>${object(e)}</td><td>${outcome(e)}</td><td>${changes(e)}</td></tr>`;
    const load = async (more) => {
      try {
        const { data } = await api('GET', `/api/v1/audit?${query(more)}`);
        cursor = data.nextCursor || '';
        older.hidden = !cursor;
        const rows = data.items.map(row);
        if (more) tbody.insertAdjacentHTML('beforeend', String(html`${rows}`));
        else setHTML(tbody, rows.length ? html`${rows}` : html`<tr><td colspan="6" class="muted">No entries.</td></tr>`);
      } catch (e) {
        if (!quiet(e)) announce(e.message, 'error');
      }
    };
    form.addEventListener('submit', (ev) => { ev.preventDefault(); load(false); });
    older.addEventListener('click', () => load(true));
    return { live: false, refresh: () => load(false) };
  }

  return { screen };
};
