#!/usr/bin/env bash
# hack/release/notes.sh CHANGELOG TAG [--unreleased-fallback]: prints the
# section "## [TAG without v]" of a Keep a Changelog file, without the link
# definitions that close the file, its relative links made absolute into the
# repository at TAG. A dry run (--unreleased-fallback) takes [Unreleased]'s
# when the tag has none yet, and says so on stderr; a release never does.
set -euo pipefail
changelog=$1 tag=$2 fallback=${3:-}
section() {
  awk -v name="$1" '
    /^## / { if (found) exit; h = $0; if (sub(/^## \[/, "", h) && sub(/\].*/, "", h)) { sub(/^v/, "", h); found = (h == name) }; next }
    found { line[++n] = $0 }
    END {
      e = n; while (e > 0 && (line[e] ~ /^[[:space:]]*$/ || line[e] ~ /^\[[^]]+\]:[[:space:]]/)) e--
      s = 1; while (s <= e && line[s] ~ /^[[:space:]]*$/) s++
      for (i = s; i <= e; i++) print line[i]
    }' "$changelog"
}
notes=$(section "${tag#v}")
if [[ -z $notes && $fallback == --unreleased-fallback ]]; then
  notes=$(section Unreleased)
  echo "release notes: the changelog has no section ## [${tag#v}]: these are the notes of ## [Unreleased] (a dry run)" >&2
fi
[[ -n $notes ]] || { echo "release notes: $changelog has no section ## [${tag#v}], or it is empty" >&2; exit 1; }
base=https://github.com/workspacemounts/workspacemounts/blob/$tag
sed -E "s#\]\((\./)?([^)[:space:]:\#/][^)[:space:]:]*)\)#](${base}/\2)#g" <<< "$notes"
