#!/usr/bin/env bash
# The tank's CI test: build the Dockerfile with podman on a debootstrapped Debian base, start
# the compose service (CPU variant) with podman-compose, and run pufferbox inside it:
# doctor, envs (every env ok), a short cartpole and a short nethack training; check the user
# is not root, /dev/shm is large and the bind-mounted workspace is writable; tear down.
#
#   sudo bash ci/container-test.sh          (.ci/run calls it after `make test`)
#
# Needs root (rootful podman) and Debian's apt. No registry is reached: the base image is
# debootstrapped and imported. Builds reach PyPI through the host's CA bundle, and pip's
# find-links folder (the local CPU torch wheel) is mounted so `torch==2.13.0` resolves to it.
# Cached between runs on one machine: the apt packages, the base image and podman's build
# layers (an unchanged tank/constraints.txt skips the whole Python stack).
#   PUFFERBOX_CI_STEPS   total steps of each training (default 2048)
#   PUFFERBOX_CI_KEEP=1  leave the container and workspace copy up for debugging
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
base_image=localhost/pufferbox-base:bookworm
image=localhost/pufferbox-tank:ci
project=pufferbox-ci
steps=${PUFFERBOX_CI_STEPS:-2048}
uid=1000   # the image's default user id; the workspace copy is owned by it, as a checkout would be

