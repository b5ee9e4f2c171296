#!/usr/bin/env bash
# `make sandbox`: the main job on the local lab. Installs what the lab needs, starts the lab
# hosts, runs site.yml against inventories/sandbox, and prints what it did and how long each
# step took. The full play output is kept in .cache/sandbox/site.log.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export PATH="$root/.venv/bin:$PATH"
export ANSIBLE_CONFIG="$root/ansible.cfg"
logs="$root/.cache/sandbox"
mkdir -p "$logs"
declare -a steps durations
failed=0

step() {
  local name="$1"; shift
  local start rc
  start=$(date +%s)
  echo "==> $name"
  "$@"
  rc=$?
  steps+=("$name"); durations+=("$(( $(date +%s) - start ))s")
  if [ "$rc" -ne 0 ]; then
    echo "FAILED: $name (rc=$rc)"
    failed=1
  fi
  return "$rc"
}

# Through ansible-runner's Python API as a CI job runs it (tools/run_playbook.py: host key checking on,
# the per-host stats, non-zero on a failed or unreachable host). SANDBOX_TWICE=1: a second run must change nothing.
run_site() {
  local twice=
  [ "${SANDBOX_TWICE:-0}" = 1 ] && twice=--twice
  .venv/bin/python tools/run_playbook.py -i inventories/sandbox ${twice:+"$twice"} --log "$logs/site.log" site.yml
}

# The first gateway of the inventory, at its lab address over HTTPS: the lab CA signed its
# certificate, the client key is the sandbox's (made by site.yml under .lab/secrets/, 0600).
ask_gateway() {
  local gateway address
  gateway=$(ansible-inventory -i inventories/sandbox --list | python3 -c 'import json,sys; print(json.load(sys.stdin)["gateways"]["hosts"][0])')
  address=$(ansible-inventory -i inventories/sandbox --host "$gateway" | python3 -c 'import json,sys; print(json.load(sys.stdin)["lab_address"])')
  echo "gateway $gateway at https://$address (CA .lab/tls/ca.crt, key .lab/secrets/client-api-key)"
  .venv/bin/python tools/try_completions.py --url "https://$address" --model tiny-llama \
    --ca-file .lab/tls/ca.crt --api-key-file .lab/secrets/client-api-key 2>&1 | tee "$logs/completions.log"
  return "${PIPESTATUS[0]}"
}

# Closed by default: listeners, who reaches which port, 401 without the keys, the redirect.
check_closed() {
  ansible-playbook -i inventories/sandbox tests/sandbox/closed.yml 2>&1 | tee "$logs/closed.log"
  return "${PIPESTATUS[0]}"
}

# The fleet's metrics and alerts through Prometheus's and Alertmanager's APIs on the monitoring host.
check_monitoring() {
  ansible-playbook -i inventories/sandbox tests/sandbox/monitoring.yml 2>&1 | tee "$logs/monitoring.log"
  return "${PIPESTATUS[0]}"
}

# Node maintenance: every GPU node asked for a reboot, then site.yml under a steady load from the controller through
# the gateway; the maintenance roll takes the nodes out one at a time: no failed request, no node left drained
# (benchmarks/maintenance_under_load.yml; its figures in benchmark-results/maintenance.json).
check_maintenance() {
  ansible-playbook -i inventories/sandbox benchmarks/maintenance_under_load.yml -e "benchmark_ca_file=$root/.lab/tls/ca.crt" \
    -e "maintenance_load_seconds=${SANDBOX_MAINTENANCE_LOAD_SECONDS:-420}" 2>&1 | tee "$logs/maintenance.log"
  return "${PIPESTATUS[0]}"
}

# Hardware validation: the healthy profiles pass, a degraded one fails with exactly its problems.
check_validation() {
  bash tests/sandbox/validate.sh 2>&1 | tee "$logs/validate.log"
  return "${PIPESTATUS[0]}"
}

# One engine over the two GPU nodes (workers_multinode_group), then each node on its own again.
check_multinode() {
  bash tests/sandbox/multinode.sh 2>&1 | tee "$logs/multinode-steps.log"
  return "${PIPESTATUS[0]}"
}

# SANDBOX_WITHOUT: steps left out, by name (maintenance, validation, multinode); make test leaves out maintenance and
# multinode for its time budget.
without() {
  case " ${SANDBOX_WITHOUT:-} " in *" $1 "*) echo "==> $2: left out (SANDBOX_WITHOUT)"; return 0 ;; esac
  return 1
}

step "install the lab's packages" lab/bin/labctl deps &&
step "start the lab hosts" lab/bin/labctl up &&
step "run site.yml against inventories/sandbox" run_site &&
step "ask the gateway: completion, stream, chat" ask_gateway &&
step "check that the fleet is closed" check_closed &&
step "check the monitoring: targets, metrics, an alert" check_monitoring &&
{ without maintenance "reboot every GPU node through site.yml under load" || step "reboot every GPU node through site.yml under load: one at a time, no failed request" check_maintenance; } &&
{ without validation "validate the nodes" || step "validate the nodes: healthy pass, degraded fails" check_validation; } &&
{ without multinode "one engine over both GPU nodes" || step "one engine over both GPU nodes, then each alone" check_multinode; }

echo
echo "==> what happened"
for i in "${!steps[@]}"; do
  printf '  %-44s %s\n' "${steps[$i]}" "${durations[$i]}"
done
if [ -f "$logs/site.log" ]; then
  # The PLAY RECAP lines of each run (tools/run_playbook.py heads each run with "==> run N of M:").
  recap_changed() {
    awk -v run="$1" '/^==> run [0-9]+ of [0-9]+:/ { this = $3 } this == run && / changed=[0-9]+/ {
      match($0, / changed=[0-9]+/); sum += substr($0, RSTART + 9, RLENGTH - 9); seen = 1 } END { if (seen) print sum }' "$logs/site.log"
  }
  changed=$(recap_changed 1)
  echo "  tasks changed in this converge: ${changed:-unknown} (0 means the lab was already converged)"
  if grep -q '^==> run 2 of 2:' "$logs/site.log"; then
    changed=$(recap_changed 2)
    echo "  tasks changed in the second run: ${changed:-unknown} (SANDBOX_TWICE=1: must be 0)"
  fi
fi
echo "  lab: lab/bin/labctl status | stop it: make lab-down | play log: .cache/sandbox/site.log"
exit "$failed"
