// The console's charts: uPlot (vendor/uPlot.esm.js, 1.6) set up the same way for every page, and the pure
// functions that turn API answers into chart data. Each chart's element keeps its uPlot instance as
// el.uplot, so its data can be read back (u.data) by the browser tests and by anyone in the dev tools.
import uPlot from './vendor/uPlot.esm.js';

// An execution's class for colouring, as the API's Point.Outcome: running, failure, then a non-normal source,
// else success.
export const OUTCOMES = ['success', 'failure', 'misfire', 'failover', 'manual', 'backfill', 'running'];
export const COLORS = {
  success: '#1a7f37', failure: '#cf222e', misfire: '#bf8700', failover: '#8250df', manual: '#0969da', backfill: '#57606a', running: '#6e7781',
  fires: '#1f4e8c', failures: '#cf222e', load: '#1f4e8c', owned: '#8c959f', executed: '#1f4e8c', p50: '#1f4e8c', p99: '#bf8700',
};

export function outcomeOf(p) {
  if (!p.done) return 'running';
  if (!p.success) return 'failure';
  if (p.source === 'MISFIRE') return 'misfire';
  if (p.source === 'FAILOVER') return 'failover';
  if (p.source === 'MANUAL' || p.source === 'WORKFLOW') return 'manual'; // on request
  if (p.source === 'BACKFILL') return 'backfill';
  return 'success';
}

const secs = (iso) => new Date(iso).getTime() / 1000;

// byOutcome lays rows out as uPlot data: the x values ascending, then one series per outcome holding the
// row's y where the row has that outcome and null elsewhere (a scatter, one colour per outcome).
export function byOutcome(rows) {
  const sorted = [...rows].sort((a, b) => a.x - b.x);
  return [sorted.map((r) => r.x), ...OUTCOMES.map((o) => sorted.map((r) => (r.outcome === o ? r.y : null)))];
}

// itemRows: one row per execution, duration over start time.
export const itemRows = (points) => points.map((p) => ({ x: secs(p.startedAt), y: p.durationMs, outcome: outcomeOf(p), id: p.id }));

// fires groups a job's points by fire (scheduled time): its lateness is its first item's (the fire began
// when its first item started); its outcome the worst of its items' (failure, running, failover, misfire,
// manual, success).
export function fires(points) {
  const rank = ['failure', 'running', 'failover', 'misfire', 'manual', 'backfill', 'success'];
  const by = new Map();
  points.forEach((p) => {
    if (!p.scheduledAt) return;
    const f = by.get(p.scheduledAt) || { scheduledAt: p.scheduledAt, latenessMs: Infinity, outcome: 'success', items: 0 };
    f.latenessMs = Math.min(f.latenessMs, p.latenessMs);
    const o = outcomeOf(p);
    if (rank.indexOf(o) < rank.indexOf(f.outcome)) f.outcome = o;
    f.items++;
    by.set(p.scheduledAt, f);
  });
  return [...by.values()].sort((a, b) => secs(a.scheduledAt) - secs(b.scheduledAt));
}

export const fireRows = (fs) => fs.map((f) => ({ x: secs(f.scheduledAt), y: f.latenessMs, outcome: f.outcome, scheduledAt: f.scheduledAt }));

const dot = (stroke) => ({ stroke, fill: stroke, paths: () => null, points: { show: true, size: 6, width: 1, stroke, fill: stroke } });

function size(el, height) {
  return { width: Math.max(320, Math.floor(el.clientWidth || el.parentElement.clientWidth || 800)), height };
}

// mount draws data in el, replacing the chart it holds (uPlot's setData would keep the old scales' series
// count; a new instance is as fast at these sizes).
// The chart follows its box's width (a window resized, a phone turned): uPlot draws at a fixed size.
export function mount(el, opts, data) {
  destroy(el);
  const height = opts.height || 220;
  const u = new uPlot({ ...size(el, height), ...opts }, data, el);
  el.uplot = u;
  el.resizer = new ResizeObserver(() => {
    const s = size(el, height);
    if (el.uplot && s.width !== el.uplot.width) el.uplot.setSize(s);
  });
  el.resizer.observe(el);
  return u;
}

export function destroy(el) {
  if (el && el.resizer) {
    el.resizer.disconnect();
    el.resizer = null;
  }
  if (el && el.uplot) {
    el.uplot.destroy();
    el.uplot = null;
  }
}

