// How the console shows long-running items (docs/long-running.md): an item whose receiver answered 202 runs
// under a lease, reports progress and a message through heartbeats and ends through a callback. app.js calls
// ejserverAsync once with its HTML helpers and uses what it returns on the sharding view and the executions
// tables. Everything here renders through html``, which escapes: messages and output come from receivers.
'use strict';

window.ejserverAsync = ({ html, badge, when }) => {
  // span renders whole seconds as "42 s", "3 min 5 s", "2 h 10 min" or "3 d 4 h".
  function span(seconds) {
    const s = Math.max(0, Math.round(seconds));
    if (s < 120) return `${s} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
    if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
    return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
  }

  // leaseLeft counts to an expiry from the browser's clock, so the text moves with each refresh of the page.
  function leaseLeft(iso, { retrying } = {}) {
    if (!iso) return '';
    const s = (new Date(iso).getTime() - Date.now()) / 1000;
    const what = retrying ? 'answer due' : 'lease expires';
    if (s >= 0.5) return html`<time class="lease" datetime="${iso}" title="${new Date(iso).toLocaleString()}">${what} in ${span(s)}</time>`;
    // past it: the lease watcher acts within a second or two
    return html`<time class="lease late" datetime="${iso}" title="${new Date(iso).toLocaleString()}">${retrying ? 'answer overdue' : 'lease ran out'} ${span(-s)} ago</time>`;
  }

  // progress is a bar with the percentage, or "—" when the receiver reported none.
  function progress(p) {
    if (typeof p !== 'number') return html`<span class="progress none" title="The receiver reported no progress">—<span class="sr-only"> no progress reported</span></span>`;
    const v = Math.min(100, Math.max(0, p));
    return html`<span class="progress"><progress max="100" value="${v}" aria-label="Progress">${v}%</progress> <span class="pct">${v}%</span></span>`;
  }

  // message shows a receiver's message as text, cut to three lines (the whole of it in the tooltip).
  const message = (m) => (m ? html`<p class="async-msg" title="${m}">${m}</p>` : '');

  const attempt = (n) => (n > 1 ? html` <small class="attempt">attempt ${n}</small>` : '');

  // runningStatus is the Status cell of a sharding item running under a lease (running.async).
  function runningStatus(run) {
    const retrying = run.state === 'RETRYING';
    const facts = [
      run.source,
      run.elapsedMs ? `running ${span(run.elapsedMs / 1000)}` : '',
    ].filter(Boolean).join(' · ');
    return html`<div class="async">
      ${badge(run.state || 'RUNNING')}${attempt(run.attempt)}
      ${retrying ? html`<p class="retrying">The lease ran out: the item is being POSTed again.</p>` : ''}
      ${progress(run.progress)}
      ${message(run.message)}
      <small class="muted">${leaseLeft(run.leaseExpiresAt, { retrying })}${facts ? html`<br>${facts}` : ''}</small>
    </div>`;
  }

  const live = (e) => !e.completedAt && (e.state === 'RUNNING' || e.state === 'RETRYING');

  // result is the Result cell of an execution whose receiver accepted it: its state, progress and last message
  // (its attempt has a column of its own).
  function result(e) {
    return html`<div class="async">
      ${badge(e.state || 'RUNNING')}
      ${live(e) || typeof e.progress === 'number' ? progress(e.progress) : ''}
      ${message(e.message)}
      ${live(e) ? html`<small class="muted">${leaseLeft(e.leaseExpiresAt, { retrying: e.state === 'RETRYING' })}</small>` : ''}
    </div>`;
  }

  // runningFor is the Duration cell of an accepted execution still running.
  const runningFor = (e) => html`<span class="muted">${span((Date.now() - new Date(e.startedAt).getTime()) / 1000)} so far</span>`;

  // details is what an accepted execution adds to its Details disclosure: when a running one was last heard
  // from, and the output an ended one reported (labelled unless the disclosure's summary already says Output).
  function details(e, { summary } = {}) {
    const heard = live(e) && e.heartbeatAt
      ? html`<p class="heard"><span class="muted" title="The last heartbeat, or the 202 when no heartbeat came yet">Last heard</span>
          ${when(e.heartbeatAt)}</p>`
      : '';
    const output = e.output
      ? html`${summary === 'Output' ? '' : html`<p class="muted">Output</p>`}<pre class="excerpt output">${e.output}</pre>`
      : '';
    return heard || output ? html`${heard}${output}` : '';
  }

  return { runningStatus, result, runningFor, details, live };
};
