#!/usr/bin/env bash
# `make test-run`: exercises `make run` as a user would. It starts `make run`
# (state in a temporary directory, free ports), waits until it says it is
# running, runs the kubectl (and curl) lines it printed exactly as printed,
# after the export line it printed (the kubectl plugin's PATH and the demo's
# kubeconfig), checks that they show the demo workspaces in their phases
# (the plugin's lines first, as printed), then presses
# Ctrl-C (SIGINT to make's process group, as a terminal does) and checks that
# kcp and the plugin are gone within 20 seconds.
#
# Environment: RUN_TIMEOUT (seconds until `make run` must say it is running,
# default 360), KEEP=1 keeps the temporary directory, SHARDS=2 exercises
# `make run SHARDS=2` instead (a sharded kcp: 89 s against 74 s, measured).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUN_TIMEOUT=${RUN_TIMEOUT:-360}
SHARDS=${SHARDS:-1}
STOP_TIMEOUT=20
# A sharded kcp is four processes, stopped one after the other.
[ "$SHARDS" = 1 ] || STOP_TIMEOUT=60
READY_LINE="workspacemounts is running against a local kcp"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/workspacemounts-test-run.XXXXXX")
STATE=$WORK/state
LOG=$WORK/make-run.log
: >"$LOG"
began=$(date +%s)
PGID=""
failed=1

say() { echo "test-run: $*"; }
elapsed() { echo "$(($(date +%s) - began))s"; }

