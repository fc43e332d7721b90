// The job page's charts: the last 24 h or 7 d of fires (duration per item, lateness per fire, coloured by
// outcome), with the window's success rate and p50/p99 lateness and duration. Clicking a fire opens it.
import { scatter, itemRows, fires, fireRows, destroy, OUTCOMES } from '../charts.js';
import { api, html, setHTML, $, path, fmtMs, historyNote } from '../lib.js';

const WINDOWS = { '24h': '5m', '7d': '1h' };
const RELOAD_MS = 30000;

// jobCharts fills el (a section of the job page) for job name; window is 24h or 7d.
export function jobCharts(el, name, { window = '24h', onWindow } = {}) {
  let win = WINDOWS[window] ? window : '24h';
  let loaded = 0;
  setHTML(el, html`
    <div class="head"><h2 id="charts-title">Fires</h2>
      <div class="seg" role="group" aria-label="Window">
        ${Object.keys(WINDOWS).map((w) => html`<button type="button" class="small" data-window="${w}" aria-pressed="${w === win}">${w}</button>`)}
      </div></div>
    <p class="muted chart-note" id="charts-note"></p>
    <dl class="kv" id="charts-summary">${summary()}</dl>
    <figure class="chart"><figcaption>Duration per item (ms) by start time</figcaption><div class="plot" id="chart-duration"></div></figure>
    <figure class="chart"><figcaption>Lateness per fire (ms) by scheduled time: click a fire to open it</figcaption><div class="plot" id="chart-lateness"></div></figure>
    <ul class="legend">${OUTCOMES.map((o) => html`<li><span class="swatch sw-${o}"></span>${o}</li>`)}</ul>
    <p class="empty" id="charts-empty" hidden></p>`);
  el.addEventListener('click', (ev) => {
    const b = ev.target.closest('[data-window]');
    if (!b) return;
    win = b.dataset.window;
    el.querySelectorAll('[data-window]').forEach((x) => x.setAttribute('aria-pressed', String(x === b)));
    loaded = 0;
    if (onWindow) onWindow(win);
    refresh();
  });
  const base = `/api/v1/jobs/${path(name)}`;
  async function refresh() {
    if (Date.now() - loaded < RELOAD_MS) return;
    loaded = Date.now();
    const t0 = performance.now();
    const [stats, pts] = await Promise.all([
      api('GET', `${base}/stats?window=${win}&bucket=${WINDOWS[win]}`).then((x) => x.data),
      api('GET', `${base}/points?window=${win}`).then((x) => x.data),
    ]);
    const t = stats.total;
    setHTML($('#charts-summary', el), summary(t));
    $('#charts-note', el).textContent = `${historyNote(stats.sharedHistory)}${pts.truncated ? ` Only the first ${pts.points.length} executions of the window are drawn.` : ''}`;
    const empty = $('#charts-empty', el);
    empty.hidden = pts.points.length > 0;
    empty.textContent = `No executions in the last ${win}.`;
    const dur = $('#chart-duration', el);
    const late = $('#chart-lateness', el);
    if (!pts.points.length) {
      destroy(dur);
      destroy(late);
      return;
    }
    const t1 = performance.now();
    scatter(dur, itemRows(pts.points), { yLabel: 'ms' });
    scatter(late, fireRows(fires(pts.points)), {
      yLabel: 'ms late',
      onPick: (row) => { location.hash = `#/jobs/${encodeURIComponent(name)}/fires/${encodeURIComponent(row.scheduledAt)}`; },
    });
    // what the page took: from asking the API to both charts drawn, and the drawing alone (make bench reads them)
    el.dataset.renderMs = String(Math.round(performance.now() - t0));
    el.dataset.drawMs = String(Math.round(performance.now() - t1));
    el.dataset.points = String(pts.points.length);
  }
  return {
    refresh,
    destroy() {
      destroy($('#chart-duration', el));
      destroy($('#chart-lateness', el));
    },
  };
}

// summary is the window's figures from the stats' total t; without t, the same terms still to come, so the
// sharding table below does not move down under the pointer when they arrive.
function summary(t) {
  const ended = t ? t.success + t.failure : 0;
  const v = (f) => (t ? f() : '…');
  return html`
    <div><dt>Fires</dt><dd>${v(() => t.fires)}</dd></div>
    <div><dt>Items</dt><dd>${v(() => `${t.items}${t.running ? ` (${t.running} running)` : ''}`)}</dd></div>
    <div><dt>Success rate</dt><dd>${v(() => (ended ? `${((100 * t.success) / ended).toFixed(1)} %` : '—'))}</dd></div>
    <div><dt>Duration p50 / p99</dt><dd>${v(() => `${fmtMs(t.durationP50Ms)} / ${fmtMs(t.durationP99Ms)}`)}</dd></div>
    <div><dt>Lateness p50 / p99</dt><dd>${v(() => `${fmtMs(t.latenessP50Ms)} / ${fmtMs(t.latenessP99Ms)}`)}</dd></div>`;
}
