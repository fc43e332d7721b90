// The servers page (#/servers): per-peer charts (peers.js), the server IPs and the instances.
import { html, $, setHTML, patchRows, api, when, badge, can, loadError, session } from '../lib.js';
import { peerCharts } from './peers.js';

export function serversScreen(main) {
  if (!can('cluster')) {
    setHTML(main, html`<div class="head"><h1 tabindex="-1">Servers and instances</h1></div>
      <p class="msg">Servers and instances are the whole cluster's: your token sees only the jobs of its scope (${session.caller.scope}).</p>`);
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
    </section>
    <section aria-labelledby="peers-h" id="peer-charts"></section>`);
  const peers = peerCharts($('#peer-charts', main));
  return {
    live: true,
    destroy: () => peers.destroy(),
    async refresh() {
      await peers.refresh();
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
