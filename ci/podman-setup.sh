#!/usr/bin/env bash
# Rootful podman as the container tests need it (ci/container-test.sh, ci/tank-cuda-test.sh):
# podman, runc, podman-compose and debootstrap installed (apt), and containers.conf set to runc
# with no default ulimits (crun fails on this kernel's cgroup setup; the default ulimits are refused).
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "Error: run as root (rootful podman): sudo bash $0" >&2; exit 2; }
missing=()
for tool in podman runc podman-compose debootstrap; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || { echo "Error: missing ${missing[*]} and no apt-get; install them by hand" >&2; exit 2; }
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc podman-compose debootstrap >/dev/null
fi
podman --version; podman-compose version 2>/dev/null | grep -i 'podman-compose' || true
conf=/etc/containers/containers.conf
wanted=$'[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"'
if [ "$(cat "$conf" 2>/dev/null)" != "$wanted" ]; then
  mkdir -p /etc/containers
  [ -f "$conf" ] && cp "$conf" "$conf.bak-pufferbox"
  printf '%s\n' "$wanted" >"$conf"
fi
cat "$conf"
