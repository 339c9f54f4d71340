#!/usr/bin/env bash
# Build a CUDA 12.4 *devel* base without a registry: the debootstrapped Debian bookworm base
# (docker/build-base.sh) plus a CUDA 12.4 toolkit laid out as NVIDIA's images lay it out
# (/usr/local/cuda -> /usr/local/cuda-12.4 with bin/nvcc, include/cuda.h, lib64/libcudart.so,
# lib64/stubs/libcuda.so; PATH, LIBRARY_PATH, CUDA_HOME set), so the unchanged Dockerfile builds
# the tank on it as on nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04. Used by ci/tank-cuda-test.sh.
#   usage: docker/build-cuda-base.sh [IMAGE]     (default localhost/pufferbox-base:cuda12.4-bookworm)
#
# Where each part comes from (both pinned below, both verified: apt checks the deb against Debian's
# signed index, pip checks the wheels against the hashes here):
#   - Debian trixie's nvidia-cuda-toolkit deb: nvcc, cicc, ptxas, nvlink, fatbinary, cudafe++, bin2c,
#     libdevice. NVIDIA's PyPI wheels ship no nvcc driver, cicc or fatbinary (nvidia-cuda-nvcc-cu12 up
#     to 12.9 holds ptxas and libnvvm only). These are NVIDIA's own binaries, needing glibc >= 2.34:
#     bookworm's 2.36 runs them; g++-12 is a host compiler CUDA 12.4 supports.
#   - NVIDIA's PyPI wheels: headers (cuda.h, cuda_runtime.h, cudaProfiler.h, crt/, cub/thrust/libcu++),
#     libcudart, and cuRAND (PyCUDA builds pycuda.curandom against it, as on nvidia/cuda).
#     Debian's headers come only in nvidia-cuda-dev, a 934 MB deb of static libraries we do not need.
#   Why not a trixie base: the Dockerfile installs python3.11 from apt, and trixie has only 3.13.
# libcuda.so in lib64/stubs is built here from cuda.h and cudaProfiler.h, as NVIDIA's stub: PyCUDA's extension links
# against it (-lcuda, through LIBRARY_PATH); at run time the loader finds the real libcuda.so.1 that
# the NVIDIA container runtime mounts. Every function returns CUDA_ERROR_STUB_LIBRARY, so a test
# can load PyCUDA against the stub (linked as libcuda.so.1) to read the CUDA version it was built for.
#
# Downloads are cached in PUFFERBOX_CUDA_CACHE (default /var/cache/pufferbox-cuda); an existing
# image of that name is kept (remove it to rebuild). Needs root (rootful podman), apt and pip.
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=${1:-localhost/pufferbox-base:cuda12.4-bookworm}
BOOKWORM=localhost/pufferbox-base:bookworm
CACHE=${PUFFERBOX_CUDA_CACHE:-/var/cache/pufferbox-cuda}
TOOLKIT_DEB_VERSION=12.4.131~12.4.1-2
CUDA_VERSION=12.4.1

if podman image exists "$IMAGE"; then
  echo "base image $IMAGE already present"
  exit 0
fi
fail() { echo "Error: $*" >&2; exit 2; }
command -v apt-get >/dev/null || fail "apt-get not found: the toolkit comes from Debian's archive (run on Debian/Ubuntu)."
command -v cc >/dev/null || fail "no C compiler for the libcuda stub; install gcc (apt-get install gcc)."
bash docker/build-base.sh "$BOOKWORM"

# Debian trixie's toolkit deb, through a private apt configuration (the host's sources are untouched).
apt_root="$CACHE/apt-trixie"
mkdir -p "$apt_root"/etc/apt/{apt.conf.d,preferences.d,sources.list.d} "$apt_root"/var/lib/apt/lists/partial \
  "$apt_root"/var/cache/apt/archives/partial "$apt_root"/var/lib/dpkg "$CACHE/debs" "$CACHE/wheels"
touch "$apt_root/var/lib/dpkg/status"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie contrib non-free" \
  >"$apt_root/etc/apt/sources.list"
cat >"$apt_root/apt.conf" <<EOF
Dir "$apt_root/";
Dir::State::status "$apt_root/var/lib/dpkg/status";
APT::Architecture "amd64";
APT::Architectures { "amd64"; };
APT::Sandbox::User "root";
EOF
deb="$CACHE/debs/nvidia-cuda-toolkit_${TOOLKIT_DEB_VERSION//:/%3a}_amd64.deb"
if [ ! -f "$deb" ]; then
  [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] || fail "no Debian archive keyring (apt-get install debian-archive-keyring)."
  APT_CONFIG="$apt_root/apt.conf" apt-get update -qq
  (cd "$CACHE/debs" && APT_CONFIG="$apt_root/apt.conf" apt-get download -qq "nvidia-cuda-toolkit=$TOOLKIT_DEB_VERSION") \
    || fail "nvidia-cuda-toolkit=$TOOLKIT_DEB_VERSION is not in Debian trixie any more; update TOOLKIT_DEB_VERSION."
fi

