// The job form (#/create, #/jobs/NAME/edit): the body sent is the API's job JSON, and the API's field errors
// are shown next to the fields they name. An ES module; its code keeps the indentation it had inside app.js's
// former wrapper so that changes made to the form on other branches merge line for line (re-indent it after).
import { html, $, $$, setHTML, api, path, can, canWrite, quiet, options, loadError, ApiError } from './lib.js';
import { announce, openDialog } from './ui.js';
import { scheduleFieldset, readSchedule, mountCalendars, previewQuery } from './pages/schedule.js';


  const FIELDS_KEPT = ['jobExecutorThreadPoolSizeProviderType', 'jobErrorHandlerType', 'staticSharding', 'overwrite', 'async'];

  function field(id, name, label, input, hint) {
    return html`<div class="field" data-field="${name}">
      <label for="${id}">${label}</label>
      ${hint ? html`<p class="hint" id="${id}-hint">${hint}</p>` : ''}
      ${input}
      <p class="error" id="${id}-error"></p>
    </div>`;
  }
  const described = (id, hint) => `${hint ? `${id}-hint ` : ''}${id}-error`;
  function text(id, name, label, value, { hint, ...attrs } = {}) {
    const extra = Object.entries(attrs).map(([k, v]) => html` ${k}="${v}"`);
    return field(id, name, label, html`<input id="${id}" name="${name}" value="${value ?? ''}" autocomplete="off" aria-describedby="${described(id, hint)}"${extra}>`, hint);
  }
  function number(id, name, label, value, hint) {
    return text(id, name, label, value, { hint, inputmode: 'numeric' });
  }
  function area(id, name, label, value, hint) {
    return field(id, name, label, html`<textarea id="${id}" name="${name}" rows="3" autocomplete="off" spellcheck="false" aria-describedby="${described(id, hint)}">${value || ''}</textarea>`, hint);
  }
  function select(id, name, label, values, value, hint, labels) {
    return field(id, name, label, html`<select id="${id}" name="${name}" aria-describedby="${described(id, hint)}">${options(values, value, labels)}</select>`, hint);
  }
  function check(id, name, label, checked, hint) {
    return html`<div class="field check-field" data-field="${name}">
      <input type="checkbox" id="${id}" name="${name}"${checked ? html` checked` : ''} aria-describedby="${described(id, hint)}">
      <label for="${id}">${label}</label>
      ${hint ? html`<p class="hint" id="${id}-hint">${hint}</p>` : ''}
      <p class="error" id="${id}-error"></p>
    </div>`;
  }

  function clearFieldErrors(form) {
    $$('.error', form).forEach((p) => { if (p.textContent) p.textContent = ''; });
    $$('[aria-invalid]', form).forEach((el) => el.removeAttribute('aria-invalid'));
    const summary = $('.error-summary', form.parentNode);
    if (summary) summary.remove();
  }

  // loadForEditing reads the object a form edits (GET url) as { data, etag }, the etag to send back in
  // If-Match. An API error (not found, forbidden) is shown in slot and gives null; others (sign-in needed,
  // unreachable) are thrown, for the screen's fail.
  async function loadForEditing(slot, url) {
    try {
      const { data, etag } = await api('GET', url);
      return { data, etag };
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      loadError(slot, e);
      return null;
    }
  }

  // submitForm sends a form: save makes the API call, with the form's submit button disabled until it ends.
  // On success the field errors go, message(res) is announced and then(res) runs; an API error's field errors
  // are shown next to their fields, another error is announced (sign-in and unreachable are already shown).
  async function submitForm(form, save, { message, then = () => {} }) {
    const submit = $('[type=submit]', form);
    submit.disabled = true;
    try {
      const res = await save();
      clearFieldErrors(form);
      announce(message(res));
      then(res);
    } catch (e) {
      if (quiet(e)) return;
      if (e instanceof ApiError) showFieldErrors(form, e, { summary: true });
      else announce(e.message, 'error');
    } finally {
      submit.disabled = false;
    }
  }

  // showFieldErrors puts each of a problem's field errors next to the field it names ("webhook.headers.X"
  // falls back to "webhook.headers"); it returns how many it placed, and lists the rest in a summary.
  function showFieldErrors(form, e, { summary } = {}) {
    clearFieldErrors(form);
    const p = e.problem || {};
    let errs = p.errors && p.errors.length ? p.errors : p.field ? [{ field: p.field, message: e.message }] : [];
    if (!errs.length) errs = [{ field: '', message: e.message }];
    let placed = 0;
    const items = [];
    for (const fe of errs) {
      let name = fe.field || '';
      let box = null;
      while (name) {
        box = $(`[data-field="${CSS.escape(name)}"]`, form);
        if (box) break;
        const cut = Math.max(name.lastIndexOf('.'), name.lastIndexOf('[')); // "a.b" and "a[0]" fall back to "a"
        name = cut > 0 ? name.slice(0, cut) : '';
      }
      const shown = fe.field && box && name !== fe.field ? `${fe.field.slice(name.length).replace(/^\./, '')}: ${fe.message}` : fe.message;
      if (box) {
        const err = $('.error', box);
        err.textContent = err.textContent ? `${err.textContent} ${shown}` : shown;
        const input = $('input:not([type=radio]), select, textarea', box) || $('input', box);
        if (input) input.setAttribute('aria-invalid', 'true');
        placed++;
        const label = $('label, legend', box);
        items.push({ id: input ? input.id : '', text: `${label ? label.textContent.trim() : fe.field}: ${shown}` });
      } else items.push({ id: '', text: fe.field && fe.field !== 'body' ? `${fe.field}: ${fe.message}` : fe.message });
    }
    if (summary) {
      const box = document.createElement('div');
      box.className = 'error-summary';
      box.tabIndex = -1;
      box.setAttribute('role', 'alert');
      box.setAttribute('aria-labelledby', 'error-summary-title');
      setHTML(box, html`<h2 id="error-summary-title">Not saved: ${p.title || 'error'} (${e.status})</h2>
        <ul>${items.map((it) => html`<li>${it.id ? html`<button type="button" class="link" data-action="focus" data-target="${it.id}">${it.text}</button>` : it.text}</li>`)}</ul>`);
      form.parentNode.insertBefore(box, form);
      box.focus();
    }
    return placed;
  }

  // toNumber sends what the operator typed as a JSON number when it is one, and as it is otherwise, so
  // the API's own message names the mistake ("must be a number, not string").
  function toNumber(s) {
    const t = s.trim();
    if (t === '') return undefined;
    return /^-?\d+$/.test(t) ? Number(t) : t;
  }

  function parseLines(s, sep) {
    const out = {};
    s.split('\n').map((l) => l.trim()).filter(Boolean).forEach((l) => {
      const i = l.indexOf(sep);
      if (i < 0) out[l] = '';
      else out[l.slice(0, i).trim()] = l.slice(i + 1).trim();
    });
    return out;
  }

  function jobBody(form, loaded) {
    const v = (n) => form.elements.namedItem(n).value;
    const c = (n) => form.elements.namedItem(n).checked;
    const body = {};
    if (loaded) FIELDS_KEPT.forEach((k) => { if (loaded[k] !== undefined) body[k] = loaded[k]; });
    Object.assign(body, {
      jobName: v('jobName').trim(),
      cron: v('cron').trim(),
      timeZone: v('timeZone').trim(),
      shardingTotalCount: toNumber(v('shardingTotalCount')),
      shardingItemParameters: v('shardingItemParameters').trim(),
      jobParameter: v('jobParameter'),
      description: v('description'),
      label: v('label').trim(),
      jobType: v('jobType'),
      streamingProcess: c('streamingProcess'),
      disabled: c('disabled'),
      failover: c('failover'),
      monitorExecution: c('monitorExecution'),
      maxTimeDiffSeconds: toNumber(v('maxTimeDiffSeconds')),
      reconcileIntervalMinutes: toNumber(v('reconcileIntervalMinutes')),
      maxConcurrentRequests: toNumber(v('maxConcurrentRequests')),
      jobShardingStrategyType: v('jobShardingStrategyType'),
    });
    const headers = parseLines(v('webhook.headers'), ':');
    const webhook = {
      url: v('webhook.url').trim(),
      method: v('webhook.method'),
      timeoutMs: toNumber(v('webhook.timeoutMs')),
      connectTimeoutMs: toNumber(v('webhook.connectTimeoutMs')),
      secretGracePeriodSeconds: toNumber(v('webhook.secretGracePeriodSeconds')),
    };
    if (Object.keys(headers).length) webhook.headers = headers;
    const secret = form.elements.namedItem('secret-mode').value;
    if (secret === 'generate') webhook.generateSecret = true;
    if (secret === 'set') webhook.secret = v('webhook.secret');
    if (secret === 'remove') webhook.secret = '';
    body.webhook = webhook;
    alertsView().read(form, body);
    readSchedule(form, body, toNumber);
    body.retry = {
      maxAttempts: toNumber(v('retry.maxAttempts')),
      initialBackoffMs: toNumber(v('retry.initialBackoffMs')),
      maxBackoffMs: toNumber(v('retry.maxBackoffMs')),
    };
    const props = parseLines(v('props'), '=');
    if (Object.keys(props).length) body.props = props;
    const drop = (o) => Object.keys(o).forEach((k) => { if (o[k] === undefined) delete o[k]; });
    drop(body);
    drop(body.webhook);
    drop(body.retry);
    return body;
  }

  function formScreen(main, r) {
    const editing = r.parts[0] === 'jobs' ? r.parts[1] : null;
    const title = editing ? `Edit ${editing}` : 'New job';
    setHTML(main, html`
      <nav class="crumbs" aria-label="Breadcrumb"><a href="#/jobs">Jobs</a> <span aria-hidden="true">/</span>
        ${editing ? html`<a href="#/jobs/${encodeURIComponent(editing)}">${editing}</a> <span aria-hidden="true">/</span> ` : ''}<span aria-current="page">${editing ? 'Edit' : 'New job'}</span></nav>
      <div class="head"><h1 tabindex="-1">${title}</h1></div>
      <div id="form-slot"><p class="loading">Loading…</p></div>`);
    if (!can('manage')) {
      setHTML($('#form-slot', main), canWrite()
        ? html`<p class="msg msg-error">Your token may trigger, enable and disable jobs, not ${editing ? 'edit' : 'create'} them: ask for an admin token.</p>`
        : html`<p class="msg msg-error">Your token may only read: ask for an admin token to ${editing ? 'edit' : 'create'} jobs.</p>`);
      return {};
    }
    return {
      live: false,
      async refresh() {
        const loaded = editing ? await loadForEditing($('#form-slot', main), `/api/v1/jobs/${path(editing)}`) : { data: null, etag: null };
        if (loaded) renderForm($('#form-slot', main), loaded.data, loaded.etag);
      },
      fail: (e) => loadError($('#form-slot', main), e),
    };
  }

  function renderForm(slot, job, etag) {
    const j = job || {};
    const w = j.webhook || {};
    const rt = j.retry || {};
    const editing = !!job;
    const lines = (o, sep) => Object.entries(o || {}).map(([k, v]) => `${k}${sep}${v}`).join('\n');
    const def = (val, d) => (val === undefined || val === null ? d : val);
    setHTML(slot, html`
      <form id="job-form" class="job-form" novalidate>
        <p class="hint">Fields follow the REST API (ElasticJob's names); empty numbers take the API's defaults. The API checks everything and
          its messages appear next to the fields.</p>
        <fieldset><legend>Job</legend>
          ${text('f-jobName', 'jobName', 'Name', j.jobName, { hint: '1-128 of A-Z a-z 0-9 _ . -', ...(editing ? { readonly: 'readonly' } : {}) })}
          ${text('f-description', 'description', 'Description', j.description)}
          ${text('f-label', 'label', 'Label', j.label)}
        </fieldset>
        <fieldset><legend>Schedule</legend>
          <div class="field" data-field="cron">
            <label for="f-cron">Cron</label>
            <p class="hint" id="f-cron-hint">Quartz (<code>0/10 * * * * ?</code>), Unix (<code>*/5 * * * *</code>), <code>@every 30s</code>; empty: run by trigger only</p>
            <div class="inline"><input id="f-cron" name="cron" value="${j.cron || ''}" autocomplete="off" spellcheck="false" aria-describedby="f-cron-hint f-cron-error f-cron-preview">
              <button type="button" id="cron-check">Check</button></div>
            <p class="error" id="f-cron-error"></p>
            <output id="f-cron-preview" class="preview" for="f-cron" aria-live="polite"></output>
          </div>
          ${text('f-timeZone', 'timeZone', 'Time zone', j.timeZone || '', { hint: 'IANA name (Asia/Shanghai) or GMT+8; empty: UTC', list: 'zones' })}
          <datalist id="zones">${['UTC', 'Asia/Shanghai', 'Europe/London', 'America/New_York', 'GMT+8'].map((z) => html`<option value="${z}"></option>`)}</datalist>
        </fieldset>
        <fieldset><legend>Sharding</legend>
          ${number('f-shardingTotalCount', 'shardingTotalCount', 'Items (shardingTotalCount)', j.shardingTotalCount ?? 1, '1-10000')}
          ${text('f-shardingItemParameters', 'shardingItemParameters', 'Item parameters', j.shardingItemParameters, { hint: '0=Beijing,1=Shanghai' })}
          ${text('f-jobParameter', 'jobParameter', 'Job parameter', j.jobParameter, { hint: 'passed to every item' })}
          ${select('f-strategy', 'jobShardingStrategyType', 'Sharding strategy', ['AVG_ALLOCATION', 'ODEVITY', 'ROUND_ROBIN'], j.jobShardingStrategyType || 'AVG_ALLOCATION')}
        </fieldset>
        <fieldset><legend>Webhook</legend>
          ${text('f-url', 'webhook.url', 'URL', w.url, { hint: 'http or https', type: 'url' })}
          ${select('f-method', 'webhook.method', 'Method', ['POST', 'PUT', 'PATCH'], w.method || 'POST')}
          ${number('f-timeout', 'webhook.timeoutMs', 'Timeout (ms)', def(w.timeoutMs, ''), 'default 5000')}
          ${number('f-connect', 'webhook.connectTimeoutMs', 'Connect timeout (ms)', def(w.connectTimeoutMs, ''), 'default 3000')}
          ${area('f-headers', 'webhook.headers', 'Headers', lines(w.headers, ': '), 'one "Name: value" a line')}
          <fieldset class="field secret" data-field="webhook.secret">
            <legend>Signing secret ${editing ? html`<span class="muted">(${w.hasSecret ? 'one is set' : 'none set'})</span>` : ''}</legend>
            ${(editing ? [['keep', 'Keep as it is'], ['generate', 'Generate a new one (rotates; shown once)'], ['set', 'Set this secret'], ['remove', 'Remove it']]
              : [['none', 'None'], ['generate', 'Generate one (shown once)'], ['set', 'Use this secret']]).map(([v, l], i) => html`
              <label class="check"><input type="radio" name="secret-mode" value="${v}"${i === 0 ? html` checked` : ''}> ${l}</label>`)}
            <label for="f-secret">Secret</label>
            <input id="f-secret" name="webhook.secret" type="password" autocomplete="new-password" placeholder="whsec_…" aria-describedby="f-secret-error">
            <p class="error" id="f-secret-error"></p>
          </fieldset>
          <div class="field" data-field="webhook.generateSecret"><p class="error" id="f-generate-error"></p></div>
          ${number('f-grace', 'webhook.secretGracePeriodSeconds', 'Secret grace period (s)', def(w.secretGracePeriodSeconds, ''), 'after a rotation the old secret signs too; default 86400')}
        </fieldset>
        <fieldset><legend>Retry</legend>
          ${number('f-attempts', 'retry.maxAttempts', 'Max attempts', def(rt.maxAttempts, ''), 'default 3')}
          ${number('f-initial', 'retry.initialBackoffMs', 'Initial back-off (ms)', def(rt.initialBackoffMs, ''), 'default 1000')}
          ${number('f-maxback', 'retry.maxBackoffMs', 'Max back-off (ms)', def(rt.maxBackoffMs, ''), 'default 30000')}
        </fieldset>
        <fieldset><legend>Behaviour</legend>
          ${select('f-jobType', 'jobType', 'Job type', ['SIMPLE', 'DATAFLOW'], j.jobType || 'SIMPLE')}
          ${check('f-streaming', 'streamingProcess', 'Streaming (DATAFLOW: re-POST while the receiver has more)', j.streamingProcess)}
          ${check('f-monitor', 'monitorExecution', 'Monitor execution (record running items)', def(j.monitorExecution, true))}
          ${check('f-failover', 'failover', 'Failover (re-POST a dead peer\'s running items)', j.failover)}
          ${check('f-disabled', 'disabled', 'Disabled', j.disabled)}
          ${number('f-timediff', 'maxTimeDiffSeconds', 'Max clock difference (s)', def(j.maxTimeDiffSeconds, ''), '-1: not checked (default)')}
          ${number('f-reconcile', 'reconcileIntervalMinutes', 'Reconcile interval (min)', def(j.reconcileIntervalMinutes, ''), 'default 10')}
          ${number('f-maxconc', 'maxConcurrentRequests', 'Max concurrent requests', j.maxConcurrentRequests || '', 'per peer; empty: the peer\'s limit')}
        </fieldset>
        ${scheduleFieldset(j, { select, number, text })}
        ${alertsView().fieldset(j)}
        <fieldset><legend>Properties</legend>
          ${area('f-props', 'props', 'Properties', lines(j.props, '='), 'one key=value a line')}
        </fieldset>
        <div class="field" data-field="body"><p class="error" id="f-body-error"></p></div>
        <div class="buttons">
          <button type="submit" class="primary">${editing ? 'Save changes' : 'Create job'}</button>
          <a class="button" href="${editing ? `#/jobs/${encodeURIComponent(job.jobName)}` : '#/jobs'}">Cancel</a>
        </div>
      </form>`);
    const form = $('#job-form', slot);
    const secretInput = $('#f-secret', form);
    const syncSecret = () => { secretInput.disabled = form.elements.namedItem('secret-mode').value !== 'set'; };
    form.addEventListener('change', (ev) => { if (ev.target.name === 'secret-mode') syncSecret(); });
    syncSecret();

    const preview = async () => {
      const out = $('#f-cron-preview', form);
      const cron = form.elements.namedItem('cron').value.trim();
      if (!cron) {
        out.textContent = 'Never on its own: run by trigger only.';
        return;
      }
      const q = new URLSearchParams({ cron, count: '3' });
      const tz = form.elements.namedItem('timeZone').value.trim();
      if (tz) q.set('timeZone', tz);
      const calendars = previewQuery(form, q);
      const mark = (name, message) => {
        const box = $(`[data-field="${name}"]`, form);
        const input = $('input', box);
        $('.error', box).textContent = message;
        if (input && message) input.setAttribute('aria-invalid', 'true');
        else if (input) input.removeAttribute('aria-invalid');
      };
      try {
        const { data } = await api('GET', `/api/v1/cron/next?${q}`);
        setHTML(out, html`${data.description || cron}. Next${calendars ? ' (calendars applied)' : ''}: ${data.next.length
          ? data.next.map((t, i) => html`${i ? ', ' : ''}<time datetime="${t}">${new Date(t).toLocaleString()}</time>`) : 'never'}`);
        mark('cron', ''); // not the calendars' errors: a submit's may be there (the submit clears them itself)
        mark('timeZone', '');
      } catch (e) {
        if (quiet(e)) return;
        out.textContent = '';
        // the API's message, next to the field it names, as a submit would show it
        const errs = (e.problem && e.problem.errors) || [];
        const fe = errs.find((x) => ['cron', 'timeZone', 'excludeCalendars', 'includeCalendars'].includes(x.field));
        if (fe) mark(fe.field, fe.message);
        else out.textContent = `Not valid: ${e.message}`;
      }
    };
    $('#cron-check', form).addEventListener('click', preview);
    mountCalendars(form, () => { if (form.elements.namedItem('cron').value.trim()) preview(); });
    form.elements.namedItem('cron').addEventListener('change', preview);
    if (job && job.cron) preview();

    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const body = jobBody(form, job);
      submitForm(form, () => (editing
        ? api('PUT', `/api/v1/jobs/${path(job.jobName)}`, { body, headers: etag ? { 'If-Match': etag } : {} })
        : api('POST', '/api/v1/jobs', { body })), {
        message: (res) => `${editing ? 'Saved' : 'Created'} ${res.data.jobName}.`,
        then: ({ data: saved }) => {
          location.hash = `#/jobs/${encodeURIComponent(saved.jobName)}`;
          if (saved.generatedSecret) {
            openDialog(html`<form class="dialog-form" novalidate>
              <h2 id="dialog-title">The webhook secret of ${saved.jobName}</h2>
              <p>Give it to your receiver to verify signatures. It is shown this once: ejserver never shows it again.</p>
              <p><label for="generated-secret">Secret</label><input id="generated-secret" readonly value="${saved.generatedSecret}"></p>
              <div class="buttons"><button type="submit" class="primary">I have kept it</button></div>
            </form>`, { initial: '#generated-secret' });
          }
        },
      });
    });
    const first = $('input:not([readonly])', form);
    if (first && !editing) first.focus();
  }

// alert rules and hooks (alerts.js, a classic script), made when first needed: the job page, the form and the
// #/alerts screen share it
let alertsModule = null;
function alertsView() {
  if (!alertsModule) {
    alertsModule = window.ejserverAlerts({ html, api, setHTML, $, text, number, area, announce, showFieldErrors,
      clearFieldErrors, quiet, canWrite, toNumber, loadError });
  }
  return alertsModule;
}

export { alertsView, formScreen, field, text, select, check, area, showFieldErrors, clearFieldErrors, submitForm, loadForEditing };
