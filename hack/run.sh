#!/usr/bin/env bash
# `make run`: a local kcp (embedded etcd, state in .kcp/), the workspacemounts
# plugin, and a demo of mounted workspaces in every state. Ctrl-C stops all.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
STATE=${STATE:-$ROOT/.kcp}
KCP_PORT=${KCP_PORT:-6443}
VW_PORT=${VW_PORT:-6444}
METRICS_ADDRESS=${METRICS_ADDRESS:-127.0.0.1:8080}
ETCD_CLIENT_PORT=${ETCD_CLIENT_PORT:-2379}
ETCD_PEER_PORT=${ETCD_PEER_PORT:-2380}
KUBECONFIG_FILE=$STATE/admin.kubeconfig
BIN=$ROOT/bin
# make sets KCP_BINARY (bin/kcp, KCP_BIN, or the build of KCP_SOURCE).
KCP_BINARY=${KCP_BINARY:-$BIN/kcp}
KCP_RELEASE=$("$KCP_BINARY" --version 2>/dev/null | sed -n 's/.*+kcp-\(v[0-9][^ ]*\).*/\1/p')
DEMO=$ROOT/hack/demo

mkdir -p "$STATE"
pids=()
cleanup() {
  trap - EXIT INT TERM
  echo
  echo "Stopping workspacemounts and kcp..."
  # The plugin first, so that it can release its lease while kcp still answers.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill "${pids[$i]}" 2>/dev/null || true
    wait "${pids[$i]}" 2>/dev/null || true
  done
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

# kcp's mini front-proxy forwards /services/workspacemounts to the plugin's
# virtual workspace, with the client's bearer token (development only).
cat >"$STATE/miniproxy-mapping.yaml" <<YAML
- path: /services/workspacemounts
  backend: https://127.0.0.1:$VW_PORT
YAML

echo "Starting kcp ${KCP_RELEASE:-(release unknown)} ($KCP_BINARY) on https://127.0.0.1:$KCP_PORT (state in $STATE, log $STATE/kcp.log)..."
"$KCP_BINARY" start \
  --miniproxy-mapping-file "$STATE/miniproxy-mapping.yaml" \
  --root-directory "$STATE" \
  --bind-address 127.0.0.1 \
  --secure-port "$KCP_PORT" \
  --embedded-etcd-client-port "$ETCD_CLIENT_PORT" \
  --embedded-etcd-peer-port "$ETCD_PEER_PORT" \
  --feature-gates=WorkspaceMounts=true \
  >"$STATE/kcp.log" 2>&1 &
pids+=($!)

k() { kubectl --kubeconfig "$KUBECONFIG_FILE" "$@"; }
# kin CLUSTER ARGS...: kubectl in one logical cluster, as kcp-admin.
kin() { local cluster=$1; shift; k --server "https://127.0.0.1:$KCP_PORT/clusters/$cluster" "$@"; }

for _ in $(seq 1 180); do
  if [ -f "$KUBECONFIG_FILE" ] && k get --raw /readyz >/dev/null 2>&1; then break; fi
  if ! kill -0 "${pids[0]}" 2>/dev/null; then echo "kcp exited; last lines of $STATE/kcp.log:"; tail -20 "$STATE/kcp.log"; exit 1; fi
  sleep 1
done
k get --raw /readyz >/dev/null || { echo "kcp did not become ready in 3 minutes; see $STATE/kcp.log"; exit 1; }

echo "Starting workspacemounts (log $STATE/workspacemounts.log)..."
"$BIN/workspacemounts" start --kubeconfig "$KUBECONFIG_FILE" --context shard-base \
  --bind-address 127.0.0.1 --secure-port "$VW_PORT" --cert-dir "$STATE/workspacemounts" \
  --metrics-bind-address "$METRICS_ADDRESS" \
  >"$STATE/workspacemounts.log" 2>&1 &
pids+=($!)

echo "Creating the demo: workspaces root:demo-a and root:demo-b, each with a KubeCluster mount kind..."
for org in demo-a demo-b; do
  cat <<YAML | kin root apply -f - >/dev/null
apiVersion: tenancy.kcp.io/v1alpha1
kind: Workspace
metadata: {name: $org}
spec: {type: {name: universal, path: root}}
YAML
done
for org in demo-a demo-b; do
  kin root wait --for=jsonpath='{.status.phase}'=Ready "workspace/$org" --timeout=120s >/dev/null
  kin "root:$org" apply -f "$DEMO/kubeclusters-crd.yaml" >/dev/null
  kin "root:$org" wait --for=condition=Established crd/kubeclusters.contrib.kcp.io --timeout=60s >/dev/null
  # kcp before v0.32 (without hack/kcp/patches) crashes on a mounted Workspace whose kind is not served yet: wait until it is.
  until kin "root:$org" get kubeclusters >/dev/null 2>&1; do sleep 0.5; done
  kin "root:$org" apply -f "$DEMO/mounts.yaml" >/dev/null
  status() { kin "root:$org" patch kubecluster "$1" --subresource=status --type=merge -p "$2" >/dev/null; }
  status ready '{"status":{"phase":"Ready","URL":"https://127.0.0.1:'"$KCP_PORT"'/clusters/root:'"$org"'"}}'
  status connecting '{"status":{"phase":"Connecting","conditions":[{"type":"AgentConnected","status":"False","reason":"NoHeartbeat","message":"the agent has not connected yet"}]}}'
  status no-url '{"status":{"phase":"Ready"}}'
done

cat <<TEXT

workspacemounts is running against a local kcp. Try:

  # every mounted workspace you may see, in all logical clusters, through kcp's URL
  kubectl --kubeconfig $KUBECONFIG_FILE --server 'https://127.0.0.1:$KCP_PORT/services/workspacemounts/clusters/*' get workspacemounts -o wide

  # one workspace, by path; watch it change
  kubectl --kubeconfig $KUBECONFIG_FILE --server https://127.0.0.1:$KCP_PORT/services/workspacemounts/clusters/root:demo-a get wsm -w

  # the mount state of every mounted workspace in root:demo-a, from the annotations
  kubectl --kubeconfig $KUBECONFIG_FILE --server https://127.0.0.1:$KCP_PORT/clusters/root:demo-a get workspaces \\
    -o custom-columns='NAME:.metadata.name,PHASE:.metadata.annotations.workspacemounts\.io/phase,MOUNT:.spec.mount.ref.name'

  # the whole status of one
  kubectl --kubeconfig $KUBECONFIG_FILE --server https://127.0.0.1:$KCP_PORT/clusters/root:demo-a get workspace connecting \\
    -o jsonpath='{.metadata.annotations.workspacemounts\.io/status}'

  # flip a mount and watch the annotation follow
  kubectl --kubeconfig $KUBECONFIG_FILE --server https://127.0.0.1:$KCP_PORT/clusters/root:demo-a patch kubecluster connecting \\
    --subresource=status --type=merge -p '{"status":{"phase":"Ready","URL":"https://example.com"}}'

  # Prometheus metrics, and health
  curl -s http://$METRICS_ADDRESS/metrics | grep ^workspacemounts_
  curl -s http://$METRICS_ADDRESS/readyz

Logs: $STATE/kcp.log, $STATE/workspacemounts.log. Press Ctrl-C to stop.
TEXT

# Run until Ctrl-C, or until one of the two exits.
wait -n "${pids[@]}" || true
echo "A process exited; see the logs in $STATE."
