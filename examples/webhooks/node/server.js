// A Node.js receiver for ejserver webhooks, verified with the official Standard Webhooks library
// (npm package "standardwebhooks"). It prints one line per delivery and keeps counts that a test (or you)
// can read at GET /stats.
//
//   npm ci
//   WEBHOOK_SECRET=whsec_... node server.js            # listens on 127.0.0.1:9092 (HOST, PORT to change)
//   WEBHOOK_SECRET=whsec_... ASYNC_MS=5000 node server.js
//
// With ASYNC_MS set, every item is a long-running one (docs/long-running.md): answered 202 Accepted at once,
// kept alive with progress heartbeats, and completed ASYNC_MS later through ejserver's callback, using the
// callbackUrl and callbackToken of the delivery (node's built-in fetch; no other dependency).
"use strict";

const http = require("node:http");
const { Webhook, WebhookVerificationError } = require("standardwebhooks");

const secret = process.env.WEBHOOK_SECRET;
if (!secret) {
  console.error("node receiver: set WEBHOOK_SECRET to the job's secret (whsec_...), as ejserver returned it");
  process.exit(2);
}
const wh = new Webhook(secret); // accepts the "whsec_" prefix
const host = process.env.HOST || "127.0.0.1";
const port = Number(process.env.PORT ?? 9092);
const maxBody = 1 << 20;
const asyncMs = Number(process.env.ASYNC_MS || 0);

const stats = {
  verified: 0, failed: 0, duplicates: 0, ids: [], errors: [],
  // async mode: items answered 202, heartbeats and completions ejserver answered 200, items stopped
  // because ejserver said they were over, callbacks that failed for good
  accepted: 0, heartbeats: 0, completed: 0, stopped: 0, callbackErrors: 0,
};
const seen = new Map(); // webhook-id -> time seen; bounded below
const maxSeen = 10000;

function remember(id) {
  seen.set(id, Date.now());
  if (seen.size > maxSeen) seen.delete(seen.keys().next().value); // oldest first (insertion order)
  stats.ids.push(id);
  if (stats.ids.length > 1000) stats.ids.shift();
}

function send(res, status, body) {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body));
}

function now() {
  return new Date().toISOString().slice(11, 23);
}

function noteError(why) {
  stats.errors.push(why);
  if (stats.errors.length > 100) stats.errors.shift();
}

// ---- async mode: the client side of docs/long-running.md ----

const items = new Map(); // webhook-id -> accepted item (running, or done with its completion kept)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// callback POSTs {item.url}/{op} with the item's current token, and sends it again with back-off on a network
// error, a timeout, 408, 429 (honouring Retry-After) or 5xx, up to `attempts` times. 400, 401, 404 and 409 are
// final. It resolves to {status, lease} or {status, problem} (status 0: never answered).
async function callback(item, op, body, attempts = 8) {
  let wait = 500;
  for (let attempt = 1; ; attempt++) {
    const token = item.token;
    let status = 0, answer = null, retryAfter = 0;
    try {
      const res = await fetch(`${item.url.replace(/\/$/, "")}/${op}`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(10000),
      });
      status = res.status;
      retryAfter = Number(res.headers.get("retry-after")) * 1000 || 0;
      const text = await res.text();
      try { answer = text ? JSON.parse(text) : null; } catch { answer = null; }
    } catch (err) {
      answer = { detail: String(err.cause?.code || err.message) }; // refused, dropped, timed out: retry
    }
    if (status >= 200 && status < 300) return { status, lease: answer || {} };
    const problem = answer && typeof answer.type === "string" ? answer.type.split("/").pop() : "";
    // A later attempt's delivery brought a new token while this one was on the way: send it again with that.
    if (status === 409 && problem === "stale-attempt" && item.token !== token) continue;
    const temporary = status === 0 || status === 408 || status === 429 || status >= 500;
    if (!temporary || attempt >= attempts || item.cancelled) return { status, problem, detail: answer?.detail };
    await sleep(Math.max(wait / 2 + Math.random() * (wait / 2), Math.min(retryAfter, 30000)));
    wait = Math.min(wait * 2, 30000);
  }
}

// accept starts an accepted item's simulated work: a progress heartbeat every fifth of ASYNC_MS (at most a
// third of the lease apart; one attempt each, the next is the retry), and the completion ASYNC_MS after the
// start.
function accept(id, p, cb) {
  const item = { id, p, url: cb.url, token: cb.token, attempt: p.attempt || 0, completion: null, cancelled: false };
  items.set(id, item);
  if (items.size > maxSeen) items.delete(items.keys().next().value); // oldest first (insertion order)
  stats.accepted++;
  const lease = (p.leaseSeconds || 60) * 1000;
  const every = Math.max(10, Math.min(asyncMs / 5, lease / 3));
  const started = Date.now();
  const where = `${p.jobName} item ${p.shardingItem}/${p.shardingTotalCount}`;
  console.log(`${now()} ⏳ ${where} accepted (202), completing in ${asyncMs} ms id ${id}`);

  const beat = async () => {
    const progress = Math.min(99, Math.floor(((Date.now() - started) * 100) / asyncMs));
    const r = await callback(item, "heartbeat", { progress, message: `${progress}% done` }, 1);
    if (r.lease) stats.heartbeats++;
    if (item.completion || item.cancelled) return;
    if (r.lease) {
      if (r.lease.state && r.lease.state !== "RUNNING") return stop(item, `the execution is ${r.lease.state}`);
      console.log(`${now()} … ${where} ${progress}% id ${id}`);
    } else if (r.status === 401 || r.status === 404 || r.status === 409) {
      return stop(item, `heartbeat answered ${r.status} ${r.problem}`); // the item is over for this token
    } else {
      failed(item, "heartbeat", r);
    }
    item.beat = setTimeout(beat, every);
  };
  item.beat = setTimeout(beat, every);
  item.done = setTimeout(() => finish(item, { status: "success", message: `done in ${asyncMs} ms`, hasMore: false }), asyncMs);
}

