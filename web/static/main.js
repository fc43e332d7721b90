// ejserver's web console: a client of the REST API at /api/v1, with no framework and no build step: ES
// modules the browser loads as they are. Screens are hash routes (#/overview, #/jobs, #/jobs/NAME,
// #/jobs/NAME/fires/TIME, #/jobs/NAME/edit, #/create, #/workflows, #/create/workflow,
// #/workflows/NAME, #/workflows/NAME/edit, #/workflows/NAME/runs/ID, #/executions, #/executions/ID, #/failed, #/servers, #/alerts, #/channels, #/calendars, #/audit). The open screen
// refreshes itself every POLL_MS while the tab is visible; tables are patched row by row and cell by cell, so a
// refresh keeps the keyboard focus where it was.
//
// lib.js holds the shared helpers (HTML, formats, the API); ui.js the frame (header, router, dialogs);
// actions.js the buttons; pages/ one file per page; app.js the job form.
import { html, $, $$, setHTML, patchRows, api, path, when, can, canWrite, quiet, ApiError, SignInNeeded, TOKEN_KEY, hooks, session } from './lib.js';
import { state, routes, connection, setLive, announce, renderWho, navigate, stopPolling, confirmAction } from './ui.js';
import './actions.js';
import { jobsScreen } from './pages/jobs.js';
import { jobScreen } from './pages/job.js';
import { executionsScreen } from './pages/executions.js';
import { serversScreen } from './pages/servers.js';
import { fireScreen } from './pages/fire.js';
import { overviewScreen } from './pages/overview.js';
import { calendarsScreen } from './pages/calendars.js';
import { failedScreen } from './pages/failed.js';
import { executionScreen } from './pages/execution.js';
import { workflowsScreen, workflowScreen, runScreen } from './pages/workflows.js';
import { workflowFormScreen } from './pages/workflowform.js';
import { alertsView, formScreen, field, text, select, check, area, submitForm } from './app.js';

// ---- sign-in

function showSignIn(message) {
  stopPolling();
  state.caller = session.caller = null;
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
    state.caller = session.caller = data;
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

function screenFor(r) {
  const [a, b, c] = r.parts;
  if (!a || (a === 'jobs' && !b)) return jobsScreen;
  if (a === 'jobs' && b && !c) return jobScreen;
  if (a === 'jobs' && b && c === 'edit') return formScreen;
  if (a === 'jobs' && b && c === 'fires' && r.parts[3]) return fireScreen;
  if (a === 'overview') return overviewScreen;
  if (a === 'create' && b === 'workflow') return workflowFormScreen;
  if (a === 'create') return formScreen;
  if (a === 'workflows' && !b) return workflowsScreen;
  if (a === 'workflows' && b && !c) return workflowScreen;
  if (a === 'workflows' && b && c === 'edit') return workflowFormScreen;
  if (a === 'workflows' && b && c === 'runs' && r.parts[3]) return runScreen;
  if (a === 'executions' && b) return executionScreen;
  if (a === 'executions') return executionsScreen;
  if (a === 'failed') return failedScreen;
  if (a === 'servers') return serversScreen;
  if (a === 'alerts') return (main) => alertsView().screen(main);
  if (a === 'channels') return (main) => channelsView().screen(main);
  if (a === 'calendars') return calendarsScreen;
  if (a === 'audit') return (main) => auditView().screen(main);
  return notFoundScreen;
}

function notFoundScreen(main) {
  setHTML(main, html`<h1 tabindex="-1">Not found</h1><p>No such screen. <a href="#/jobs">Go to the jobs</a>.</p>`);
  return {};
}

// notification channels (channels.js), made on first use: it needs the form helpers defined above
let channels = null;
const channelsView = () => channels || (channels = window.ejserverChannels({ html, $, $$, setHTML, patchRows, api, path,
  canWrite, announce, quiet, confirmAction, when, field, text, select, check, area, submitForm }));

// the audit trail (audit.js)
let audit = null;
const auditView = () => audit || (audit = window.ejserverAudit({ html, $, setHTML, api, quiet, announce, when }));

// ---- start

function start() {
  renderWho();
  $('#nav').hidden = false;
  $('[data-nav="servers"]').closest('li').hidden = !can('cluster');
  $('[data-nav="calendars"]').closest('li').hidden = !can('cluster'); // cluster-wide: 404 for scoped tokens
  $('[data-nav="workflows"]').closest('li').hidden = !!session.caller.scope; // cluster-wide objects
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
    state.caller = session.caller = data;
    start();
  } catch (e) {
    if (e instanceof SignInNeeded) return;
    setHTML($('#main'), html`<p class="msg msg-error">${e.message}</p>`);
    setTimeout(() => location.reload(), 5000);
  }
})();

routes.screenFor = screenFor;
hooks.connection = connection;
hooks.signIn = showSignIn;
