// A workflow run's graph as plain SVG: dagre (vendor/dagre.esm.js, 3.1) lays the nodes out top to bottom
// (parents above children), this module draws them as boxes coloured by their state (the dag-STATE classes of
// app.css) and the edges as arrows labelled with their `on` condition. The SVG element keeps the dagre graph
// as .dag, as a chart's element keeps its uPlot instance: the browser tests read the positions from it.
import dagre from '../vendor/dagre.esm.js';
import { html, setHTML } from '../lib.js';

const NODE_H = 46;
const CHAR_W = 7.5; // about one character of the node's name at the SVG's font size
const MIN_W = 110;
const MAX_W = 260;

// nodeWidth is a node box's width: room for its name (long names are cut with an ellipsis) and its state.
export const nodeWidth = (name) => Math.min(MAX_W, Math.max(MIN_W, Math.ceil(name.length * CHAR_W) + 24));

// edgeOn is an edge's condition as the definition says it (success when left out).
export const edgeOn = (a) => a.on || 'success';

// layout returns the dagre graph of nodes (a run's or a definition's, each {name, after: [{node, on}]}),
// laid out: g.node(name) is {x, y, width, height} (x, y the box's centre), g.edge(parent, child) has
// {points, x, y, on}, g.graph() {width, height}.
export function layout(nodes) {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: 'TB', nodesep: 28, ranksep: 56, edgesep: 14, marginx: 8, marginy: 8 });
  g.setDefaultEdgeLabel(() => ({}));
  nodes.forEach((n) => g.setNode(n.name, { width: nodeWidth(n.name), height: NODE_H }));
  nodes.forEach((n) => (n.after || []).forEach((a) => {
    if (!g.hasNode(a.node)) return; // a definition's error: the API refuses it, the drawing leaves it out
    const on = edgeOn(a);
    // the label has a size so dagre leaves room for it between the ranks; success, the default, is unlabelled
    g.setEdge(a.node, n.name, on === 'success' ? { on } : { on, width: on.length * 7 + 8, height: 14, labelpos: 'c' });
  }));
  dagre.layout(g);
  return g;
}

const shortName = (name, w) => {
  const fit = Math.floor((w - 16) / CHAR_W);
  return name.length <= fit ? name : name.slice(0, Math.max(1, fit - 1)) + '…';
};

const pathOf = (pts) => pts.map((p, i) => `${i ? 'L' : 'M'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ');

// draw renders the run (or definition) nodes into el as an SVG; href(node) is where a node box links to
// (none when it returns ''). It returns the SVG element.
export function draw(el, nodes, { href = () => '', label = 'Workflow graph' } = {}) {
  const g = layout(nodes);
  const { width, height } = g.graph();
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const edges = g.edges().map((e) => {
    const d = g.edge(e);
    const lab = d.on === 'success' ? '' : html`<text class="dag-on" x="${d.x.toFixed(1)}" y="${(d.y + 4).toFixed(1)}" text-anchor="middle">${d.on}</text>`;
    return html`<g class="dag-edge on-${d.on}" data-from="${e.v}" data-to="${e.w}" data-on="${d.on}">
      <path d="${pathOf(d.points)}" marker-end="url(#dag-arrow)"></path>${lab}</g>`;
  });
  const boxes = g.nodes().map((name) => {
    const p = g.node(name);
    const n = byName.get(name);
    const st = n.state || 'DEFINED';
    const x = p.x - p.width / 2;
    const y = p.y - p.height / 2;
    const box = html`<rect width="${p.width}" height="${p.height}" rx="6"></rect>
      <text class="dag-name" x="${p.width / 2}" y="19" text-anchor="middle">${shortName(name, p.width)}</text>
      <text class="dag-state" x="${p.width / 2}" y="36" text-anchor="middle">${n.state ? st : n.job}</text>
      <title>${name} (job ${n.job})${n.state ? `: ${st}` : ''}${n.error ? ` - ${n.error}` : ''}</title>`;
    const link = href(n);
    return html`<g class="dag-node dag-${st}" data-node="${name}" data-state="${st}" data-x="${p.x}" data-y="${p.y}"
      transform="translate(${x.toFixed(1)},${y.toFixed(1)})">${link ? html`<a href="${link}">${box}</a>` : box}</g>`;
  });
  setHTML(el, html`<svg class="dag" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="${label}"
      viewBox="0 0 ${Math.ceil(width)} ${Math.ceil(height)}" width="${Math.ceil(width)}" height="${Math.ceil(height)}">
    <defs><marker id="dag-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
      <path d="M0,0 L10,5 L0,10 z"></path></marker></defs>
    <g class="dag-edges">${edges}</g><g class="dag-nodes">${boxes}</g></svg>`);
  const svg = el.querySelector('svg');
  svg.dag = g;
  return svg;
}
