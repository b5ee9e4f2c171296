#!/usr/bin/env bash
# Hardware validation in the sandbox (playbooks/validate.yml): the GPU nodes pass on their healthy profiles; then
# gpu-node-1 gets the degraded profile (lab/profiles/mi300x-8-degraded-findings.json: one GPU's link at x8, the
# all-reduce below its threshold, one uncorrectable ECC error) and the play must fail, naming those three problems
# on that node and nothing else, in its JUnit file (read with junitparser) and the fleet table. Every run includes
# the all-reduce across the two nodes (real mpirun over SSH, 8 + 2 ranks): it passes, then gpu-node-1 gets a slow
# fabric (mi300x-8-slow-fabric) and both nodes fail with that check alone. After each run the run's key is gone from
# gpu-node-2 and the firewall's fabric_peers set is empty on both nodes. The node's own profile is put back
# afterwards, also when a step fails.
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
python3 tests/sandbox/validate_check.py "$(latest)" --passed gpu-node-1 gpu-node-2 --fabric all --fabric-ranks 10 || exit 1

# What the all-reduce across nodes opened for its run is closed again.
fabric_closed() {
  local keys peers
  keys=$(ansible -i inventories/sandbox gpu-node-2 -m ansible.builtin.command \
    -a "awk '/llmfleet-validate-fabric/ {n++} END {print n+0}' /root/.ssh/authorized_keys" \
    | tail -n 1)
  peers=$(ansible -i inventories/sandbox gpu_nodes -m ansible.builtin.command -a "nft list set inet llmfleet fabric_peers" \
    | grep -c "elements" || true)
  echo "    after the run: the run's key on gpu-node-2: ${keys:-?} line(s); fabric_peers sets with elements: $peers"
  if [ "$keys" != "0" ] || [ "$peers" != "0" ]; then
    echo "FAILED: the all-reduce across nodes left its key or its firewall openings behind"; return 1
  fi
}
fabric_closed || exit 1

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
python3 tests/sandbox/validate_check.py "$(latest)" --fabric all --fabric-ranks 10 >/dev/null || status=1

echo "--- $node with a slow fabric: both nodes fail with the all-reduce across nodes alone"
put_profile mi300x-8-slow-fabric
if ansible-playbook -i inventories/sandbox playbooks/validate.yml > "$logs/validate-fabric.log" 2>&1; then
  echo "FAILED: validate.yml passed with a slow fabric (log: $logs/validate-fabric.log)"; exit 1
fi
grep -E "failed validation" "$logs/validate-fabric.log" | sed 's/^/    /' | cut -c1-400
python3 tests/sandbox/validate_check.py "$(latest)" --passed gpu-node-1 gpu-node-2 --fabric all --fabric-ranks 10 \
  --fabric-failed fabric.all_reduce.busbw || status=1
fabric_closed || status=1
# The runs had the same key: nothing built again.
if [ "$(rccl_builds)" != "$builds" ]; then
  echo "FAILED: rccl-tests was built again for the same key ($builds builds before, $(rccl_builds) after)"; exit 1
fi
exit "$status"
