// A fire's view (#/jobs/NAME/fires/SCHEDULED): its items as a timeline, one bar per item from start to end
// on a row naming its item and peer, coloured by outcome, so a straggler or a failover shows at once.
import { timeline, destroy, outcomeOf, OUTCOMES } from '../charts.js';
import { api, html, setHTML, $, path, when, duration, outcome, patchRows, historyNote } from '../lib.js';

const MAX_PAGES = 20; // 10,000 items at 500 a page

export function fireScreen(main, r) {
  const name = r.parts[1];
  const at = r.parts[3];
  setHTML(main, html`
    <nav class="crumbs" aria-label="Breadcrumb"><a href="#/jobs">Jobs</a> <span aria-hidden="true">/</span>
      <a href="#/jobs/${encodeURIComponent(name)}">${name}</a> <span aria-hidden="true">/</span> <span aria-current="page">fire</span></nav>
    <div class="head"><h1 tabindex="-1">Fire of ${name}</h1></div>
    <p>Scheduled at ${when(at)}</p>
    <div id="fire-error"></div>
    <p class="muted" id="fire-note"></p>
    <figure class="chart"><figcaption>Items: start to end, by peer</figcaption><div id="chart-timeline"></div></figure>
    <ul class="legend">${OUTCOMES.map((o) => html`<li><span class="swatch sw-${o}"></span>${o}</li>`)}</ul>
    <div class="table-wrap">
      <table class="data" id="fire-table">
        <caption class="sr-only">The items of this fire</caption>
        <thead><tr><th scope="col">Item</th><th scope="col">Peer</th><th scope="col">Start</th><th scope="col">End</th>
          <th scope="col">Duration</th><th scope="col">Attempts</th><th scope="col">Source</th><th scope="col">Outcome</th></tr></thead>
        <tbody></tbody>
      </table>
    </div>
    <p class="empty" id="fire-empty" hidden>No items of this fire in the history.</p>`);
  const chart = $('#chart-timeline', main);
  let done = false;
  return {
    live: true,
    async refresh() {
      if (done) return;
      const items = [];
      let cursor = '';
      for (let i = 0; i < MAX_PAGES; i++) {
        const q = `scheduledAt=${encodeURIComponent(at)}&limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const page = (await api('GET', `/api/v1/jobs/${path(name)}/executions?${q}`)).data;
        items.push(...page.items);
        if (!(cursor = page.nextCursor)) break;
      }
      setHTML($('#fire-error', main), '');
      const now = Date.now() / 1000;
      const rows = items.map((e) => {
        const start = new Date(e.startedAt).getTime() / 1000;
        return {
          e, start,
          end: e.completedAt ? new Date(e.completedAt).getTime() / 1000 : now,
          outcome: outcomeOf({ done: !!e.completedAt, success: e.success, source: e.source }),
        };
      }).sort((a, b) => a.e.shardingItem - b.e.shardingItem || a.start - b.start);
      $('#fire-empty', main).hidden = rows.length > 0;
      const { sharedHistory } = (await api('GET', `/api/v1/jobs/${path(name)}/stats?window=1m&bucket=1m`)).data;
      $('#fire-note', main).textContent = `${rows.length} item${rows.length === 1 ? '' : 's'} on ${new Set(rows.map((x) => x.e.instanceId)).size} peer(s). ${historyNote(sharedHistory)}`;
      if (rows.length) timeline(chart, rows, rows.map((x) => `#${x.e.shardingItem} ${x.e.hostname || x.e.instanceId}`));
      else destroy(chart);
      patchRows($('#fire-table tbody', main), rows.map(({ e }) => ({
        key: e.id,
        cells: [String(e.shardingItem), html`<span class="mono">${e.instanceId}</span>`, when(e.startedAt, { short: true }),
          e.completedAt ? when(e.completedAt, { short: true }) : html`<span class="muted">running</span>`,
          duration(e.durationMs), String(e.attempts), e.source, outcome(e)],
      })));
      // an ended fire does not change: stop reloading once every item has ended
      done = rows.length > 0 && rows.every((x) => x.e.completedAt);
    },
    fail: (e) => setHTML($('#fire-error', main), html`<p class="msg msg-error">${e.message}</p>`),
    destroy: () => destroy(chart),
  };
}
