#!/usr/bin/env bash
# make run: a local ZooKeeper (installed if missing), one ejserver peer with its SQLite history, the demo
# webhook receiver, and a demo job (every 5 s, 3 items) whose webhook calls print in this terminal.
# Ctrl-C stops everything this script started, by PID. Everything lives in .run/ (git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUN=$ROOT/.run
mkdir -p "$RUN"
. scripts/zk.sh

free_port() { # preferred port if free, else any free one
  if [ -z "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]; then echo "$1"; else zk_free_port; fi
}

# a previous run that was killed hard may have left its processes: stop them by their PID files
stop_pidfile() {
  local f=$1 pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then kill "$pid" 2>/dev/null || true; fi
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$f"
}
stop_pidfile "$RUN/ejserver.pid"
stop_pidfile "$RUN/receiver.pid"
zk_stop "$RUN/zk"

scripts/deps.sh zookeeper java
echo "building..."
go build -o "$ROOT/bin/ejserver" ./cmd/ejserver
go build -o "$ROOT/bin/demo-receiver" ./examples/webhooks/go-receiver

cleanup() {
  trap - INT TERM EXIT
  echo
  echo "stopping ejserver, the receiver and ZooKeeper..."
  stop_pidfile "$RUN/ejserver.pid"
  stop_pidfile "$RUN/receiver.pid"
  zk_stop "$RUN/zk"
  echo "stopped. (data kept in .run/; delete it for a clean start)"
}
trap 'cleanup; exit 0' INT TERM
trap cleanup EXIT

echo "starting ZooKeeper..."
ZK=$(zk_start "$RUN/zk" "$(free_port 2181)")
API_PORT=$(free_port 8080)
RECV_PORT=$(free_port 9090)
API="http://127.0.0.1:$API_PORT"
SECRET="whsec_$(head -c 32 /dev/urandom | base64 -w0)"

WEBHOOK_SECRET="$SECRET" "$ROOT/bin/demo-receiver" -listen "127.0.0.1:$RECV_PORT" &
echo $! >"$RUN/receiver.pid"

"$ROOT/bin/ejserver" serve --zk "$ZK" --listen "127.0.0.1:$API_PORT" --data-dir "$RUN/data" \
  --session-timeout 6s >"$RUN/ejserver.log" 2>&1 &
echo $! >"$RUN/ejserver.pid"

for _ in $(seq 1 150); do
  curl -fsS "$API/readyz" >/dev/null 2>&1 && break
  kill -0 "$(cat "$RUN/ejserver.pid")" 2>/dev/null || { echo "ejserver exited; its log:"; cat "$RUN/ejserver.log"; exit 1; }
  sleep 0.2
done

JOB=$(cat <<JSON
{"jobName": "demo", "cron": "0/5 * * * * ?", "shardingTotalCount": 3,
 "shardingItemParameters": "0=Beijing,1=Shanghai,2=Guangzhou", "jobParameter": "batch=500",
 "description": "make run's demo job: every 5 seconds, 3 items",
 "webhook": {"url": "http://127.0.0.1:$RECV_PORT/webhook", "secret": "$SECRET"}}
JSON
)
code=$(curl -sS -o "$RUN/create.json" -w '%{http_code}' -X POST "$API/api/v1/jobs" -H 'Content-Type: application/json' -d "$JOB")
if [ "$code" = 409 ]; then # left from an earlier run: bring it up to date
  code=$(curl -sS -o "$RUN/create.json" -w '%{http_code}' -X PUT "$API/api/v1/jobs/demo" -H 'Content-Type: application/json' -d "$JOB")
fi
case "$code" in 200|201) ;; *) echo "could not register the demo job (HTTP $code):"; cat "$RUN/create.json"; exit 1 ;; esac

cat <<EOF

  ejserver is running.
    API          $API/api/v1/jobs        (log: .run/ejserver.log)
    ZooKeeper    $ZK                      (namespace /ejserver)
    receiver     http://127.0.0.1:$RECV_PORT/webhook   (verifies signatures with the demo job's secret)

  The demo job fires every 5 seconds; each of its 3 items arrives below as one signed webhook.
  Try:  curl -s -X POST $API/api/v1/jobs/demo/trigger -H 'Content-Type: application/json' -d '{"jobParameter":"by-hand","items":[1]}'
  Ctrl-C stops everything.

EOF
wait "$(cat "$RUN/ejserver.pid")" || true
echo "ejserver exited; the end of its log:"
tail -20 "$RUN/ejserver.log"
