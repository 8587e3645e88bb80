# Sourced: start_registry starts `crane registry serve` on 127.0.0.1 (in
# memory), sets $registry to its host:port and stops it when the shell exits.
start_registry() {
  local log
  log=$(mktemp)
  "$CRANE" registry serve --address 127.0.0.1:0 2>"$log" &
  registry_pid=$!
  trap 'kill "$registry_pid" 2>/dev/null || true; wait "$registry_pid" 2>/dev/null || true' EXIT
  local port=""
  for _ in $(seq 100); do
    port=$(sed -n 's/.*serving on port \([0-9]*\).*/\1/p' "$log")
    [[ -n $port ]] && break
    kill -0 "$registry_pid" 2>/dev/null || break
    sleep 0.1
  done
  [[ -n $port ]] || { cat "$log" >&2; echo "crane registry serve did not start" >&2; return 1; }
  rm -f "$log"
  registry=127.0.0.1:$port
}
