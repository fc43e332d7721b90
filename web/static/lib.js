// The console's shared helpers, one ES module every page imports: HTML built with escaping, the formatting
// of times and durations, and the API client (the bearer token kept in sessionStorage). main.js wires the
// API's sign-in and connection hooks.

export const TOKEN_KEY = 'ejserver.token';

// ---- HTML: every interpolation is escaped unless it is already html``.

export class Raw {
  constructor(s) { this.s = s; }
  toString() { return this.s; }
}
const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const esc = (v) => String(v).replace(/[&<>"']/g, (c) => ESC[c]);
const render = (v) => {
  if (v instanceof Raw) return v.s;
  if (Array.isArray(v)) return v.map(render).join('');
  if (v === null || v === undefined || v === false) return '';
  return esc(v);
};
export const html = (strings, ...vals) => new Raw(strings.reduce((out, s, i) => out + render(vals[i - 1]) + s));
export const $ = (sel, root = document) => root.querySelector(sel);
export const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));

// setHTML replaces an element's content only when it changed. Disclosures the operator opened stay open.
export function setHTML(el, content) {
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
export function patchRows(tbody, rows, colClasses = []) {
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

export const plural = (n, one, many) => `${n} ${n === 1 ? one : many || one + 's'}`;

export function relative(d) {
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

export function clock(d) {
  const sameDay = d.toDateString() === new Date().toDateString();
  return sameDay ? d.toLocaleTimeString() : d.toLocaleString();
}

// when renders a time as "in 8 s" with the local time below it.
export function when(iso, { short } = {}) {
  if (!iso) return html`<span class="muted">—</span>`;
  const d = new Date(iso);
  if (short) return html`<time datetime="${iso}" title="${d.toLocaleString()}">${relative(d)}</time>`;
  return html`<time datetime="${iso}" title="${d.toLocaleString()}">${relative(d)}</time><br><small class="muted">${clock(d)}</small>`;
}

export const badge = (status) => html`<span class="badge st-${status}">${status.replace('_', ' ')}</span>`;

export function duration(ms) {
  if (ms === undefined || ms === null) return '';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.round(ms / 60000)} min`;
}

export function outcome(e) {
  if (e.async && e.state) return badge(e.state); // accepted: the lease's state says more than the 202
  if (!e.completedAt) return html`<span class="badge st-RUNNING">RUNNING</span>`;
  const code = e.statusCode ? ` ${e.statusCode}` : '';
  return e.success
    ? html`<span class="badge st-OK">OK${code}</span>`
    : html`<span class="badge st-CRASHED">FAILED${code}</span>`;
}

export function options(values, selected, labels = {}) {
  return values.map((v) => html`<option value="${v}"${v === selected ? html` selected` : ''}>${labels[v] || v}</option>`);
}

// parseItemParameters reads "0=Beijing,1=Shanghai" for labels (the API validates it for real).
export function parseItemParameters(s) {
  const out = {};
  (s || '').split(',').forEach((pair) => {
    const i = pair.indexOf('=');
    if (i > 0) out[pair.slice(0, i).trim()] = pair.slice(i + 1);
  });
  return out;
}

// fmtMs renders a percentile in milliseconds ("—" without values).
export const fmtMs = (v) => (v === null || v === undefined ? '—' : duration(v));

// historyNote says whose history the numbers are: with SQLite each peer records only the items it ran.
export const historyNote = (shared) => (shared
  ? 'The whole cluster\'s history (PostgreSQL).'
  : 'This peer\'s history only (SQLite): each peer records the items it ran; other peers\' show on their own consoles, and PostgreSQL shows the whole cluster.');

// ---- the API

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}
export class SignInNeeded extends Error {}
export class Unreachable extends Error {}

export const token = () => sessionStorage.getItem(TOKEN_KEY) || '';
// the caller (whoami's answer), set by main.js at sign-in; can says what its token may do (whoami's can):
// operate (trigger, enable, disable), manage (create, edit, delete), cluster (see servers and instances),
// administer (change a server for every job)
export const session = { caller: null };
export const can = (what) => !!(session.caller && session.caller.can && session.caller.can[what]);
export const canWrite = () => can('operate');

// hooks are main.js's: the connection banner and the sign-in screen.
export const hooks = { connection: () => {}, signIn: () => {} };
export const path = (...parts) => parts.map(encodeURIComponent).join('/');

export async function api(method, url, { body, headers = {}, signIn = true } = {}) {
  const h = { Accept: 'application/json, application/problem+json', ...headers };
  const t = token();
  if (t) h.Authorization = `Bearer ${t}`;
  if (body !== undefined) h['Content-Type'] = 'application/json';
  let resp;
  try {
    resp = await fetch(url, { method, headers: h, cache: 'no-store', body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    hooks.connection(false);
    throw new Unreachable(`ejserver did not answer (${e.message})`);
  }
  hooks.connection(true);
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
    hooks.signIn(t ? `The token was refused: ${(data && data.detail) || 'unauthorized'}` : '');
    throw new SignInNeeded();
  }
  if (!resp.ok) throw new ApiError(resp.status, data || {});
  return { status: resp.status, data, etag: resp.headers.get('ETag') };
}

// quiet reports whether an error is already shown elsewhere (sign-in screen, connection banner).
export const quiet = (e) => e instanceof SignInNeeded || e instanceof Unreachable;

export const STATUSES = ['OK', 'CRASHED', 'DISABLED', 'SHARDING_FLAG'];
export const SOURCES = ['NORMAL_TRIGGER', 'MISFIRE', 'FAILOVER', 'MANUAL', 'WORKFLOW', 'BACKFILL'];

// loadError shows why a screen could not load.
export function loadError(el, e) {
  setHTML(el, html`<p class="msg msg-error">${e.status === 404 ? e.message : `Could not load: ${e.message}`}</p>`);
}
