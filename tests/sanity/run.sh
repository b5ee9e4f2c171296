#!/usr/bin/env bash
# ansible-test needs the collection at ansible_collections/<namespace>/<name>:
# copy the tracked files (and new ones not ignored by git) into a temporary tree and run sanity there.
# ansible-test installs its own sanity requirements (pylint, voluptuous, ...): they go into a
# venv of their own (.cache/sanity-venv) with the ansible-core pinned in requirements.txt, so
# they never disturb the tools of .venv.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$root/.cache/sanity-venv"
core_pin="$(grep -E '^ansible-core==' "$root/requirements.txt")"
if [ ! -x "$venv/bin/ansible-test" ] || ! "$venv/bin/pip" freeze 2>/dev/null | grep -qx "$core_pin"; then
  echo "==> creating $venv with $core_pin"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$core_pin"
fi
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
# ansible-test keeps its per-test venvs and caches under $HOME/.ansible/test: keep them in .cache,
# with a local pip bootstrap (its own bootstrap script is downloaded from a host CI cannot reach).
export HOME="$root/.cache/ansible-test-home"
pip_version="$(grep -ohP "^\s+pip='\K[0-9.]+" "$venv"/lib/python*/site-packages/ansible_test/_internal/python_requirements.py | head -1)"
mkdir -p "$HOME/.ansible/test/cache"
cp "$root/tests/sanity/get_pip_shim.py" "$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"
python_version="$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
echo "==> ansible-test sanity (python $python_version) in $tree"
PATH="$venv/bin:$PATH" "$venv/bin/ansible-test" sanity --local --requirements --python "$python_version" --color no "$@"
