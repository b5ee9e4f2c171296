#!/usr/bin/env bash
# One engine over the sandbox's two GPU nodes (roles/workers/README.md, "One engine over several nodes"), then each node
# on its own again. The lab's CPU engines run tensor parallel 2 over the two nodes: vLLM 0.32's CPU model runner fails
# every pipeline-parallel request (on one node as on two), so the default layout (pipeline parallel across nodes)
# cannot run here. firewall.yml and serve.yml with the group set: the per-node workers are replaced by one rank each,
# the checks of tests/sandbox/multinode.yml pass, a second run changes nothing, rolling_restart.yml restarts the engine
# as one (its gate: /health and a one-token completion); then the same group on a Ray cluster (the checks of
# tests/sandbox/multinode-ray.yml); then both playbooks without it put the per-node workers back (also when a step
# failed) and the gateway answers again.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
export PATH="$root/.venv/bin:$PATH"
export ANSIBLE_CONFIG="$root/ansible.cfg"
logs="$root/.cache/sandbox"
mkdir -p "$logs"
group='{"workers_multinode_group": "gpu_nodes", "workers_multinode_tensor_parallel_size": 2, "workers_multinode_pipeline_parallel_size": 1}'
ray="${group%\}}, \"workers_multinode_backend\": \"ray\", \"workers_ready_timeout\": 120}"
failed=0

converge() {  # converge LOG [extra vars]
  local log="$1"; shift
  ansible-playbook -i inventories/sandbox playbooks/firewall.yml playbooks/serve.yml "$@" > "$log" 2>&1 || {
    echo "FAILED: firewall.yml and serve.yml (log: $log)"; tail -n 30 "$log"; return 1; }
}

changed() {  # the sum of changed= over the PLAY RECAP of a log
  awk '/^PLAY RECAP/ { recap = 1 } recap && / changed=[0-9]+/ { match($0, / changed=[0-9]+/); sum += substr($0, RSTART + 9, RLENGTH - 9) }
       END { print sum + 0 }' "$1"
}

echo "--- one engine over gpu-node-1 and gpu-node-2 (tensor parallel 2)"
if converge "$logs/multinode.log" -e "$group"; then
  ansible-playbook -i inventories/sandbox tests/sandbox/multinode.yml > "$logs/multinode-check.log" 2>&1 || {
    echo "FAILED: tests/sandbox/multinode.yml (log: $logs/multinode-check.log)"; failed=1; }
  grep -E '"msg": ' "$logs/multinode-check.log" | sed 's/^ */    /'
  if [ "$failed" = 0 ]; then
    echo "--- the same again: nothing changes"
    converge "$logs/multinode-again.log" -e "$group" || failed=1
    n=$(changed "$logs/multinode-again.log")
    echo "    changed: $n"
    [ "$n" = 0 ] || { echo "FAILED: the second run changed $n task(s) (log: $logs/multinode-again.log)"; failed=1; }
  fi
  if [ "$failed" = 0 ]; then
    echo "--- the rolling restart takes the engine as one: its API rank stopped, the other rank restarted, the API rank started"
    ansible-playbook -i inventories/sandbox playbooks/rolling_restart.yml -e "$group" > "$logs/multinode-roll.log" 2>&1 || {
      echo "FAILED: rolling_restart.yml (log: $logs/multinode-roll.log)"; tail -n 30 "$logs/multinode-roll.log"; failed=1; }
    grep -E '^changed: .*llmfleet-worker-engine-0: ' "$logs/multinode-roll.log" | sed 's/^.*item=/    /; s/)$//'
  fi
  if [ "$failed" = 0 ]; then
    echo "--- the same group on a Ray cluster (workers_multinode_backend: ray)"
    # vLLM's CPU backend has no Ray support (vllm/platforms/cpu.py sets no ray_device_key): the cluster comes up under
    # systemd, and the head's engine stops with vLLM's own refusal (tests/sandbox/multinode-ray.yml finds it in the
    # engine's journal), so the play stops at the head's readiness wait, after the cluster's.
    if converge "$logs/multinode-ray.log" -e "$ray" >/dev/null; then
      echo "    vLLM serves on the Ray cluster"
    elif sed -n "/Wait until every member's Ray node is in the cluster\] /,/^TASK /p" "$logs/multinode-ray.log" \
        | grep -q '^ok: \[gpu-node-1\]$' && grep -q 'A worker did not become ready' "$logs/multinode-ray.log"; then
      echo "    the Ray cluster had every member; the head's engine did not become ready (its refusal is checked below)"
    else
      echo "FAILED: firewall.yml and serve.yml with the Ray backend (log: $logs/multinode-ray.log)"
      tail -n 30 "$logs/multinode-ray.log"; failed=1
    fi
    ansible-playbook -i inventories/sandbox tests/sandbox/multinode-ray.yml > "$logs/multinode-ray-check.log" 2>&1 || {
      echo "FAILED: tests/sandbox/multinode-ray.yml (log: $logs/multinode-ray-check.log)"; failed=1; }
    grep -E '"msg": ' "$logs/multinode-ray-check.log" | sed 's/^ */    /'
  fi
else
  failed=1
fi

echo "--- each node on its own again"
converge "$logs/multinode-back.log" || failed=1
.venv/bin/python tools/try_completions.py --url "https://$(ansible-inventory -i inventories/sandbox --host gateway-1 \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["lab_address"])')" --model tiny-llama \
  --ca-file .lab/tls/ca.crt --api-key-file .lab/secrets/client-api-key > "$logs/multinode-back-completions.log" 2>&1 || {
  echo "FAILED: the gateway did not answer after the nodes went back (log: $logs/multinode-back-completions.log)"; failed=1; }
[ "$failed" = 0 ] && echo "    the gateway answers; units: $(ansible -i inventories/sandbox gpu_nodes -m ansible.builtin.command \
  -a 'systemctl is-active llmfleet-worker-0' 2>/dev/null | grep -c '^active') per-node worker(s) active"
exit "$failed"