function clear(item) {
  clearTimeout(item.beat);
  clearTimeout(item.done);
}

// stop abandons an item ejserver says is over: no completion; a later delivery of it starts anew.
function stop(item, why) {
  if (item.cancelled || item.completion) return;
  item.cancelled = true;
  clear(item);
  items.delete(item.id);
  stats.stopped++;
  console.log(`${now()} ■ ${item.p.jobName} item ${item.p.shardingItem} stopped: ${why} id ${item.id}`);
}

function failed(item, op, r) {
  stats.callbackErrors++;
  const why = `${op} callback of ${item.id}: ${r.status || "no answer"} ${r.problem || ""} ${r.detail || ""}`.trim();
  noteError(why);
  console.log(`${now()} ! ${why}`);
}

// finish sends the completion (kept, to send again if a later attempt of the item is delivered).
async function finish(item, completion) {
  clear(item);
  item.completion = completion;
  item.sending = true;
  const r = await callback(item, "complete", completion);
  item.sending = false;
  if (r.lease) {
    stats.completed++;
    console.log(`${now()} ✓ ${item.p.jobName} item ${item.p.shardingItem} completed: ${completion.status} (ejserver: ${r.lease.state}) id ${item.id}`);
  } else {
    failed(item, "complete", r);
  }
}

// duplicate handles a repeated delivery of an accepted item: a later attempt brings the token to use from now
// on, and an item already done sends its completion again with it.
function duplicate(item, p, cb) {
  if (!(p.attempt > item.attempt)) return;
  item.attempt = p.attempt;
  item.token = cb.token;
  item.url = cb.url;
  if (item.completion && !item.sending) finish(item, item.completion);
}

function callbackOf(p, headers) {
  const url = p.callbackUrl || headers["ejserver-callback-url"];
  const token = p.callbackToken || headers["ejserver-callback-token"];
  return url && token ? { url, token } : null;
}

const server = http.createServer((req, res) => {
  if (req.method === "GET" && req.url === "/stats") return send(res, 200, stats);
  if (req.method === "GET" && req.url === "/healthz") return send(res, 200, { ok: true });

  const chunks = [];
  let size = 0;
  req.on("data", (c) => {
    size += c.length;
    if (size > maxBody) {
      send(res, 413, { error: "body too large" });
      req.destroy();
      return;
    }
    chunks.push(c);
  });
  req.on("end", () => {
    if (res.writableEnded) return;
    const raw = Buffer.concat(chunks).toString("utf8"); // verify the exact bytes that were signed
    let payload;
    try {
      payload = wh.verify(raw, req.headers); // checks webhook-id, webhook-timestamp (5 min) and webhook-signature
    } catch (err) {
      stats.failed++;
      const why = err instanceof WebhookVerificationError ? err.message : String(err);
      noteError(why);
      console.log(`${now()} ✗ rejected: ${why}`);
      return send(res, 401, { error: "signature verification failed" });
    }
    stats.verified++;
    const id = req.headers["webhook-id"];
    if (asyncMs > 0) {
      const cb = callbackOf(payload, req.headers);
      if (!cb) return send(res, 400, { error: "no callbackUrl and callbackToken: this ejserver does not support 202" });
      const item = items.get(id);
      if (item) {
        stats.duplicates++;
        console.log(`${now()} ↺ duplicate ${id}, already accepted (attempt ${payload.attempt})`);
        duplicate(item, payload, cb);
      } else {
        remember(id);
        accept(id, payload, cb);
      }
      return send(res, 202, { accepted: true });
    }
    if (seen.has(id)) {
      stats.duplicates++;
      console.log(`${now()} ↺ duplicate ${id}, already handled`);
      return send(res, 200, { hasMore: false });
    }
    remember(id);
    const p = payload;
    console.log(
      `${now()} ✓ ${p.jobName} item ${p.shardingItem}/${p.shardingTotalCount}` +
        ` ${JSON.stringify(p.shardingParameter || "-")} ${p.source} attempt ${p.attempt} id ${id}`,
    );
    send(res, 200, { hasMore: false });
  });
});

server.listen(port, host, () => {
  const a = server.address();
  console.log(`listening on http://${a.address}:${a.port}`); // the test reads this line
  if (asyncMs > 0) console.log(`async mode: answering 202, completing each item ${asyncMs} ms later by callback`);
});

for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, () => {
    // Items still running are left to their lease: ejserver POSTs them again when it runs out.
    for (const item of items.values()) clear(item);
    server.close(() => process.exit(0));
  });
}
