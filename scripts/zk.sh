# Vendored from the team's shared tools (tested helper); the project's scripts source it.
# zk.sh - run throwaway ZooKeeper servers (Debian 3.8.0 package) as plain
# background processes, no systemd. Source it:  . zk.sh
#   zk_install                      # apt-get install zookeeper if missing
#   zk_start DIR [PORT]             # standalone; prints "127.0.0.1:PORT"
#   zk_ensemble_start DIR [BASE]    # 3 nodes; prints "h:p1,h:p2,h:p3"
#   zk_stop DIR                     # stops every node under DIR by PID
# zookeeper.jar's manifest class path omits netty-codec.jar (SslHandler's parent class) and netty-resolver.jar:
# without them a secureClientPort (Netty connection factory with TLS) fails to start
ZK_CP=/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar:/usr/share/java/netty-codec.jar:/usr/share/java/netty-resolver.jar
ZK_TICK=${ZK_TICK:-500}          # ms; min session timeout = minSessionTimeout below

zk_install() {
  if [ ! -f /usr/share/java/zookeeper.jar ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zookeeper >/dev/null
  fi
}

# a free TCP port on 127.0.0.1 (best effort; checked with ss)
zk_free_port() {
  local p
  for p in $(shuf -i 20000-29999 -n 100); do
    [ -z "$(ss -Hltn "sport = :$p")" ] && { echo "$p"; return 0; }
  done
  return 1
}

# 4lw "srvr" via bash /dev/tcp (no nc needed); succeeds once the node serves
zk_ready() { # HOST PORT
  local out
  out=$(timeout 2 bash -c "exec 3<>/dev/tcp/$1/$2; echo srvr >&3; cat <&3" 2>/dev/null) || true
  [[ $out == *"Mode: standalone"* || $out == *"Mode: leader"* || $out == *"Mode: follower"* ]]
}

zk_wait() { # HOST PORT [TIMEOUT_S]
  local deadline=$((SECONDS + ${3:-60}))
  until zk_ready "$1" "$2"; do
    [ $SECONDS -ge $deadline ] && return 1
    sleep 0.2
  done
}

_zk_cfg() { # DIR CLIENTPORT  (common part of zoo.cfg)
  cat <<EOF
tickTime=$ZK_TICK
initLimit=10
syncLimit=5
minSessionTimeout=1000
maxSessionTimeout=60000
dataDir=$1/data
clientPort=$2
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
extendedTypesEnabled=true
maxClientCnxns=0
EOF
}

_zk_launch() { # NODEDIR
  ( cd "$1" && exec java -Xms64m -Xmx256m -cp "$ZK_CP" \
      -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
      -Dznode.container.checkIntervalMs=1000 ${ZK_JAVA_OPTS:-} \
      org.apache.zookeeper.server.quorum.QuorumPeerMain "$1/zoo.cfg" \
      >"$1/zk.log" 2>&1 ) &
  echo $! >"$1/zk.pid"
}

zk_start() { # DIR [PORT]
  local dir port
  dir=$(mkdir -p "$1" && cd "$1" && pwd); port=${2:-$(zk_free_port)}
  mkdir -p "$dir/data"
  _zk_cfg "$dir" "$port" >"$dir/zoo.cfg"
  _zk_launch "$dir"
  if ! zk_wait 127.0.0.1 "$port" 60; then
    echo "zookeeper did not start, log:" >&2; cat "$dir/zk.log" >&2; zk_stop "$dir"; return 1
  fi
  echo "127.0.0.1:$port"
}

zk_ensemble_start() { # DIR [BASEPORT]  client ports BASE+1..3, quorum BASE+11..13, election BASE+21..23
  local dir base i servers="" conn=""
  dir=$(mkdir -p "$1" && cd "$1" && pwd); base=${2:-}
  while [ -z "$base" ]; do   # pick a base whose 9 ports are all free
    base=$(( $(zk_free_port) / 100 * 100 ))
    for i in 1 2 3 11 12 13 21 22 23; do
      [ -n "$(ss -Hltn "sport = :$((base+i))")" ] && { base=; break; }
    done
  done
  for i in 1 2 3; do
    servers+="server.$i=127.0.0.1:$((base+10+i)):$((base+20+i))"$'\n'
    conn+="${conn:+,}127.0.0.1:$((base+i))"
  done
  for i in 1 2 3; do
    mkdir -p "$dir/n$i/data"
    echo "$i" >"$dir/n$i/data/myid"
    { _zk_cfg "$dir/n$i" "$((base+i))"; printf '%s' "$servers"; } >"$dir/n$i/zoo.cfg"
    _zk_launch "$dir/n$i"
  done
  for i in 1 2 3; do
    if ! zk_wait 127.0.0.1 "$((base+i))" 90; then
      echo "ensemble node $i did not start, log:" >&2; cat "$dir/n$i/zk.log" >&2; zk_stop "$dir"; return 1
    fi
  done
  echo "$conn"
}

zk_stop() { # DIR  (standalone dir or ensemble dir)
  local f pid n
  for f in "$1"/zk.pid "$1"/n*/zk.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null || true
    for n in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
    rm -f "$f"
  done
  return 0
}
