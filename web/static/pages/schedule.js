// A job's steering fields (issue 24): overlap policy, catch-up, jitter, calendars, endAt and remainingFires.
// The job form's fieldsets, what they add to the body, the calendar lists (the cluster's calendars, loaded
// after the form shows), and the rows of the job page's configuration.
import { html, $, $$, setHTML, api, quiet } from '../lib.js';

const POLICIES = ['BUFFER_ONE', 'SKIP', 'ALLOW', 'CANCEL_PREVIOUS'];
const POLICY_LABELS = { BUFFER_ONE: 'BUFFER_ONE (default)' };
const CATCH_UPS = ['none', 'last', 'all'];
const CATCH_UP_LABELS = { none: 'none (default)' };
const CALENDAR_LISTS = [
  ['excludeCalendars', 'Skip the days of', 'fires on a day of any of these calendars are skipped'],
  ['includeCalendars', 'Fire only on the days of', 'none checked: every day; else only days of any of these'],
];

// A job stored before these fields existed says its policy with misfire and replayMissedFires.
const policyOf = (j) => j.overlapPolicy || (j.misfire === false ? 'SKIP' : 'BUFFER_ONE');
const catchUpOf = (j) => j.catchUp || (j.replayMissedFires ? 'last' : 'none');

function calendarChecks(name, names, picked) {
  if (!names.length) return html`<p class="muted">No calendars: create them on the <a href="#/calendars">Calendars</a> page.</p>`;
  return names.map((n) => html`<label class="check"><input type="checkbox" name="${name}" value="${n}"${picked.includes(n) ? html` checked` : ''}> ${n}</label>`);
}

// scheduleFieldset renders the form's fields; select, number and text are the form's own field helpers.
export function scheduleFieldset(j, { select, number, text }) {
  return html`<fieldset><legend>Overlap, catch-up and jitter</legend>
    ${select('f-overlap', 'overlapPolicy', 'Overlap policy', POLICIES, policyOf(j),
      'when the previous fire still runs: BUFFER_ONE is ElasticJob\'s misfire on (one catch-up), SKIP its misfire off', POLICY_LABELS)}
    ${select('f-catchup', 'catchUp', 'Catch-up after an outage', CATCH_UPS, catchUpOf(j),
      'none: missed fires are not run (ElasticJob); last: the last one (replayMissedFires); all: each, oldest first', CATCH_UP_LABELS)}
    ${number('f-catchupwin', 'catchUpWindowSeconds', 'Catch-up window (s)', j.catchUpWindowSeconds || '', 'catch-up all only: missed fires older than this are dropped')}
    ${number('f-jitter', 'jitterMs', 'Jitter (ms)', j.jitterMs || '', 'each fire leaves up to this much late, the same offset on every peer')}
  </fieldset>
  <fieldset><legend>Calendars and end</legend>
    ${CALENDAR_LISTS.map(([name, label, hint]) => html`<fieldset class="field calendars" data-field="${name}" aria-describedby="f-${name}-hint f-${name}-error">
      <legend>${label}</legend>
      <p class="hint" id="f-${name}-hint">${hint}</p>
      <div id="f-${name}-list">${calendarChecks(name, j[name] || [], j[name] || [])}</div>
      <p class="error" id="f-${name}-error"></p>
    </fieldset>`)}
    ${text('f-endAt', 'endAt', 'End at', j.endAt || '', { hint: 'RFC 3339 (2026-12-31T23:59:59Z): no scheduled fire after it; empty: no end', spellcheck: 'false' })}
    ${number('f-remainingFires', 'remainingFires', 'Remaining fires', j.remainingFires || '', 'the schedule ends after this many fires, counted once across the peers; empty: no limit')}
  </fieldset>`;
}