step() { printf '\n=== [%4ss] %s\n' "$SECONDS" "$*"; }
fail() { echo "Error: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "run as root (rootful podman): sudo bash ci/container-test.sh"

step "tools: podman, runc, podman-compose, debootstrap"
missing=()
for tool in podman runc podman-compose debootstrap; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || fail "missing ${missing[*]} and no apt-get; install them by hand"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc podman-compose debootstrap >/dev/null
fi
podman --version; podman-compose version 2>/dev/null | grep -i 'podman-compose' || true

step "containers.conf: runc, no default ulimits"
# crun fails on this kernel's cgroup setup, and the default ulimits are refused.
conf=/etc/containers/containers.conf
wanted=$'[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"'
if [ "$(cat "$conf" 2>/dev/null)" != "$wanted" ]; then
  mkdir -p /etc/containers
  [ -f "$conf" ] && cp "$conf" "$conf.bak-pufferbox"
  printf '%s\n' "$wanted" >"$conf"
fi
cat "$conf"

step "base image: debootstrapped Debian bookworm"
bash docker/build-base.sh "$base_image"

step "build the tank image"
build_args=(--build-arg "BASE_IMAGE=$base_image" --build-arg "USER_UID=$uid" --build-arg "USER_GID=$uid")
ca=/etc/ssl/certs/ca-certificates.crt
if [ -f "$ca" ]; then
  build_args+=(-v "$ca:/run/host-ca.crt:ro" --build-arg PIP_CERT=/run/host-ca.crt)
fi
find_links=$(python3 -m pip config get global.find-links 2>/dev/null || .venv/bin/pip config get global.find-links 2>/dev/null || true)
find_links=${PIP_FIND_LINKS:-$find_links}
if [ -n "$find_links" ] && [ -d "$find_links" ]; then
  build_args+=(-v "$find_links:$find_links:ro" --build-arg "PIP_FIND_LINKS=$find_links")
  echo "find-links: $find_links ($(ls "$find_links" | tr '\n' ' '))"
else
  echo "warning: no local find-links folder; torch==2.13.0 comes from PyPI (the CUDA build, several GB)"
fi
previous=$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
podman build --format docker --layers -f Dockerfile -t "$image" "${build_args[@]}" . 2>&1 \
  | grep -v -E '^\[notice\]' 
current=$(podman image inspect --format '{{.Id}}' "$image")
# The replaced image only: its build layers stay behind as the cache of the next build.
if [ -n "$previous" ] && [ "$previous" != "$current" ]; then podman rmi "$previous" >/dev/null 2>&1 || true; fi
podman image ls "$image"

step "workspace: a copy of the checkout, owned by uid $uid like a contributor's"
work=$(mktemp -d /var/tmp/pufferbox-ci.XXXXXX)
ws="$work/pufferbox"
mkdir -p "$ws"
if git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$repo" ls-files -z --cached --others --exclude-standard | tar -C "$repo" --null -T - -c | tar -C "$ws" -x
else
  tar -C "$repo" --exclude=.venv --exclude=.git --exclude=runs -c . | tar -C "$ws" -x
fi
chown -R "$uid:$uid" "$ws"
compose=(podman-compose -p "$project" -f compose.cpu.yaml)
export PUFFERBOX_IMAGE="$image"
teardown() {
  status=$?
  if [ "${PUFFERBOX_CI_KEEP:-0}" = 1 ]; then
    echo "kept: container of project $project, workspace $ws"
  else
    step "tear down"
    (cd "$ws" && "${compose[@]}" down -v >/dev/null 2>&1) || true
    for volume in $(podman volume ls -q --filter "label=io.podman.compose.project=$project"); do
      podman volume rm -f "$volume" >/dev/null || true
    done
    podman network rm -f "${project}_default" >/dev/null 2>&1 || true
    rm -rf "$work"
  fi
  exit "$status"
}
trap teardown EXIT
cd "$ws"

step "podman-compose up (CPU variant: compose.cpu.yaml)"
"${compose[@]}" up -d --no-build
container=$(podman ps --filter "label=io.podman.compose.project=$project" --format '{{.Names}}' | head -1)
[ -n "$container" ] || fail "no running container for project $project"
for _ in $(seq 60); do   # the entrypoint's GPU status report ends with the PyCUDA line
  podman logs "$container" 2>&1 | grep -q 'pycuda:' && break
  sleep 1
done
podman logs "$container"
tank() { echo "+ $*"; podman exec "$container" "$@"; }

step "user, /dev/shm, writable workspace"
user_id=$(podman exec "$container" id -u)
echo "container user: $(podman exec "$container" id)"
[ "$user_id" != 0 ] || fail "the container runs as root"
shm_bytes=$(podman exec "$container" df -B1 --output=size /dev/shm | tail -1 | tr -d ' ')
echo "/dev/shm: $((shm_bytes / 1024 / 1024)) MiB"
[ "$shm_bytes" -ge $((1024 * 1024 * 1024)) ] || fail "/dev/shm is only $shm_bytes bytes (compose shm_size not applied)"
podman exec "$container" sh -c 'echo written-in-the-tank > /workspace/.tank-write-check'
[ "$(cat "$ws/.tank-write-check")" = written-in-the-tank ] || fail "the write did not reach the bind-mounted workspace"
echo "workspace write reached the host copy (owner $(stat -c %u:%g "$ws/.tank-write-check"))"
rm -f "$ws/.tank-write-check"

step "devcontainer postCreateCommand: editable install of the workspace, as the container user"
post_create=$(python3 -c 'import json; print(json.load(open(".devcontainer/devcontainer.json"))["postCreateCommand"])')
tank bash -c "$post_create --quiet && pip check"

step "every first-party plugin is in the image"
for manifest in plugins/*/pyproject.toml; do
  name=$(python3 -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["name"])' "$manifest")
  podman exec "$container" pip show --quiet "$name" >/dev/null || fail "plugin $name ($manifest) is not installed in the image"
  echo "installed: $name"
done

step "adding a plugin inside the tank: pip install, and its envs appear (README)"
has_cartpole() { podman exec "$container" pufferbox envs --json | python3 -c 'import json, sys; sys.exit(0 if any(r["name"] == "cartpole" for r in json.load(sys.stdin)) else 1)'; }
tank pip uninstall --quiet --yes pufferbox-classic
! has_cartpole || fail "cartpole still listed after uninstalling its plugin"
tank pip install --quiet --no-deps --no-build-isolation ./plugins/classic
has_cartpole || fail "cartpole not listed after pip install ./plugins/classic"
echo "pufferbox-classic uninstalled and pip-installed again: cartpole is back in pufferbox envs"

step "pufferbox doctor"
tank pufferbox doctor

step "pufferbox envs (every env ok)"
tank pufferbox envs
podman exec "$container" pufferbox envs --json | python3 -c '
import json, sys
rows = json.load(sys.stdin)
bad = [f"{row['name']}: {row['status']} ({row['reason']})" for row in rows if row["status"] != "ok"]
print(f"{len(rows)} envs, {len(rows) - len(bad)} ok")
sys.exit("Error: not every env is ok:\n  " + "\n  ".join(bad) if bad else 0)
'

step "pufferbox train cartpole ($steps steps)"
tank pufferbox train cartpole --total-steps "$steps" --run-dir runs/ci-cartpole

step "pufferbox train nethack ($steps steps)"
tank pufferbox train nethack --total-steps "$steps" --run-dir runs/ci-nethack

step "runs landed in the named volume"
tank ls runs/ci-cartpole runs/ci-nethack
[ ! -e "$ws/runs/ci-nethack" ] || fail "runs/ went to the bind-mounted workspace, not the runs volume"
podman volume inspect --format '{{.Name}}: {{.Mountpoint}}' "${project}_runs"
step "container test passed"
