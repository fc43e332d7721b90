// A Node.js receiver for ejserver webhooks, verified with the official Standard Webhooks library
// (npm package "standardwebhooks"). It prints one line per delivery and keeps counts that a test (or you)
// can read at GET /stats.
//
//   npm ci
//   WEBHOOK_SECRET=whsec_... node server.js            # listens on 127.0.0.1:9092 (HOST, PORT to change)
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

const stats = { verified: 0, failed: 0, duplicates: 0, ids: [], errors: [] };
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
      stats.errors.push(why);
      if (stats.errors.length > 100) stats.errors.shift();
      console.log(`${new Date().toISOString().slice(11, 23)} ✗ rejected: ${why}`);
      return send(res, 401, { error: "signature verification failed" });
    }
    stats.verified++;
    const id = req.headers["webhook-id"];
    if (seen.has(id)) {
      stats.duplicates++;
      console.log(`${new Date().toISOString().slice(11, 23)} ↺ duplicate ${id}, already handled`);
      return send(res, 200, { hasMore: false });
    }
    remember(id);
    const p = payload;
    console.log(
      `${new Date().toISOString().slice(11, 23)} ✓ ${p.jobName} item ${p.shardingItem}/${p.shardingTotalCount}` +
        ` ${JSON.stringify(p.shardingParameter || "-")} ${p.source} attempt ${p.attempt} id ${id}`,
    );
    send(res, 200, { hasMore: false });
  });
});

server.listen(port, host, () => {
  const a = server.address();
  console.log(`listening on http://${a.address}:${a.port}`); // the test reads this line
});

for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, () => server.close(() => process.exit(0)));
}