// scatter is a chart of rows coloured by outcome over time; onPick, when given, is called with the row index
// of the clicked point.
export function scatter(el, rows, { yLabel, onPick }) {
  const data = byOutcome(rows);
  const sorted = [...rows].sort((a, b) => a.x - b.x);
  const u = mount(el, {
    title: '',
    scales: { x: { time: true } },
    axes: [{}, { label: yLabel, size: 70 }],
    series: [{}, ...OUTCOMES.map((o) => ({ label: o, ...dot(COLORS[o]) }))],
    cursor: { points: { show: false } },
    legend: { show: false }, // the page's own legend names the colours
  }, data);
  el.rows = sorted;
  if (onPick) {
    u.over.addEventListener('click', () => {
      const i = u.cursor.idx;
      if (i !== null && i !== undefined && sorted[i]) onPick(sorted[i]);
    });
  }
  return u;
}

// bars is a time chart of the given series ([{label, key}]) over x.
export function timeBars(el, xs, series, { yLabel, height }) {
  const bars = uPlot.paths.bars({ size: [0.9, 8] });
  return mount(el, {
    height,
    scales: { x: { time: true } },
    axes: [{}, { label: yLabel, size: 60 }],
    series: [{}, ...series.map((s) => ({ label: s.label, stroke: COLORS[s.key], fill: `${COLORS[s.key]}55`, paths: bars, points: { show: false } }))],
    legend: { live: false },
  }, [xs, ...series.map((s) => s.values)]);
}

// categories is a bar chart with named categories on x (peers): the series overlap, the first widest, so a
// wide light bar (items owned, p99) holds a narrow dark one (items executed, p50).
export function categories(el, names, series, { yLabel }) {
  return mount(el, {
    height: 220,
    scales: { x: { time: false, range: [-0.5, names.length - 0.5] }, y: { range: (_, lo, hi) => [0, hi > 0 ? hi * 1.1 : 1] } },
    axes: [{ values: (_, ticks) => ticks.map((t) => (Number.isInteger(t) ? names[t] || '' : '')), splits: () => names.map((_, i) => i) },
      { label: yLabel, size: 60 }],
    series: [{}, ...series.map((s, k) => ({
      label: s.label, stroke: COLORS[s.key], fill: COLORS[s.key],
      paths: uPlot.paths.bars({ size: [0.7 / (k + 1), 80 / (k + 1)] }),
      points: { show: false },
    }))],
    legend: { live: false },
  }, [names.map((_, i) => i), ...series.map((s) => s.values)]);
}

// timeline draws one bar per item from its start to its end, a row each, coloured by outcome. The data are
// [starts, rows, ends] (seconds, row index, seconds); labels name the rows.
export function timeline(el, items, labels) {
  const xs = items.map((it) => it.start);
  const rows = items.map((_, i) => i);
  const ends = items.map((it) => it.end);
  const lo = Math.min(...xs);
  const hi = Math.max(...ends);
  const pad = Math.max((hi - lo) * 0.05, 0.05);
  return mount(el, {
    height: Math.max(120, 40 + items.length * 22),
    scales: { x: { time: true, range: [lo - pad, hi + pad] }, y: { range: [-0.5, items.length - 0.5] } },
    axes: [{}, { size: 160, values: (_, ticks) => ticks.map((t) => (Number.isInteger(t) ? labels[t] || '' : '')), splits: () => rows }],
    series: [{}, { label: 'start', stroke: '#000', paths: () => null, points: { show: false } }, { label: 'end', show: false }],
    legend: { show: false },
    hooks: {
      draw: [(u) => {
        const { ctx } = u;
        const h = Math.max(6, Math.min(16, (u.bbox.height / items.length) * 0.6));
        ctx.save();
        items.forEach((it, i) => {
          const x0 = u.valToPos(it.start, 'x', true);
          const x1 = Math.max(u.valToPos(it.end, 'x', true), x0 + 2);
          const y = u.valToPos(i, 'y', true);
          ctx.fillStyle = COLORS[it.outcome];
          ctx.fillRect(x0, y - h / 2, x1 - x0, h);
        });
        ctx.restore();
      }],
    },
  }, [xs, rows, ends]);
}
