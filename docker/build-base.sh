#!/usr/bin/env bash
# Build a Debian bookworm base image without a registry: debootstrap a minimal root
# filesystem and `podman import` it. Used by ci/container-test.sh, where no registry can be
# reached; with a registry, just use the Dockerfile's default CUDA base.
#   usage: docker/build-base.sh [IMAGE]      (default localhost/pufferbox-base:bookworm)
#   MIRROR  Debian mirror URL (default: debootstrap's own default mirror)
# Idempotent: an existing image of that name is kept (remove it to rebuild).
set -euo pipefail
IMAGE=${1:-localhost/pufferbox-base:bookworm}
MIRROR=${MIRROR:-}

if podman image exists "$IMAGE"; then
  echo "base image $IMAGE already present"
  exit 0
fi
command -v debootstrap >/dev/null || { echo "Error: debootstrap not found; install it (apt-get install debootstrap)." >&2; exit 2; }
rootfs=$(mktemp -d /var/tmp/pufferbox-rootfs.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT
echo "debootstrapping bookworm into $rootfs"
debootstrap --variant=minbase bookworm "$rootfs" ${MIRROR:+"$MIRROR"} >"$rootfs.log" 2>&1 \
  || { tail -20 "$rootfs.log" >&2; echo "Error: debootstrap failed (log: $rootfs.log)." >&2; exit 1; }
rm -f "$rootfs.log"
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
tar -C "$rootfs" -c . | podman import \
  --change 'CMD ["/bin/bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  - "$IMAGE"
echo "base image $IMAGE imported"
