// The console's notification channels page (#/channels): the cluster's channels, a create/edit form per kind
// and a test button that sends a TEST notification and shows how it went, then the recent sends. app.js calls
// ejserverChannels once with its helpers and routes #/channels to the screen it returns. Secrets are
// write-only: the form never shows them; a secret field left empty keeps the stored value.
'use strict';

window.ejserverChannels = (h) => {
  const { html, $, $$, setHTML, patchRows, api, path, canWrite, announce, quiet, confirmAction,
    when, field, text, select, check, area, submitForm } = h;

  const KINDS = ['webhook', 'slack', 'dingtalk', 'wecom', 'pagerduty', 'email'];
  const KIND_LABELS = { webhook: 'Webhook', slack: 'Slack', dingtalk: 'DingTalk', wecom: 'WeCom', pagerduty: 'PagerDuty', email: 'Email' };

  // secret is an input for a write-only value: empty keeps the stored one (unless "remove" is ticked).
  function secret(id, name, label, has, hint) {
    const keep = has ? 'Set: leave empty to keep it.' : 'Not set.';
    return html`${field(id, name, label, html`<input id="${id}" name="${name}" type="password" autocomplete="new-password" spellcheck="false"
        aria-describedby="${id}-hint ${id}-error">`, `${hint ? `${hint} ` : ''}${keep}`)}
      ${has ? check(`${id}-rm`, `${name}.remove`, `Remove the stored ${label.toLowerCase()}`, false) : ''}`;
  }

  const lines = (a) => (a || []).join('\n');
  const list = (s) => s.split(/[\n,]/).map((x) => x.trim()).filter(Boolean);

  // kindFields are the settings inputs of one kind, named by the API's field paths.
  function kindFields(kind, c) {
    const s = (c && c[kind]) || {};
    switch (kind) {
      case 'webhook': return html`
        ${text('c-webhook-url', 'webhook.url', 'URL', s.url, { hint: 'https, or http to a loopback address' })}
        ${secret('c-webhook-secret', 'webhook.secret', 'Signing secret', s.hasSecret, 'whsec_… (Standard Webhooks, as item webhooks).')}`;
      case 'slack': return html`
        ${secret('c-slack-url', 'slack.url', 'Incoming webhook URL', s.hasUrl, 'https://hooks.slack.com/services/… (it holds a token).')}`;
      case 'dingtalk': return html`
        ${secret('c-ding-url', 'dingtalk.url', 'Robot URL', s.hasUrl, 'https://oapi.dingtalk.com/robot/send?access_token=…')}
        ${secret('c-ding-secret', 'dingtalk.secret', 'Signing secret', s.hasSecret, 'SEC… when the robot signs (optional).')}
        ${area('c-ding-mobiles', 'dingtalk.atMobiles', 'Mention (@) phone numbers', lines(s.atMobiles), 'one a line')}
        ${check('c-ding-all', 'dingtalk.atAll', 'Mention everyone (@all)', s.atAll)}`;
      case 'wecom': return html`
        ${secret('c-wecom-url', 'wecom.url', 'Robot URL', s.hasUrl, 'https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=…')}
        ${area('c-wecom-mobiles', 'wecom.mentionedMobiles', 'Mention phone numbers', lines(s.mentionedMobiles), 'one a line (sent as a text message)')}`;
      case 'pagerduty': return html`
        ${secret('c-pd-key', 'pagerduty.routingKey', 'Routing key', s.hasRoutingKey, 'The integration key of an Events API v2 service.')}
        ${text('c-pd-url', 'pagerduty.url', 'Events URL', s.url || '', { hint: 'default https://events.pagerduty.com/v2/enqueue' })}`;
      case 'email': return html`
        ${text('c-mail-host', 'email.host', 'SMTP host', s.host)}
        ${text('c-mail-port', 'email.port', 'Port', s.port || '', { hint: 'default 587 (starttls), 465 (tls)', inputmode: 'numeric' })}
        ${select('c-mail-tls', 'email.tls', 'Security', ['starttls', 'tls', 'none'], s.tls || 'starttls', 'none only to a loopback relay')}
        ${text('c-mail-user', 'email.username', 'Username', s.username || '')}
        ${secret('c-mail-pass', 'email.password', 'Password', s.hasPassword)}
        ${select('c-mail-auth', 'email.auth', 'Auth', ['plain', 'login'], s.auth || 'plain')}
        ${text('c-mail-from', 'email.from', 'From', s.from || '', { hint: 'ejserver <alerts@example.com>' })}
        ${area('c-mail-to', 'email.to', 'To', lines(s.to), 'one address a line')}
        ${text('c-mail-prefix', 'email.subjectPrefix', 'Subject prefix', s.subjectPrefix || '', { hint: 'default [ejserver]' })}`;
    }
    return '';
  }

  // body reads the form into the API's channel JSON; secrets are sent only when typed (or removed).
  function body(form, kind) {
    const v = (n) => { const el = form.elements.namedItem(n); return el ? el.value.trim() : ''; };
    const on = (n) => { const el = form.elements.namedItem(n); return !!(el && el.checked); };
    const sec = (n, obj, key) => {
      if (on(`${n}.remove`)) obj[key] = '';
      else if (v(n)) obj[key] = v(n);
    };
    const c = { name: v('name'), kind, description: v('description') || undefined, default: on('default') || undefined };
    const num = (n) => (v(n) === '' ? undefined : Number(v(n)));
    c.timeoutMs = num('timeoutMs');
    c.maxAttempts = num('maxAttempts');
    const s = {};
    switch (kind) {
      case 'webhook': s.url = v('webhook.url'); sec('webhook.secret', s, 'secret'); break;
      case 'slack': sec('slack.url', s, 'url'); break;
      case 'dingtalk': sec('dingtalk.url', s, 'url'); sec('dingtalk.secret', s, 'secret');
        s.atMobiles = list(v('dingtalk.atMobiles')); s.atAll = on('dingtalk.atAll'); break;
      case 'wecom': sec('wecom.url', s, 'url'); s.mentionedMobiles = list(v('wecom.mentionedMobiles')); break;
      case 'pagerduty': sec('pagerduty.routingKey', s, 'routingKey'); s.url = v('pagerduty.url') || undefined; break;
      case 'email': Object.assign(s, { host: v('email.host'), port: num('email.port'), tls: v('email.tls'),
        username: v('email.username') || undefined, auth: v('email.username') ? v('email.auth') : undefined,
        from: v('email.from'), to: list(v('email.to')), subjectPrefix: v('email.subjectPrefix') || undefined });
        sec('email.password', s, 'password'); break;
    }
    c[kind] = s;
    return c;
  }

  // form shows the create (c null) or edit form in slot.
  function showForm(slot, c, etag, done) {
    const editing = !!c;
    let kind = (c && c.kind) || 'slack';
    const draw = () => {
      setHTML(slot, html`
        <form id="channel-form" class="stack" novalidate aria-labelledby="channel-form-h">
          <h2 id="channel-form-h">${editing ? `Edit channel ${c.name}` : 'New channel'}</h2>
          ${editing ? html`<input type="hidden" name="name" value="${c.name}">` : text('c-name', 'name', 'Name', '', { hint: 'letters, digits, _ . - (rules name it)' })}
          ${select('c-kind', 'kind', 'Kind', KINDS, kind)}
          ${text('c-desc', 'description', 'Description', (c && c.description) || '')}
          ${check('c-default', 'default', 'Default channel of its kind', c && c.default, "ElasticJob's jobErrorHandlerType EMAIL, DINGTALK and WECHAT notify the default email, dingtalk and wecom channel")}
          <fieldset><legend>${KIND_LABELS[kind]} settings</legend>${kindFields(kind, c && c.kind === kind ? c : null)}</fieldset>
          <fieldset><legend>Delivery</legend>
            ${text('c-timeout', 'timeoutMs', 'Timeout per attempt (ms)', (c && c.timeoutMs) || '', { hint: 'default 10000', inputmode: 'numeric' })}
            ${text('c-attempts', 'maxAttempts', 'Attempts', (c && c.maxAttempts) || '', { hint: 'default 5', inputmode: 'numeric' })}
          </fieldset>
          <div class="field" data-field="body"><p class="error" id="c-body-error"></p></div>
          <div class="buttons">
            <button type="submit" class="primary">${editing ? 'Save changes' : 'Create channel'}</button>
            <button type="button" data-channel-cancel>Cancel</button>
          </div>
        </form>`);
      const form = $('#channel-form', slot);
      $('#c-kind', form).addEventListener('change', (ev) => {
        const keep = form.elements.namedItem('name') ? form.elements.namedItem('name').value : '';
        kind = ev.target.value;
        draw();
        if (!editing) $('#c-name', slot).value = keep;
        $('#c-kind', slot).focus();
      });
      $('[data-channel-cancel]', form).addEventListener('click', () => { setHTML(slot, ''); done(false); });
      form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        const b = body(form, kind);
        submitForm(form, () => (editing
          ? api('PUT', `/api/v1/channels/${path(c.name)}`, { body: b, headers: etag ? { 'If-Match': etag } : {} })
          : api('POST', '/api/v1/channels', { body: b })), {
          message: () => `${editing ? 'Saved' : 'Created'} channel ${b.name}.`,
          then: () => { setHTML(slot, ''); done(true); },
        });
      });
      const first = $('input:not([type=hidden]), select', form);
      if (first) first.focus();
    };
    draw();
  }

  function outcomeBadge(o) {
    const cls = { sent: 'OK', failed: 'CRASHED', dropped: 'DISABLED', unknown: 'DISABLED' }[o] || 'DISABLED';
    return html`<span class="badge st-${cls}">${o}</span>`;
  }

  function screen(main) {
    const write = canWrite();
    setHTML(main, html`
      <div class="head"><h1 tabindex="-1">Notification channels</h1>
        ${write ? html`<button type="button" class="primary" data-channel-new>New channel</button>` : ''}</div>
      <p class="hint">Where alerts go: Slack, DingTalk, WeCom, PagerDuty, email or a signed webhook. Secrets are write-only.</p>
      <div id="channel-form-slot"></div>
      <div id="channel-test-result" role="status" aria-live="polite"></div>
      <div class="table-wrap">
        <table class="data" id="channels-table">
          <caption class="sr-only">The cluster's notification channels</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">Kind</th><th scope="col">Default</th><th scope="col">Settings</th>
            <th scope="col" class="opt">Description</th>${write ? html`<th scope="col">Actions</th>` : ''}</tr></thead>
          <tbody></tbody>
        </table>
      </div>
      <section aria-labelledby="sent-h">
        <h2 id="sent-h">Recent notifications</h2>
        <div class="table-wrap">
          <table class="data" id="notifications-table">
            <caption class="sr-only">What was sent where, newest first</caption>
            <thead><tr><th scope="col">Finished</th><th scope="col">Channel</th><th scope="col">Kind</th><th scope="col">Job</th>
              <th scope="col">Outcome</th><th scope="col" class="opt">Attempts</th><th scope="col" class="opt">Error</th></tr></thead>
            <tbody></tbody>
          </table>
        </div>
      </section>`);
    const slot = $('#channel-form-slot', main);
    let channels = [];
    const refresh = async () => {
      const [{ data }, sent] = await Promise.all([
        api('GET', '/api/v1/channels'),
        api('GET', '/api/v1/notifications?limit=20').then((x) => x.data).catch((e) => { if (quiet(e)) throw e; return { items: [] }; }),
      ]);
      channels = data.items;
      patchRows($('#channels-table tbody', main), channels.map((c) => {
        const s = c[c.kind] || {};
        const facts = [];
        if (s.url && typeof s.url === 'string') facts.push(s.url);
        if (s.host) facts.push(`${s.host}:${s.port}`);
        if (s.to) facts.push(`to ${s.to.join(', ')}`);
        Object.keys(s).filter((k) => k.startsWith('has') && s[k]).forEach((k) => facts.push(`${k.slice(3).replace(/^./, (x) => x.toLowerCase())} set`));
        return {
          key: c.name,
          cells: [
            c.name,
            KIND_LABELS[c.kind] || c.kind,
            c.default ? 'yes' : html`<span class="muted">no</span>`,
            html`<small>${facts.join(' · ')}</small>`,
            c.description || '',
            ...(write ? [html`<div class="row-actions">
              <button type="button" class="small" data-channel-test="${c.name}" aria-label="Send a test notification through ${c.name}">Test</button>
              <button type="button" class="small" data-channel-edit="${c.name}" aria-label="Edit channel ${c.name}">Edit</button>
              <button type="button" class="small danger" data-channel-delete="${c.name}" aria-label="Delete channel ${c.name}">Delete</button>
            </div>`] : []),
          ],
        };
      }), ['', '', '', '', 'opt', 'actions']);
      patchRows($('#notifications-table tbody', main), sent.items.map((r) => ({
        key: `${r.notificationId}/${r.channel}`,
        cells: [when(r.finishedAt, { short: true }), r.channel, r.kind, r.job || '', outcomeBadge(r.outcome), String(r.attempts), r.error || ''],
      })), ['', '', '', '', '', 'opt', 'opt']);
    };
    main.addEventListener('click', async (ev) => {
      const b = ev.target.closest('button');
      if (!b) return;
      if (b.hasAttribute('data-channel-new')) showForm(slot, null, '', (ok) => ok && refresh());
      const name = b.dataset.channelEdit || b.dataset.channelTest || b.dataset.channelDelete;
      if (!name) return;
      try {
        if (b.dataset.channelEdit) {
          const res = await api('GET', `/api/v1/channels/${path(name)}`);
          showForm(slot, res.data, res.etag, (ok) => ok && refresh());
        } else if (b.dataset.channelTest) {
          b.disabled = true;
          const out = $('#channel-test-result', main);
          setHTML(out, html`<p class="msg">Sending a test notification through ${name}…</p>`);
          const { data } = await api('POST', `/api/v1/channels/${path(name)}/test`);
          b.disabled = false;
          const how = data.status ? ` (HTTP ${data.status})` : '';
          setHTML(out, data.outcome === 'sent'
            ? html`<p class="msg msg-ok" data-test-outcome="sent">Test notification sent through ${name}${how} in ${data.durationMs} ms.</p>`
            : html`<p class="msg msg-error" data-test-outcome="failed">The test through ${name} failed${how}: ${data.error}</p>`);
          refresh();
        } else if (b.dataset.channelDelete) {
          const ok = await confirmAction({ title: `Delete channel ${name}?`, body: 'Rules that name it notify nobody through it until they are changed.', confirm: 'Delete', danger: true });
          if (!ok) return;
          await api('DELETE', `/api/v1/channels/${path(name)}`);
          announce(`Deleted channel ${name}.`);
          refresh();
        }
      } catch (e) {
        b.disabled = false;
        if (!quiet(e)) announce(e.message, 'error');
      }
    });
    return { live: true, refresh };
  }

  return { screen, KINDS };
};
