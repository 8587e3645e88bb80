#!/usr/bin/env bash
# make release-artifacts: writes into ASSETS (the chart's package is there
# already) what no tool of hack/tools/release writes for us: the binaries
# named by the tag, the kubectl plugin's archives (binary and LICENSE) and its
# krew manifest (from deploy/krew, with the archives' URLs and SHA-256), a
# CycloneDX SBOM per binary (cyclonedx-gomod) and SHA256SUMS; the notes go to
# NOTES. TAG, VERSION, PLATFORMS (os/arch, spaces), IMAGE_DIR, SOURCE_DATE_EPOCH
# and CYCLONEDX_GOMOD come from the environment.
set -euo pipefail
cd "$(dirname "$0")/../.."
assets=$1 notes=$2
: "${TAG:?}" "${VERSION:?}" "${PLATFORMS:?}" "${IMAGE_DIR:?}" "${SOURCE_DATE_EPOCH:?}" "${CYCLONEDX_GOMOD:?}"
download=https://github.com/workspacemounts/workspacemounts/releases/download/$TAG
link() { ln -f "$1" "$2" 2>/dev/null || cp -f "$1" "$2"; }

hack/release/notes.sh CHANGELOG.md "$TAG" ${NOTES_FLAGS:-} > "$notes"
link "$IMAGE_DIR/workspacemounts-$TAG.oci.tar" "$assets/"
platforms_yaml=""
for p in $PLATFORMS; do
  os=${p%/*} arch=${p#*/} bin=_output/bin/${p/\//_}
  link "$bin/workspacemounts" "$assets/workspacemounts-$TAG-$os-$arch"
  "$CYCLONEDX_GOMOD" bin -json -noserial -version "$VERSION" -output "$assets/workspacemounts-$TAG-$os-$arch.cdx.json" \
    "$assets/workspacemounts-$TAG-$os-$arch" 2>/dev/null
  archive=kubectl-workspacemounts-$TAG-$os-$arch.tar.gz
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" --format=pax \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    -C "$bin" -c kubectl-workspacemounts -C "$PWD" LICENSE | gzip -9n > "$assets/$archive"
  platforms_yaml+="  - selector:
      matchLabels:
        os: $os
        arch: $arch
    uri: $download/$archive
    sha256: $(sha256sum "$assets/$archive" | cut -d' ' -f1)
    files:
      - from: kubectl-workspacemounts
        to: .
      - from: LICENSE
        to: .
    bin: kubectl-workspacemounts
"
done
# The release's manifest: the source's without its comments, the tag as spec.version.
sed -e '/^#/d' -e "s/^  version: .*/  version: $TAG/" -e '/^  platforms:/,$d' deploy/krew/workspacemounts.yaml > "$assets/workspacemounts.yaml"
printf '  platforms:\n%s' "$platforms_yaml" >> "$assets/workspacemounts.yaml"
(cd "$assets" && sha256sum $(ls | grep -vx SHA256SUMS) > SHA256SUMS)
