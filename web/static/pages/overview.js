// The overview page (#/overview): fires and failures per minute across every job (the token's) for the last
// hour and day, and the schedule's load ahead: the items on each second of the next hour, from the cron
// schedules, so a herd on "0 * * * * ?" shows before it fires.
import { timeBars, destroy } from '../charts.js';
import { api, html, setHTML, $, historyNote, when } from '../lib.js';

const STATS_MS = 15000;
const LOAD_MS = 60000;
const secs = (iso) => new Date(iso).getTime() / 1000;

export function overviewScreen(main) {
  setHTML(main, html`
    <div class="head"><h1 tabindex="-1">Overview</h1></div>
    <div id="overview-error"></div>
    <p class="muted" id="overview-note"></p>
    <section aria-labelledby="hour-h">
      <h2 id="hour-h">Fires and failures per minute, last hour</h2>
      <p id="hour-total"></p>
      <div class="chart" id="chart-hour"></div>
    </section>
    <section aria-labelledby="day-h">
      <h2 id="day-h">Fires and failures per minute, last day</h2>
      <p id="day-total"></p>
      <div class="chart" id="chart-day"></div>
    </section>
    <section aria-labelledby="load-h">
      <h2 id="load-h">Load ahead: items per second, next hour</h2>
      <p id="load-summary"></p>
      <div class="chart" id="chart-load"></div>
    </section>`);
  const charts = ['#chart-hour', '#chart-day', '#chart-load'].map((s) => $(s, main));
  let statsAt = 0;
  let loadAt = 0;
  const perMinute = (el, st) => timeBars(el, st.buckets.map((b) => secs(b.start)), [
    { label: 'fires', key: 'fires', values: st.buckets.map((b) => b.fires) },
    { label: 'failed items', key: 'failures', values: st.buckets.map((b) => b.failure) },
  ], { yLabel: 'per minute', height: 200 });
  const total = (st) => `${st.total.fires} fires, ${st.total.items} items, ${st.total.failure} failed`;
  return {
    live: true,
    async refresh() {
      const now = Date.now();
      const jobs = [];
      if (now - statsAt >= STATS_MS) {
        statsAt = now;
        jobs.push(Promise.all([
          api('GET', '/api/v1/stats?window=1h&bucket=1m').then((x) => x.data),
          api('GET', '/api/v1/stats?window=24h&bucket=1m').then((x) => x.data),
        ]).then(([hour, day]) => {
          $('#overview-note', main).textContent = historyNote(hour.sharedHistory);
          $('#hour-total', main).textContent = total(hour);
          $('#day-total', main).textContent = total(day);
          perMinute(charts[0], hour);
          perMinute(charts[1], day);
        }));
      }
      if (now - loadAt >= LOAD_MS) {
        loadAt = now;
        jobs.push(api('GET', '/api/v1/schedule/load?horizon=1h').then((x) => x.data).then((l) => {
          const from = secs(l.from);
          setHTML($('#load-summary', main), html`${l.jobs} enabled jobs on ${l.schedules} distinct schedules.
            ${l.peak ? html`Busiest second: ${l.peak} items ${when(l.peakAt, { short: true })}.` : 'Nothing fires in the next hour.'}
            ${l.invalid ? `${l.invalid} jobs' schedules do not parse. ` : ''}${l.skipped || l.partial ? html`<span class="warn">The bound on the work was reached: ${l.skipped} jobs are not counted.</span>` : ''}`);
          timeBars(charts[2], l.items.map((_, i) => from + i), [{ label: 'items', key: 'load', values: l.items }], { yLabel: 'items', height: 200 });
        }));
      }
      await Promise.all(jobs);
      setHTML($('#overview-error', main), '');
    },
    fail: (e) => setHTML($('#overview-error', main), html`<p class="msg msg-error">${e.message}</p>`),
    destroy: () => charts.forEach(destroy),
  };
}
