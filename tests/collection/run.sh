#!/usr/bin/env bash
# The collection as it ships: build the tarball with ansible-galaxy, check what it holds, install it
# into a temporary collections path (offline: its dependencies must already be satisfied by the
# collections of the `ansible` package in .venv), and from a directory outside the checkout, with
# no configuration of the checkout, run ansible-doc for every module, public filter and role, check
# that the roles' internal filters are not listed but resolve by their full names, and run a syntax
# check of every shipped playbook. The plugins, roles and playbooks are listed from the installed
# tree. Prints counts; fails on any failure.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$root/.venv/bin"
site_packages="$("$bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
  echo "FAILED: $*" >&2
  failures=$((failures + 1))
}

# --- Build -------------------------------------------------------------------------------------
echo "==> ansible-galaxy collection build"
"$bin/ansible-galaxy" collection build --output-path "$work/dist" "$root"
tarballs=("$work"/dist/llmfleet-rocm-*.tar.gz)
tarball="${tarballs[0]}"
[ -f "$tarball" ] || { echo "FAILED: no tarball in $work/dist" >&2; exit 1; }

# --- What the tarball holds --------------------------------------------------------------------
# At the top only what Ansible loads and its documentation; no caches or build output anywhere.
tar -tzf "$tarball" | sed 's#/$##' | sort > "$work/contents"
allowed_top='^(MANIFEST\.json|FILES\.json|README\.md|CHANGELOG\.md|LICENSE|meta|plugins|roles|playbooks|docs|changelogs)$'
while IFS= read -r entry; do
  fail "the tarball holds $entry (not shipped: add it to build_ignore in galaxy.yml, or to allowed_top here)"
done < <(cut -d/ -f1 "$work/contents" | sort -u | grep -Ev "$allowed_top" || true)
while IFS= read -r entry; do
  fail "the tarball holds $entry (a cache or build output)"
done < <(grep -E '(^|/)(__pycache__|\.pytest_cache)(/|$)|\.pyc$|\.tar\.gz$' "$work/contents" || true)
# Unreleased changelog fragments and antsibull-changelog's plugin cache stay out.
while IFS= read -r entry; do
  fail "the tarball holds $entry (an unreleased changelog fragment or antsibull-changelog's cache)"
done < <(grep -E '^changelogs/(fragments|\.plugin-cache\.yaml)' "$work/contents" || true)
for required in MANIFEST.json FILES.json README.md CHANGELOG.md LICENSE meta/runtime.yml playbooks/site.yml \
  changelogs/changelog.yaml changelogs/config.yaml docs/operations.md; do
  grep -qxF "$required" "$work/contents" || fail "the tarball lacks $required"
