#!/usr/bin/env bash
# The CUDA tank's test: build the unchanged Dockerfile with podman on a CUDA 12.4 devel base
# made without a registry (docker/build-cuda-base.sh: debootstrapped bookworm + the CUDA 12.4
# toolkit from Debian's and NVIDIA's packages, laid out as in nvidia/cuda), so nvcc is in the
# image, PyCUDA is compiled against the toolkit and torch is the CUDA build of the pins. Then open
# it as the devcontainer with the Dev Containers CLI (@devcontainers/cli from npm) on podman, from
# compose.yaml (the GPU variant), and inside it check: nvcc 12.4; torch's CUDA build; PyCUDA built
# for CUDA 12.4 and linked to libcuda.so.1; `pufferbox doctor`; every kernel compiled by nvcc
# (sm_80, sm_90), every Ocean game's among them (test_every_game_has_a_kernel); `pufferbox check
# tag --cuda --host` (the kernel run on the CPU against its reference); `pufferbox envs`; a short
# `pufferbox train`. No GPU is needed, nor used.
#
#   sudo bash ci/tank-cuda-test.sh          (or: sudo make test-tank-cuda)
#
# Run it when the Dockerfile, tank/constraints*.txt, compose.yaml or .devcontainer change (README:
# "The tank"). Needs root (rootful podman), apt, pip's access to PyPI and npm's registry.
# Cached between runs on one machine: the base images, the toolkit's deb and wheels
# (/var/cache/pufferbox-cuda), podman's build layers (an unchanged tank/constraints*.txt skips the
# torch download and PyCUDA's compile), the devcontainers CLI and podman-compose.
#   PUFFERBOX_CI_STEPS   total steps of the training (default 1024)
#   PUFFERBOX_CI_KEEP=1  leave the container and the workspace copy up for debugging
#   PUFFERBOX_CI_DEVCONTAINER=0  start the service with podman-compose instead of the CLI (no npm)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
base_image=localhost/pufferbox-base:cuda12.4-bookworm
image=localhost/pufferbox-tank:cuda-ci
project=pufferboxcudaci   # the Dev Containers CLI drops dashes from project names
cache=${PUFFERBOX_CUDA_CACHE:-/var/cache/pufferbox-cuda}
steps=${PUFFERBOX_CI_STEPS:-1024}
uid=4242   # not the image's default 1000: any checkout owner must work (PUFFERBOX_UID)
repo_tests_out=$(mktemp /var/tmp/pufferbox-cuda-ci-tests.XXXXXX)
trap 'rm -f "$repo_tests_out"' EXIT   # until teardown's trap takes over
pin() { sed -n "s/^$1==\([^;]*\).*/\1/p" tank/constraints.txt; }

