// A job's overlap policy, catch-up and jitter (issue 24): the job form's fieldset, what it adds to the body,
// and the rows of the job page's configuration. Empty fields keep ElasticJob's behaviour (misfire and
// replayMissedFires decide).
import { html } from '../lib.js';

const POLICIES = ['', 'BUFFER_ONE', 'SKIP', 'ALLOW', 'CANCEL_PREVIOUS'];
const CATCH_UPS = ['', 'none', 'last', 'all'];

// fieldset renders the form's fields; select and number are the form's own field helpers.
export function scheduleFieldset(j, { select, number }) {
  return html`<fieldset><legend>Overlap, catch-up and jitter</legend>
    ${select('f-overlap', 'overlapPolicy', 'Overlap policy', POLICIES, j.overlapPolicy || '',
      'when the previous fire still runs: empty follows Misfire (BUFFER_ONE when on, SKIP when off)')}
    ${select('f-catchup', 'catchUp', 'Catch-up after an outage', CATCH_UPS, j.catchUp || '',
      'empty follows Replay missed fires (last when on, none when off)')}
    ${number('f-catchupwin', 'catchUpWindowSeconds', 'Catch-up window (s)', j.catchUpWindowSeconds || '', 'catch-up all only: missed fires older than this are dropped')}
    ${number('f-jitter', 'jitterMs', 'Jitter (ms)', j.jitterMs || '', 'each fire leaves up to this much late, the same offset on every peer')}
  </fieldset>`;
}

// read adds the fields to body; with an overlap policy set, misfire follows it (not sent), and with a
// catch-up mode set, replayMissedFires does.
export function readSchedule(form, body, toNumber) {
  const v = (n) => form.elements.namedItem(n).value;
  const policy = v('overlapPolicy');
  const catchUp = v('catchUp');
  if (policy) {
    body.overlapPolicy = policy;
    delete body.misfire;
  }
  if (catchUp) {
    body.catchUp = catchUp;
    delete body.replayMissedFires;
  }
  const win = toNumber(v('catchUpWindowSeconds'));
  if (win !== undefined) body.catchUpWindowSeconds = win;
  const jitter = toNumber(v('jitterMs'));
  if (jitter !== undefined) body.jitterMs = jitter;
}

const overlapMeaning = {
  BUFFER_ONE: 'one catch-up after the running fire',
  SKIP: 'skipped while the previous fire runs',
  ALLOW: 'runs beside the previous fire',
  CANCEL_PREVIOUS: 'cancels the previous fire, then runs',
};

// view is the job page's rows for a job (its effective policy when the fields are empty).
export function scheduleView(job) {
  const policy = job.overlapPolicy || (job.misfire ? 'BUFFER_ONE' : 'SKIP');
  const catchUp = job.catchUp || (job.replayMissedFires ? 'last' : 'none');
  return html`
    <div><dt>Overlap policy</dt><dd>${policy} <span class="muted">(${overlapMeaning[policy] || ''})</span></dd></div>
    <div><dt>Catch-up</dt><dd>${catchUp}${catchUp === 'all' && job.catchUpWindowSeconds ? ` within ${job.catchUpWindowSeconds} s` : ''}</dd></div>
    <div><dt>Jitter</dt><dd>${job.jitterMs ? `up to ${job.jitterMs} ms` : 'none'}</dd></div>`;
}
