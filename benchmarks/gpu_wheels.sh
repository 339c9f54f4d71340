#!/usr/bin/env bash
# Wheels that benchmarks/gpu_session.sh installs on a GPU machine, built here into ./.whl.
#
#   bash benchmarks/gpu_wheels.sh        # then copy ./.whl to the GPU machine with the tree
#
# That machine has Python 3.12, a CUDA torch and no package index: everything else pufferbox and the
# warp/classic/nethack/atari/ocean plugins need comes from here, at the tank's pins. pycuda has no
# wheels on PyPI; it is built for Python 3.12 against a link-time stub libcuda.so.1 that defines
# every cu* function of cuda.h (../shared/notes/machine.md: never put the stub on a runtime path).
# Needs python3.12 (PY312; pyenv's 3.12.1 on the CPU machines), CUDA's headers under CUDA_ROOT, gcc.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PY312:-}" ]; then  # a pyenv shim on PATH may exist and still refuse to run: try each
  for candidate in python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python3.12; do
    if "$candidate" -c "" 2>/dev/null; then PY312=$candidate && break; fi
  done
fi
: "${PY312:?no working python3.12: set PY312}"
CUDA_ROOT=${CUDA_ROOT:-/usr/local/cuda}
WHL=.whl
mkdir -p "$WHL" .git/info
grep -qx "/.whl/" .git/info/exclude 2>/dev/null || echo "/.whl/" >>.git/info/exclude  # never committed
BUILD=$(mktemp -d)
trap 'rm -rf "$BUILD"' EXIT

platforms=()
for tag in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
  platforms+=(--platform "$tag")
done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${platforms[@]}" \
  -c tank/constraints.txt -d "$WHL" \
  numpy gymnasium farama-notifications pettingzoo tomli-w openskill nle ale-py pytools mako platformdirs siphash24

if ! ls "$WHL"/pycuda-*-cp312-*.whl >/dev/null 2>&1; then
  # the stub: one empty function per cu* name of the preprocessed cuda.h, soname libcuda.so.1
  gcc -E -P "$CUDA_ROOT/include/cuda.h" | grep -oE '\bcu[A-Z][A-Za-z0-9_]*[[:space:]]*\(' | tr -d ' (' | sort -u |
    awk '{print "void " $1 "(void) {}"}' >"$BUILD/stub.c"
  mkdir "$BUILD/stub"
  gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$BUILD/stub/libcuda.so" "$BUILD/stub.c"
  "$PY312" -m venv "$BUILD/venv"
  "$BUILD/venv/bin/pip" install -q -c tank/constraints.txt numpy setuptools wheel pytools mako platformdirs
  version=$(grep -i '^pycuda==' tank/constraints.txt | cut -d= -f3)
  # the sdist straight from the index: `pip download` would first build its metadata in isolation
  url=$(curl -fsS https://pypi.org/simple/pycuda/ | grep -oE "https://[^\"#]*/pycuda-$version\.tar\.gz" | head -n 1)
  curl -fsS -o "$BUILD/pycuda.tar.gz" "$url"
  tar xzf "$BUILD/pycuda.tar.gz" -C "$BUILD"
  (
    cd "$BUILD/pycuda-$version"
    "$BUILD/venv/bin/python" configure.py --cuda-root="$CUDA_ROOT" --no-cuda-enable-curand --cudadrv-lib-dir="$BUILD/stub"
    "$BUILD/venv/bin/pip" wheel -q . --no-build-isolation --no-deps -w "$OLDPWD/$WHL"
  )
fi
ls -la "$WHL"
du -sh "$WHL"
