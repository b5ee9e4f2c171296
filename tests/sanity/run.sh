#!/usr/bin/env bash
# ansible-test needs the collection at ansible_collections/<namespace>/<name>:
# copy the tracked files (and new ones not ignored by git) into a temporary tree and run sanity there.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$root/.venv"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tree="$work/ansible_collections/llmfleet/rocm"
mkdir -p "$tree"
cd "$root"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
  [ -e "$f" ] || continue
  mkdir -p "$tree/$(dirname "$f")"
  cp -P "$f" "$tree/$f"
done
cd "$tree"
git init -q && git add -A >/dev/null
python_version="$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
echo "==> ansible-test sanity (python $python_version) in $tree"
"$venv/bin/ansible-test" sanity --venv --requirements --python "$python_version" --color no "$@"