// mountCalendars lists the cluster's calendars in the form once loaded, keeping what is checked (and the
// job's names the cluster no longer has), and calls onChange when a box changes.
export function mountCalendars(form, onChange) {
  form.addEventListener('change', (ev) => {
    if (CALENDAR_LISTS.some(([name]) => ev.target.name === name)) onChange();
  });
  api('GET', '/api/v1/calendars').then(({ data }) => {
    const cluster = data.items.map((c) => c.name);
    for (const [name] of CALENDAR_LISTS) {
      const picked = calendarsPicked(form, name);
      const names = [...new Set([...cluster, ...picked])].sort();
      setHTML($(`#f-${name}-list`, form), calendarChecks(name, names, picked));
    }
  }).catch((e) => {
    if (quiet(e)) return;
    for (const [name] of CALENDAR_LISTS) {
      $(`#f-${name}-error`, form).textContent = `The cluster's calendars can't be listed: ${e.message}`;
    }
  });
}

const calendarsPicked = (form, name) => $$(`input[name="${name}"]:checked`, form).map((el) => el.value);

// previewQuery adds the checked calendars to a cron preview's query: the preview shows the fires the job
// will run, not only the expression's.
export function previewQuery(form, q) {
  for (const [name] of CALENDAR_LISTS) {
    const picked = calendarsPicked(form, name);
    if (picked.length) q.set(name, picked.join(','));
  }
  return CALENDAR_LISTS.some(([name]) => q.has(name));
}

// readSchedule adds the fields to body. The overlap and catch-up selects always say a policy, so misfire and
// replayMissedFires (which the API derives from them) are not sent.
export function readSchedule(form, body, toNumber) {
  const v = (n) => form.elements.namedItem(n).value;
  body.overlapPolicy = v('overlapPolicy');
  body.catchUp = v('catchUp');
  delete body.misfire;
  delete body.replayMissedFires;
  const win = toNumber(v('catchUpWindowSeconds'));
  if (win !== undefined) body.catchUpWindowSeconds = win;
  const jitter = toNumber(v('jitterMs'));
  if (jitter !== undefined) body.jitterMs = jitter;
  for (const [name] of CALENDAR_LISTS) {
    const picked = calendarsPicked(form, name);
    if (picked.length) body[name] = picked;
  }
  const end = v('endAt').trim();
  if (end) body.endAt = end;
  const remaining = toNumber(v('remainingFires'));
  if (remaining !== undefined) body.remainingFires = remaining;
}

const overlapMeaning = {
  BUFFER_ONE: 'one catch-up after the running fire',
  SKIP: 'skipped while the previous fire runs',
  ALLOW: 'runs beside the previous fire',
  CANCEL_PREVIOUS: 'cancels the previous fire, then runs',
};

// view is the job page's rows for a job (its effective policy when the fields are empty).
export function scheduleView(job) {
  const policy = policyOf(job);
  const catchUp = catchUpOf(job);
  const list = (names) => (names && names.length ? names.map((n, i) => html`${i ? ', ' : ''}<a href="#/calendars">${n}</a>`) : 'none');
  return html`
    <div><dt>Overlap policy</dt><dd>${policy} <span class="muted">(${overlapMeaning[policy] || ''})</span></dd></div>
    <div><dt>Catch-up</dt><dd>${catchUp}${catchUp === 'all' && job.catchUpWindowSeconds ? ` within ${job.catchUpWindowSeconds} s` : ''}</dd></div>
    <div><dt>Jitter</dt><dd>${job.jitterMs ? `up to ${job.jitterMs} ms` : 'none'}</dd></div>
    <div><dt>Skips the days of</dt><dd>${list(job.excludeCalendars)}</dd></div>
    <div><dt>Fires only on the days of</dt><dd>${list(job.includeCalendars)}</dd></div>
    <div><dt>Ends</dt><dd>${job.endAt ? html`after <time datetime="${job.endAt}">${job.endAt}</time>` : 'never'}${job.remainingFires ? ` (at most ${job.remainingFires} fires)` : ''}</dd></div>`;
}
