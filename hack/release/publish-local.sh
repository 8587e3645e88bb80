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

source hack/image/registry.sh
start_registry
tmp=$(mktemp -d)
trap 'kill "$registry_pid" 2>/dev/null || true; wait "$registry_pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
image=$registry/workspacemounts/workspacemounts
charts=oci://$registry/workspacemounts/charts

$MAKE --no-print-directory release-publish VERSION="$version" IMAGE_REPOSITORY="$image" CHART_REPOSITORY="$charts" \
  CRANE_FLAGS=--insecure HELM_PUSH_FLAGS=--plain-http RELEASE_GITHUB=false

# index.json has one manifest, the index tagged IMAGE_TAG (hack/image/build.sh).
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