done
# Nothing of what ships is left out: every file of the checkout under the shipped directories is in it.
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
  while IFS= read -r file; do
    [ -e "$root/$file" ] || continue
    case "$file" in *.pyc | */__pycache__/*) continue ;; esac
    grep -qxF "$file" "$work/contents" || fail "the tarball lacks $file"
  done < <(git -C "$root" ls-files --cached --others --exclude-standard -- meta plugins roles playbooks docs \
    changelogs/changelog.yaml changelogs/config.yaml)
fi
shipped_files="$(grep -cv '/$' <(tar -tzf "$tarball"))"

# --- Install, offline --------------------------------------------------------------------------
collections="$work/collections"
mkdir -p "$collections" "$work/outside"
printf '[defaults]\n' > "$work/ansible.cfg"
export ANSIBLE_CONFIG="$work/ansible.cfg"
export ANSIBLE_COLLECTIONS_PATH="$collections:$site_packages"
export ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false
# --offline never asks a Galaxy server; the unreachable server makes sure nothing tries one.
export ANSIBLE_GALAXY_SERVER="http://127.0.0.1:9/"
cd "$work/outside"
echo "==> ansible-galaxy collection install --offline $(basename "$tarball")"
"$bin/ansible-galaxy" collection install --offline -p "$collections" "$tarball"
installed="$collections/ansible_collections/llmfleet/rocm"
[ -f "$installed/MANIFEST.json" ] || { echo "FAILED: nothing installed at $installed" >&2; exit 1; }
if grep -q 'example\.invalid' "$installed/MANIFEST.json"; then
  fail "MANIFEST.json names a placeholder URL (example.invalid)"
fi

# --- The plugins, roles and playbooks of the installed tree --------------------------------------
mapfile -t modules < <(find "$installed/plugins/modules" -maxdepth 1 -name '*.py' ! -name '__init__.py' -printf '%f\n' 2>/dev/null \
  | sed 's/\.py$//' | sort)
mapfile -t roles < <(find "$installed/roles" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | sort)
mapfile -t playbooks < <(find "$installed/playbooks" -maxdepth 1 -name '*.yml' -printf '%f\n' 2>/dev/null | sed 's/\.yml$//' | sort)
# Filters: the names the FilterModule classes of plugins/filter export, imported from the installed tree. The public
# ones are those of the files whose name does not start with "__"; the roles' internal filters (__roles.py, ...) are the
# others: ansible-doc -l skips those files.
filter_names() {
  PYTHONPATH="$collections" "$bin/python" - "$installed/plugins/filter" "$1" <<'EOF'
import importlib
import pathlib
import sys

internal = sys.argv[2] == 'internal'
names = set()
for path in sorted(pathlib.Path(sys.argv[1]).glob('*.py')):
    if path.name == '__init__.py' or path.name.startswith('__') != internal:
        continue
    module = importlib.import_module('ansible_collections.llmfleet.rocm.plugins.filter.' + path.stem)
    names.update(module.FilterModule().filters())
print('\n'.join(sorted(names)))
EOF
}
mapfile -t filters < <(filter_names public)
mapfile -t internal_filters < <(filter_names internal)
# ...and those ansible-doc lists: the public ones, and none of the internal ones.
mapfile -t listed_filters < <("$bin/ansible-doc" -t filter -l llmfleet.rocm --json \
  | "$bin/python" -c 'import json, sys; print("\n".join(sorted(name.split(".", 2)[2] for name in json.load(sys.stdin))))')
if [ "${filters[*]}" != "${listed_filters[*]}" ]; then
  fail "the FilterModule classes of the public files export [${filters[*]}] but ansible-doc -l lists [${listed_filters[*]}]"
fi
[ "${#internal_filters[@]}" -gt 0 ] || fail "no internal filter found in $installed/plugins/filter/__*.py"
for name in "${internal_filters[@]}"; do
  if printf '%s\n' "${listed_filters[@]}" | grep -qxF "$name"; then
    fail "ansible-doc -l lists the internal filter $name"
  fi
done
# The internal filters resolve by their full name from the installed tree, as Ansible's filter loader finds them.
if "$bin/python" - "$collections" "$installed" "${internal_filters[@]}" > "$work/resolve.log" 2>&1 <<'EOF'
import sys

from ansible.plugins.loader import filter_loader, init_plugin_loader

init_plugin_loader([sys.argv[1]])
bad = []
for name in sys.argv[3:]:
    plugin = filter_loader.get('llmfleet.rocm.' + name)
    where = getattr(plugin, '_original_path', None) or ''
    if plugin is None or not where.startswith(sys.argv[2] + '/plugins/filter/__'):
        bad.append('%s (%s)' % (name, where or 'not found'))
if bad:
    sys.exit('internal filters that do not resolve from the installed tree: ' + ', '.join(bad))
print('%d internal filters resolve from the installed tree' % len(sys.argv[3:]))
EOF
then
  tail -n 1 "$work/resolve.log"
else
  cat "$work/resolve.log" >&2
  fail "the internal filters by their full name"
fi
# ...and a play calls two of them and a public one, as the roles do.
cat > "$work/filters.yml" <<'EOF'
---
- name: Call internal and public filters by their full names
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Check what they return
      ansible.builtin.assert:
        that:
          - >-
            ([{'node': 'n', 'name': 'w', 'ranks': []}] | llmfleet.rocm.rolling_restart_steps)
            == [{'node': 'n', 'name': 'w', 'state': 'restarted'}]
          - ('a b' | llmfleet.rocm.systemd_exec_word) == '"a b"'
          - ([3, 0, 1, 2, 8] | llmfleet.rocm.cpu_list) == '0-3,8'
EOF
if "$bin/ansible-playbook" -i localhost, -c local "$work/filters.yml" > "$work/filters.log" 2>&1; then
  echo "a play calls internal and public filters by their full names"
else
  cat "$work/filters.log" >&2
  fail "a play calling internal and public filters by their full names"
fi
for kind in modules filters roles playbooks; do
  declare -n list="$kind"
  [ "${#list[@]}" -gt 0 ] || fail "no $kind found in $installed"
  unset -n list
done

# ansible-doc for every plugin or role of one type in one call; when it fails, one call each names the culprits.
# Each documentation must come from the installed tree, not from a checkout.
doc() {
  local type="$1"; shift
  [ "$#" -gt 0 ] || return 0
  local names=("${@/#/llmfleet.rocm.}")
  if "$bin/ansible-doc" -t "$type" --json "${names[@]}" > "$work/doc.json" 2> "$work/doc.err" \
    && "$bin/python" - "$work/doc.json" "$installed" "${names[@]}" <<'EOF'
import json
import sys

docs, installed, names = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3:]
bad = []
for name in names:
    entry = docs.get(name) or {}
    where = entry.get('path') or (entry.get('doc') or {}).get('filename') or ''
    if not (entry.get('doc') or entry.get('entry_points')) or not where.startswith(installed):
        bad.append('%s (%s)' % (name, where or 'no documentation'))
if bad:
    sys.exit('not documented from the installed tree: ' + ', '.join(bad))
EOF
  then
    echo "ansible-doc -t $type: ${#names[@]} documented"
    return 0
  fi
  cat "$work/doc.err" >&2
  local name
  for name in "${names[@]}"; do
    "$bin/ansible-doc" -t "$type" "$name" > /dev/null 2>&1 || fail "ansible-doc -t $type $name"
  done
  fail "ansible-doc -t $type (see above)"
}

echo "==> ansible-doc from $installed"
doc module "${modules[@]}"
doc filter "${filters[@]}"
doc role "${roles[@]}"

# --- Syntax check of every shipped playbook, by its name -----------------------------------------
cat > "$work/inventory.yml" <<'EOF'
---
all:
  children:
    gpu_nodes:
      hosts:
        gpu-1:
        gpu-2:
    builders:
      hosts:
        gpu-1:
    gateways:
      hosts:
        gw-1:
EOF
playbook_names=("${playbooks[@]/#/llmfleet.rocm.}")
echo "==> ansible-playbook --syntax-check ${playbook_names[*]}"
if "$bin/ansible-playbook" -i "$work/inventory.yml" --syntax-check "${playbook_names[@]}" > "$work/syntax.log" 2>&1 \
  && [ "$(grep -c "^playbook: $installed/playbooks/" "$work/syntax.log")" -eq "${#playbook_names[@]}" ]; then
  echo "ansible-playbook --syntax-check: ${#playbook_names[@]} playbooks"
else
  cat "$work/syntax.log" >&2
  for name in "${playbook_names[@]}"; do
    "$bin/ansible-playbook" -i "$work/inventory.yml" --syntax-check "$name" > /dev/null 2>&1 \
      || fail "ansible-playbook --syntax-check $name"
  done
  fail "ansible-playbook --syntax-check (see above)"
fi

echo
echo "==> $(basename "$tarball"): $shipped_files files; ${#modules[@]} modules, ${#filters[@]} public filters" \
  "(${#internal_filters[@]} internal), ${#roles[@]} roles, ${#playbooks[@]} playbooks"
if [ "$failures" -gt 0 ]; then
  echo "==> $failures failure(s)" >&2
  exit 1
fi
echo "==> ok"
