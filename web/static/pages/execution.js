// One item execution (#/executions/ID): what ran, when, its result, and what replays link: replayOf names the
// execution a replay re-runs (POST /api/v1/executions/{id}/replay), shown as a link to it. A failed one can be
// replayed from here.
import { html, $, setHTML, api, path, when, outcome, duration, canWrite, quiet, loadError } from '../lib.js';
import { announce } from '../ui.js';

// shortID names an execution in a table: its ids are UUIDv7, whose first characters are a time stamp shared by
// the executions of one moment, so the end (random) tells them apart.
export const shortID = (id) => `…${id.slice(-8)}`;

// replayLink is the "replay of …" note of an execution that re-runs another (empty for the others).
export const replayLink = (e) => (e.replayOf
  ? html`<br><small class="replay-of">replay of <a href="#/executions/${encodeURIComponent(e.replayOf)}">${shortID(e.replayOf)}</a></small>`
  : '');

export function executionScreen(main, r) {
  const id = r.parts[1];
  setHTML(main, html`
    <nav class="crumbs" aria-label="Breadcrumb"><a href="#/executions">Executions</a> <span aria-hidden="true">/</span> <span aria-current="page" class="mono">${id}</span></nav>
    <div class="head"><h1 tabindex="-1">Execution</h1><div class="actions" id="exec-actions"></div></div>
    <div id="exec-one-error"></div>
    <dl class="kv" id="exec-one"></dl>`);
  let exec = null;
  main.addEventListener('click', async (ev) => {
    if (!ev.target.closest('[data-replay]') || !exec) return;
    try {
      const { data } = await api('POST', `/api/v1/executions/${path(exec.id)}/replay`);
      announce(html`Replayed as <a href="#/executions/${encodeURIComponent(data.id)}">${shortID(data.id)}</a>.`);
    } catch (e) {
      if (!quiet(e)) announce(e.message, 'error');
    }
  });
  return {
    live: true,
    async refresh() {
      exec = (await api('GET', `/api/v1/executions/${path(id)}`)).data;
      const e = exec;
      const failed = !!e.completedAt && !e.success;
      setHTML($('#exec-actions', main), canWrite() && failed ? html`<button type="button" data-replay>Replay</button>` : '');
      setHTML($('#exec-one', main), html`
        <div><dt>Job</dt><dd><a href="#/jobs/${encodeURIComponent(e.jobName)}">${e.jobName}</a></dd></div>
        <div><dt>Item</dt><dd>${String(e.shardingItem)} of ${String(e.shardingTotalCount)}</dd></div>
        <div><dt>Source</dt><dd><span class="source">${e.source}</span></dd></div>
        ${e.replayOf ? html`<div class="wide"><dt>Replay of</dt><dd><a id="exec-replay-of" class="mono" href="#/executions/${encodeURIComponent(e.replayOf)}">${e.replayOf}</a></dd></div>` : ''}
        <div><dt>Result</dt><dd>${outcome(e)}</dd></div>
        <div><dt>Scheduled</dt><dd>${when(e.scheduledAt)}</dd></div>
        <div><dt>Started</dt><dd>${when(e.startedAt)}</dd></div>
        <div><dt>Completed</dt><dd>${when(e.completedAt)}</dd></div>
        <div><dt>Attempts</dt><dd>${String(e.attempts)}</dd></div>
        <div><dt>Duration</dt><dd>${duration(e.durationMs)}</dd></div>
        <div><dt>Instance</dt><dd class="mono">${e.instanceId}</dd></div>
        <div class="wide"><dt>Webhook id</dt><dd class="mono">${e.id}</dd></div>
        ${e.failureCause ? html`<div class="wide"><dt>Failure cause</dt><dd class="cause">${e.failureCause}</dd></div>` : ''}
        ${e.responseExcerpt ? html`<div class="wide"><dt>Response</dt><dd><pre class="excerpt">${e.responseExcerpt}</pre></dd></div>` : ''}`);
    },
    fail: (e) => loadError($('#exec-one-error', main), e),
  };
}
