// The console's frame: the state of the open screen, the header (who, live indicator, banner, results),
// the hash router and its polling, and modal dialogs. main.js names the screens (routes.screenFor).
import { html, $, $$, setHTML, session, quiet } from './lib.js';

export const POLL_MS = 2000;

export const state = {
  caller: null, // the answer of /api/v1/auth/whoami
  screen: null, // the mounted screen: {refresh(), live, destroy()}
  loop: 0, // the polling loop's id: a newer loop ends the older one
  timer: 0,
};

// routes is main.js's: the screen of a route.
export const routes = { screenFor: () => () => ({}) };

// ---- chrome: who, live indicator, banner, results

export function connection(ok) {
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

export function setLive(what) {
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
export function announce(message, kind = 'ok') {
  const el = $('#result');
  setHTML(el, html`<p class="msg msg-${kind}"><span>${kind === 'error' ? 'Failed: ' : ''}${message}</span>
    <button type="button" class="link" data-action="dismiss" aria-label="Dismiss this message">Dismiss</button></p>`);
}

export function renderWho() {
  const c = session.caller;
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

// ---- router and polling

export function parseHash() {
  const h = location.hash.startsWith('#/') ? location.hash.slice(1) : '/jobs';
  const [p, q] = h.split('?');
  return { path: p, parts: p.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(q || '') };
}

// setQuery records a screen's filters in the address without re-mounting the screen.
export function setQuery(params) {
  const r = parseHash();
  const q = new URLSearchParams();
  Object.entries(params).forEach(([k, v]) => {
    if (v !== '' && v !== undefined && v !== null) q.set(k, v);
  });
  const s = q.toString();
  history.replaceState(null, '', `#${r.path}${s ? `?${s}` : ''}`);
}

export function navigate() {
  if (!session.caller) return;
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
  const screen = routes.screenFor(r)(main, r);
  state.screen = screen;
  const h1 = $('h1', main);
  if (h1) {
    document.title = `${h1.textContent} · ejserver`;
    if (state.navigated) h1.focus();
  }
  state.navigated = true;
  startPolling();
}

export function startPolling() {
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

export function stopPolling() {
  state.loop++;
  clearTimeout(state.timer);
}

export const refreshNow = () => startPolling();

document.addEventListener('visibilitychange', () => {
  if (!state.screen || !state.screen.live) return;
  if (document.hidden) {
    stopPolling();
    setLive('paused');
  } else startPolling();
});

// ---- dialogs: native modal <dialog> (the rest of the page is inert; Escape closes it)

let dialogOpener = null;

export function openDialog(content, { onSubmit, initial } = {}) {
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

export function confirmAction({ title, body, confirm, danger }) {
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
