// The servers page's charts: per peer, the items it owns now (ZooKeeper's sharding) and the items it
// executed in the last hour, and their lateness p50/p99 (the history).
import { categories, destroy } from '../charts.js';
import { api, html, setHTML, $, historyNote, fmtMs, patchRows } from '../lib.js';

const RELOAD_MS = 15000;

export function peerCharts(el) {
  setHTML(el, html`
    <h2 id="peers-h">Load per peer, last hour</h2>
    <p class="muted" id="peers-note"></p>
    <figure class="chart"><figcaption>Items owned now (wide, grey) and executed in the last hour (narrow)</figcaption><div id="chart-peer-items"></div></figure>
    <figure class="chart"><figcaption>Lateness per peer, ms: p99 (wide) and p50 (narrow)</figcaption><div id="chart-peer-lateness"></div></figure>
    <div class="table-wrap">
      <table class="data" id="peers-table">
        <caption class="sr-only">Items owned and executed, and lateness, per peer</caption>
        <thead><tr><th scope="col">Instance</th><th scope="col">Owned</th><th scope="col">Executed</th><th scope="col">Failed</th>
          <th scope="col">Lateness p50</th><th scope="col">Lateness p99</th></tr></thead>
        <tbody></tbody>
      </table>
    </div>`);
  let at = 0;
  return {
    async refresh() {
      if (Date.now() - at < RELOAD_MS) return;
      at = Date.now();
      const [inst, st] = await Promise.all([
        api('GET', '/api/v1/instances?limit=1000').then((x) => x.data),
        api('GET', '/api/v1/stats?window=1h&bucket=1m').then((x) => x.data),
      ]);
      const byId = new Map(st.peers.map((p) => [p.instanceId, p]));
      const ids = [...new Set([...inst.items.map((i) => i.instanceId), ...byId.keys()])].sort();
      const owned = new Map(inst.items.map((i) => [i.instanceId, i.itemsOwned || 0]));
      const rows = ids.map((id) => ({ id, owned: owned.get(id) || 0, p: byId.get(id) || { items: 0, failure: 0, latenessP50Ms: null, latenessP99Ms: null } }));
      $('#peers-note', el).textContent = historyNote(st.sharedHistory);
      const names = rows.map((r) => r.id.split('@-@')[0]);
      categories($('#chart-peer-items', el), names, [
        { label: 'owned', key: 'owned', values: rows.map((r) => r.owned) },
        { label: 'executed', key: 'executed', values: rows.map((r) => r.p.items) },
      ], { yLabel: 'items' });
      categories($('#chart-peer-lateness', el), names, [
        { label: 'p99', key: 'p99', values: rows.map((r) => r.p.latenessP99Ms) },
        { label: 'p50', key: 'p50', values: rows.map((r) => r.p.latenessP50Ms) },
      ], { yLabel: 'ms late' });
      patchRows($('#peers-table tbody', el), rows.map((r) => ({
        key: r.id,
        cells: [html`<span class="mono">${r.id}</span>`, String(r.owned), String(r.p.items), String(r.p.failure), fmtMs(r.p.latenessP50Ms), fmtMs(r.p.latenessP99Ms)],
      })));
    },
    destroy() {
      destroy($('#chart-peer-items', el));
      destroy($('#chart-peer-lateness', el));
    },
  };
}