tails() {
  echo "----- last 40 lines of the output of make run ($LOG) -----"
  tail -n 40 "$LOG" || true
  for f in "$STATE/kcp.log" "$STATE/workspacemounts.log" "$STATE"/sharded/kcp/*.log "$STATE/sharded/workspacemounts.log"; do
    if [ -f "$f" ]; then
      echo "----- last 30 lines of $f -----"
      tail -n 30 "$f" || true
    fi
  done
}

fail() {
  echo
  say "FAIL after $(elapsed): $*"
  tails
  exit 1
}

# group_pids lists the processes still in make's process group.
group_pids() {
  [ -n "$PGID" ] || return 0
  ps -e -o pid=,pgid= | awk -v g="$PGID" '$2 == g {print $1}'
}

finish() {
  local code=$?
  trap - EXIT INT TERM
  # Whatever of ours is left (only on failure): kill make's process group.
  if [ -n "$(group_pids)" ]; then
    say "killing what is left of make run (process group $PGID)"
    kill -KILL -- "-$PGID" 2>/dev/null || true
  fi
  if [ "$failed" = 0 ] && [ "${KEEP:-}" != 1 ]; then
    rm -rf "$WORK"
  else
    say "kept $WORK"
  fi
  exit "$code"
}
trap finish EXIT
trap 'fail "interrupted"' INT TERM

# free_port prints a TCP port on 127.0.0.1 that nothing listens on and that
# was not handed out before, below the ephemeral range.
used_ports=" "
free_port() {
  local port
  for _ in $(seq 1 200); do
    port=$((20000 + RANDOM % 12000))
    case "$used_ports" in *" $port "*) continue ;; esac
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      used_ports+="$port "
      echo "$port"
      return 0
    fi
  done
  return 1
}
# Not in $(...): used_ports must persist.
free_port >"$WORK/port" && KCP_PORT=$(cat "$WORK/port")
free_port >"$WORK/port" && VW_PORT=$(cat "$WORK/port")
free_port >"$WORK/port" && METRICS_PORT=$(cat "$WORK/port")
free_port >"$WORK/port" && ETCD_CLIENT_PORT=$(cat "$WORK/port")
free_port >"$WORK/port" && ETCD_PEER_PORT=$(cat "$WORK/port")
[ -n "${ETCD_PEER_PORT:-}" ] || fail "no free ports found"

say "starting make run (state $STATE, kcp port $KCP_PORT, virtual workspace port $VW_PORT, metrics 127.0.0.1:$METRICS_PORT, etcd $ETCD_CLIENT_PORT/$ETCD_PEER_PORT)"
# Job control: make runs in a process group of its own, as in a terminal,
# so that SIGINT reaches it and everything it started, like Ctrl-C does.
set -m
STATE=$STATE KCP_PORT=$KCP_PORT VW_PORT=$VW_PORT \
  METRICS_PORT=$METRICS_PORT ETCD_CLIENT_PORT=$ETCD_CLIENT_PORT ETCD_PEER_PORT=$ETCD_PEER_PORT \
  make --no-print-directory -C "$ROOT" run SHARDS="$SHARDS" </dev/null >"$LOG" 2>&1 &
MAKE_PID=$!
set +m
PGID=$MAKE_PID

say "waiting up to ${RUN_TIMEOUT}s for \"$READY_LINE\""
deadline=$((began + RUN_TIMEOUT))
until grep -qF "$READY_LINE" "$LOG"; do
  kill -0 "$MAKE_PID" 2>/dev/null || fail "make run exited before it said \"$READY_LINE\""
  [ "$(date +%s)" -lt "$deadline" ] || fail "make run did not say \"$READY_LINE\" within ${RUN_TIMEOUT}s"
  sleep 1
done
# The text block ends with the "Logs:" line.
until grep -q "^Logs: " "$LOG"; do
  [ "$(date +%s)" -lt "$deadline" ] || fail "make run did not finish printing its instructions"
  sleep 0.2
done
say "make run is running after $(elapsed)"

# The processes to see gone after Ctrl-C: hack/run (make's child, in its
# process group) starts kcp's processes and the plugin, each in a process
# group of its own.
RUNNER_PID=$(ps -e -o pid=,pgid=,args= | awk -v g="$PGID" -v b="$ROOT/bin/run" '$2 == g && $3 == b {print $1}')
[ -n "$RUNNER_PID" ] || fail "no $ROOT/bin/run process in make run's process group $PGID"
PLUGIN_PID=$(ps -o pid=,args= --ppid "$RUNNER_PID" | awk -v b="$ROOT/bin/workspacemounts" '$2 == b && $3 == "start" {print $1}')
KCP_PID=$(ps -o pid= --ppid "$RUNNER_PID" | grep -vx " *$PLUGIN_PID" | xargs)
[ -n "$PLUGIN_PID" ] || fail "no $ROOT/bin/workspacemounts process among the children of hack/run (pid $RUNNER_PID)"
if [ "$SHARDS" = 1 ]; then
  [ "$(wc -w <<<"$KCP_PID")" = 1 ] || fail "expected kcp as the one other child of hack/run (pid $RUNNER_PID), found: $KCP_PID"
else
  [ "$(wc -w <<<"$KCP_PID")" -ge 4 ] || fail "expected the cache server, two shards and the front-proxy as children of hack/run (pid $RUNNER_PID), found: $KCP_PID"
fi
say "kcp is pid(s) $KCP_PID, workspacemounts is pid $PLUGIN_PID"

# The printed commands: lines from the ready line to "Logs:" that start with
# kubectl or curl, joined over trailing backslashes.
mapfile -t COMMANDS < <(sed -n "/$READY_LINE/,/^Logs: /p" "$LOG" | awk '
  cont { line = line " " $0 }
  !cont && /^[[:space:]]*(kubectl|curl) / { line = $0; cont = 1 }
  cont {
    if (line ~ /\\[[:space:]]*$/) { sub(/\\[[:space:]]*$/, "", line); next }
    sub(/^[[:space:]]+/, "", line); print line; cont = 0
  }')
ENV_LINE=$(sed -n "/$READY_LINE/,/^Logs: /p" "$LOG" | grep -m1 -E '^[[:space:]]*export ' || true)
[ -n "$ENV_LINE" ] || fail "make run printed no export line for the kubectl plugin"
say "make run printed ${#COMMANDS[@]} commands, after: $ENV_LINE"
[ "${#COMMANDS[@]}" -ge 5 ] || fail "expected at least 5 kubectl lines in the instructions, found ${#COMMANDS[@]}"

# command_like PATTERN: sets CMD to the first printed command matching PATTERN (grep -E).
command_like() {
  local c
  for c in "${COMMANDS[@]}"; do
    if grep -qE -- "$1" <<<"$c"; then
      CMD=$c
      return 0
    fi
  done
  fail "no printed command matches /$1/; the commands: $(printf '\n  %s' "${COMMANDS[@]}")"
}

# run_printed CMD: runs a printed command line exactly as printed, bounded.
# Output in $OUT, exit code in $RC.
run_printed() {
  set +e
  OUT=$(timeout "${2:-60}" bash -c "$ENV_LINE; $1" 2>&1)
  RC=$?
  set -e
}

# has_rows OUTPUT NAME=PHASE...: each NAME appears as a field of a row that
# also has PHASE as a field, at least MIN_ROWS times (default 1).
has_rows() {
  local out=$1 pair name phase n missing=""
  shift
  for pair in "$@"; do
    name=${pair%%=*} phase=${pair#*=}
    n=$(awk -v name="$name" -v phase="$phase" '
      { hn = 0; hp = 0; for (i = 1; i <= NF; i++) { if ($i == name) hn = 1; if ($i == phase) hp = 1 } if (hn && hp) c++ }
      END { print c + 0 }' <<<"$out")
    [ "$n" -ge "${MIN_ROWS:-1}" ] || missing+=" $name=$phase(x$n)"
  done
  [ -z "$missing" ] || { WHY="no row (or too few) for:$missing"; return 1; }
}

# eventually SECONDS DESCRIPTION CMD CHECK...: reruns CMD until the check passes.
eventually() {
  local seconds=$1 what=$2 cmd=$3
  shift 3
  local until=$(($(date +%s) + seconds))
  while :; do
    run_printed "$cmd"
    WHY="exit code $RC"
    if [ "$RC" = 0 ] && "$@" "$OUT"; then return 0; fi
    if [ "$(date +%s)" -ge "$until" ]; then
      fail "$what: not within ${seconds}s ($WHY). The command, as printed:
  $cmd
its last output:
$OUT"
    fi
    sleep 1
  done
}

demo_rows() { has_rows "$1" connecting=Connecting missing=NotFound no-url=Ready ready=Ready; }
demo_rows_both() { MIN_ROWS=2 has_rows "$1" connecting=Connecting missing=NotFound no-url=Ready ready=Ready; }

# The kubectl plugin's lines, printed first. The tree of the demo's context.
command_like '^kubectl workspacemounts tree -A'
[ "$CMD" = "${COMMANDS[0]}" ] || fail "the first printed command is not the plugin's tree -A but: ${COMMANDS[0]}"
cmd=$CMD
say "running: $cmd"
eventually 90 "the plugin's tree shows the demo's mounts" "$cmd" demo_rows
echo "$OUT"

# why, of a mount that is not ready.
command_like '^kubectl workspacemounts why '
cmd=$CMD
say "running: $cmd"
not_ready() { grep -qE '^Verdict: +the mount is not ready.*Connecting' <<<"$1" || { WHY="no verdict: not ready, Connecting"; return 1; }; }
eventually 60 "the plugin's why says connecting is not ready" "$cmd" not_ready
echo "$OUT"

# get -w: its initial list, then it keeps running until stopped.
command_like '^kubectl workspacemounts get -w'
cmd=$CMD
say "running for 10s: $cmd"
run_printed "$cmd" 10
[ "$RC" = 124 ] || fail "the plugin's watch exited by itself (code $RC) instead of watching:
$OUT"
demo_rows "$OUT" || fail "the plugin's watch did not list the demo ($WHY):
$OUT"

# 1. every mounted workspace, through kcp's URL (both demo workspaces).
command_like 'services/workspacemounts/clusters/\*.* get workspacemounts'
cmd=$CMD
say "running: $cmd"
eventually 90 "the wildcard list of workspacemounts shows both demos" "$cmd" demo_rows_both
echo "$OUT"

# 2. the watch: its initial list, then it keeps running until stopped.
command_like 'get wsm -w'
cmd=$CMD
say "running for 10s: $cmd"
run_printed "$cmd" 10
[ "$RC" = 124 ] || fail "the watch exited by itself (code $RC) instead of watching:
$OUT"
demo_rows "$OUT" || fail "the watch did not list the demo ($WHY):
$OUT"

# 3. the annotations, by kcp's own API.
command_like 'get workspaces'
annotations=$CMD
say "running: $annotations"
eventually 60 "the annotations of root:demo-a" "$annotations" demo_rows
echo "$OUT"

# 4. the whole status of one.
command_like 'get workspace connecting'
cmd=$CMD
say "running: $cmd"
has_status() {
  grep -q '"phase":"Connecting"' <<<"$1" && grep -q 'NoHeartbeat' <<<"$1" || { WHY="no Connecting phase with the NoHeartbeat condition"; return 1; }
}
eventually 30 "the status annotation of connecting" "$cmd" has_status
echo "$OUT"

# 5. flip the mount: the annotation follows.
command_like 'patch kubecluster connecting'
cmd=$CMD
say "running: $cmd"
run_printed "$cmd"
[ "$RC" = 0 ] || fail "the printed patch failed (code $RC): $OUT"
flipped() { has_rows "$1" connecting=Ready missing=NotFound no-url=Ready ready=Ready; }
eventually 60 "the annotation after the flip" "$annotations" flipped
say "after the flip, the annotations read:"
echo "$OUT"

# 6. metrics and health.
command_like '^curl .*/metrics'
cmd=$CMD
say "running: $cmd"
has_metrics() { grep -q '^workspacemounts_mounted_workspaces{' <<<"$1" || { WHY="no workspacemounts_mounted_workspaces series"; return 1; }; }
eventually 30 "the printed metrics line" "$cmd" has_metrics
command_like '^curl .*/readyz'
cmd=$CMD
say "running: $cmd"
is_ok() { [ "$1" = ok ] || { WHY="not ok"; return 1; }; }
eventually 30 "the printed readyz line" "$cmd" is_ok

# 7. which mount contract the demo follows, in one line; with a mount provider
# (kcp has v0.33's --mount-proxy-server-ca-file, one shard), its printed whoami line.
grep -qE "has no v0.33 mount proxy|has a v0.33 mount proxy" "$LOG" || fail "make run did not say whether its demo mounts a mount provider"
if grep -q "has a v0.33 mount proxy" "$LOG" && [ "$SHARDS" = 1 ]; then
  command_like 'root:demo-a:ready auth whoami'
  cmd=$CMD
  say "running: $cmd"
  has_username() { grep -q '^Username' <<<"$1" || { WHY="no Username row"; return 1; }; }
  eventually 60 "the printed whoami line, through the mount" "$cmd" has_username
  echo "$OUT"
fi

# Ctrl-C: SIGINT to make's process group.
say "pressing Ctrl-C (SIGINT to process group $PGID)"
kill -INT -- "-$PGID"
stop_began=$(date +%s)
while :; do
  left=""
  for pid in $KCP_PID; do kill -0 "$pid" 2>/dev/null && left+=" kcp(pid $pid)"; done
  kill -0 "$PLUGIN_PID" 2>/dev/null && left+=" workspacemounts(pid $PLUGIN_PID)"
  kill -0 "$MAKE_PID" 2>/dev/null && left+=" make(pid $MAKE_PID)"
  [ -n "$left" ] || break
  if [ $(($(date +%s) - stop_began)) -ge "$STOP_TIMEOUT" ]; then
    fail "still running ${STOP_TIMEOUT}s after Ctrl-C:$left"
  fi
  sleep 0.2
done
wait "$MAKE_PID" 2>/dev/null || true
stopped_after=$(($(date +%s) - stop_began))
rest=$(group_pids)
[ -z "$rest" ] || fail "processes of make run still running after Ctrl-C: $rest"
ports="$KCP_PORT $VW_PORT $METRICS_PORT"
[ "$SHARDS" != 1 ] || ports+=" $ETCD_CLIENT_PORT" # a sharded kcp's shards pick theirs
for port in $ports; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    fail "port $port still accepts connections after Ctrl-C"
  fi
done
grep -q "Stopping workspacemounts and kcp" "$LOG" || fail "make run did not say it was stopping"

failed=0
say "PASS in $(elapsed): make run started, its printed lines worked, Ctrl-C stopped kcp and the plugin in ${stopped_after}s"
