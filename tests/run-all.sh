#!/usr/bin/env bash
# The test command (`make test`): every stage runs, each one's result and time is
# printed, and the command fails if any stage failed. Logs go to .cache/test-logs/.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export PATH="$root/.venv/bin:$PATH"
export ANSIBLE_CONFIG="$root/ansible.cfg"
logs="$root/.cache/test-logs"
mkdir -p "$logs"
declare -a names results times
failed=0

stage() {
  local name="$1"; shift
  local start end rc
  start=$(date +%s)
  echo "==> [$name] $*"
  "$@" 2>&1 | tee "$logs/$name.log"
  rc=${PIPESTATUS[0]}
  end=$(date +%s)
  names+=("$name"); times+=("$((end - start))s")
  if [ "$rc" -eq 0 ]; then results+=("ok"); else results+=("FAILED (rc=$rc, log: .cache/test-logs/$name.log)"); failed=1; fi
}

# Stages in the background: each one's output goes to its log only, printed when they are waited for; each one's
# time is from its start to its own end.
declare -a bg_names bg_pids bg_starts
background() {
  local name="$1"; shift
  echo "==> [$name] $* (in the background, log .cache/test-logs/$name.log)"
  ( "$@" >"$logs/$name.log" 2>&1; rc=$?; date +%s >"$logs/$name.end"; exit "$rc" ) &
  bg_names+=("$name"); bg_pids+=("$!"); bg_starts+=("$(date +%s)")
}
wait_background() {
  local i rc name
  for i in "${!bg_pids[@]}"; do
    name="${bg_names[$i]}"
    wait "${bg_pids[$i]}"
    rc=$?
    echo "==> [$name] finished (rc=$rc):"
    cat "$logs/$name.log"
    names+=("$name"); times+=("$(($(cat "$logs/$name.end") - bg_starts[i]))s")
    if [ "$rc" -eq 0 ]; then results+=("ok"); else results+=("FAILED (rc=$rc, log: .cache/test-logs/$name.log)"); failed=1; fi
  done
  bg_names=(); bg_pids=(); bg_starts=()
}

# The gateway's template tests run nginx -t with Debian's nginx binary, unpacked (not installed) by tests/tools/nginx.sh.
stage nginx-binary tests/tools/nginx.sh
# The monitoring tests run promtool (check rules, test rules, check config) from Debian's prometheus
# package, unpacked the same way by tests/tools/promtool.sh; without it they fail.
stage promtool-binary tests/tools/promtool.sh
# The gateway's log metrics program runs in Debian's mtail, unpacked by tests/tools/mtail.sh.
stage mtail-binary tests/tools/mtail.sh
# The gateway's router (cache_aware) runs for real in its live test: vllm-router in a venv with the lab recipe's
# pinned wheels, made by tests/tools/vllm-router.sh.
stage router-binary tests/tools/vllm-router.sh
# The lab's Debian packages (podman, runc, debootstrap, ...) are installed here, on a fresh machine too (after the
# three downloads above: one apt at a time).
stage lab-deps lab/bin/labctl deps
# A sandbox left running (make sandbox: vLLM engines, Prometheus, nginx) would take the 2 cores from the scenarios:
# its hosts are stopped, and kept (make sandbox starts them again).
stage lab-idle lab/bin/labctl stop
# The checks that need no lab run in the background, beside the scenarios: alone they kept one of the two cores busy
# (pytest mostly waits on the processes it starts; ansible-lint and ansible-test sanity use a core each for a few
# minutes), so the scenarios, which leave some of the CPU idle while their instances work, no longer wait for them.
background ansible-lint ansible-lint
background sanity tests/sanity/run.sh
# pytest exits 5 when it collected nothing: that is a failure here too.
background pytest env PYTHONPATH="$root/.collections" LLMFLEET_NGINX="$root/.cache/nginx/root/usr/sbin/nginx" LLMFLEET_PROMTOOL="$root/.cache/prometheus/root/usr/bin/promtool" LLMFLEET_MTAIL="$root/.cache/mtail/root/usr/bin/mtail" LLMFLEET_VLLM_ROUTER="$(tests/tools/vllm-router.sh 2>/dev/null)" python -m pytest tests/unit -q -p no:cacheprovider
stage yamllint yamllint --strict .
# The collection as it ships: the tarball built, installed offline, documented and syntax-checked from outside the checkout.
stage collection tests/collection/run.sh
# What the scenarios install (the lab image, the stub repository, wheelhouses, model, stand-in sources): the image
# (debootstrap) is built beside the rest (pip).
stage lab-artifacts lab/bin/labctl artifacts
# The scenarios spend much of their time waiting on their instances: two molecule processes side by side
# (lab/labctl/lanes.py; each lane's output in .cache/test-logs/molecule-lane-N.log). Three lanes overload the 2 cores:
# each scenario then takes so much longer that the whole is no shorter (docs/measurements.md, "make test"). The
# README's main job, make sandbox (tests/sandbox.sh: site.yml on the sandbox's hosts and its checks), is one more
# share of the lanes. For the time budget it leaves out the node maintenance under load (about 10 minutes) and the
# multi-node step (about 10 minutes), which make sandbox runs: SANDBOX_WITHOUT= runs them too.
export SANDBOX_WITHOUT="${SANDBOX_WITHOUT-maintenance multinode}"
stage molecule lab/bin/labctl molecule --lanes "${MOLECULE_LANES:-2}" --with-sandbox test --all
wait_background

echo
echo "==> summary"
for i in "${!names[@]}"; do
  printf '  %-14s %-8s %s\n' "${names[$i]}" "${times[$i]}" "${results[$i]}"
done
# Last, what failed in words (a CI log is often read from its end): in each failed stage's logs (the molecule lanes'
# included), every line that reports a failure (molecule's CRITICAL, a recap's failed=N, the sandbox's FAILED:, pytest's
# FAILED, sanity's ERROR:, ansible-lint's Failed:) with the error line before it (fatal:, pytest's E); expected
# failures that a test provokes and checks are not reported so. Without such a line: the log's last lines.
for i in "${!names[@]}"; do
  case "${results[$i]}" in FAILED*) ;; *) continue ;; esac
  name="${names[$i]}"
  files=("$logs/$name.log")
  if [ "$name" = molecule ]; then files+=("$logs"/molecule-lane-*.log); fi
  echo "==> what failed in $name:"
  found="$(sed 's/\x1b\[[0-9;]*m//g' "${files[@]}" 2>/dev/null \
    | awk '/fatal: \[|failed: \[|FAILED!|^E  / {last = $0}
           /CRITICAL|failed=[1-9]|FAILED: |^FAILED tests|^ERROR: |Failed: / && !/glob failed/ {
             if (last != "") print last; print; last = ""}' \
    | cut -c1-300 | awk '!seen[$0]++' | tail -n 10)"
  if [ -n "$found" ]; then echo "$found"; else tail -n 5 "${files[0]}" | cut -c1-300; fi
done
exit "$failed"
