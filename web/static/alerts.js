// How the console shows and edits alert rules and once-per-fire hooks (README "Alerts"): a job's rules and
// thresholds and its beforeFire/afterFire hooks on the job page and in its form, and a screen of the
// cluster's default rules (#/alerts). app.js calls ejserverAlerts once with its helpers and uses what it
// returns. A rule is one line: events, "->", channels, and an optional "quiet=SECONDS", e.g.
//   FIRE_FAILED RECOVERED -> oncall-pd quiet=600
// Everything renders through html``, which escapes.
'use strict';

window.ejserverAlerts = ({ html, api, setHTML, $, text, number, area, announce, showFieldErrors, clearFieldErrors, quiet, canWrite, toNumber, loadError }) => {
  const EVENTS = ['ITEM_FAILED', 'FIRE_FAILED', 'FAILED_FIRES_IN_A_ROW', 'MISFIRE', 'FAILOVER', 'LATE', 'FIRE_SKIPPED',
    'LEASE_EXPIRED', 'RUNNING_LONG', 'NO_INSTANCE', 'RECOVERED'];

  // ruleLine writes a rule as one line; parseRules reads the lines back (the API checks the names).
  const ruleLine = (r) => `${(r.on || []).join(' ')} -> ${(r.channels || []).join(' ')}${r.quietPeriodSeconds ? ` quiet=${r.quietPeriodSeconds}` : ''}`;
  function parseRules(textValue) {
    return textValue.split('\n').map((l) => l.trim()).filter(Boolean).map((line) => {
      const [left, right = ''] = line.split('->');
      const rule = { on: left.split(/[\s,]+/).filter(Boolean).map((e) => e.toUpperCase()), channels: [] };
      right.split(/[\s,]+/).filter(Boolean).forEach((tok) => {
        const m = /^quiet=(\d+)$/.exec(tok);
        if (m) rule.quietPeriodSeconds = Number(m[1]);
        else rule.channels.push(tok);
      });
      return rule;
    });
  }

  const RULES_HINT = `One rule a line: events -> channels [quiet=seconds]. Events: ${EVENTS.join(', ')}. The API's rules[n] is line n+1.`;

  // fields are the inputs of a set of rules and thresholds; prefix names them as the API does ("alerts.").
  function fields(a, prefix) {
    const x = a || {};
    return html`
      ${area(`${prefix}rules`, `${prefix}rules`, 'Rules', (x.rules || []).map(ruleLine).join('\n'), RULES_HINT)}
      ${number(`${prefix}late`, `${prefix}lateAfterMs`, 'Late after (ms)', x.lateAfterMs || '', 'LATE: the first item left this long after the scheduled time; empty: never')}
      ${number(`${prefix}long`, `${prefix}runningLongerThanSeconds`, 'Running longer than (s)', x.runningLongerThanSeconds || '', 'RUNNING_LONG, told once; empty: never')}
      ${number(`${prefix}row`, `${prefix}failedFiresInARow`, 'Failed fires in a row', x.failedFiresInARow || '', 'FAILED_FIRES_IN_A_ROW at this count; empty: never')}`;
  }

  function readFields(form, prefix) {
    const v = (n) => form.elements.namedItem(`${prefix}${n}`).value;
    const a = {};
    const rules = parseRules(v('rules'));
    if (rules.length) a.rules = rules;
    for (const k of ['lateAfterMs', 'runningLongerThanSeconds', 'failedFiresInARow']) {
      const n = toNumber(v(k));
      if (n) a[k] = n;
    }
    return a;
  }

  // fieldset is the job form's part: the job's rules, thresholds and hooks. The rules' field errors
  // (alerts.rules[2].on[0]) land on the Rules box, named data-field "alerts".
  function fieldset(job) {
    const j = job || {};
    const h = j.hooks || {};
    return html`
      <fieldset><legend>Alerts</legend>
        <p class="hint">Empty: the cluster's <a href="#/alerts">default rules</a> apply. Channels are named in /api/v1/channels.</p>
        <div data-field="alerts">${fields(j.alerts, 'alerts.')}</div>
      </fieldset>
      <fieldset><legend>Once-per-fire hooks</legend>
        ${text('f-hook-before', 'hooks.beforeFire', 'beforeFire URL', h.beforeFire || '', { hint: 'POSTed once per fire when every item has started', type: 'url' })}
        ${text('f-hook-after', 'hooks.afterFire', 'afterFire URL', h.afterFire || '', { hint: 'POSTed once per fire when every item has ended, with a summary; signed like the webhook', type: 'url' })}
      </fieldset>`;
  }

  // read adds the form's alerts and hooks to a job body.
  function read(form, body) {
    body.alerts = readFields(form, 'alerts.');
    const hooks = {};
    const before = form.elements.namedItem('hooks.beforeFire').value.trim();
    const after = form.elements.namedItem('hooks.afterFire').value.trim();
    if (before) hooks.beforeFire = before;
    if (after) hooks.afterFire = after;
    body.hooks = hooks;
  }

  // view is the job page's rows (inside its <dl>).
  function view(job) {
    const a = job.alerts || {};
    const h = job.hooks || {};
    const rules = a.rules || [];
    const thresholds = [
      a.lateAfterMs ? `late after ${a.lateAfterMs} ms` : '',
      a.runningLongerThanSeconds ? `running longer than ${a.runningLongerThanSeconds} s` : '',
      a.failedFiresInARow ? `${a.failedFiresInARow} failed fires in a row` : '',
    ].filter(Boolean).join(', ');
    return html`
      <div class="wide"><dt>Alert rules</dt><dd>${rules.length
        ? html`<ul class="plain">${rules.map((r) => html`<li><code>${ruleLine(r)}</code></li>`)}</ul>`
        : html`none: the <a href="#/alerts">default rules</a> apply`}</dd></div>
      ${thresholds ? html`<div class="wide"><dt>Alert thresholds</dt><dd>${thresholds}</dd></div>` : ''}
      ${h.beforeFire || h.afterFire ? html`<div class="wide"><dt>Hooks</dt><dd><ul class="plain">
        ${h.beforeFire ? html`<li>beforeFire <code>${h.beforeFire}</code></li>` : ''}
        ${h.afterFire ? html`<li>afterFire <code>${h.afterFire}</code></li>` : ''}</ul></dd></div>` : ''}`;
  }

  // screen is #/alerts: the cluster's default rules, editable by an admin.
  function screen(main) {
    setHTML(main, html`
      <div class="head"><h1 tabindex="-1">Default alert rules</h1></div>
      <p class="hint">They apply to every job without alert rules of its own (a job's thresholds win where set). Every peer
        applies a change within 10 seconds.</p>
      <div id="alerts-slot"><p class="loading">Loading…</p></div>`);
    const slot = $('#alerts-slot', main);
    function render(a) {
      const write = canWrite();
      setHTML(slot, html`
        <form id="alerts-form" class="job-form" novalidate>
          <fieldset${write ? '' : html` disabled`}><legend>Defaults</legend><div data-field="alerts">${fields(a, 'alerts.')}</div></fieldset>
          ${write ? html`<div class="buttons"><button type="submit" class="primary">Save the default rules</button></div>`
            : html`<p class="msg">Your token may only read.</p>`}
        </form>`);
      const form = $('#alerts-form', slot);
      form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        const submit = $('[type=submit]', form);
        submit.disabled = true;
        try {
          const res = await api('PUT', '/api/v1/alerts/defaults', { body: readFields(form, 'alerts.') });
          clearFieldErrors(form);
          announce('Saved the default alert rules.');
          render(res.data);
        } catch (e) {
          if (quiet(e)) return;
          // the defaults' fields are named without the job's "alerts." prefix
          const p = e.problem || {};
          (p.errors || []).forEach((fe) => { fe.field = `alerts.${fe.field}`; });
          if (p.field) p.field = `alerts.${p.field}`;
          if (e.problem) showFieldErrors(form, e, { summary: true });
          else announce(e.message, 'error');
        } finally {
          submit.disabled = false;
        }
      });
    }
    return {
      live: false,
      async refresh() {
        const res = await api('GET', '/api/v1/alerts/defaults');
        render(res.data);
      },
      fail: (e) => loadError(slot, e),
    };
  }

  return { fieldset, read, view, screen, parseRules, ruleLine };
};
