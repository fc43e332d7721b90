// Actions: buttons carry data-action and one listener handles them all; each action shows its result.
import { html, $, $$, setHTML, api, path, plural, quiet, parseItemParameters, TOKEN_KEY, hooks } from './lib.js';
import { state, announce, refreshNow, openDialog, confirmAction } from './ui.js';

// ---- actions (buttons carry data-action; one listener handles them all)

export async function run(fn, okMessage) {
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
    hooks.signIn('');
  },
  'trigger': (d) => triggerDialog(d.job, Number(d.total), d.params || '', d.param || ''),
  'disable-job': async (d) => {
    if (!(await confirmAction({ title: `Disable ${d.job}?`, body: 'It stops firing on every peer until enabled. Items already running finish.', confirm: 'Disable job', danger: true }))) return;
    await run(() => api('POST', `/api/v1/jobs/${path(d.job)}/disable`), `Disabled ${d.job}: it no longer fires.`);
  },
  'pause-job': (d) => pauseDialog(d.job),
  'resume-job': (d) => run(() => api('POST', `/api/v1/jobs/${path(d.job)}/resume`), `Resumed ${d.job}: its next scheduled fire runs.`),
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

// pause: scheduled fires are skipped until resume; the note says why, beside who paused and when
function pauseDialog(job) {
  return openDialog(html`
    <form class="dialog-form" novalidate>
      <h2 id="dialog-title">Pause ${job}</h2>
      <p>Its scheduled fires are skipped on every peer until it is resumed (skipped fires are not made up).
        Manual triggers still run; unlike Disable, its items stay assigned.</p>
      <div class="field">
        <label for="pause-note">Why (shown with your name on the job)</label>
        <input id="pause-note" name="note" autocomplete="off" maxlength="1024" aria-describedby="pause-error">
        <p class="error" id="pause-error" role="alert"></p>
      </div>
      <div class="buttons">
        <button type="submit" class="primary">Pause</button>
        <button type="button" data-close>Cancel</button>
      </div>
    </form>`, {
    initial: '#pause-note',
    onSubmit: async (form) => {
      try {
        await api('POST', `/api/v1/jobs/${path(job)}/pause`, { body: { note: $('#pause-note', form).value } });
        announce(`Paused ${job}: scheduled fires are skipped until resumed.`);
        refreshNow();
        return true;
      } catch (e) {
        if (quiet(e)) return null;
        $('#pause-error', form).textContent = e.message;
        return undefined; // keep the dialog open to correct it
      }
    },
  });
}
