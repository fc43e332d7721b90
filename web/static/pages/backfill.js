// A job page's backfills (issue 24): start one over a past range (POST /jobs/{job}/backfill), follow its
// progress (fires done of total, items sent, failed and skipped), cancel it; the job's backfills, newest first.
// The form is drawn once; each refresh of the job page patches the table only, so what is typed stays.
import { html, $, setHTML, patchRows, api, path, when, badge, canWrite, quiet, options, ApiError } from '../lib.js';
import { announce, confirmAction } from '../ui.js';
import { showFieldErrors, clearFieldErrors } from '../app.js';

const POLICIES = ['BUFFER_ONE', 'SKIP', 'ALLOW'];
const POLICY_LABELS = { BUFFER_ONE: 'BUFFER_ONE (default)' };

// isoOf reads a datetime-local value as the browser's local time; what isn't a time is sent as typed, so the
// API's message names it.
function isoOf(v) {
  const d = new Date(v);
  return v && !Number.isNaN(d.getTime()) ? d.toISOString() : v;
}

const dateField = (id, name, label, hint) => html`<div class="field" data-field="${name}">
  <label for="${id}">${label}</label><p class="hint" id="${id}-hint">${hint}</p>
  <input id="${id}" name="${name}" type="datetime-local" step="1" aria-describedby="${id}-hint ${id}-error">
  <p class="error" id="${id}-error"></p></div>`;

export function backfillSection(el, name) {
  const write = canWrite();
  const jobURL = `/api/v1/jobs/${path(name)}`;
  setHTML(el, html`
    <h2 id="backfill-title">Backfills</h2>
    <p class="muted">Run every fire the schedule had in a past range again (source BACKFILL, each fire's original
      scheduled time), paced behind the job's own schedule; at most 10,000 fires.</p>
    ${write ? html`<form id="backfill-form" class="filters" novalidate>
      ${dateField('bf-from', 'from', 'From', 'your local time; included')}
      ${dateField('bf-to', 'to', 'To', 'included; not in the future')}
      <div class="field" data-field="overlapPolicy"><label for="bf-policy">Overlap policy</label>
        <p class="hint" id="bf-policy-hint">while the job runs an item: wait, skip it or run beside</p>
        <select id="bf-policy" name="overlapPolicy" aria-describedby="bf-policy-hint bf-policy-error">${options(POLICIES, 'BUFFER_ONE', POLICY_LABELS)}</select>
        <p class="error" id="bf-policy-error"></p></div>
      <div class="field buttons-field"><button type="submit" class="primary">Start backfill</button></div>
    </form>` : ''}
    <div id="backfill-error"></div>
    <div class="table-wrap">
      <table class="data" id="backfill-table">
        <caption class="sr-only">Backfills of ${name}, newest first</caption>
        <thead><tr><th scope="col">Started</th><th scope="col">Range</th><th scope="col" class="opt">Policy</th>
          <th scope="col">State</th><th scope="col">Progress</th><th scope="col" class="opt">Items</th>
          <th scope="col" class="opt">By</th>${write ? html`<th scope="col">Actions</th>` : ''}</tr></thead>
        <tbody></tbody>
      </table>
    </div>
    <p class="empty" id="backfill-empty" hidden>No backfills yet.</p>`);

  let hasCron = true;
  const load = async () => {
    const { data } = await api('GET', `${jobURL}/backfill`);
    patchRows($('#backfill-table tbody', el), data.items.map(row), ['', '', 'opt', '', '', 'opt', 'opt', 'actions']);
    $('#backfill-empty', el).hidden = data.items.length > 0;
  };
  const row = (b) => ({
    key: b.id,
    cells: [
      when(b.createdAt, { short: true }),
      html`<time datetime="${b.from}">${new Date(b.from).toLocaleString()}</time> – <time datetime="${b.to}">${new Date(b.to).toLocaleString()}</time>`,
      b.overlapPolicy,
      html`${badge(b.state)}${b.reason ? html`<br><small class="warn">${b.reason}</small>` : ''}`,
      html`<progress max="${b.total || 1}" value="${b.total ? b.done : 1}" aria-label="fires done"></progress>
        <span class="bf-progress">${b.done}/${b.total} fires</span>${b.current ? html`<br><small class="muted">at ${new Date(b.current).toLocaleString()}</small>` : ''}`,
      `${b.items} sent, ${b.failed} failed, ${b.skipped} skipped`,
      html`${b.createdBy || '—'}${b.cancelledBy ? html`<br><small class="muted">cancelled by ${b.cancelledBy}</small>` : ''}`,
      ...(write ? [b.state === 'RUNNING'
        ? html`<button type="button" class="small danger" data-backfill-cancel="${b.id}" aria-label="Cancel the backfill started ${new Date(b.createdAt).toLocaleString()}">Cancel</button>`
        : ''] : []),
    ],
  });

  if (write) {
    const form = $('#backfill-form', el);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const v = (n) => form.elements.namedItem(n).value.trim();
      const body = { from: isoOf(v('from')), to: isoOf(v('to')), overlapPolicy: v('overlapPolicy') };
      const submit = $('[type=submit]', form);
      submit.disabled = true;
      try {
        const { data } = await api('POST', `${jobURL}/backfill`, { body });
        clearFieldErrors(form);
        announce(`Started a backfill of ${name}: ${data.total} fires.`);
        await load();
      } catch (e) {
        if (quiet(e)) return;
        if (e instanceof ApiError && showFieldErrors(form, e)) return;
        announce(e.message, 'error');
      } finally {
        submit.disabled = !hasCron;
      }
    });
    el.addEventListener('click', async (ev) => {
      const btn = ev.target.closest('[data-backfill-cancel]');
      if (!btn) return;
      if (!(await confirmAction({ title: 'Cancel this backfill?', body: 'No fire starts after this; the fire in flight is aborted. Fires done stay done.', confirm: 'Cancel backfill', danger: true }))) return;
      try {
        await api('POST', `${jobURL}/backfill/${path(btn.dataset.backfillCancel)}/cancel`);
        announce(`Cancelled the backfill of ${name}.`);
        await load();
      } catch (e) {
        if (!quiet(e)) announce(e.message, 'error');
      }
    });
  }

  return {
    async refresh(job) {
      hasCron = !!job.cron;
      const submit = write && $('#backfill-form [type=submit]', el);
      if (submit) {
        submit.disabled = !hasCron;
        submit.title = hasCron ? '' : 'a job without a cron has no past fires';
      }
      try {
        await load();
        setHTML($('#backfill-error', el), '');
      } catch (e) {
        if (quiet(e)) throw e;
        setHTML($('#backfill-error', el), html`<p class="msg msg-error">Backfills can't be listed: ${e.message}</p>`);
      }
    },
  };
}
