#!/usr/bin/env bash
# Prints the path of a vllm-router binary for the gateway router's live test (the role's command line and workers
# file started for real in front of stand-in workers, drained and put back through the router's API): a venv in
# .cache/vllm-router/ with exactly the wheels of the lab's router recipe (lab/engine/wheelhouse-router.json, each
# pinned by sha256; the version the gateway role pins), installed from PyPI with --require-hashes. The venv is made
# again when the recipe changes.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
recipe="$root/lab/engine/wheelhouse-router.json"
dir="$root/.cache/vllm-router"
key="$(sha256sum "$recipe" | cut -c1-12)"
venv="$dir/$key"
binary="$venv/bin/vllm-router"
if [ ! -x "$binary" ] || [ ! -f "$venv/.complete" ]; then
  rm -rf "$dir"
  mkdir -p "$dir"
  python3 -m venv "$venv"
  python3 -c 'import json, sys
for item in json.load(open(sys.argv[1]))["wheels"]:
    print("%s --hash=sha256:%s" % (item["requirement"], item["sha256"]))' "$recipe" > "$dir/requirements.txt"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --only-binary :all: --require-hashes \
    -r "$dir/requirements.txt" >&2
  touch "$venv/.complete"
fi
"$binary" --help >/dev/null
echo "$binary"