# NVIDIA's wheels: headers and the runtime library of the same CUDA release.
cat >"$CACHE/wheels/requirements.txt" <<'EOF'
nvidia-cuda-runtime-cu12==12.4.127 --hash=sha256:64403288fa2136ee8e467cdc9c9427e0434110899d07c779f25b5c068934faa5
nvidia-cuda-nvcc-cu12==12.4.131 --hash=sha256:e4c9a35435c3b0e36c6397c5696334c9ea6650e524736cbd1c5d345ea099bb04
nvidia-cuda-cccl-cu12==12.4.127.post1 --hash=sha256:2027fa5fc75fbee703bf24e8275a40a605cf94a3e8fef8a7187897d49b34facb
nvidia-cuda-profiler-api-cu12==12.4.127 --hash=sha256:7d80d1d8cfedc4b31b3df260f75e339a51322b25ff41f2a47edb5b2139b8a58f
nvidia-curand-cu12==10.3.5.147 --hash=sha256:a88f583d4e0bb643c49743469964103aa59f7f708d862c3ddb0fc07f851e3b8b
EOF
python3 -m pip download --quiet --no-deps --only-binary=:all: --require-hashes --platform manylinux2014_x86_64 \
  --python-version 3.11 --dest "$CACHE/wheels" -r "$CACHE/wheels/requirements.txt" \
  || fail "pip could not fetch (or verify) NVIDIA's CUDA 12.4 wheels from PyPI; see above."

context=$(mktemp -d /var/tmp/pufferbox-cuda-base.XXXXXX)
trap 'rm -rf "$context"' EXIT
root="$context/cuda-${CUDA_VERSION%.*}"
mkdir -p "$root"/{bin,include,lib64/stubs,nvvm/bin} "$context/deb" "$context/wheels"
dpkg-deb -x "$deb" "$context/deb"
for wheel in "$CACHE"/wheels/*.whl; do unzip -q -o "$wheel" -d "$context/wheels"; done
tk="$context/deb/usr/lib/nvidia-cuda-toolkit"
cp "$tk/bin/nvcc" "$tk/bin/crt" "$root/bin/" -r
cp "$tk/bin/cicc" "$root/nvvm/bin/"
cp -r "$tk/libdevice" "$root/nvvm/libdevice"
for tool in ptxas nvlink fatbinary cudafe++ bin2c cuobjdump cu++filt nvprune; do cp "$context/deb/usr/bin/$tool" "$root/bin/"; done
for part in cuda_runtime cuda_nvcc cuda_cccl cuda_profiler_api curand; do cp -r "$context/wheels/nvidia/$part/include/." "$root/include/"; done
find "$root/include" -name __init__.py -delete
cp "$context/wheels/nvidia/cuda_runtime/lib/libcudart.so.12" "$root/lib64/"
ln -s libcudart.so.12 "$root/lib64/libcudart.so"
cp "$context/wheels/nvidia/curand/lib/libcurand.so.10" "$root/lib64/"
ln -s libcurand.so.10 "$root/lib64/libcurand.so"
# NVIDIA's own nvcc.profile, for this layout: libdevice and cicc under nvvm/, headers and libs at the top.
cat >"$root/bin/nvcc.profile" <<'EOF'
TOP              = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH += $(TOP)/lib64:
PATH            += $(TOP)/nvvm/bin:$(_HERE_):
INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib64/stubs" "-L$(TOP)/lib64"
CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
EOF
# The stub: every driver entry point cuda.h and cudaProfiler.h declare (plain, _v2.., per-thread-stream
# names), each
# returning CUDA_ERROR_STUB_LIBRARY, and the error strings saying so.
{
  echo '#define STUB 34 /* CUDA_ERROR_STUB_LIBRARY */'
  for defs in "" -D__CUDA_API_VERSION_INTERNAL -DCUDA_API_PER_THREAD_DEFAULT_STREAM; do
    printf '#include <cuda.h>\n#include <cudaProfiler.h>\n' | cc -E -P $defs -I "$root/include" -
  done | tr -s '\n\t' '  ' | grep -oE '\bCUresult +cu[A-Za-z0-9_]+ *\(' | sed -E 's/CUresult +//; s/ *\(//' | sort -u \
    | grep -v -x -E 'cuGetError(String|Name)' | sed 's/.*/int &(void) { return STUB; }/'
  echo 'int cuGetErrorString(int e, const char **s) { *s = "CUDA driver is a stub library"; return 0; }'
  echo 'int cuGetErrorName(int e, const char **s) { *s = "CUDA_ERROR_STUB_LIBRARY"; return 0; }'
} >"$context/stub.c"
cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$root/lib64/stubs/libcuda.so" "$context/stub.c"
grep -q ' T cuInit$' <<<"$(nm -D --defined-only "$root/lib64/stubs/libcuda.so")" || fail "the libcuda stub lacks cuInit"
"$root/bin/nvcc" --version | tail -2

cat >"$context/Containerfile" <<EOF
FROM $BOOKWORM
COPY cuda-${CUDA_VERSION%.*} /usr/local/cuda-${CUDA_VERSION%.*}
RUN ln -s cuda-${CUDA_VERSION%.*} /usr/local/cuda \
 && echo /usr/local/cuda/lib64 >/etc/ld.so.conf.d/cuda.conf && ldconfig
# As nvidia/cuda's devel images: the toolkit on PATH, the stub for linking, and what the
# NVIDIA container runtime reads to mount the driver.
ENV CUDA_VERSION=$CUDA_VERSION \
    CUDA_HOME=/usr/local/cuda \
    PATH=/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LIBRARY_PATH=/usr/local/cuda/lib64/stubs \
    LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/nvidia/lib64 \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    NVIDIA_REQUIRE_CUDA=cuda>=12.4
CMD ["/bin/bash"]
EOF
podman build --format docker -t "$IMAGE" "$context"
echo "base image $IMAGE built ($(du -sh "$root" | cut -f1) of CUDA $CUDA_VERSION toolkit)"
