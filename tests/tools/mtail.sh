#!/usr/bin/env bash
# Prints the path of an mtail binary for the exporters role's tests (the gateway's log metrics program
# compiled and run once over a sample log with --one_shot), unpacked from Debian's mtail package into
# .cache/mtail/ and never installed: no service starts and nothing listens on this machine. apt-get
# update runs only when the download fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$root/.cache/mtail"
binary="$dir/root/usr/bin/mtail"
if [ ! -x "$binary" ]; then
  mkdir -p "$dir"
  cd "$dir"
  apt-get download mtail >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get download mtail >/dev/null; }
  dpkg-deb -x mtail_*.deb root
fi
"$binary" --version >&2
echo "$binary"
