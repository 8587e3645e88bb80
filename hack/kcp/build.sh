#!/usr/bin/env bash
# Builds one command of kcp v0.28.1 (this module's pin) into a file:
#
#   hack/kcp/build.sh kcp|cache-server|kcp-front-proxy OUTPUT
#
# with the patches of hack/kcp/patches (backports of upstream kcp fixes, see
# its README) applied to a copy of kcp's module: the copy is made once per
# content of this module and its patches, under _output/kcp-build/, and a
# go.mod there (this one plus a replace line for the copy) is handed to
# `go build -modfile`. The module cache and hack/kcp/go.mod stay as they are.
set -euo pipefail

cmd=$1
out=$2
go=${GO:-go}
here=$(cd "$(dirname "$0")" && pwd)
builds=$(cd "$here/../.." && pwd)/_output/kcp-build

cd "$here"
patches=("$here"/patches/*.patch)
key=$(cat go.mod go.sum build.sh ../kcp-ldflags.sh "${patches[@]}" | sha256sum | cut -c1-16)
build=$builds/$key
if [[ ! -f "$build/go.mod" ]]; then
  "$go" mod download github.com/kcp-dev/kcp
  src=$("$go" list -m -f '{{.Dir}}' github.com/kcp-dev/kcp)
  mkdir -p "$builds"
  tmp=$(mktemp -d "$builds/.tmp.XXXXXX")
  cp -R "$src" "$tmp/kcp"
  chmod -R u+w "$tmp/kcp"
  for p in "${patches[@]}"; do
    if ! patch --quiet --forward --strip=1 --directory="$tmp/kcp" --input="$p"; then
      echo "$p does not apply to $src" >&2
      rm -rf "$tmp"
      exit 1
    fi
  done
  cp go.sum "$tmp/go.sum"
  { cat go.mod; echo; echo "replace github.com/kcp-dev/kcp => $build/kcp"; } >"$tmp/go.mod"
  # Another build (make -j) may have made the same copy first: keep that one.
  mv -T "$tmp" "$build" 2>/dev/null || rm -rf "$tmp"
fi

# Stamped with its version as kcp's Makefile does (hack/kcp-ldflags.sh), so
# that the tests can tell which kcp they run on.
ldflags=$("$here"/../kcp-ldflags.sh "$("$go" list -m -f '{{.Version}}' k8s.io/kubernetes)" \
  "$("$go" list -m -f '{{.Version}}' github.com/kcp-dev/kcp)")
"$go" build -modfile="$build/go.mod" -ldflags "$ldflags" -o "$out" "github.com/kcp-dev/kcp/cmd/$cmd"
