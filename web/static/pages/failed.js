// The failed executions of the last N hours (#/failed?hours=N&job=NAME), to replay many at once: pick them,
// and each is replayed through POST /api/v1/executions/{id}/replay (a new execution, source MANUAL, linked to
// the original), its result shown on its row. Not live: a refresh would take the results away; the Reload
// button asks again.
import { html, $, $$, setHTML, api, path, when, canWrite, quiet, loadError, ApiError } from '../lib.js';
import { setQuery, announce } from '../ui.js';
import { showFieldErrors, clearFieldErrors } from '../app.js';
import { replayLink, shortID } from './execution.js';

export function failedScreen(main, r) {
  const write = canWrite();
  setHTML(main, html`
    <div class="head"><h1 tabindex="-1">Failed executions</h1></div>
    <p class="muted">Item executions that failed (after their retries) in the last hours, newest first.
      ${write ? 'Replay re-runs each picked one with a new webhook-id, linked to the original.' : ''}</p>
    <form class="filters" id="failed-filters" novalidate>
      <div class="field narrow" data-field="hours"><label for="failed-hours">Last hours</label>
        <input id="failed-hours" name="hours" value="${r.query.get('hours') || '24'}" inputmode="numeric" autocomplete="off" aria-describedby="failed-hours-error">
        <p class="error" id="failed-hours-error"></p></div>
      <div class="field" data-field="job"><label for="failed-job">Job <span class="muted">(empty: every job)</span></label>
        <input id="failed-job" name="job" value="${r.query.get('job') || ''}" autocomplete="off" aria-describedby="failed-job-error">
        <p class="error" id="failed-job-error"></p></div>
      <div class="field buttons-field"><button type="submit">Show</button></div>
    </form>
    <div id="failed-error"></div>
    ${write ? html`<div class="actions" id="failed-actions">
      <button type="button" id="failed-all">Select all</button>
      <button type="button" class="primary" id="failed-replay" disabled>Replay selected</button></div>` : ''}
    <div class="table-wrap">
      <table class="data" id="failed-table">
        <caption class="sr-only">Failed executions, newest first</caption>
        <thead><tr>${write ? html`<th scope="col"><span class="sr-only">Pick</span></th>` : ''}<th scope="col">Started</th>
          <th scope="col">Job</th><th scope="col">Item</th><th scope="col">Source</th><th scope="col">Failure cause</th>
          ${write ? html`<th scope="col">Replay</th>` : ''}</tr></thead>
        <tbody></tbody>
      </table>
    </div>
    <p class="empty" id="failed-empty" hidden>No failed execution in this window.</p>
    <p class="muted" id="failed-more" hidden>Showing the newest 500: narrow the window or pick a job to see older ones.</p>`);
  const form = $('#failed-filters', main);
  const values = () => ({ hours: form.elements.namedItem('hours').value.trim(), job: form.elements.namedItem('job').value.trim() });
  const picked = () => $$('input[name=pick]:checked', main);
  const syncButton = () => {
    const btn = $('#failed-replay', main);
    if (!btn) return;
    const n = picked().length;
    btn.disabled = n === 0;
    btn.textContent = n ? `Replay ${n} selected` : 'Replay selected';
  };

  const load = async () => {
    const v = values();
    clearFieldErrors(form);
    const hours = Number(v.hours);
    if (!/^\d+$/.test(v.hours) || hours < 1 || hours > 24 * 90) {
      showFieldErrors(form, { problem: { errors: [{ field: 'hours', message: 'a whole number of hours, 1 to 2160 (90 days)' }] } });
      return;
    }
    setQuery({ hours: v.hours === '24' ? '' : v.hours, job: v.job });
    const p = new URLSearchParams({ success: 'false', limit: '500', from: new Date(Date.now() - hours * 3600e3).toISOString() });
    const url = v.job ? `/api/v1/jobs/${path(v.job)}/executions?${p}` : `/api/v1/executions?${p}`;
    let data;
    try {
      data = (await api('GET', url)).data;
    } catch (e) {
      if (e instanceof ApiError && e.status === 404 && v.job) {
        showFieldErrors(form, { problem: { errors: [{ field: 'job', message: e.message }] } });
        return;
      }
      if (e instanceof ApiError && showFieldErrors(form, e)) return;
      throw e;
    }
    setHTML($('#failed-error', main), '');
    const rows = data.items.filter((e) => e.completedAt && !e.success);
    setHTML($('#failed-table tbody', main), rows.map((e) => html`<tr data-id="${e.id}">
      ${write ? html`<td><input type="checkbox" name="pick" value="${e.id}" aria-label="Pick ${e.jobName} item ${e.shardingItem}, ${new Date(e.startedAt).toLocaleString()}"></td>` : ''}
      <td><a href="#/executions/${encodeURIComponent(e.id)}">${when(e.startedAt, { short: true })}</a></td>
      <td><a href="#/jobs/${encodeURIComponent(e.jobName)}">${e.jobName}</a></td>
      <td>${String(e.shardingItem)}</td>
      <td><span class="source">${e.source}</span>${replayLink(e)}</td>
      <td><small class="cause">${e.failureCause || (e.statusCode ? `HTTP ${e.statusCode}` : '')}</small></td>
      ${write ? html`<td class="replay-result" aria-live="polite"></td>` : ''}</tr>`));
    $('#failed-empty', main).hidden = rows.length > 0;
    $('#failed-more', main).hidden = !data.nextCursor;
    syncButton();
  };

  const replayPicked = async () => {
    const boxes = picked();
    let ok = 0;
    for (const box of boxes) { // one after the other: each result shows as it comes
      const cell = $('.replay-result', box.closest('tr'));
      setHTML(cell, html`<span class="muted">replaying…</span>`);
      try {
        const { data } = await api('POST', `/api/v1/executions/${path(box.value)}/replay`);
        setHTML(cell, html`<span class="ok">replayed as <a href="#/executions/${encodeURIComponent(data.id)}">${shortID(data.id)}</a></span>`);
        box.checked = false;
        ok++;
      } catch (e) {
        if (quiet(e)) throw e;
        setHTML(cell, html`<span class="warn">not replayed: ${e.message}</span>`);
      }
    }
    syncButton();
    announce(`Replayed ${ok} of ${boxes.length} executions.`, ok === boxes.length ? 'ok' : 'error');
  };

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    load().catch((e) => { if (!quiet(e)) loadError($('#failed-error', main), e); });
  });
  main.addEventListener('change', (ev) => { if (ev.target.name === 'pick') syncButton(); });
  if (write) {
    $('#failed-all', main).addEventListener('click', () => {
      const boxes = $$('input[name=pick]', main);
      const all = boxes.every((b) => b.checked);
      boxes.forEach((b) => { b.checked = !all; });
      syncButton();
    });
    $('#failed-replay', main).addEventListener('click', () => {
      replayPicked().catch((e) => { if (!quiet(e)) announce(e.message, 'error'); });
    });
  }
  return { live: false, refresh: load, fail: (e) => loadError($('#failed-error', main), e) };
}
