#!/usr/bin/env bash
# `make verify-codegen` (part of make test-unit): fails when the committed
# generated files of the API package are not what `make codegen` writes. It
# generates into a temporary copy of the module holding the package's
# hand-written files only, so the working tree is left alone and the result is
# what a clean checkout gets, then compares.
set -o errexit -o nounset -o pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
API_DIR=virtual/apis/workspacemounts/v1alpha1

copy=$(mktemp -d)
trap 'rm -rf "${copy}"' EXIT

cd "${REPO_ROOT}"
cp go.mod go.sum "${copy}/"
ln -s "${REPO_ROOT}/third_party" "${copy}/third_party" # go.mod replaces a module with a copy there
mkdir -p "${copy}/${API_DIR}"
find "${API_DIR}" -maxdepth 1 -type f ! -name 'zz_generated.*' -exec cp {} "${copy}/${API_DIR}/" \;

"${REPO_ROOT}/hack/update-codegen.sh" "${copy}"

if ! diff -ruN "${API_DIR}" "${copy}/${API_DIR}"; then
  echo >&2
  echo "ERROR: the generated files in ${API_DIR} are stale (or edited by hand): run 'make codegen' and commit the result." >&2
  exit 1
fi
echo "generated files in ${API_DIR} are up to date"