step() { printf '\n=== [%4ss] %s\n' "$SECONDS" "$*"; }
fail() { echo "Error: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "run as root (rootful podman): sudo bash ci/tank-cuda-test.sh"

step "tools (podman, runc, podman-compose, debootstrap) and containers.conf"
bash ci/podman-setup.sh

step "base image: bookworm + CUDA 12.4 toolkit"
PUFFERBOX_CUDA_CACHE="$cache" bash docker/build-cuda-base.sh "$base_image"

step "build the tank image on it (checkout owned by uid $uid)"
# No find-links folder here: the CPU test's holds the CPU torch wheel, and this image must get
# PyPI's CUDA build of the pinned torch. The host's CA bundle serves builds behind a proxy.
build_args=(--build-arg "BASE_IMAGE=$base_image" --build-arg "USER_UID=$uid" --build-arg "USER_GID=$uid")
ca=/etc/ssl/certs/ca-certificates.crt
[ -f "$ca" ] && build_args+=(-v "$ca:/run/host-ca.crt:ro" --build-arg PIP_CERT=/run/host-ca.crt)
previous=$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
podman build --format docker --layers -f Dockerfile -t "$image" "${build_args[@]}" . 2>&1 | grep -v -E '^\[notice\]'
current=$(podman image inspect --format '{{.Id}}' "$image")
# The replaced image only: its build layers stay behind as the cache of the next build.
if [ -n "$previous" ] && [ "$previous" != "$current" ]; then podman rmi "$previous" >/dev/null 2>&1 || true; fi
podman image ls "$image"

step "the image's own install: nvcc compiles every kernel (sm_80, sm_90), none skipped"
# The tests alone, outside a source tree: pufferbox and the plugins come from the image's
# site-packages (non-editable), so a kernel source missing from a wheel fails here.
podman run --rm -e PYTHONDONTWRITEBYTECODE=1 -v "$repo/tests:/opt/image-tests/tests:ro" -w /opt/image-tests "$image" \
  python -m pytest -q -p no:cacheprovider -W ignore::pytest.PytestUnknownMarkWarning -rs \
  tests/test_cuda_compile.py tests/test_ocean_cuda.py -k 'compile or every_game' | grep -v -E '^(pufferbox tank:|  [a-z]+: |No GPU)' | tee "$repo_tests_out"
grep -q -E '^[0-9]+ passed' "$repo_tests_out" && ! grep -q -i 'skipped\|failed' "$repo_tests_out" \
  || fail "the kernel compile tests did not all pass against the image's installed packages"

step "workspace: a copy of the checkout, owned by uid $uid"
work=$(mktemp -d /var/tmp/pufferbox-cuda-ci.XXXXXX)
ws="$work/pufferbox"
mkdir -p "$ws"
git -C "$repo" ls-files -z --cached --others --exclude-standard | tar -C "$repo" --null -T - -c | tar -C "$ws" -x
# compose.yaml as it is, GPU reservation included, less `build:` (the CLI would build from nvidia/cuda).
sed '/^    build:/,/^    image:/{/^    image:/!d}' compose.yaml >"$ws/compose.cuda-ci.yaml"
grep -q '^    image:' "$ws/compose.cuda-ci.yaml" && ! grep -q '^    build:' "$ws/compose.cuda-ci.yaml" \
  || fail "compose.cuda-ci.yaml: build section not removed"
grep -q 'driver: nvidia' "$ws/compose.cuda-ci.yaml" || fail "compose.yaml has no GPU reservation to test"
chown -R "$uid:$uid" "$ws"

# podman-compose turns the GPU reservation into `--device nvidia.com/gpu=all`, a CDI device. A GPU
# machine has its spec (nvidia-ctk cdi generate); here a stand-in spec with no device nodes lets
# podman accept the request, and marks the container so the test sees the request arrived.
cdi_standin=/var/run/cdi/pufferbox-ci-nvidia-standin.yaml
if ! grep -rqs --exclude="$(basename "$cdi_standin")" 'nvidia.com/gpu' /etc/cdi /var/run/cdi; then
  mkdir -p /var/run/cdi
  printf '%s\n' 'cdiVersion: "0.5.0"' 'kind: nvidia.com/gpu' 'devices:' '  - name: all' '    containerEdits:' \
    '      env: ["PUFFERBOX_CDI_STANDIN=nvidia.com/gpu=all"]' >"$cdi_standin"
  echo "no NVIDIA CDI spec on this machine: stand-in $cdi_standin (no GPU, env only)"
else
  cdi_standin=""
fi

step "podman-compose 1.6.0 (the CLI needs \`compose config\`; Debian's 1.0.3 lacks it)"
compose_venv="$cache/podman-compose-1.6.0"
[ -x "$compose_venv/bin/podman-compose" ] || {
  python3 -m venv "$compose_venv"
  "$compose_venv/bin/pip" install --quiet podman-compose==1.6.0 2>&1 | grep -v -E '^(WARNING: Location|\[notice\])' || true
}
compose_cli="$compose_venv/bin/podman-compose"
"$compose_cli" version --short
export PUFFERBOX_COMPOSE_FILE=compose.cuda-ci.yaml COMPOSE_PROJECT_NAME="$project" PUFFERBOX_IMAGE="$image"

teardown() {
  status=$?
  if [ "${PUFFERBOX_CI_KEEP:-0}" = 1 ]; then
    echo "kept: containers of project $project, workspace under $work"
  else
    step "tear down"
    for c in $(podman ps -aq --filter "label=io.podman.compose.project=$project"); do podman rm -f "$c" >/dev/null 2>&1 || true; done
    for volume in $(podman volume ls -q --filter "label=io.podman.compose.project=$project"); do
      podman volume rm -f "$volume" >/dev/null || true
    done
    podman network rm -f "${project}_default" >/dev/null 2>&1 || true
    rm -rf "$work"
  fi
  [ -z "$cdi_standin" ] || rm -f "$cdi_standin"
  rm -f "$repo_tests_out"
  exit "$status"
}
trap teardown EXIT

if [ "${PUFFERBOX_CI_DEVCONTAINER:-1}" = 1 ]; then
  step "the devcontainer (CUDA variant: compose.yaml) with the Dev Containers CLI on podman"
  npm_prefix="$cache/devcontainers-cli"
  [ -x "$npm_prefix/node_modules/.bin/devcontainer" ] || npm install --silent --prefix "$npm_prefix" @devcontainers/cli >/dev/null \
    || fail "npm install @devcontainers/cli failed (no npm registry? PUFFERBOX_CI_DEVCONTAINER=0 skips the CLI)"
  dc=("$npm_prefix/node_modules/.bin/devcontainer")
  "${dc[0]}" --version
  dc_flags=(--workspace-folder "$ws" --docker-path podman --docker-compose-path "$compose_cli")
  "${dc[@]}" up "${dc_flags[@]}" --log-level info 2>&1 | tail -25
  tank() { echo "+ $*" >&2; "${dc[@]}" exec "${dc_flags[@]}" "$@"; }
else
  step "podman-compose up (compose.yaml, the GPU variant) and the devcontainer's postCreateCommand"
  (cd "$ws" && "$compose_cli" -f compose.cuda-ci.yaml up -d --no-build)
  container=$(podman ps --filter "label=io.podman.compose.project=$project" --format '{{.Names}}' | head -1)
  [ -n "$container" ] || fail "no running container for project $project"
  tank() { echo "+ $*" >&2; podman exec -w /workspace "$container" "$@"; }
  tank bash -c "$(python3 -c 'import json; print(json.load(open(".devcontainer/devcontainer.json"))["postCreateCommand"])')"
fi

step "user, editable install, the GPU request"
tank bash -c 'id; pip show pufferbox | grep -i "^Editable project location"' | tee "$work/who.out"
grep -q "uid=$uid" "$work/who.out" || fail "the tank does not run as the checkout owner $uid"
grep -q "Editable project location: /workspace" "$work/who.out" || fail "postCreateCommand did not install /workspace editable"
if [ -n "$cdi_standin" ]; then   # CDI edits reach the container's first process (exec sessions do not inherit them)
  container=$(podman ps --filter "label=io.podman.compose.project=$project" --format '{{.Names}}' | head -1)
  podman exec "$container" cat /proc/1/environ | tr '\0' '\n' | grep '^PUFFERBOX_CDI_STANDIN=' \
    || fail "compose.yaml's GPU reservation did not reach podman as a CDI device"
fi

step "nvcc, torch's CUDA build, PyCUDA built against the toolkit"
tank bash -c 'command -v nvcc; nvcc --version | tail -2' | tee "$work/nvcc.out"
grep -q '^/usr/local/cuda/bin/nvcc$' "$work/nvcc.out" && grep -q 'release 12.4' "$work/nvcc.out" || fail "nvcc 12.4 not on PATH"
tank python -c 'import torch; print(torch.__version__, torch.version.cuda)' | tee "$work/torch.out"
read -r torch_version torch_cuda < <(tail -1 "$work/torch.out")
[ "${torch_version%%+*}" = "$(pin torch)" ] || fail "torch $torch_version, not the pinned $(pin torch)"   # PyPI tags it +cu130
[ "$torch_cuda" != None ] || fail "torch $torch_version is a CPU build: the CUDA image needs PyPI's CUDA build"
tank pip show pycuda | grep -E '^(Name|Version|Location)' | tee "$work/pycuda.out"
grep -q "^Version: $(pin pycuda)$" "$work/pycuda.out" || fail "pycuda is not the pinned $(pin pycuda)"
# Against the toolkit's libcuda stub, under its soname: the extension loads, reports the CUDA version
# its headers had, and cuInit answers that the driver is a stub. Without it: no libcuda.so.1 here.
tank bash -c 'readelf -d "$(python -c "import glob, pycuda, os; print(glob.glob(os.path.dirname(pycuda.__file__) + \"/_driver*.so\")[0])")" | grep NEEDED | grep libcuda
  stub=$(mktemp -d) && ln -s /usr/local/cuda/lib64/stubs/libcuda.so "$stub/libcuda.so.1"
  LD_LIBRARY_PATH=$stub python -c "
import pycuda.driver as drv
print(\"pycuda built for CUDA\", drv.get_version())
try:
    drv.init()
except Exception as exc:
    print(\"cuInit:\", exc)
"' | tee "$work/pycuda-stub.out"
grep -q 'libcuda.so.1' "$work/pycuda-stub.out" || fail "pycuda's _driver does not link libcuda.so.1"
grep -q 'pycuda built for CUDA (12, 4, 0)' "$work/pycuda-stub.out" || fail "pycuda was not built against CUDA 12.4's headers"
grep -q 'cuInit: .*stub' "$work/pycuda-stub.out" || fail "pycuda did not reach the driver API (stub) on cuInit"

step "pufferbox doctor"
tank pufferbox doctor
tank pufferbox doctor --json >"$work/doctor.json"
python3 - "$work/doctor.json" "$torch_cuda" <<'EOF'
import json, sys
checks = {c["name"]: c for c in json.load(open(sys.argv[1]))}
nvcc, pycuda, torch_cuda = checks["nvcc"], checks["pycuda"], checks["torch cuda"]
assert nvcc["ok"] and "12.4" in nvcc["detail"], nvcc
# no GPU here: PyCUDA is installed and fails only for want of the driver, with the fix
assert pycuda["detail"].startswith(("installed, but", "pycuda.driver loads")), pycuda
assert f"CUDA {sys.argv[2]} build" in torch_cuda["detail"] or torch_cuda["ok"], torch_cuda
print("doctor: nvcc ok (12.4), pycuda installed, torch is the CUDA", sys.argv[2], "build")
EOF

step "the workspace's editable install: nvcc compiles every kernel (sm_80, sm_90), none skipped"
tank python -m pytest -q -p no:cacheprovider -rs tests/test_cuda_compile.py tests/test_ocean_cuda.py -k 'compile or every_game' \
  | tee "$work/pytest.out"
grep -q -E '^[0-9]+ passed' "$work/pytest.out" && ! grep -q -i 'skipped' "$work/pytest.out" \
  || fail "the kernel compile tests did not all run and pass"

step "pufferbox check tag --cuda --host (the kernel on the CPU against its reference)"
tank pufferbox check tag --cuda --host

step "pufferbox envs (every env ok)"
tank pufferbox envs --json >"$work/envs.json"
python3 - "$work/envs.json" <<'EOF'
import json, sys
rows = json.load(open(sys.argv[1]))
bad = [f"{r['name']}: {r['status']} ({r['reason']})" for r in rows if not r["status"].startswith("ok")]
print(f"{len(rows)} envs, {len(rows) - len(bad)} ok")
sys.exit("Error: not every env is ok:\n  " + "\n  ".join(bad) if bad else 0)
EOF

step "pufferbox train cartpole ($steps steps)"
tank pufferbox train cartpole --total-steps "$steps" --run-dir runs/cuda-ci-cartpole
tank ls runs/cuda-ci-cartpole/checkpoints
step "CUDA tank test passed"
