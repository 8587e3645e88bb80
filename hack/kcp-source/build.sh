#!/usr/bin/env bash
# Builds a kcp release that the module proxy cannot serve (v0.31 and later:
# their staging modules are published nowhere) from kcp's own source tree:
#
#   hack/kcp-source/build.sh SOURCE VERSION OUT
#
# SOURCE is a kcp source tree (e.g. `git --git-dir <kcp mirror> archive v0.32.3
# | tar -x -C SOURCE`), VERSION its tag. Into OUT go kcp, kcp-front-proxy,
# cache-server and kcp-mounts.test (kcp's test/e2e/mounts). The tree's go.mod
# replaces kcp's staging modules with its staging/ directories; every other
# module is served. 20 to 30 minutes on 2 cores with a cold build cache.
set -euo pipefail

src=$(cd "${1:?usage: build.sh SOURCE VERSION OUT}" && pwd)
version=${2:?usage: build.sh SOURCE VERSION OUT}
mkdir -p "${3:?usage: build.sh SOURCE VERSION OUT}"
out=$(cd "$3" && pwd)
go=${GO:-go}
here=$(cd "$(dirname "$0")" && pwd)

cd "$src"
ldflags=$("$here"/../kcp-ldflags.sh "$("$go" list -m -f '{{.Version}}' k8s.io/kubernetes)" "$version")
for cmd in kcp kcp-front-proxy cache-server; do
  "$go" build -ldflags "$ldflags" -o "$out/$cmd" "./cmd/$cmd"
done
# -trimpath: kcp's test helpers look for a .git above the source path, taken
# relative to the working directory (the tests run it from this repository).
"$go" test -c -trimpath -o "$out/kcp-mounts.test" ./test/e2e/mounts
echo "kcp $version: $out/{kcp,kcp-front-proxy,cache-server,kcp-mounts.test}"
