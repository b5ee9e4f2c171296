#!/usr/bin/env bash
# Prints the path of a promtool binary for the monitoring tests (`promtool check rules`,
# `promtool test rules`, `promtool check config`), unpacked from Debian's prometheus package into
# .cache/prometheus/ and never installed: no service starts and nothing listens on this machine.
# apt-get update runs only when the download fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$root/.cache/prometheus"
binary="$dir/root/usr/bin/promtool"
if [ ! -x "$binary" ]; then
  mkdir -p "$dir"
  cd "$dir"
  apt-get download prometheus >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get download prometheus >/dev/null; }
  dpkg-deb -x prometheus_*.deb root
fi
"$binary" --version >&2
echo "$binary"
