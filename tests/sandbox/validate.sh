#!/usr/bin/env bash
# Hardware validation in the sandbox (playbooks/validate.yml): the GPU nodes pass on their healthy profiles; then
# gpu-node-1 gets the degraded profile (lab/profiles/mi300x-8-degraded-findings.json: one GPU's link at x8, the
# all-reduce below its threshold, one uncorrectable ECC error) and the play must fail, naming those three problems
# on that node and nothing else, in its JUnit file (read with junitparser) and the fleet table. The node's own
# profile is put back afterwards, also when a step fails.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
export PATH="$root/.venv/bin:$PATH"
export ANSIBLE_CONFIG="$root/ansible.cfg"
logs="$root/.cache/sandbox"
node=gpu-node-1
profile=/etc/llmfleet-lab/gpu-profile.json
healthy=$(ansible-inventory -i inventories/sandbox --host "$node" | python3 -c 'import json,sys; print(json.load(sys.stdin)["lab_gpu_profile"])')

put_profile() {
  ansible -i inventories/sandbox "$node" -m ansible.builtin.copy -a "src=lab/profiles/$1.json dest=$profile mode=0644" >/dev/null
}

# The newest run's directory under validation-results/.
latest() { ls -1d validation-results/*/ | sort | tail -n 1; }

echo "--- healthy profiles: validate.yml passes"
ansible-playbook -i inventories/sandbox playbooks/validate.yml > "$logs/validate-healthy.log" 2>&1 || {
  echo "FAILED: validate.yml failed on the healthy profiles (log: $logs/validate-healthy.log)"; tail -n 30 "$logs/validate-healthy.log"; exit 1; }
python3 tests/sandbox/validate_check.py "$(latest)" --passed gpu-node-1 gpu-node-2 || exit 1

# rccl-tests: the builds the stand-in sources recorded on the builder, and the program each node runs.
rccl_builds() {
  ansible -i inventories/sandbox "$node" -m ansible.builtin.command -a "grep -c ' rccl-tests end ' /var/log/llmfleet-lab-builds.log" \
    | tail -n 1
}
rccl_programs() {
  ansible -i inventories/sandbox gpu_nodes -m ansible.builtin.command -a "sha256sum /opt/rccl-tests/current/bin/all_reduce_perf" \
    | awk '/all_reduce_perf/ {print $1}' | sort | uniq -c
}
echo "--- rccl-tests: built on $node, the same program on every node"
builds=$(rccl_builds)
programs=$(rccl_programs)
echo "    builds recorded on $node: $builds; all_reduce_perf per node: $programs"
if [ "$(echo "$programs" | wc -l)" -ne 1 ] || [ "$(echo "$programs" | awk '{print $1}')" -ne 2 ] || [ "${builds:-0}" -lt 1 ]; then
  echo "FAILED: rccl-tests was not built once and installed on both nodes"; exit 1
fi

echo "--- $node on the degraded profile: validate.yml fails with its three problems"
trap 'put_profile "$healthy"' EXIT
put_profile mi300x-8-degraded-findings
if ansible-playbook -i inventories/sandbox playbooks/validate.yml > "$logs/validate-degraded.log" 2>&1; then
  echo "FAILED: validate.yml passed on the degraded profile (log: $logs/validate-degraded.log)"; exit 1
fi
grep -E "failed validation" "$logs/validate-degraded.log" | sed 's/^/    /' | cut -c1-400
python3 tests/sandbox/validate_check.py "$(latest)" --passed gpu-node-2 \
  --failed "$node" 'health.ecc_uncorrectable [6]' 'pcie.link [3 (0000:5f:00.0)]' 'rccl.all_reduce.busbw'
status=$?
# The second run had the same key: nothing built again.
if [ "$(rccl_builds)" != "$builds" ]; then
  echo "FAILED: rccl-tests was built again for the same key ($builds builds before, $(rccl_builds) after)"; exit 1
fi
exit "$status"
