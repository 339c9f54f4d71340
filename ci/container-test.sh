#!/usr/bin/env bash
# The tank's CI test: build the Dockerfile with podman on a debootstrapped Debian base, start
# the compose service (CPU variant) with podman-compose, and run pufferbox inside it:
# doctor, envs (every env ok), a short cartpole and a short nethack training; check the user
# is the checkout's owner (uid 4242, not the image default 1000), /dev/shm is large and the
# bind-mounted workspace is writable. Then a root-owned checkout (PUFFERBOX_UID=0: the tank runs
# as root) with a host-built *.so in it, and the devcontainer opened with the Dev Containers CLI
# (@devcontainers/cli from npm) on podman. Tear down.
#
#   sudo bash ci/container-test.sh          (.ci/run calls it after `make test`)
#
# Needs root (rootful podman) and Debian's apt. No registry is reached: the base image is
# debootstrapped and imported. Builds reach PyPI through the host's CA bundle, and pip's
# find-links folder (the local CPU torch wheel) is mounted so `torch==2.13.0` resolves to it.
# Cached between runs on one machine: the apt packages, the base image and podman's build
# layers (an unchanged tank/constraints.txt skips the whole Python stack).
#   PUFFERBOX_CI_STEPS   total steps of each training (default 2048)
#   PUFFERBOX_CI_KEEP=1  leave the containers and workspace copies up for debugging
#   PUFFERBOX_CI_DEVCONTAINER=0  skip the devcontainer CLI step (it needs npm and its registry)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
base_image=localhost/pufferbox-base:bookworm
image=localhost/pufferbox-tank:ci
project=pufferbox-ci
dc_project=pufferboxcidc   # the Dev Containers CLI drops dashes from project names
steps=${PUFFERBOX_CI_STEPS:-2048}
uid=4242   # not the image's default 1000: any checkout owner must work (PUFFERBOX_UID)

