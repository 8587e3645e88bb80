#!/usr/bin/env bash
# `make run` and `make run SHARDS=2`: builds hack/run, the Go command that
# starts kcp (a sharded kcp for SHARDS=2 or more), the plugin and the demo
# with test/framework, and runs it in place of this script; Ctrl-C stops all.
# The environment may choose the state directory and the ports on 127.0.0.1
# (hack/test-run.sh does): STATE (.kcp), KCP_PORT (6443: kcp's, or the
# front-proxy's of a sharded kcp), VW_PORT (6444), METRICS_PORT (8080),
# ETCD_CLIENT_PORT (2379) and ETCD_PEER_PORT (2380; one shard only).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
"${GO:-go}" -C "$ROOT" build -o bin/run ./hack/run
exec "$ROOT/bin/run" --state "${STATE:-$ROOT/.kcp}" --shards "${SHARDS:-1}" \
  --kcp-port "${KCP_PORT:-6443}" --virtual-workspace-port "${VW_PORT:-6444}" --metrics-port "${METRICS_PORT:-8080}" \
  --etcd-client-port "${ETCD_CLIENT_PORT:-2379}" --etcd-peer-port "${ETCD_PEER_PORT:-2380}"
