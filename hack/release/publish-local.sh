#!/usr/bin/env bash
# make release-publish-local VERSION IMAGE_TAG CHART: the pushes of make release-publish,
# its very recipe, to a registry of this script's own on 127.0.0.1 (crane
# registry serve, in memory, gone when the script ends) instead of ghcr.io,
# without the GitHub release; then pulls both back: the image index must be
# the one of _output/image/oci, the chart the bytes of CHART.
set -euo pipefail
cd "$(dirname "$0")/../.."
version=$1 tag=$2 chart=$3
: "${CRANE:?}" "${HELM:?}" "${MAKE:=make}"

log=$(mktemp)
tmp=$(mktemp -d)
"$CRANE" registry serve --address 127.0.0.1:0 2>"$log" &
registry_pid=$!
trap 'kill "$registry_pid" 2>/dev/null || true; wait "$registry_pid" 2>/dev/null || true; rm -rf "$log" "$tmp"' EXIT
port=""
for _ in $(seq 100); do
  port=$(sed -n 's/.*serving on port \([0-9]*\).*/\1/p' "$log")
  [[ -n $port ]] && break
  kill -0 "$registry_pid" 2>/dev/null || { cat "$log" >&2; echo "publish-local: crane registry serve exited" >&2; exit 1; }
  sleep 0.1
done
[[ -n $port ]] || { cat "$log" >&2; echo "publish-local: crane registry serve did not say its port" >&2; exit 1; }
registry=127.0.0.1:$port
image=$registry/workspacemounts/workspacemounts
charts=oci://$registry/workspacemounts/charts

$MAKE --no-print-directory release-publish VERSION="$version" IMAGE_REPOSITORY="$image" CHART_REPOSITORY="$charts" \
  CRANE_FLAGS=--insecure HELM_PUSH_FLAGS=--plain-http RELEASE_GITHUB=false

# index.json has one manifest, the index tagged IMAGE_TAG (hack/image).
want=$(grep -o '"digest": *"sha256:[0-9a-f]*"' _output/image/oci/index.json | grep -o 'sha256:[0-9a-f]*')
got=$("$CRANE" digest --insecure "$image:$tag")
if [[ $got != "$want" ]]; then
  echo "publish-local: $image:$tag is $got, _output/image/oci's index $want" >&2
  exit 1
fi
chart_version=$(basename "$chart" .tgz)
chart_version=${chart_version#workspacemounts-}
"$HELM" pull --plain-http "$charts/workspacemounts" --version "$chart_version" --destination "$tmp" >/dev/null
if ! cmp -s "$chart" "$tmp/$(basename "$chart")"; then
  echo "publish-local: the chart pulled from $charts is not $chart" >&2
  exit 1
fi
echo "publish-local: pushed and pulled back from $registry: $image:$tag ($got), $charts/workspacemounts $chart_version"
