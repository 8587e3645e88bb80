#!/usr/bin/env bash
# Makes a kcp source tree of a release from the Go module proxy, for
# hack/kcp-source/build.sh:
#
#   hack/kcp-source/from-proxy.sh VERSION DEST
#
# kcp's module (v0.31 and later) replaces its staging modules (sdk, client-go,
# apimachinery/v2, ...) with its staging/ directories, which a module zip
# leaves out. Each such replace is dropped and the module required at the
# release's own version instead (vX.Y.Z, v2.Y.Z for a /v2 path). Fails,
# naming the module, while the proxy does not serve one of them.
set -euo pipefail

version=${1:?usage: from-proxy.sh VERSION DEST}
dest=${2:?usage: from-proxy.sh VERSION DEST}
go=${GO:-go}
export GONOSUMDB=${GONOSUMDB:-github.com/kcp-dev} GOFLAGS=-mod=mod

if [[ -f "$dest/go.mod" ]]; then exit 0; fi
dir=$("$go" mod download -json "github.com/kcp-dev/kcp@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
if [[ -z "$dir" ]]; then
  echo "the module proxy does not serve github.com/kcp-dev/kcp@$version" >&2
  exit 1
fi
mkdir -p "$(dirname "$dest")"
tmp=$(mktemp -d "$(cd "$(dirname "$dest")" && pwd)/.src.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cp -R "$dir/." "$tmp"
chmod -R u+w "$tmp"

cd "$tmp"
minor_patch=${version#v*.}
# "module => ./dir" lines, in a replace block or on their own.
replaces=$(awk '{ if ($1 == "replace") { $1 = "" } } $2 == "=>" && $3 ~ /^\.\// { print $1, $3 }' go.mod)
while read -r module target; do
  if [[ -z "$module" || -d "$target" ]]; then continue; fi
  case "$module" in
    */v[0-9]*) want="${module##*/}.$minor_patch" ;;
    *) want=$version ;;
  esac
  "$go" mod edit -dropreplace="$module" -require="$module@$want"
  if ! "$go" mod download "$module@$want" 2>/dev/null; then
    echo "kcp $version needs $module@$want, which the module proxy does not serve" >&2
    exit 1
  fi
done <<<"$replaces"
cd - >/dev/null
mv -T "$tmp" "$dest"
trap - EXIT
echo "kcp $version source from the module proxy: $dest"
