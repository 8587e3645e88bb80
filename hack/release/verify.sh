#!/usr/bin/env bash
# make release-verify: checks what hack/release/artifacts.sh wrote into
# ASSETS: SHA256SUMS lists every file with its digest; each SBOM names the
# binary's version and every module its build information lists; krew
# installs the kubectl plugin of each platform from the release's manifest
# and archive (their SHA-256), and the host's runs; the notes are not empty.
set -euo pipefail
cd "$(dirname "$0")/../.."
assets=$1 notes=$2
: "${TAG:?}" "${VERSION:?}" "${PLATFORMS:?}" "${KREW:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "release-verify: $*" >&2; exit 1; }

(cd "$assets" && sha256sum --check --strict --quiet SHA256SUMS) || fail "$assets/SHA256SUMS does not match"
diff <(ls "$assets" | grep -vx SHA256SUMS) <(cut -c67- "$assets/SHA256SUMS" | sort) || fail "SHA256SUMS does not list every file of $assets"

for p in $PLATFORMS; do
  os=${p%/*} arch=${p#*/}
  binary=$assets/workspacemounts-$TAG-$os-$arch sbom=$binary.cdx.json
  [[ $(jq -r .metadata.component.version "$sbom") == "$VERSION" ]] || fail "$sbom does not name $VERSION"
  go version -m "$binary" | awk '$1 == "dep" { if (m) print m; m = $2 "@" $3 } $1 == "=>" { m = $2 "@" $3 } END { if (m) print m }' | sort > "$tmp/linked"
  [[ -s $tmp/linked ]] || fail "$binary has no dependencies in its build information"
  jq -r '.components[] | "\(.name)@\(.version)"' "$sbom" | sort > "$tmp/listed"
  missing=$(comm -23 "$tmp/linked" "$tmp/listed")
  [[ -z $missing ]] || fail "$sbom lacks modules $binary links: $missing"

  archive=kubectl-workspacemounts-$TAG-$os-$arch.tar.gz
  grep -qx "    uri: https://github.com/workspacemounts/workspacemounts/releases/download/$TAG/$archive" "$assets/workspacemounts.yaml" ||
    fail "$assets/workspacemounts.yaml does not name $archive"
  KREW_ROOT=$tmp/krew-$os-$arch KREW_OS=$os KREW_ARCH=$arch "$KREW" install --manifest="$assets/workspacemounts.yaml" \
    --archive="$assets/$archive" >"$tmp/krew.log" 2>&1 || { cat "$tmp/krew.log" >&2; fail "krew install of $archive"; }
done
host=$(go env GOOS)-$(go env GOARCH)
if [[ -d $tmp/krew-$host ]]; then
  "$tmp/krew-$host/bin/kubectl-workspacemounts" version | grep -q "$VERSION" || fail "the plugin krew installed is not $VERSION"
fi
[[ -s $notes ]] || fail "the release notes $notes are empty"
echo "release-verify: $assets: SHA256SUMS covers every file; the SBOMs name every module linked into the binaries of $PLATFORMS; krew installs the plugin of each from workspacemounts.yaml; $notes has $(wc -l < "$notes") lines"
