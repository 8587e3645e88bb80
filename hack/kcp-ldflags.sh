#!/usr/bin/env bash
# Prints the -ldflags that stamp a kcp build with its version as kcp's
# Makefile does: the Kubernetes version kcp is built on, +kcp-<tag>, with its
# major and minor, so that `kcp --version`, `kcp-front-proxy --version` and
# /version say which kcp runs (a bare kcp tag would be read as Kubernetes
# 0.x, and kcp panics on its feature gates):
#
#   hack/kcp-ldflags.sh KUBERNETES_VERSION KCP_TAG   # e.g. v1.32.3 v0.28.1
set -euo pipefail

kube=${1:?usage: kcp-ldflags.sh KUBERNETES_VERSION KCP_TAG}
tag=${2:?usage: kcp-ldflags.sh KUBERNETES_VERSION KCP_TAG}
major=$(echo "$kube" | sed 's/^v\([0-9]*\).*/\1/')
minor=$(echo "$kube" | sed 's/^v[0-9]*\.\([0-9]*\).*/\1/')
ldflags=""
for p in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  ldflags="$ldflags -X $p.gitVersion=$kube+kcp-$tag -X $p.gitMajor=$major -X $p.gitMinor=$minor"
done
echo "${ldflags# }"
