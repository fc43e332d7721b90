// A job's page (#/jobs/NAME): summary, its charts (jobcharts.js), sharding, servers, latest executions and
// configuration.
import { html, $, $$, setHTML, patchRows, api, path, when, badge, outcome, can, canWrite, quiet, loadError, ApiError } from '../lib.js';
import { setQuery } from '../ui.js';
import { executionRows, executionHead, executionCols, asyncView } from './executions.js';
import { jobCharts } from './jobcharts.js';
import { alertsView } from '../app.js';
import { scheduleView } from './schedule.js';
import { backfillSection } from './backfill.js';

export function jobScreen(main, r) {
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
    <section aria-labelledby="charts-title" id="job-charts"></section>
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
    <section aria-labelledby="backfill-title" id="job-backfill"></section>
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
  const charts = jobCharts($('#job-charts', main), name, { window: r.query.get('window') || '24h',
    onWindow: (w) => setQuery({ window: w === '24h' ? '' : w }) });
  const backfills = backfillSection($('#job-backfill', main), name);
  return {
    live: true,
    destroy: () => charts.destroy(),
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
      setHTML($('#job-status', main), html`${badge(job.status)}${job.pause ? html` ${badge('PAUSED')}` : ''}`);
      $('#job-description', main).textContent = job.description || '';
      if (write) {
        setHTML($('#job-actions', main), html`
          <button type="button" data-action="trigger" data-job="${job.jobName}" data-total="${job.shardingTotalCount}" data-params="${job.shardingItemParameters || ''}" data-param="${job.jobParameter || ''}">Trigger…</button>
          ${job.pause
            ? html`<button type="button" data-action="resume-job" data-job="${job.jobName}">Resume</button>`
            : html`<button type="button" data-action="pause-job" data-job="${job.jobName}">Pause…</button>`}
          ${job.disabled
            ? html`<button type="button" data-action="enable-job" data-job="${job.jobName}">Enable</button>`
            : html`<button type="button" data-action="disable-job" data-job="${job.jobName}">Disable</button>`}
          ${can('manage') ? html`<a class="button" href="#/jobs/${encodeURIComponent(job.jobName)}/edit">Edit</a>
          <button type="button" class="danger" data-action="delete-job" data-job="${job.jobName}">Delete…</button>` : ''}`);
      }
      const st = job.stats;
      setHTML($('#job-summary', main), html`
        ${job.pause ? html`<div class="wide"><dt>Paused</dt><dd class="warn" id="job-pause">by ${job.pause.by}, ${when(job.pause.at, { short: true })}${job.pause.note ? `: ${job.pause.note}` : ' (no note)'}</dd></div>` : ''}
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
      await Promise.all([charts.refresh(), backfills.refresh(job)]);
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
    ${scheduleView(job)}
    <div><dt>Disabled</dt><dd>${yes(job.disabled)}</dd></div>
    ${job.label ? html`<div><dt>Label</dt><dd>${job.label}</dd></div>` : ''}
    ${alertsView().view(job)}
    ${props.length ? html`<div class="wide"><dt>Properties</dt><dd><ul class="plain">${props.map(([k, v]) => html`<li><code>${k}=${v}</code></li>`)}</ul></dd></div>` : ''}
    <div><dt>Version (ETag)</dt><dd>${job.version}</dd></div>`);
}
