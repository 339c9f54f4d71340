#!/usr/bin/env bash
# Build and start the tank, failing clearly when the image cannot be built (podman-compose 1.0.x
# exits 0 after a failed build, e.g. when the base image cannot be pulled).
#   bash docker/tank-up.sh [-f compose.cpu.yaml]     (Docker Compose v2, else podman-compose)
set -euo pipefail
cd "$(dirname "$0")/.."
if docker compose version >/dev/null 2>&1; then
  compose=(docker compose) engine=docker
elif command -v podman-compose >/dev/null; then
  compose=(podman-compose) engine=podman
  export BUILDAH_FORMAT=docker   # keep SHELL (and pipefail) in the image
else
  echo "Error: neither \`docker compose\` nor podman-compose found; install one (README: The tank)" >&2
  exit 2
fi
image=${PUFFERBOX_IMAGE:-pufferbox-tank:latest}
base=${PUFFERBOX_BASE_IMAGE:-nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04}
log=$(mktemp "${TMPDIR:-/tmp}/pufferbox-build.XXXXXX")
trap 'rm -f "$log"' EXIT
status=0
"${compose[@]}" "$@" build 2>&1 | tee "$log" || status=$?
# podman-compose 1.0.x reports a failed `podman build` as "exit code: N" and itself exits 0.
if [ "$status" != 0 ] || grep -q -E '^exit code: [1-9]' "$log" || ! "$engine" image inspect "$image" >/dev/null 2>&1; then
  reason=$({ grep -m1 -E '^Error' "$log" || grep -m1 -i -E 'error|failed' "$log" || true; } | cut -c1-200)
  echo "Error: the tank image $image was not built${reason:+ ($reason)}; if the base image $base cannot be" \
       "pulled, set PUFFERBOX_BASE_IMAGE in .env to one you can reach" >&2
  exit 2
fi
"${compose[@]}" "$@" up -d
echo "tank up: ${compose[*]} $* exec tank pufferbox train nethack"
