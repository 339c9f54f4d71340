#!/usr/bin/env bash
# Tank entrypoint: report what the GPU stack can see, then run the command (default: stay up
# so `docker compose exec tank ...` has somewhere to run). Never fails on a GPU-less machine.
set -uo pipefail

echo "pufferbox tank: $(id -un 2>/dev/null || echo "uid $(id -u)") (uid $(id -u)) in $(pwd)"
# The bind-mounted checkout must be writable by the tank's user (the image's USER_UID).
if [ -d /workspace ] && ! [ -w /workspace ]; then
  echo "  Error: /workspace (owner uid $(stat -c %u /workspace)) is not writable by uid $(id -u): rebuild with" \
       "PUFFERBOX_UID=$(stat -c %u /workspace) PUFFERBOX_GID=$(stat -c %g /workspace) in .env (docker compose up -d --build)"
fi
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
  echo "  driver:  $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
else
  echo "  driver:  no NVIDIA driver visible (no GPU passed to the container)"
fi
python - <<'PY'
import importlib.util

import torch

if torch.cuda.is_available():
    print(f"  torch:   {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}")
else:
    built = f"built for CUDA {torch.version.cuda}" if torch.version.cuda else "CPU build"
    print(f"  torch:   {torch.__version__} ({built}), no CUDA device")
if importlib.util.find_spec("pycuda") is None:
    pycuda_status = "not installed (the base image had no nvcc)"
else:
    try:
        import pycuda.driver as cuda

        cuda.init()
        pycuda_status = f"{cuda.get_version()}, {cuda.Device.count()} device(s)"
    except Exception as error:  # ImportError without libcuda.so.1, cuda.Error without a device
        pycuda_status = f"installed, unusable here ({type(error).__name__}: {error})"
print(f"  pycuda:  {pycuda_status}")
if not torch.cuda.is_available():
    print("  No GPU: training will run on the CPU backends (serial, multiprocessing, ray).")
PY
if [ "${1:-}" = sleep ]; then   # the compose service (sleep infinity): say how to use it
  echo "  Ready. From the checkout on the host:"
  echo "    docker compose exec tank pufferbox train nethack       # in this running tank"
  echo "    docker compose run --rm tank pufferbox train nethack   # or a one-off tank per command"
  echo "  (podman: podman-compose exec/run the same; a shell: docker compose exec tank bash)"
fi
exec "$@"