step() { printf '\n=== [%4ss] %s\n' "$SECONDS" "$*"; }
fail() { echo "Error: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "run as root (rootful podman): sudo bash ci/container-test.sh"

step "tools (podman, runc, podman-compose, debootstrap) and containers.conf"
bash ci/podman-setup.sh

step "base image: debootstrapped Debian bookworm"
bash docker/build-base.sh "$base_image"

# build_tank IMAGE UID: the Dockerfile for a checkout owned by UID (the stack layer is shared).
build_args=(--build-arg "BASE_IMAGE=$base_image")
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
build_tank() {
  local tag=$1 owner=$2 previous current
  previous=$(podman image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
  podman build --format docker --layers -f Dockerfile -t "$tag" "${build_args[@]}" \
    --build-arg "USER_UID=$owner" --build-arg "USER_GID=$owner" . 2>&1 | grep -v -E '^\[notice\]'
  current=$(podman image inspect --format '{{.Id}}' "$tag")
  # The replaced image only: its build layers stay behind as the cache of the next build.
  if [ -n "$previous" ] && [ "$previous" != "$current" ]; then podman rmi "$previous" >/dev/null 2>&1 || true; fi
  podman image ls "$tag"
}

# copy_checkout DIR OWNER: the checkout's files (what git tracks or would), owned by OWNER.
copy_checkout() {
  mkdir -p "$1"
  if git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$repo" ls-files -z --cached --others --exclude-standard | tar -C "$repo" --null -T - -c | tar -C "$1" -x
  else
    tar -C "$repo" --exclude=.venv --exclude=.git --exclude=runs -c . | tar -C "$1" -x
  fi
  chown -R "$2:$2" "$1"
}

step "build the tank image for a checkout owned by uid $uid"
build_tank "$image" "$uid"

step "workspace: a copy of the checkout, owned by uid $uid like a contributor's"
work=$(mktemp -d /var/tmp/pufferbox-ci.XXXXXX)
ws="$work/pufferbox"
copy_checkout "$ws" "$uid"
compose=(podman-compose -p "$project" -f compose.cpu.yaml)
export PUFFERBOX_IMAGE="$image"
teardown() {
  status=$?
  if [ "${PUFFERBOX_CI_KEEP:-0}" = 1 ]; then
    echo "kept: containers of projects $project*, workspaces under $work"
  else
    step "tear down"
    for p in "$project" "$project-root" "$dc_project"; do
      for c in $(podman ps -aq --filter "label=io.podman.compose.project=$p"); do podman rm -f "$c" >/dev/null 2>&1 || true; done
      for volume in $(podman volume ls -q --filter "label=io.podman.compose.project=$p"); do
        podman volume rm -f "$volume" >/dev/null || true
      done
      podman network rm -f "${p}_default" >/dev/null 2>&1 || true
    done
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
for _ in $(seq 60); do   # the entrypoint's banner ends with how to run commands ("Ready.")
  grep -q 'Ready\.' <<<"$(podman logs "$container" 2>&1)" && break
  sleep 1
done
banner=$(podman logs "$container" 2>&1)
echo "$banner"
# a here-string, not a pipe: with pipefail, `podman logs | grep -q` fails when grep exits first (SIGPIPE)
grep -q 'docker compose exec tank pufferbox train nethack' <<<"$banner" \
  || fail "the banner does not say how to run a command in the tank"
tank() { echo "+ $*"; podman exec "$container" "$@"; }

step "user, /dev/shm, writable workspace"
user_id=$(podman exec "$container" id -u)
echo "container user: $(podman exec "$container" id)"
[ "$user_id" = "$uid" ] || fail "the container runs as uid $user_id, not the checkout owner's $uid"
shm_bytes=$(podman exec "$container" df -B1 --output=size /dev/shm | tail -1 | tr -d ' ')
echo "/dev/shm: $((shm_bytes / 1024 / 1024)) MiB"
[ "$shm_bytes" -ge $((1024 * 1024 * 1024)) ] || fail "/dev/shm is only $shm_bytes bytes (compose shm_size not applied)"
podman exec "$container" sh -c 'echo written-in-the-tank > /workspace/.tank-write-check'
[ "$(cat "$ws/.tank-write-check")" = written-in-the-tank ] || fail "the write did not reach the bind-mounted workspace"
echo "workspace write reached the host copy (owner $(stat -c %u:%g "$ws/.tank-write-check"))"
rm -f "$ws/.tank-write-check"

step "devcontainer postCreateCommand: editable install of the workspace, as the container user"
post_create=$(python3 -c 'import json; print(json.load(open(".devcontainer/devcontainer.json"))["postCreateCommand"])')
tank bash -c "$post_create && pip check"
for leftover in build pufferbox.egg-info plugins/classic/build plugins/classic/pufferbox_classic.egg-info; do
  [ ! -e "$ws/$leftover" ] || fail "the editable install left $leftover in the checkout"
done

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
bad = ["{name}: {status} ({reason})".format(**row) for row in rows
       if not row["status"].startswith("ok")]  # "ok (cpu reference; ...)": a CUDA env without a GPU
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

step "the README's one-liner: compose run --rm tank pufferbox train ..."
"${compose[@]}" run --rm tank pufferbox train cartpole --total-steps 256 --run-dir runs/ci-run 2>&1 \
  | grep -v -E "^(Error: inspecting object: no such volume|\['podman)" | tail -5
tank ls runs/ci-run/checkpoints

step "a root-owned checkout (PUFFERBOX_UID=0) with a host-built extension in it"
(cd "$ws" && "${compose[@]}" down >/dev/null 2>&1) || true
root_image=localhost/pufferbox-tank:ci-root
build_tank "$root_image" 0
root_ws="$work/root-owned/pufferbox"
copy_checkout "$root_ws" 0
so=plugins/classic/pufferbox_classic/_cartpole.cpython-311-x86_64-linux-gnu.so
printf 'not an ELF: built on another host\n' >"$root_ws/$so"   # a stale host artefact
chmod 0444 "$root_ws/$so"
(cd "$root_ws" && PUFFERBOX_IMAGE="$root_image" podman-compose -p "$project-root" -f compose.cpu.yaml up -d --no-build)
root_container=$(podman ps --filter "label=io.podman.compose.project=$project-root" --format '{{.Names}}' | head -1)
[ -n "$root_container" ] || fail "no running container for the root-owned checkout"
rtank() { echo "+ $*"; podman exec "$root_container" "$@"; }
[ "$(podman exec "$root_container" id -u)" = 0 ] || fail "a root-owned checkout's tank should run as root"
rtank bash -c "$post_create"
rtank python -c "import pufferbox_classic._cartpole"
rtank pufferbox train cartpole --total-steps 1024 --run-dir runs/ci-root
(cd "$root_ws" && podman-compose -p "$project-root" -f compose.cpu.yaml down >/dev/null 2>&1) || true

if [ "${PUFFERBOX_CI_DEVCONTAINER:-1}" = 1 ]; then
  step "the devcontainer with the Dev Containers CLI on podman"
  npm_prefix="$work/npm"
  npm install --silent --prefix "$npm_prefix" @devcontainers/cli >/dev/null \
    || fail "npm install @devcontainers/cli failed (no npm registry? PUFFERBOX_CI_DEVCONTAINER=0 skips this step)"
  devcontainer="$npm_prefix/node_modules/.bin/devcontainer"
  "$devcontainer" --version
  # The CLI calls `compose config` and `compose version --short`, which Debian 12's podman-compose
  # 1.0.3 lacks: a current podman-compose from PyPI, in a throwaway venv.
  python3 -m venv "$work/podman-compose"
  "$work/podman-compose/bin/pip" install --quiet podman-compose==1.6.0 2>&1 | grep -v -E '^(WARNING: Location|\[notice\])' || true
  compose_cli="$work/podman-compose/bin/podman-compose"
  "$compose_cli" version --short
  # The CLI reads the repository's devcontainer.json as is; compose.ci.yaml is compose.cpu.yaml
  # without `build:` so the CLI starts the image built above instead of building from a registry base.
  sed '/^    build:/,/^    image:/{/^    image:/!d}' compose.cpu.yaml >compose.ci.yaml
  grep -q '^    image:' compose.ci.yaml && ! grep -q '^    build:' compose.ci.yaml || fail "compose.ci.yaml: build section not removed"
  chown "$uid:$uid" compose.ci.yaml
  PUFFERBOX_COMPOSE_FILE=compose.ci.yaml COMPOSE_PROJECT_NAME="$dc_project" PUFFERBOX_IMAGE="$image" \
    "$devcontainer" up --workspace-folder "$ws" --docker-path podman --docker-compose-path "$compose_cli" \
    --log-level info 2>&1 | tail -25
  PUFFERBOX_COMPOSE_FILE=compose.ci.yaml COMPOSE_PROJECT_NAME="$dc_project" \
    "$devcontainer" exec --workspace-folder "$ws" --docker-path podman --docker-compose-path "$compose_cli" \
    bash -c 'id -u; pip show pufferbox | grep -i "^Editable project location"; pufferbox envs --json >/dev/null' \
    | tee "$work/dc.out"
  grep -q "^$uid\$" "$work/dc.out" || fail "the devcontainer does not run as the checkout owner $uid"
  grep -q "Editable project location: /workspace" "$work/dc.out" || fail "postCreateCommand did not install /workspace editable"
fi
step "container test passed"
