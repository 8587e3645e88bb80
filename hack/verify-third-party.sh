#!/usr/bin/env bash
# `make verify-third-party` (part of make test-unit): fails unless each copy
# under third_party/ is its upstream module, as the module proxy serves it,
# with exactly the patch beside it (third_party/README.md says why each
# exists and when to drop it). It applies the patch to a temporary copy of the
# downloaded module and compares the result with the tree.
set -o errexit -o nounset -o pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GO=${GO:-go}

# directory under third_party/, module@version
copies=(
  "kcp-dev/apimachinery github.com/kcp-dev/apimachinery/v2@v2.32.3"
)

work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT

cd "${REPO_ROOT}"
failed=0
for entry in "${copies[@]}"; do
  read -r dir module <<<"${entry}"
  upstream=$(cd "${work}" && GOFLAGS=-mod=mod GONOSUMDB=github.com/kcp-dev "${GO}" mod download -json "${module}" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  if [[ -z "${upstream}" ]]; then
    echo "ERROR: cannot download ${module}" >&2
    exit 1
  fi
  expected="${work}/${dir}"
  mkdir -p "$(dirname "${expected}")"
  cp -r "${upstream}" "${expected}"
  chmod -R u+w "${expected}"
  (cd "${expected}" && git apply --whitespace=nowarn "${REPO_ROOT}/third_party/${dir}.patch")
  if ! diff -ruN "${expected}" "third_party/${dir}"; then
    echo >&2
    echo "ERROR: third_party/${dir} is not ${module} with third_party/${dir}.patch applied." >&2
    failed=1
    continue
  fi
  echo "third_party/${dir} is ${module} with third_party/${dir}.patch"
done
exit "${failed}"
