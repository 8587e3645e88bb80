#!/usr/bin/env bash
# make image OUT REPOSITORY TAG PLATFORMS: ko builds the image (.ko.yaml) on a
# base made here and pushed to a registry of this script's own on 127.0.0.1,
# into OUT/oci (an OCI layout whose index.json names the index by its tag),
# OUT/workspacemounts-TAG.oci.tar (that layout as a tar: podman load, docker
# load 25 and later) and OUT/workspacemounts-TAG-<os>-<arch>.docker.tar.
# VERSION, REVISION and SOURCE_DATE_EPOCH (the commit's time: the same commit,
# the same digests) come from the environment.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$1 repository=$2 tag=$3 platforms=$4
: "${CRANE:?}" "${KO:?}" "${VERSION:?}" "${REVISION:?}" "${SOURCE_DATE_EPOCH:?}"
source hack/image/registry.sh
start_registry

# The base: one layer (/etc/passwd and /etc/group with root and nonroot,
# 65532; /tmp, 1777, for --cert-dir; /workspacemounts, the entrypoint that
# deploy/kcp-operator names, a link to ko's /ko-app/workspacemounts).
tmp=$(mktemp -d)
trap 'kill "$registry_pid" 2>/dev/null || true; wait "$registry_pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
root=$tmp/root
mkdir -p "$root/etc" "$root/tmp"
cp hack/image/rootfs/etc/passwd hack/image/rootfs/etc/group "$root/etc/"
chmod 0755 "$root/etc" && chmod 0644 "$root"/etc/* && chmod 1777 "$root/tmp"
ln -s ko-app/workspacemounts "$root/workspacemounts"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" --format=pax \
  --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -C "$root" -cf "$tmp/base.tar" etc tmp workspacemounts
base=$registry/base
"$CRANE" append --oci-empty-base -f "$tmp/base.tar" -t "$base:layer" >/dev/null 2>&1
manifests=()
for p in ${platforms//,/ }; do
  "$CRANE" mutate "$base:layer" --set-platform "$p" --workdir / \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin -t "$base:${p//\//-}" >/dev/null 2>&1
  manifests+=(-m "$base:${p//\//-}")
done
"$CRANE" index append "${manifests[@]}" -t "$base:index" >/dev/null 2>&1

labels=(source=https://github.com/workspacemounts/workspacemounts version="$VERSION" revision="$REVISION"
  licenses=Apache-2.0 title=workspacemounts created="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)"
  "description=A kcp plugin that shows, for every mounted workspace, whether its mount is ready, and serves them as a read-only API.")
flags=(--bare --tags="$tag" --push=false --sbom=none --image-user=65532:65532)
# (quoted: ko splits its flags' values at commas, as CSV)
for l in "${labels[@]}"; do flags+=(--image-label="\"org.opencontainers.image.$l\"" --image-annotation="\"org.opencontainers.image.$l\""); done
ko() { KO_DOCKER_REPO=$repository KO_DEFAULTBASEIMAGE=$base:index KO_DATA_DATE_EPOCH=$SOURCE_DATE_EPOCH \
  "$KO" build --insecure-registry "${flags[@]}" "$@" ./cmd/workspacemounts; }

rm -rf "$out" && mkdir -p "$out"
ref=$(ko --platform="$platforms" --oci-layout-path="$out/oci")
digest=${ref##*@}
# index.json names the index by its tag (the OCI layout's ref.name) and by its
# whole name (containerd's and podman's load read io.containerd.image.name).
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json","size":%d,"digest":"%s","annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}\n' \
  "$(stat -c %s "$out/oci/blobs/sha256/${digest#sha256:}")" "$digest" "$repository:$tag" "$tag" > "$out/oci/index.json"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" --format=pax \
  --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -C "$out/oci" -cf "$out/workspacemounts-$tag.oci.tar" oci-layout index.json blobs
for p in ${platforms//,/ }; do
  ko --platform="$p" --tarball="$out/workspacemounts-$tag-${p//\//-}.docker.tar" >/dev/null
done
echo "image: $repository:$tag@$digest in $out/oci"
ls -l "$out"
