#!/usr/bin/env bash
# make cluster / make cluster-stop: the deployment of docs/deployment.md on one machine, for trying and for
# tests. HAProxy (deploy/haproxy.cfg), CLUSTER_INSTANCES explorer instances on one DATA_DIR, one ingest
# follower, one notifier, and a Redis Cluster of three primaries and three replicas, all on loopback. Each process's pid
# is in $DATA_DIR/cluster/<name>.pid and its log in $DATA_DIR/cluster/<name>.log. `start` starts only what is
# not running (so it brings back a process that died or was stopped); `stop` stops what those pid files
# name, and nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${DATA_DIR:=./data}"
: "${CLUSTER_HOST:=127.0.0.1}"
: "${CLUSTER_PORT:=8080}"
: "${CLUSTER_INSTANCES:=3}"
# deploy/haproxy.cfg names up to nine instances (EXPLORER_1 … EXPLORER_9).
if [ "$CLUSTER_INSTANCES" -lt 1 ] || [ "$CLUSTER_INSTANCES" -gt 9 ]; then echo "CLUSTER_INSTANCES must be 1 to 9" >&2; exit 2; fi
: "${CLUSTER_INSTANCE_PORT:=8081}"
: "${CLUSTER_REDIS_PORT:=7001}"
: "${CLUSTER_NODE_TIMEOUT_MS:=5000}"
DATA_DIR=$(mkdir -p "$DATA_DIR" && cd "$DATA_DIR" && pwd)
DIR="$DATA_DIR/cluster"
CLI=(node dist/src/cli/main.js)
REDIS_PORTS=()
for i in 0 1 2 3 4 5; do REDIS_PORTS+=($((CLUSTER_REDIS_PORT + i))); done
REDIS_CLUSTER=$(printf "$CLUSTER_HOST:%s," "${REDIS_PORTS[@]}"); REDIS_CLUSTER=${REDIS_CLUSTER%,}
export DATA_DIR REDIS_CLUSTER

