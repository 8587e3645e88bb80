#!/usr/bin/env bash
# `make run SHARDS=2`: a local sharded kcp (cache server, the root shard,
# shard-2 and a front-proxy, started by hack/run-sharded with the test
# framework's StartSharded), the workspacemounts plugin in sharded mode behind
# the front-proxy's /services/workspacemounts/, and a demo spread over both
# shards. Ctrl-C stops all. A fresh kcp every time, in $STATE/sharded.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
STATE=${STATE:-$ROOT/.kcp}
SHARDS=${SHARDS:-2}
VW_PORT=${VW_PORT:-0}
GO=${GO:-go}
BIN=$ROOT/bin
DEMO=$ROOT/hack/demo
DIR=$STATE/sharded
ENV_FILE=$STATE/sharded.env

mkdir -p "$STATE"
rm -f "$ENV_FILE"
(cd "$ROOT" && "$GO" build -o "$BIN/run-sharded" ./hack/run-sharded)

pid=""
cleanup() {
  trap - EXIT INT TERM
  echo
  echo "Stopping workspacemounts and kcp..."
  # run-sharded stops the plugin first (it releases its Lease while kcp
  # still answers), then the front-proxy, the shards and the cache server.
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

"$BIN/run-sharded" --dir "$DIR" --shards "$SHARDS" --virtual-workspace-port "$VW_PORT" --env-file "$ENV_FILE" &
pid=$!
until [ -f "$ENV_FILE" ]; do
  if ! kill -0 "$pid" 2>/dev/null; then echo "run-sharded exited before everything was ready."; exit 1; fi
  sleep 1
done
# FRONT_PROXY_URL, ADMIN_KUBECONFIG, METRICS_URL, PLUGIN_LOG, KCP_DIR, SHARD_NAMES, PLUGIN_PID, SHARD_2_PID
# shellcheck disable=SC1090
source "$ENV_FILE"

# kin PATH ARGS...: kubectl in one workspace, as kcp-admin through the front-proxy.
kin() { local path=$1; shift; kubectl --kubeconfig "$ADMIN_KUBECONFIG" --server "$FRONT_PROXY_URL/clusters/$path" "$@"; }

# A workspace on a shard: spec.location selects the Shard by its label name=<shard>.
workspace() {
  local parent=$1 name=$2 shard=$3
  cat <<YAML | kin "$parent" apply -f - >/dev/null
apiVersion: tenancy.kcp.io/v1alpha1
kind: Workspace
metadata: {name: $name}
spec:
  type: {name: universal, path: root}
  location: {selector: {matchLabels: {name: $shard}}}
YAML
  kin "$parent" wait --for=jsonpath='{.status.phase}'=Ready "workspace/$name" --timeout=180s >/dev/null
  # The front-proxy routes the new path once its index has it.
  until kin "$parent:$name" get customresourcedefinitions >/dev/null 2>&1; do sleep 0.5; done
}

# demo PATH: the mount kind, the mount objects in every state, and the Workspaces mounting them.
demo() {
  local path=$1
  kin "$path" apply -f "$DEMO/kubeclusters-crd.yaml" >/dev/null
  kin "$path" wait --for=condition=Established crd/kubeclusters.contrib.kcp.io --timeout=60s >/dev/null
  # kcp before v0.32 (without hack/kcp/patches) crashes on a mounted Workspace whose kind is not served yet: wait until it is.
  until kin "$path" get kubeclusters >/dev/null 2>&1; do sleep 0.5; done
  kin "$path" apply -f "$DEMO/mounts.yaml" >/dev/null
  status() { kin "$path" patch kubecluster "$1" --subresource=status --type=merge -p "$2" >/dev/null; }
  status ready '{"status":{"phase":"Ready","URL":"'"$FRONT_PROXY_URL"'/clusters/'"$path"'"}}'
  status connecting '{"status":{"phase":"Connecting","conditions":[{"type":"AgentConnected","status":"False","reason":"NoHeartbeat","message":"the agent has not connected yet"}]}}'
  status no-url '{"status":{"phase":"Ready"}}'
}

echo "Creating the demo: root:demo-a on the root shard, root:demo-b and root:demo-a:team (its parent on the root shard) on shard-2,"
echo "each with a KubeCluster mount kind and four mounted workspaces..."
workspace root demo-a root
workspace root demo-b shard-2
workspace root:demo-a team shard-2
for path in root:demo-a root:demo-b root:demo-a:team; do demo "$path"; done

K="kubectl --kubeconfig $ADMIN_KUBECONFIG"
cat <<TEXT

workspacemounts is running against a local kcp of $SHARDS shards ($SHARD_NAMES), behind its front-proxy $FRONT_PROXY_URL. Try:

  # every mounted workspace you may see, on every shard, by workspace path
  $K --server '$FRONT_PROXY_URL/services/workspacemounts/clusters/*' get workspacemounts

  # the same with the shard (and cluster, URL, reason) of each
  $K --server '$FRONT_PROXY_URL/services/workspacemounts/clusters/*' get workspacemounts -o wide

  # a workspace on shard-2 whose parent is on the root shard, by path; watch it change
  $K --server $FRONT_PROXY_URL/services/workspacemounts/clusters/root:demo-a:team get wsm -w

  # only shard-2's
  $K --server '$FRONT_PROXY_URL/services/workspacemounts/clusters/*' get wsm --field-selector status.shard=shard-2

  # the mount state of every mounted workspace in root:demo-a:team, from the annotations on shard-2
  $K --server $FRONT_PROXY_URL/clusters/root:demo-a:team get workspaces \\
    -o custom-columns='NAME:.metadata.name,PHASE:.metadata.annotations.workspacemounts\.io/phase,MOUNT:.spec.mount.ref.name'

  # the whole status of one
  $K --server $FRONT_PROXY_URL/clusters/root:demo-a:team get workspace connecting \\
    -o jsonpath='{.metadata.annotations.workspacemounts\.io/status}'

  # flip a mount on shard-2 and watch the annotation follow
  $K --server $FRONT_PROXY_URL/clusters/root:demo-a:team patch kubecluster connecting \\
    --subresource=status --type=merge -p '{"status":{"phase":"Ready","URL":"https://example.com"}}'

  # Prometheus metrics (each shard's last answer and sync), and health
  curl -s $METRICS_URL/metrics | grep -E '^workspacemounts_(shard|mounted)'
  curl -s $METRICS_URL/readyz

  # shard-2 away (the SHARD column and a warning tell after 30s), and back
  #   kill -STOP $SHARD_2_PID; kill -CONT $SHARD_2_PID

Logs: $KCP_DIR/*.log, $PLUGIN_LOG. Press Ctrl-C to stop.
TEXT

# Run until Ctrl-C, or until run-sharded exits.
wait "$pid" || true
pid=""
echo "run-sharded exited; see the logs in $DIR."
