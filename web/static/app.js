// ejserver's web console: a client of the REST API at /api/v1, with no framework and no build step.
// Screens are hash routes (#/jobs, #/jobs/NAME, #/jobs/NAME/edit, #/create, #/executions, #/servers, #/channels). The open
// screen refreshes itself every POLL_MS while the tab is visible; tables are patched row by row and cell by cell,
// so a refresh keeps the keyboard focus where it was.
'use strict';

(() => {
  const TOKEN_KEY = 'ejserver.token';
  const POLL_MS = 2000;
  const STATUSES = ['OK', 'CRASHED', 'DISABLED', 'SHARDING_FLAG'];
  const SOURCES = ['NORMAL_TRIGGER', 'MISFIRE', 'FAILOVER', 'MANUAL'];

  const state = {
    caller: null, // the answer of /api/v1/auth/whoami
    screen: null, // the mounted screen: {refresh(), live, destroy()}
    loop: 0, // the polling loop's id: a newer loop ends the older one
    timer: 0,
  };

  // ---- HTML: every interpolation is escaped unless it is already html``.

  class Raw {
    constructor(s) { this.s = s; }
    toString() { return this.s; }
  }
  const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
  const esc = (v) => String(v).replace(/[&<>"']/g, (c) => ESC[c]);
  const render = (v) => {
    if (v instanceof Raw) return v.s;
    if (Array.isArray(v)) return v.map(render).join('');
    if (v === null || v === undefined || v === false) return '';
    return esc(v);
  };
  const html = (strings, ...vals) => new Raw(strings.reduce((out, s, i) => out + render(vals[i - 1]) + s));
  const $ = (sel, root = document) => root.querySelector(sel);
  const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));

  // setHTML replaces an element's content only when it changed. Disclosures the operator opened stay open.
  function setHTML(el, content) {
    const s = render(content);
    if (el && el.renderedHTML !== s) {
      const open = $$('details', el).map((d) => d.open);
      el.innerHTML = s;
      el.renderedHTML = s;
      if (open.includes(true)) $$('details', el).forEach((d, i) => { if (open[i]) d.open = true; });
    }
  }

  // patchRows makes tbody hold rows ([{key, cls, cells: [html...]}]; the first cell is the row header),
  // reusing the rows and cells that did not change.
  function patchRows(tbody, rows, colClasses = []) {
    const table = tbody.closest('table');
    if (!table.hasAttribute('role')) {
      // explicit roles keep the table a table for screen readers when a phone's stylesheet shows rows as cards
      table.setAttribute('role', 'table');
      $$('thead, tbody', table).forEach((g) => g.setAttribute('role', 'rowgroup'));
      $$('thead tr', table).forEach((tr) => tr.setAttribute('role', 'row'));
      $$('thead th', table).forEach((th) => th.setAttribute('role', 'columnheader'));
    }
    const labels = table.tHead ? Array.from(table.tHead.rows[0].cells).map((th) => th.textContent.trim()) : [];
    const old = new Map(Array.from(tbody.rows).map((tr) => [tr.dataset.key, tr]));
    let prev = null;
    for (const row of rows) {
      let tr = old.get(row.key);
      if (tr) old.delete(row.key);
      else {
        tr = document.createElement('tr');
        tr.setAttribute('role', 'row');
        tr.dataset.key = row.key;
      }
      if (tr.className !== (row.cls || '')) tr.className = row.cls || '';
      while (tr.cells.length > row.cells.length) tr.deleteCell(-1);
      row.cells.forEach((c, i) => {
        let cell = tr.cells[i];
        const tag = i === 0 ? 'TH' : 'TD';
        if (!cell || cell.tagName !== tag) {
          const n = document.createElement(tag);
          if (tag === 'TH') n.scope = 'row';
          n.setAttribute('role', tag === 'TH' ? 'rowheader' : 'cell');
          if (labels[i]) n.dataset.label = labels[i];
          if (cell) cell.replaceWith(n);
          else tr.appendChild(n);
          cell = n;
        }
        setHTML(cell, c);
        const cls = colClasses[i] || '';
        if (cell.className !== cls) cell.className = cls;
      });
      const at = prev ? prev.nextSibling : tbody.firstChild;
      if (at !== tr) tbody.insertBefore(tr, at);
      prev = tr;
    }
    old.forEach((tr) => tr.remove());
  }

  // ---- formatting

  const plural = (n, one, many) => `${n} ${n === 1 ? one : many || one + 's'}`;

  function relative(d) {
    const s = Math.round((d.getTime() - Date.now()) / 1000);
    const a = Math.abs(s);
    if (a < 1) return 'now';
    let t;
    if (a < 60) t = `${a} s`;
    else if (a < 3600) t = `${Math.round(a / 60)} min`;
    else if (a < 86400) t = `${Math.round(a / 3600)} h`;
    else t = `${Math.round(a / 86400)} d`;
    return s > 0 ? `in ${t}` : `${t} ago`;
  }

  function clock(d) {
    const sameDay = d.toDateString() === new Date().toDateString();
    return sameDay ? d.toLocaleTimeString() : d.toLocaleString();
  }

  // when renders a time as "in 8 s" with the local time below it.
  function when(iso, { short } = {}) {
    if (!iso) return html`<span class="muted">—</span>`;
    const d = new Date(iso);
    if (short) return html`<time datetime="${iso}" title="${d.toLocaleString()}">${relative(d)}</time>`;
    return html`<time datetime="${iso}" title="${d.toLocaleString()}">${relative(d)}</time><br><small class="muted">${clock(d)}</small>`;
  }

  const badge = (status) => html`<span class="badge st-${status}">${status.replace('_', ' ')}</span>`;

  // items answered 202 Accepted: their lease, progress and messages (async.js)
  const asyncView = window.ejserverAsync({ html, badge, when });

  function duration(ms) {
    if (ms === undefined || ms === null) return '';
    if (ms < 1000) return `${ms} ms`;
    if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
    return `${Math.round(ms / 60000)} min`;
  }

  function outcome(e) {
    if (e.async && e.state) return badge(e.state); // accepted: the lease's state says more than the 202
    if (!e.completedAt) return html`<span class="badge st-RUNNING">RUNNING</span>`;
    const code = e.statusCode ? ` ${e.statusCode}` : '';
    return e.success
      ? html`<span class="badge st-OK">OK${code}</span>`
      : html`<span class="badge st-CRASHED">FAILED${code}</span>`;
  }

  function options(values, selected, labels = {}) {
    return values.map((v) => html`<option value="${v}"${v === selected ? html` selected` : ''}>${labels[v] || v}</option>`);
  }

  // parseItemParameters reads "0=Beijing,1=Shanghai" for labels (the API validates it for real).
  function parseItemParameters(s) {
    const out = {};
    (s || '').split(',').forEach((pair) => {
      const i = pair.indexOf('=');
      if (i > 0) out[pair.slice(0, i).trim()] = pair.slice(i + 1);
    });
    return out;
  }

  // ---- the API

  class ApiError extends Error {
    constructor(status, problem) {
      super(problem.detail || problem.title || `HTTP ${status}`);
      this.status = status;
      this.problem = problem;
    }
  }
  class SignInNeeded extends Error {}
  class Unreachable extends Error {}

  const token = () => sessionStorage.getItem(TOKEN_KEY) || '';
  // what the caller's token may do (whoami's can): operate (trigger, enable, disable), manage (create, edit,
  // delete), cluster (see servers and instances), administer (change a server for every job)
  const can = (what) => !!(state.caller && state.caller.can && state.caller.can[what]);
  const canWrite = () => can('operate');
  const path = (...parts) => parts.map(encodeURIComponent).join('/');

  async function api(method, url, { body, headers = {}, signIn = true } = {}) {
    const h = { Accept: 'application/json, application/problem+json', ...headers };
    const t = token();
    if (t) h.Authorization = `Bearer ${t}`;
    if (body !== undefined) h['Content-Type'] = 'application/json';
    let resp;
    try {
      resp = await fetch(url, { method, headers: h, cache: 'no-store', body: body === undefined ? undefined : JSON.stringify(body) });
    } catch (e) {
      connection(false);
      throw new Unreachable(`ejserver did not answer (${e.message})`);
    }
    connection(true);
    const text = await resp.text();
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = { detail: text.slice(0, 300) };
      }
    }
    if (resp.status === 401 && signIn) {
      showSignIn(t ? `The token was refused: ${(data && data.detail) || 'unauthorized'}` : '');
      throw new SignInNeeded();
    }
    if (!resp.ok) throw new ApiError(resp.status, data || {});
    return { status: resp.status, data, etag: resp.headers.get('ETag') };
  }

  // quiet reports whether an error is already shown elsewhere (sign-in screen, connection banner).
  const quiet = (e) => e instanceof SignInNeeded || e instanceof Unreachable;

  // ---- chrome: who, live indicator, banner, results

  function connection(ok) {
    const b = $('#banner');
    if (ok) {
      if (!b.hidden) {
        b.hidden = true;
        b.textContent = '';
      }
      return;
    }
    b.textContent = `Can't reach ejserver at ${location.host}: retrying every ${POLL_MS / 1000} s.`;
    b.hidden = false;
    setLive('offline');
  }

  function setLive(what) {
    const el = $('#live');
    const text = {
      ok: `Live · updated ${new Date().toLocaleTimeString()}`,
      paused: 'Paused while this tab is hidden',
      offline: 'Offline: retrying',
      idle: '',
    }[what];
    if (el.textContent !== text) el.textContent = text;
    el.className = `live live-${what}`;
  }

  // announce shows the result of an action (and reads it out).
  function announce(message, kind = 'ok') {
    const el = $('#result');
    setHTML(el, html`<p class="msg msg-${kind}"><span>${kind === 'error' ? 'Failed: ' : ''}${message}</span>
      <button type="button" class="link" data-action="dismiss" aria-label="Dismiss this message">Dismiss</button></p>`);
  }

  function renderWho() {
    const c = state.caller;
    const who = $('#who');
    if (!c) {
      setHTML(who, '');
      return;
    }
    setHTML(who, c.authenticated
      ? html`<span class="role role-${c.role}" title="the token's role">${c.role}</span> <span class="muted">${c.name}</span>${c.scope ? html` <span class="muted scope" title="the jobs this token sees">${c.scope}</span>` : ''}
        <button type="button" class="small" data-action="sign-out">Sign out</button>`
      : html`<span class="role role-open" title="This ejserver runs without API tokens: anyone who reaches it is an admin">open API</span>`);
  }

  // ---- sign-in

  function showSignIn(message) {
    stopPolling();
    state.caller = null;
    state.screen = null;
    sessionStorage.removeItem(TOKEN_KEY);
    renderWho();
    $('#nav').hidden = true;
    setLive('idle');
    const main = $('#main');
    setHTML(main, html`
      <section class="signin" aria-labelledby="signin-title">
        <h1 id="signin-title" tabindex="-1">Sign in</h1>
        <p>This ejserver needs an API token. An admin token may do everything; a viewer token only reads.</p>
        <form id="signin-form" novalidate>
          <div class="field">
            <label for="signin-token">API token</label>
            <input id="signin-token" name="token" type="password" autocomplete="off" spellcheck="false" required aria-describedby="signin-error">
            <p class="error" id="signin-error" role="alert">${message || ''}</p>
          </div>
          <button type="submit" class="primary">Sign in</button>
        </form>
        <p class="hint">The token is kept in this tab's session storage only: closing the tab forgets it.
          An operator makes one with <code>ejserver token new --role viewer --name you</code>.</p>
      </section>`);
    const input = $('#signin-token');
    if (message) input.setAttribute('aria-invalid', 'true');
    input.focus();
  }

  async function signIn(secret) {
    sessionStorage.setItem(TOKEN_KEY, secret);
    try {
      const { data } = await api('GET', '/api/v1/auth/whoami', { signIn: false });
      state.caller = data;
      start();
    } catch (e) {
      sessionStorage.removeItem(TOKEN_KEY);
      const err = $('#signin-error');
      if (err) {
        err.textContent = e instanceof ApiError && e.status === 401 ? `The token was refused: ${e.message}` : e.message;
        const input = $('#signin-token');
        input.setAttribute('aria-invalid', 'true');
        input.value = ''; // a refused token is typed again, not edited
        input.focus();
      }
    }
  }

  // ---- router and polling

  function parseHash() {
    const h = location.hash.startsWith('#/') ? location.hash.slice(1) : '/jobs';
    const [p, q] = h.split('?');
    return { path: p, parts: p.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(q || '') };
  }

  // setQuery records a screen's filters in the address without re-mounting the screen.
  function setQuery(params) {
    const r = parseHash();
    const q = new URLSearchParams();
    Object.entries(params).forEach(([k, v]) => {
      if (v !== '' && v !== undefined && v !== null) q.set(k, v);
    });
    const s = q.toString();
    history.replaceState(null, '', `#${r.path}${s ? `?${s}` : ''}`);
  }

  function screenFor(r) {
    const [a, b, c] = r.parts;
    if (!a || (a === 'jobs' && !b)) return jobsScreen;
    if (a === 'jobs' && b && !c) return jobScreen;
    if (a === 'jobs' && b && c === 'edit') return formScreen;
    if (a === 'create') return formScreen;
    if (a === 'executions') return executionsScreen;
    if (a === 'servers') return serversScreen;
    if (a === 'alerts') return (main) => alertsView().screen(main);
    if (a === 'channels') return (main) => channelsView().screen(main);
    if (a === 'audit') return (main) => auditView().screen(main);
    return notFoundScreen;
  }

  function navigate() {
    if (!state.caller) return;
    if (location.hash && !location.hash.startsWith('#/')) return; // an in-page anchor, not a route
    stopPolling();
    if (state.screen && state.screen.destroy) state.screen.destroy();
    const r = parseHash();
    const main = $('#main');
    main.renderedHTML = undefined;
    main.replaceChildren();
    $$('[data-nav]').forEach((a) => {
      if (a.dataset.nav === (r.parts[0] === 'create' ? 'jobs' : r.parts[0] || 'jobs')) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    });
    const screen = screenFor(r)(main, r);
    state.screen = screen;
    const h1 = $('h1', main);
    if (h1) {
      document.title = `${h1.textContent} · ejserver`;
      if (state.navigated) h1.focus();
    }
    state.navigated = true;
    startPolling();
  }

  function startPolling() {
    clearTimeout(state.timer);
    const id = ++state.loop;
    const screen = state.screen;
    if (!screen || !screen.refresh) {
      setLive('idle');
      return;
    }
    const tick = async () => {
      if (id !== state.loop) return;
      if (document.hidden) {
        setLive('paused');
        return;
      }
      try {
        await screen.refresh();
        if (id === state.loop && screen.live) setLive('ok');
      } catch (e) {
        if (!quiet(e) && id === state.loop && screen.fail) screen.fail(e);
      }
      if (id === state.loop && screen.live) state.timer = setTimeout(tick, POLL_MS);
    };
    if (!screen.live) setLive('idle');
    tick();
  }

  function stopPolling() {
    state.loop++;
    clearTimeout(state.timer);
  }

  const refreshNow = () => startPolling();

  document.addEventListener('visibilitychange', () => {
    if (!state.screen || !state.screen.live) return;
    if (document.hidden) {
      stopPolling();
      setLive('paused');
    } else startPolling();
  });

  // ---- dialogs: native modal <dialog> (the rest of the page is inert; Escape closes it)

  let dialogOpener = null;

  function openDialog(content, { onSubmit, initial } = {}) {
    const dlg = $('#dialog');
    dialogOpener = document.activeElement;
    setHTML(dlg, content);
    dlg.renderedHTML = undefined;
    return new Promise((resolve) => {
      const form = $('form', dlg);
      const done = (value) => {
        dlg.removeEventListener('close', onClose);
        if (dlg.open) dlg.close();
        if (dialogOpener && dialogOpener.isConnected) dialogOpener.focus();
        resolve(value);
      };
      const onClose = () => done(null);
      dlg.addEventListener('close', onClose);
      $$('[data-close]', dlg).forEach((b) => b.addEventListener('click', () => done(null)));
      form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        if (!onSubmit) {
          done(true);
          return;
        }
        const submit = $('[type=submit]', form);
        submit.disabled = true;
        try {
          const v = await onSubmit(form);
          if (v !== undefined) done(v);
        } finally {
          submit.disabled = false;
        }
      });
      dlg.showModal();
      const first = initial ? $(initial, dlg) : null;
      if (first) first.focus();
    });
  }

  function confirmAction({ title, body, confirm, danger }) {
    return openDialog(html`
      <form class="dialog-form" novalidate>
        <h2 id="dialog-title">${title}</h2>
        <p>${body}</p>
        <div class="buttons">
          <button type="submit" class="${danger ? 'danger' : 'primary'}">${confirm}</button>
          <button type="button" data-close>Cancel</button>
        </div>
      </form>`, { initial: '[data-close]' });
  }

  // ---- actions (buttons carry data-action; one listener handles them all)

  async function run(fn, okMessage) {
    try {
      const res = await fn();
      if (okMessage) announce(typeof okMessage === 'function' ? okMessage(res) : okMessage);
      refreshNow();
      return res;
    } catch (e) {
      if (!quiet(e)) announce(e.message, 'error');
      return undefined;
    }
  }

  const actions = {
    'dismiss': () => setHTML($('#result'), ''),
    'sign-out': () => {
      sessionStorage.removeItem(TOKEN_KEY);
      setHTML($('#result'), '');
      showSignIn('');
    },
    'trigger': (d) => triggerDialog(d.job, Number(d.total), d.params || '', d.param || ''),
    'disable-job': async (d) => {
      if (!(await confirmAction({ title: `Disable ${d.job}?`, body: 'It stops firing on every peer until enabled. Items already running finish.', confirm: 'Disable job', danger: true }))) return;
      await run(() => api('POST', `/api/v1/jobs/${path(d.job)}/disable`), `Disabled ${d.job}: it no longer fires.`);
    },
    'enable-job': (d) => run(() => api('POST', `/api/v1/jobs/${path(d.job)}/enable`), `Enabled ${d.job}: it fires again.`),
    'delete-job': async (d) => {
      if (!(await confirmAction({ title: `Delete ${d.job}?`, body: 'Every peer stops firing it at once and its registry subtree is removed. This cannot be undone; its execution history is kept.', confirm: 'Delete job', danger: true }))) return;
      const res = await run(() => api('DELETE', `/api/v1/jobs/${path(d.job)}`), `Deleted ${d.job}.`);
      if (res) location.hash = '#/jobs';
    },
    'disable-item': async (d) => {
      if (!(await confirmAction({ title: `Disable item ${d.item} of ${d.job}?`, body: 'The item is not run until enabled; the other items go on.', confirm: 'Disable item', danger: true }))) return;
      await run(() => api('POST', `/api/v1/jobs/${path(d.job)}/sharding/${d.item}/disable`), `Disabled item ${d.item} of ${d.job}.`);
    },
    'enable-item': (d) => run(() => api('POST', `/api/v1/jobs/${path(d.job)}/sharding/${d.item}/enable`), `Enabled item ${d.item} of ${d.job}.`),
    'disable-server': async (d) => {
      const scope = d.job ? `for ${d.job}` : 'for every job';
      if (!(await confirmAction({ title: `Disable server ${d.ip} ${scope}?`, body: 'Its instances stop running the job; their items move to the other servers at the next resharding.', confirm: 'Disable server', danger: true }))) return;
      const url = d.job ? `/api/v1/jobs/${path(d.job)}/servers/${path(d.ip)}/disable` : `/api/v1/servers/${path(d.ip)}/disable`;
      await run(() => api('POST', url), (res) => `Disabled server ${d.ip} ${scope}${res && res.data ? ` (${plural(res.data.jobs, 'job')})` : ''}.`);
    },
    'enable-server': (d) => {
      const scope = d.job ? `for ${d.job}` : 'for every job';
      const url = d.job ? `/api/v1/jobs/${path(d.job)}/servers/${path(d.ip)}/enable` : `/api/v1/servers/${path(d.ip)}/enable`;
      return run(() => api('POST', url), (res) => `Enabled server ${d.ip} ${scope}${res && res.data ? ` (${plural(res.data.jobs, 'job')})` : ''}.`);
    },
    'toggle-headers': (d, btn) => {
      const on = btn.getAttribute('aria-pressed') !== 'true';
      btn.setAttribute('aria-pressed', String(on));
      btn.textContent = on ? 'Hide header values' : 'Show header values';
      $$('[data-secret]').forEach((el) => { el.textContent = on ? el.dataset.secret : '••••••'; });
    },
    'focus': (d) => {
      const el = document.getElementById(d.target);
      if (el) el.focus();
    },
    'page': (d) => state.screen && state.screen.page && state.screen.page(d.cursor),
  };

  // typing a parameter in the trigger dialog means overriding the job's
  document.addEventListener('input', (ev) => {
    if (ev.target.id === 'trigger-param') $('#trigger-override').checked = true;
  });

  document.addEventListener('click', (ev) => {
    const skip = ev.target.closest('[data-skip]');
    if (skip) {
      ev.preventDefault();
      $('#main').focus();
      return;
    }
    const btn = ev.target.closest('[data-action]');
    if (!btn || !actions[btn.dataset.action]) return;
    ev.preventDefault();
    Promise.resolve(actions[btn.dataset.action](btn.dataset, btn)).catch((e) => {
      if (!quiet(e)) announce(e.message, 'error');
    });
  });

  function triggerDialog(job, total, itemParams, jobParameter) {
    const params = parseItemParameters(itemParams);
    const items = total <= 64
      ? html`<fieldset class="items">
          <legend>Items <span class="muted">(none checked: every item)</span></legend>
          ${Array.from({ length: total }, (_, i) => html`<label class="check"><input type="checkbox" name="item" value="${i}"> ${i}${params[i] ? html` <span class="muted">${params[i]}</span>` : ''}</label>`)}
        </fieldset>`
      : html`<div class="field"><label for="trigger-items">Items <span class="muted">(comma-separated; empty: every item)</span></label>
          <input id="trigger-items" name="items" inputmode="numeric" autocomplete="off"></div>`;
    return openDialog(html`
      <form class="dialog-form" novalidate>
        <h2 id="dialog-title">Trigger ${job} now</h2>
        <p>Every online instance runs its items once, with source MANUAL.</p>
        <div class="field check-field">
          <input type="checkbox" id="trigger-override" name="override">
          <label for="trigger-override">Override the job parameter for this run</label>
        </div>
        <div class="field">
          <label for="trigger-param">Job parameter</label>
          <input id="trigger-param" name="jobParameter" value="${jobParameter}" autocomplete="off" aria-describedby="trigger-param-error">
          <p class="error" id="trigger-param-error"></p>
        </div>
        ${items}
        <p class="error" id="trigger-error" role="alert"></p>
        <div class="buttons">
          <button type="submit" class="primary">Trigger</button>
          <button type="button" data-close>Cancel</button>
        </div>
      </form>`, {
      initial: '#trigger-override',
      onSubmit: async (form) => {
        const body = {};
        const param = $('#trigger-param', form);
        if ($('#trigger-override', form).checked) body.jobParameter = param.value;
        let picked = $$('input[name=item]:checked', form).map((el) => Number(el.value));
        const typed = $('#trigger-items', form);
        if (typed && typed.value.trim()) picked = typed.value.split(',').map((s) => (/^\s*\d+\s*$/.test(s) ? Number(s) : s.trim()));
        if (picked.length) body.items = picked;
        try {
          const { data } = await api('POST', `/api/v1/jobs/${path(job)}/trigger`, { body });
          const reached = (data.instances || []).map((i) => `${i.instanceId}: items ${i.items.join(', ') || 'none'}`).join('; ');
          announce(`Triggered ${job}: ${data.message}${reached ? ` (${reached})` : ''}`);
          refreshNow();
          return true;
        } catch (e) {
          if (quiet(e)) return null;
          $('#trigger-error', form).textContent = e.message;
          return undefined; // keep the dialog open to correct it
        }
      },
    });
  }

  // ---- screens. Each returns {refresh, live, fail, destroy}.

  function loadError(el, e) {
    setHTML(el, html`<p class="msg msg-error">${e.status === 404 ? e.message : `Could not load: ${e.message}`}</p>`);
  }

  function jobsScreen(main, r) {
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

  function executionRows(items, { showJob = true } = {}) {
    return items.map((e) => ({
      key: e.id,
      cls: e.completedAt && !e.success && e.state !== 'CANCELLED' ? 'row-failed' : '',
      cells: [
        when(e.startedAt),
        ...(showJob ? [html`<a href="#/jobs/${encodeURIComponent(e.jobName)}">${e.jobName}</a>`] : []),
        String(e.shardingItem),
        html`<span class="source">${e.source}</span>`,
        html`<span class="mono">${e.instanceId}</span>`,
        e.async ? asyncView.result(e) : outcome(e),
        String(e.attempts),
        e.async && asyncView.live(e) ? asyncView.runningFor(e) : duration(e.durationMs),
        executionDetails(e),
      ],
    }));
  }

  function executionDetails(e) {
    let summary = 'Response';
    if (e.failureCause) summary = e.state === 'CANCELLED' ? 'Cause' : 'Failure cause';
    else if (e.output) summary = 'Output';
    else if (e.async) summary = 'Details';
    const more = e.async ? asyncView.details(e, { summary }) : '';
    const trace = e.traceId ? html`<p class="trace">Trace <code data-trace-id>${e.traceId}</code></p>` : '';
    if (!e.failureCause && !e.responseExcerpt && !more) return trace || html`<span class="muted">—</span>`;
    return html`${trace}<details><summary>${summary}</summary>
      ${e.failureCause ? html`<p class="cause">${e.failureCause}</p>` : ''}
      ${more}
      ${e.responseExcerpt ? html`<pre class="excerpt">${e.responseExcerpt}</pre>` : ''}</details>`;
  }

  const executionHead = (showJob = true) => html`<thead><tr>
    <th scope="col">Started</th>${showJob ? html`<th scope="col">Job</th>` : ''}<th scope="col">Item</th><th scope="col">Source</th>
    <th scope="col" class="opt">Instance</th><th scope="col">Result</th><th scope="col" class="opt">Attempts</th>
    <th scope="col" class="opt">Duration</th><th scope="col">Details</th></tr></thead>`;
  const executionCols = (showJob = true) => (showJob ? ['', '', '', '', 'opt', '', 'opt', 'opt', 'details'] : ['', '', '', 'opt', '', 'opt', 'opt', 'details']);

  function jobScreen(main, r) {
    const name = r.parts[1];
    const write = canWrite();
    setHTML(main, html`
      <nav class="crumbs" aria-label="Breadcrumb"><a href="#/jobs">Jobs</a> <span aria-hidden="true">/</span> <span aria-current="page">${name}</span></nav>
      <div class="head">
        <h1 tabindex="-1">${name}</h1>
        <span id="job-status"></span>
        <div class="actions" id="job-actions"></div>
      </div>
      <div id="job-error"></div>
      <p id="job-description" class="muted"></p>
      <section aria-labelledby="summary-title">
        <h2 id="summary-title">Summary</h2>
        <dl class="kv" id="job-summary"></dl>
      </section>
      <section aria-labelledby="sharding-title">
        <h2 id="sharding-title">Sharding</h2>
        <div class="table-wrap">
          <table class="data" id="items-table">
            <caption class="sr-only">Items of ${name}: owner, status, failover and misfire</caption>
            <thead><tr><th scope="col">Item</th><th scope="col">Parameter</th><th scope="col">Owner</th><th scope="col" class="opt">Server</th>
              <th scope="col">Status</th><th scope="col" class="opt">Failover</th><th scope="col" class="opt">Misfire</th><th scope="col" class="opt">Last outcome</th>
              ${write ? html`<th scope="col">Actions</th>` : ''}</tr></thead>
            <tbody></tbody>
          </table>
        </div>
      </section>
      <section aria-labelledby="servers-title">
        <h2 id="servers-title">Servers</h2>
        <div class="table-wrap">
          <table class="data" id="job-servers-table">
            <caption class="sr-only">Servers of ${name}</caption>
            <thead><tr><th scope="col">Server IP</th><th scope="col">Online</th><th scope="col">For this job</th>${write ? html`<th scope="col">Actions</th>` : ''}</tr></thead>
            <tbody></tbody>
          </table>
        </div>
      </section>
      <section aria-labelledby="recent-title">
        <h2 id="recent-title">Recent executions</h2>
        <p><a href="#/executions?job=${encodeURIComponent(name)}">All executions of ${name}, with filters</a></p>
        <div class="table-wrap">
          <table class="data" id="recent-table">
            <caption class="sr-only">The latest executions of ${name}</caption>
            ${executionHead(false)}
            <tbody></tbody>
          </table>
        </div>
        <p class="empty" id="recent-empty" hidden></p>
      </section>
      <section aria-labelledby="config-title">
        <div class="head"><h2 id="config-title">Configuration</h2>
          <button type="button" class="small" data-action="toggle-headers" aria-pressed="false">Show header values</button></div>
        <dl class="kv" id="job-config"></dl>
      </section>`);
    const jobURL = `/api/v1/jobs/${path(name)}`;
    return {
      live: true,
      async refresh() {
        let job;
        try {
          job = (await api('GET', jobURL)).data;
        } catch (e) {
          if (e instanceof ApiError && e.status === 404) {
            loadError($('#job-error', main), e);
            $$('section', main).forEach((s) => { s.hidden = true; });
            setHTML($('#job-actions', main), '');
            setHTML($('#job-status', main), '');
            return;
          }
          throw e;
        }
        setHTML($('#job-error', main), '');
        const [sharding, servers, recent] = await Promise.all([
          api('GET', `${jobURL}/sharding`).then((x) => x.data),
          // a token limited to some jobs doesn't see the cluster's servers: the job's item owners stand in
          can('cluster')
            ? api('GET', '/api/v1/servers?limit=1000').then((x) => x.data).catch((e) => { if (quiet(e)) throw e; return { items: [] }; })
            : Promise.resolve(null),
          api('GET', `${jobURL}/executions?limit=10`).then((x) => x.data).catch((e) => { if (quiet(e)) throw e; return { error: e.message }; }),
        ]);
        setHTML($('#job-status', main), badge(job.status));
        $('#job-description', main).textContent = job.description || '';
        if (write) {
          setHTML($('#job-actions', main), html`
            <button type="button" data-action="trigger" data-job="${job.jobName}" data-total="${job.shardingTotalCount}" data-params="${job.shardingItemParameters || ''}" data-param="${job.jobParameter || ''}">Trigger…</button>
            ${job.disabled
              ? html`<button type="button" data-action="enable-job" data-job="${job.jobName}">Enable</button>`
              : html`<button type="button" data-action="disable-job" data-job="${job.jobName}">Disable</button>`}
            ${can('manage') ? html`<a class="button" href="#/jobs/${encodeURIComponent(job.jobName)}/edit">Edit</a>
            <button type="button" class="danger" data-action="delete-job" data-job="${job.jobName}">Delete…</button>` : ''}`);
        }
        const st = job.stats;
        setHTML($('#job-summary', main), html`
          <div><dt>Schedule</dt><dd>${job.cron ? html`<code>${job.cron}</code> · ` : ''}${job.cronDescription || ''}${job.timeZone ? ` (${job.timeZone})` : ''}</dd></div>
          <div><dt>Next fire</dt><dd>${when(job.nextFireTime)}</dd></div>
          <div><dt>Last fire on this peer</dt><dd>${when(job.lastFireTime)}</dd></div>
          <div><dt>Last result</dt><dd>${job.lastResult ? html`${outcome(job.lastResult)} item ${job.lastResult.shardingItem}, ${when(job.lastResult.completedAt || job.lastResult.startedAt, { short: true })}${job.lastResult.failureCause ? html`<br><small>${job.lastResult.failureCause}</small>` : ''}` : html`<span class="muted">none yet</span>`}</dd></div>
          <div><dt>Last hour</dt><dd>${st ? `${st.lastHourSuccess} ok / ${st.lastHourFailure} failed` : '—'}</dd></div>
          <div><dt>Last day</dt><dd>${st ? `${st.lastDaySuccess} ok / ${st.lastDayFailure} failed` : '—'}</dd></div>
          <div><dt>Instances</dt><dd>${job.instanceCount}</dd></div>
          <div><dt>Leader</dt><dd class="mono">${job.leader || '—'}</dd></div>
          ${job.problems && job.problems.length ? html`<div class="wide"><dt>Problems</dt><dd class="warn">${job.problems.join('; ')}</dd></div>` : ''}`);

        patchRows($('#items-table tbody', main), sharding.items.map((it) => ({
          key: String(it.item),
          cls: it.disabled ? 'row-DISABLED' : '',
          cells: [
            String(it.item),
            it.parameter ? it.parameter : html`<span class="muted">—</span>`,
            it.instance ? html`<span class="mono">${it.instance}</span>${it.ownerOnline ? '' : html` <small class="warn">offline</small>`}` : html`<span class="muted">unassigned</span>`,
            it.serverIp || '—',
            it.running && it.running.async
              ? html`${it.status !== 'RUNNING' ? badge(it.status) : ''}${asyncView.runningStatus(it.running)}`
              : html`${badge(it.status)}${it.running ? html`<br><small class="muted">${it.running.source} since ${when(it.running.scheduledAt, { short: true })}</small>` : ''}`,
            it.failover ? html`<span class="mono">${it.failover}</span>` : 'no',
            it.misfire ? html`<span class="warn">yes</span>` : 'no',
            it.lastOutcome ? html`${outcome({ completedAt: it.lastOutcome.finishedAt, success: it.lastOutcome.success, statusCode: it.lastOutcome.statusCode, async: !!it.lastOutcome.state, state: it.lastOutcome.state })} <small class="muted">${it.lastOutcome.source}, ${when(it.lastOutcome.finishedAt, { short: true })}</small>` : html`<span class="muted">—</span>`,
            ...(write ? [it.disabled
              ? html`<button type="button" class="small" data-action="enable-item" data-job="${name}" data-item="${it.item}" aria-label="Enable item ${it.item}">Enable</button>`
              : html`<button type="button" class="small" data-action="disable-item" data-job="${name}" data-item="${it.item}" aria-label="Disable item ${it.item}">Disable</button>`] : []),
          ],
        })), ['', '', '', 'opt', '', 'opt', 'opt', 'opt', 'actions']);

        // the servers of this job: those owning an item, and those that disabled it
        const owners = new Set(sharding.items.map((it) => it.serverIp).filter(Boolean));
        const serverList = servers || { items: [...owners].sort().map((ip) => ({ ip, online: true, disabledJobs: [], jobCount: 1 })) };
        const jobServers = serverList.items.filter((s) => owners.has(s.ip) || s.disabledJobs.includes(name) || (s.online && s.jobCount > 0));
        patchRows($('#job-servers-table tbody', main), jobServers.map((s) => {
          const off = s.disabledJobs.includes(name);
          return {
            key: s.ip,
            cls: off ? 'row-DISABLED' : '',
            cells: [
              s.ip,
              s.online ? 'yes' : html`<span class="warn">no</span>`,
              off ? badge('DISABLED') : badge('ENABLED'),
              ...(write ? [off
                ? html`<button type="button" class="small" data-action="enable-server" data-job="${name}" data-ip="${s.ip}" aria-label="Enable server ${s.ip} for ${name}">Enable</button>`
                : html`<button type="button" class="small" data-action="disable-server" data-job="${name}" data-ip="${s.ip}" aria-label="Disable server ${s.ip} for ${name}">Disable</button>`] : []),
            ],
          };
        }), ['', '', '', 'actions']);

        const recentEmpty = $('#recent-empty', main);
        if (recent.error) {
          recentEmpty.hidden = false;
          recentEmpty.textContent = `No history: ${recent.error}`;
          patchRows($('#recent-table tbody', main), []);
        } else {
          patchRows($('#recent-table tbody', main), executionRows(recent.items, { showJob: false }), executionCols(false));
          recentEmpty.hidden = recent.items.length > 0;
          recentEmpty.textContent = 'No executions yet.';
        }
        renderConfig($('#job-config', main), job);
      },
      fail: (e) => loadError($('#job-error', main), e),
    };
  }

  function renderConfig(dl, job) {
    const w = job.webhook || {};
    const r = job.retry || {};
    const shown = $('[data-action=toggle-headers]') && $('[data-action=toggle-headers]').getAttribute('aria-pressed') === 'true';
    const headers = Object.entries(w.headers || {});
    const props = Object.entries(job.props || {});
    const yes = (b) => (b ? 'yes' : 'no');
    setHTML(dl, html`
      <div><dt>Job type</dt><dd>${job.jobType}${job.streamingProcess ? ' (streaming)' : ''}</dd></div>
      <div><dt>Items</dt><dd>${job.shardingTotalCount}</dd></div>
      <div class="wide"><dt>Item parameters</dt><dd><code>${job.shardingItemParameters || '—'}</code></dd></div>
      <div class="wide"><dt>Job parameter</dt><dd><code>${job.jobParameter || '—'}</code></dd></div>
      <div class="wide"><dt>Webhook</dt><dd><code>${w.method || 'POST'} ${w.url}</code></dd></div>
      <div><dt>Timeouts</dt><dd>${w.timeoutMs} ms (connect ${w.connectTimeoutMs} ms)</dd></div>
      <div><dt>Signing secret</dt><dd>${w.hasSecret ? html`<span class="masked">•••••• set (never shown)</span>${w.secretRotating ? ', rotating' : ''}` : 'none'}</dd></div>
      <div class="wide"><dt>Headers</dt><dd>${headers.length ? html`<ul class="plain">${headers.map(([k, v]) => html`<li><code>${k}: <span data-secret="${v}">${shown ? v : '••••••'}</span></code></li>`)}</ul>` : 'none'}</dd></div>
      <div><dt>Retry</dt><dd>${r.maxAttempts} attempts, back-off ${r.initialBackoffMs}–${r.maxBackoffMs} ms</dd></div>
      <div><dt>Sharding strategy</dt><dd>${job.jobShardingStrategyType}</dd></div>
      <div><dt>Failover</dt><dd>${yes(job.failover)}</dd></div>
      <div><dt>Misfire</dt><dd>${yes(job.misfire)}</dd></div>
      <div><dt>Monitor execution</dt><dd>${yes(job.monitorExecution)}</dd></div>
      <div><dt>Max clock difference</dt><dd>${job.maxTimeDiffSeconds < 0 ? 'not checked' : `${job.maxTimeDiffSeconds} s`}</dd></div>
      <div><dt>Reconcile every</dt><dd>${job.reconcileIntervalMinutes} min</dd></div>
      <div><dt>Max concurrent requests</dt><dd>${job.maxConcurrentRequests || 'peer limit'}</dd></div>
      <div><dt>Replay missed fires</dt><dd>${yes(job.replayMissedFires)}</dd></div>
      <div><dt>Disabled</dt><dd>${yes(job.disabled)}</dd></div>
      ${job.label ? html`<div><dt>Label</dt><dd>${job.label}</dd></div>` : ''}
      ${alertsView().view(job)}
      ${props.length ? html`<div class="wide"><dt>Properties</dt><dd><ul class="plain">${props.map(([k, v]) => html`<li><code>${k}=${v}</code></li>`)}</ul></dd></div>` : ''}
      <div><dt>Version (ETag)</dt><dd>${job.version}</dd></div>`);
  }

  function executionsScreen(main, r) {
    const q = r.query;
    let cursors = []; // the cursors of the pages before this one
    let cursor = '';
    const limit = q.get('limit') || '50'; // the page size (the API bounds it)
    setHTML(main, html`
      <div class="head"><h1 tabindex="-1">Executions</h1></div>
      <form class="filters" id="exec-filters" role="search" novalidate>
        <div class="field" data-field="job"><label for="exec-job">Job</label>
          <input id="exec-job" name="job" value="${q.get('job') || ''}" list="exec-jobs" autocomplete="off" aria-describedby="exec-job-error">
          <datalist id="exec-jobs"></datalist><p class="error" id="exec-job-error"></p></div>
        <div class="field narrow" data-field="item"><label for="exec-item">Item</label>
          <input id="exec-item" name="item" value="${q.get('item') || ''}" inputmode="numeric" autocomplete="off" aria-describedby="exec-item-error">
          <p class="error" id="exec-item-error"></p></div>
        <div class="field" data-field="success"><label for="exec-success">Result</label>
          <select id="exec-success" name="success">${options(['', 'true', 'false'], q.get('success') || '', { '': 'Any result', true: 'Succeeded', false: 'Failed' })}</select>
          <p class="error" id="exec-success-error"></p></div>
        <div class="field" data-field="source"><label for="exec-source">Source</label>
          <select id="exec-source" name="source">${options(['', ...SOURCES], q.get('source') || '', { '': 'Any source' })}</select>
          <p class="error" id="exec-source-error"></p></div>
        <div class="field" data-field="from"><label for="exec-from">Started from</label>
          <input id="exec-from" name="from" type="datetime-local" step="1" value="${q.get('from') || ''}" aria-describedby="exec-from-error">
          <p class="error" id="exec-from-error"></p></div>
        <div class="field" data-field="to"><label for="exec-to">Started before</label>
          <input id="exec-to" name="to" type="datetime-local" step="1" value="${q.get('to') || ''}" aria-describedby="exec-to-error">
          <p class="error" id="exec-to-error"></p></div>
        <div class="field buttons-field"><button type="reset">Clear filters</button></div>
      </form>
      <div id="exec-error"></div>
      <div class="table-wrap">
        <table class="data" id="exec-table">
          <caption class="sr-only">Executions, newest first</caption>
          ${executionHead(true)}
          <tbody></tbody>
        </table>
      </div>
      <p class="empty" id="exec-empty" hidden>No execution matches these filters.</p>
      <div class="pager" id="exec-pager"></div>`);
    const form = $('#exec-filters', main);
    const values = () => Object.fromEntries(['job', 'item', 'success', 'source', 'from', 'to'].map((k) => [k, form.elements.namedItem(k).value.trim()]));
    let debounce = 0;
    const changed = () => {
      clearTimeout(debounce);
      debounce = setTimeout(() => {
        cursors = [];
        cursor = '';
        setQuery({ ...values(), limit: limit === '50' ? '' : limit });
        refreshNow();
      }, 300);
    };
    form.addEventListener('input', changed);
    form.addEventListener('change', changed);
    form.addEventListener('reset', () => setTimeout(changed));
    form.addEventListener('submit', (ev) => ev.preventDefault());
    api('GET', '/api/v1/jobs?limit=1000').then(({ data }) => {
      setHTML($('#exec-jobs', main), data.items.map((j) => html`<option value="${j.jobName}"></option>`));
    }).catch(() => {});
    return {
      live: true,
      page(c) {
        if (c === 'newer') cursor = cursors.pop() || '';
        else {
          cursors.push(cursor);
          cursor = c;
        }
        refreshNow();
      },
      async refresh() {
        const v = values();
        const p = new URLSearchParams({ limit });
        ['item', 'success', 'source'].forEach((k) => { if (v[k]) p.set(k, v[k]); });
        ['from', 'to'].forEach((k) => {
          if (!v[k]) return;
          const d = new Date(v[k]);
          p.set(k, Number.isNaN(d.getTime()) ? v[k] : d.toISOString());
        });
        if (cursor) p.set('cursor', cursor);
        const url = v.job ? `/api/v1/jobs/${path(v.job)}/executions?${p}` : `/api/v1/executions?${p}`;
        let data;
        try {
          data = (await api('GET', url)).data;
        } catch (e) {
          if (e instanceof ApiError) {
            const fields = showFieldErrors(form, e);
            if (!fields) loadError($('#exec-error', main), e);
            patchRows($('#exec-table tbody', main), []);
            $('#exec-empty', main).hidden = true;
            return;
          }
          throw e;
        }
        clearFieldErrors(form);
        setHTML($('#exec-error', main), '');
        patchRows($('#exec-table tbody', main), executionRows(data.items), executionCols(true));
        $('#exec-empty', main).hidden = data.items.length > 0;
        setHTML($('#exec-pager', main), html`
          ${cursor ? html`<button type="button" data-action="page" data-cursor="newer">Newer</button>` : ''}
          ${data.nextCursor ? html`<button type="button" data-action="page" data-cursor="${data.nextCursor}">Older</button>` : ''}`);
      },
      fail: (e) => loadError($('#exec-error', main), e),
    };
  }

  function serversScreen(main) {
    if (!can('cluster')) {
      setHTML(main, html`<div class="head"><h1 tabindex="-1">Servers and instances</h1></div>
        <p class="msg">Servers and instances are the whole cluster's: your token sees only the jobs of its scope (${state.caller.scope}).</p>`);
      return {};
    }
    const write = can('administer');
    let known = null; // instance id -> instance, from the previous refresh
    const gone = new Map(); // instance id -> {instance, at}
    setHTML(main, html`
      <div class="head"><h1 tabindex="-1">Servers and instances</h1></div>
      <div id="cluster-error"></div>
      <div class="changes" id="cluster-changes" role="status" aria-live="polite"></div>
      <section aria-labelledby="servers-h">
        <h2 id="servers-h">Servers</h2>
        <div class="table-wrap">
          <table class="data" id="servers-table">
            <caption class="sr-only">Server IPs, their instances and disabled jobs</caption>
            <thead><tr><th scope="col">Server IP</th><th scope="col">Online</th><th scope="col">Instances</th><th scope="col">Jobs</th>
              <th scope="col">Disabled for</th>${write ? html`<th scope="col">Actions</th>` : ''}</tr></thead>
            <tbody></tbody>
          </table>
        </div>
      </section>
      <section aria-labelledby="instances-h">
        <h2 id="instances-h">Instances</h2>
        <div class="table-wrap">
          <table class="data" id="instances-table">
            <caption class="sr-only">ejserver peers online, and those that left in the last minute</caption>
            <thead><tr><th scope="col">Instance</th><th scope="col">State</th><th scope="col">Server IP</th><th scope="col" class="opt">Host</th>
              <th scope="col" class="opt">API</th><th scope="col" class="opt">Version</th><th scope="col" class="opt">Started</th>
              <th scope="col">Jobs</th><th scope="col">Leader of</th></tr></thead>
            <tbody></tbody>
          </table>
        </div>
      </section>`);
    return {
      live: true,
      async refresh() {
        const [servers, instances] = await Promise.all([
          api('GET', '/api/v1/servers?limit=1000').then((x) => x.data),
          api('GET', '/api/v1/instances?limit=1000').then((x) => x.data),
        ]);
        setHTML($('#cluster-error', main), '');
        patchRows($('#servers-table tbody', main), servers.items.map((s) => {
          const allOff = s.jobCount > 0 && s.disabledJobs.length === s.jobCount;
          return {
            key: s.ip,
            cls: s.online ? (allOff ? 'row-DISABLED' : '') : 'row-gone',
            cells: [
              s.ip,
              s.online ? 'yes' : html`<span class="warn">no</span>`,
              s.instances.length ? html`<ul class="plain">${s.instances.map((i) => html`<li class="mono">${i}</li>`)}</ul>` : html`<span class="muted">none</span>`,
              String(s.jobCount),
              s.disabledJobs.length ? (allOff ? 'every job' : s.disabledJobs.join(', ')) : html`<span class="muted">none</span>`,
              ...(write ? [html`<div class="row-actions">
                ${allOff ? '' : html`<button type="button" class="small" data-action="disable-server" data-ip="${s.ip}" aria-label="Disable server ${s.ip}">Disable</button>`}
                ${s.disabledJobs.length ? html`<button type="button" class="small" data-action="enable-server" data-ip="${s.ip}" aria-label="Enable server ${s.ip}">Enable</button>` : ''}
              </div>`] : []),
            ],
          };
        }), ['', '', '', '', '', 'actions']);

        const now = new Map(instances.items.map((i) => [i.instanceId, i]));
        const news = [];
        if (known) {
          known.forEach((inst, id) => {
            if (!now.has(id) && !gone.has(id)) {
              gone.set(id, { inst, at: new Date() });
              news.push(`Instance ${id} left the cluster.`);
            }
          });
          now.forEach((inst, id) => {
            if (!known.has(id)) {
              gone.delete(id);
              news.push(`Instance ${id} joined the cluster.`);
            }
          });
        }
        known = now;
        gone.forEach((g, id) => { if (Date.now() - g.at.getTime() > 60000) gone.delete(id); });
        if (news.length) setHTML($('#cluster-changes', main), html`<p class="msg msg-warn">${news.join(' ')}</p>`);
        const row = (i, left) => ({
          key: i.instanceId,
          cls: left ? 'row-gone' : '',
          cells: [
            html`<span class="mono">${i.instanceId}</span>${i.self ? html` <small class="muted">(this peer)</small>` : ''}`,
            left ? html`<span class="badge st-CRASHED">GONE</span> <small>${when(left.toISOString(), { short: true })}</small>` : badge('ONLINE'),
            i.serverIp,
            i.hostname || '—',
            i.apiAddress || '—',
            i.version || '—',
            when(i.startedAt, { short: true }),
            left ? '—' : String(i.jobCount),
            left ? '—' : String(i.leaderOf),
          ],
        });
        patchRows($('#instances-table tbody', main), [
          ...instances.items.map((i) => row(i, null)),
          ...Array.from(gone.values()).map((g) => row(g.inst, g.at)),
        ], ['', '', '', 'opt', 'opt', 'opt', 'opt', '', '']);
      },
      fail: (e) => loadError($('#cluster-error', main), e),
    };
  }

  function notFoundScreen(main) {
    setHTML(main, html`<h1 tabindex="-1">Not found</h1><p>No such screen. <a href="#/jobs">Go to the jobs</a>.</p>`);
    return {};
  }

  // ---- the create/edit form: the body sent is the API's job JSON, and the API's field errors are shown
  // next to the fields they name.

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
  function select(id, name, label, values, value, hint) {
    return field(id, name, label, html`<select id="${id}" name="${name}" aria-describedby="${described(id, hint)}">${options(values, value)}</select>`, hint);
  }
  function check(id, name, label, checked, hint) {
    return html`<div class="field check-field" data-field="${name}">
      <input type="checkbox" id="${id}" name="${name}"${checked ? html` checked` : ''} aria-describedby="${described(id, hint)}">
      <label for="${id}">${label}</label>
      ${hint ? html`<p class="hint" id="${id}-hint">${hint}</p>` : ''}
      <p class="error" id="${id}-error"></p>
    </div>`;
  }

  // alert rules and hooks (alerts.js), made when first needed: its helpers are defined further down
  let alertsModule = null;
  function alertsView() {
    if (!alertsModule) {
      alertsModule = window.ejserverAlerts({ html, api, setHTML, $, text, number, area, announce, showFieldErrors,
        clearFieldErrors, quiet, canWrite, toNumber, loadError });
    }
    return alertsModule;
  }

  function clearFieldErrors(form) {
    $$('.error', form).forEach((p) => { if (p.textContent) p.textContent = ''; });
    $$('[aria-invalid]', form).forEach((el) => el.removeAttribute('aria-invalid'));
    const summary = $('.error-summary', form.parentNode);
    if (summary) summary.remove();
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
        name = name.includes('.') ? name.slice(0, name.lastIndexOf('.')) : '';
      }
      const shown = fe.field && box && name !== fe.field ? `${fe.field.slice(name.length + 1)}: ${fe.message}` : fe.message;
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
      misfire: c('misfire'),
      monitorExecution: c('monitorExecution'),
      replayMissedFires: c('replayMissedFires'),
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
        let job = null;
        let etag = null;
        if (editing) {
          try {
            const res = await api('GET', `/api/v1/jobs/${path(editing)}`);
            job = res.data;
            etag = res.etag;
          } catch (e) {
            if (e instanceof ApiError) {
              loadError($('#form-slot', main), e);
              return;
            }
            throw e;
          }
        }
        renderForm($('#form-slot', main), job, etag);
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
          ${check('f-misfire', 'misfire', 'Misfire (one catch-up run after an overlapping fire)', def(j.misfire, true))}
          ${check('f-replay', 'replayMissedFires', 'Replay fires missed while the whole cluster was down', j.replayMissedFires)}
          ${check('f-disabled', 'disabled', 'Disabled', j.disabled)}
          ${number('f-timediff', 'maxTimeDiffSeconds', 'Max clock difference (s)', def(j.maxTimeDiffSeconds, ''), '-1: not checked (default)')}
          ${number('f-reconcile', 'reconcileIntervalMinutes', 'Reconcile interval (min)', def(j.reconcileIntervalMinutes, ''), 'default 10')}
          ${number('f-maxconc', 'maxConcurrentRequests', 'Max concurrent requests', j.maxConcurrentRequests || '', 'per peer; empty: the peer\'s limit')}
        </fieldset>
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
      const mark = (name, message) => {
        const box = $(`[data-field="${name}"]`, form);
        const input = $('input', box);
        $('.error', box).textContent = message;
        if (message) input.setAttribute('aria-invalid', 'true');
        else input.removeAttribute('aria-invalid');
      };
      try {
        const { data } = await api('GET', `/api/v1/cron/next?${q}`);
        out.textContent = `${data.description || cron}. Next: ${data.next.map((t) => new Date(t).toLocaleString()).join(', ') || 'never'}`;
        mark('cron', '');
        mark('timeZone', '');
      } catch (e) {
        if (quiet(e)) return;
        out.textContent = '';
        // the API's message, next to the field it names, as a submit would show it
        const errs = (e.problem && e.problem.errors) || [];
        const fe = errs.find((x) => x.field === 'cron' || x.field === 'timeZone');
        if (fe) mark(fe.field, fe.message);
        else out.textContent = `Not valid: ${e.message}`;
      }
    };
    $('#cron-check', form).addEventListener('click', preview);
    form.elements.namedItem('cron').addEventListener('change', preview);
    if (job && job.cron) preview();

    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const submit = $('[type=submit]', form);
      submit.disabled = true;
      const body = jobBody(form, job);
      try {
        const res = editing
          ? await api('PUT', `/api/v1/jobs/${path(job.jobName)}`, { body, headers: etag ? { 'If-Match': etag } : {} })
          : await api('POST', '/api/v1/jobs', { body });
        clearFieldErrors(form);
        const saved = res.data;
        announce(`${editing ? 'Saved' : 'Created'} ${saved.jobName}.`);
        location.hash = `#/jobs/${encodeURIComponent(saved.jobName)}`;
        if (saved.generatedSecret) {
          openDialog(html`<form class="dialog-form" novalidate>
            <h2 id="dialog-title">The webhook secret of ${saved.jobName}</h2>
            <p>Give it to your receiver to verify signatures. It is shown this once: ejserver never shows it again.</p>
            <p><label for="generated-secret">Secret</label><input id="generated-secret" readonly value="${saved.generatedSecret}"></p>
            <div class="buttons"><button type="submit" class="primary">I have kept it</button></div>
          </form>`, { initial: '#generated-secret' });
        }
      } catch (e) {
        if (quiet(e)) return;
        if (e instanceof ApiError) showFieldErrors(form, e, { summary: true });
        else announce(e.message, 'error');
      } finally {
        submit.disabled = false;
      }
    });
    const first = $('input:not([readonly])', form);
    if (first && !editing) first.focus();
  }

  // notification channels (channels.js), made on first use: it needs the form helpers defined above
  let channels = null;
  const channelsView = () => channels || (channels = window.ejserverChannels({ html, $, $$, setHTML, patchRows, api, path,
    canWrite, announce, quiet, ApiError, confirmAction, when, field, text, select, check, area, showFieldErrors,
    clearFieldErrors }));

  // the audit trail (audit.js)
  let audit = null;
  const auditView = () => audit || (audit = window.ejserverAudit({ html, $, setHTML, api, quiet, announce, when }));

  // ---- start

  function start() {
    renderWho();
    $('#nav').hidden = false;
    $('[data-nav="servers"]').closest('li').hidden = !can('cluster');
    if (!location.hash.startsWith('#/')) history.replaceState(null, '', '#/jobs');
    navigate();
  }

  window.addEventListener('hashchange', navigate);

  document.addEventListener('submit', (ev) => {
    if (ev.target.id !== 'signin-form') return;
    ev.preventDefault();
    const v = $('#signin-token').value.trim();
    if (!v) {
      $('#signin-error').textContent = 'Enter a token.';
      $('#signin-token').setAttribute('aria-invalid', 'true');
      return;
    }
    signIn(v);
  });

  (async () => {
    try {
      const { data } = await api('GET', '/api/v1/auth/whoami');
      state.caller = data;
      start();
    } catch (e) {
      if (e instanceof SignInNeeded) return;
      setHTML($('#main'), html`<p class="msg msg-error">${e.message}</p>`);
      setTimeout(() => location.reload(), 5000);
    }
  })();
})();
