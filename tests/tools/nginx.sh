#!/usr/bin/env bash
# Prints the path of an nginx binary for the gateway's template tests (`nginx -t` on rendered
# files), unpacked from Debian's package into .cache/nginx/ and never installed: no service
# starts and nothing listens on this machine. apt-get update runs only when the download fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$root/.cache/nginx"
binary="$dir/root/usr/sbin/nginx"
if [ ! -x "$binary" ]; then
  mkdir -p "$dir"
  cd "$dir"
  apt-get download nginx >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get download nginx >/dev/null; }
  dpkg-deb -x nginx_*.deb root
fi
"$binary" -v >&2
echo "$binary"
