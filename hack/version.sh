#!/usr/bin/env bash
# Prints the version of this tree: the release in VERSION (v0.1.0) at the
# commit that last changed that file, v0.1.0-N-g<sha> for a commit N past it,
# with -dirty while tracked files have uncommitted changes. Without git (a
# source archive), the release with -dev.
set -euo pipefail
cd "$(dirname "$0")/.."
release=$(tr -d '[:space:]' < VERSION)
if ! base=$(git log -1 --format=%H -- VERSION 2>/dev/null) || [[ -z $base ]]; then
  echo "${release}-dev"
  exit 0
fi
count=$(git rev-list --count "${base}..HEAD")
dirty=""
if [[ -n $(git status --porcelain --untracked-files=no 2>/dev/null) ]]; then
  dirty="-dirty"
fi
if [[ $count == 0 ]]; then
  echo "${release}${dirty}"
else
  echo "${release}-${count}-g$(git rev-parse --short=7 HEAD)${dirty}"
fi