# Whether <name>'s pid file names a live process of that program (a pid reused by another is not ours).
running() {
  local pid
  pid=$(cat "$DIR/$1.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$2"
}

# start <name> <program pattern> <command…>: in the background, its output in <name>.log, its pid in <name>.pid.
start() {
  local name=$1 pattern=$2; shift 2
  if running "$name" "$pattern"; then echo "  $name: running (pid $(cat "$DIR/$name.pid"))"; return; fi
  nohup "$@" >> "$DIR/$name.log" 2>&1 < /dev/null &
  echo $! > "$DIR/$name.pid"
  echo "  $name: started (pid $!)"
}

# Polls `$@` until it succeeds, for up to $1 seconds.
await() {
  local seconds=$1; shift
  for _ in $(seq $((seconds * 10))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "cluster: gave up waiting for: $*" >&2
  return 1
}

cluster_ok() { redis-cli -h "$CLUSTER_HOST" -p "${REDIS_PORTS[0]}" cluster info | grep -q 'cluster_state:ok'; }

do_start() {
  mkdir -p "$DIR"
  echo "Redis Cluster (${REDIS_PORTS[*]}):"
  for port in "${REDIS_PORTS[@]}"; do
    mkdir -p "$DIR/redis-$port"
    # Appends every write to disk: a node that is restarted (a primary that was killed) comes back with its
    # data and its place in the cluster (nodes.conf), as a replica of whichever node took over.
    start "redis-$port" redis-server redis-server --bind "$CLUSTER_HOST" --port "$port" --dir "$DIR/redis-$port" \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout "$CLUSTER_NODE_TIMEOUT_MS" \
      --cluster-require-full-coverage no --appendonly yes --save '' --daemonize no
  done
  for port in "${REDIS_PORTS[@]}"; do await 10 redis-cli -h "$CLUSTER_HOST" -p "$port" ping; done
  if redis-cli -h "$CLUSTER_HOST" -p "${REDIS_PORTS[0]}" cluster info | grep -q 'cluster_slots_assigned:0'; then
    redis-cli --cluster create $(printf "$CLUSTER_HOST:%s " "${REDIS_PORTS[@]}") --cluster-replicas 1 --cluster-yes > "$DIR/redis-create.log"
  fi
  await 30 cluster_ok

  if [ ! -s "$DATA_DIR/snapshots/CURRENT" ]; then
    echo "No snapshot yet: generating and loading the sample…"
    "${CLI[@]}" sample "$DATA_DIR/sample-source" --organizations "${SAMPLE_ORGANIZATIONS:-40}" --workspaces "${SAMPLE_WORKSPACES:-20000}" --days "${SAMPLE_DAYS:-7}"
    "${CLI[@]}" load-series "$DATA_DIR/sample-source"
  fi

  echo "explorer instances:"
  local servers=()
  for i in $(seq 1 9); do unset "EXPLORER_$i"; done
  for i in $(seq 1 "$CLUSTER_INSTANCES"); do
    local port=$((CLUSTER_INSTANCE_PORT + i - 1))
    # Each instance reads its settings from this environment (RATE_LIMIT_MAX, SNAPSHOT_POLL_MS, …); these
    # four are the cluster's.
    HOST="$CLUSTER_HOST" PORT="$port" TRUST_PROXY=1 SHUTDOWN_DRAIN_MS="${SHUTDOWN_DRAIN_MS:-3000}" UV_THREADPOOL_SIZE="${UV_THREADPOOL_SIZE:-32}" \
      start "explorer-$i" "main.js serve" "${CLI[@]}" serve
    servers+=("EXPLORER_$i=$CLUSTER_HOST:$port")
  done
  # The one writer of DATA_DIR: batches renamed into spool/incoming/ reach every instance by the snapshot switch.
  mkdir -p "$DATA_DIR/spool/incoming"
  start ingest "main.js ingest" "${CLI[@]}" ingest "$DATA_DIR/spool"
  start notify "main.js notify" "${CLI[@]}" notify
  for i in $(seq 1 "$CLUSTER_INSTANCES"); do await 60 curl -sf "http://$CLUSTER_HOST:$((CLUSTER_INSTANCE_PORT + i - 1))/readyz"; done

  echo "HAProxy:"
  # deploy/haproxy.cfg as it is shipped: the instances' addresses in its environment.
  start haproxy haproxy env "${servers[@]}" HAPROXY_SOCKET="$DIR/haproxy.sock" CLUSTER_HOST="$CLUSTER_HOST" CLUSTER_PORT="$CLUSTER_PORT" \
    haproxy -db -f deploy/haproxy.cfg
  await 10 curl -sf "http://$CLUSTER_HOST:$CLUSTER_PORT/healthz"

  local token
  token=$("${CLI[@]}" token create --organization acme-corp --description "make cluster" 2>/dev/null | tail -n 1)
  echo
  echo "Through HAProxy, token for organization acme-corp: $token"
  echo "  curl -s -H 'Authorization: Bearer $token' 'http://$CLUSTER_HOST:$CLUSTER_PORT/api/v2/organizations/acme-corp/explorer?type=providers&page%5Bsize%5D=5'"
  echo "Logs and pid files: $DIR. Stop it all: make cluster-stop"
}

# stop_together <name…>: SIGTERM to each of them that runs, then waits for them all (SIGKILL after 15 s).
stop_together() {
  local name pid pattern stopping=()
  for name in "$@"; do
    pid=$(cat "$DIR/$name.pid" 2>/dev/null) || continue
    pattern=${name%%-*}; [ "$pattern" = explorer ] && pattern="main.js serve"; [ "$pattern" = ingest ] && pattern="main.js ingest"; [ "$pattern" = notify ] && pattern="main.js notify"; [ "$pattern" = redis ] && pattern=redis-server
    if running "$name" "$pattern"; then kill -TERM "$pid"; stopping+=("$name=$pid"); else rm -f "$DIR/$name.pid"; fi
  done
  for _ in $(seq 150); do
    local alive=0 entry
    for entry in "${stopping[@]}"; do kill -0 "${entry#*=}" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for entry in "${stopping[@]}"; do
    kill -0 "${entry#*=}" 2>/dev/null && kill -KILL "${entry#*=}"
    echo "  ${entry%%=*}: stopped"
    rm -f "$DIR/${entry%%=*}.pid"
  done
}

do_stop() {
  [ -d "$DIR" ] || return 0
  # HAProxy first, so that no request reaches an instance that is stopping; Redis last. Those in between
  # stop together, and so do the Redis nodes.
  local names=(ingest notify) redis=() f
  for f in "$DIR"/explorer-*.pid; do [ -e "$f" ] && names+=("$(basename "$f" .pid)"); done
  for f in "$DIR"/redis-*.pid; do [ -e "$f" ] && redis+=("$(basename "$f" .pid)"); done
  stop_together haproxy
  stop_together "${names[@]}"
  [ "${#redis[@]}" -gt 0 ] && stop_together "${redis[@]}"
  return 0
}

case "${1:-}" in
  start) do_start ;;
  stop) do_stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
