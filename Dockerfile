# syntax=docker/dockerfile:1
# The tank: CUDA 12 + Python 3.11 + the pinned pufferbox stack + every first-party plugin.
#   docker compose up -d && docker compose exec tank pufferbox train nethack   (README: "The tank")
# Layers go from least to most often changed: system packages, user, the pinned stack
# (tank/constraints.txt only), then pufferbox's own code. Editing pufferbox or a plugin
# rebuilds only the last layers.

# A CUDA *devel* image: PyCUDA compiles kernels at run time, so nvcc must be in the image.
# Any Ubuntu 22.04 / Debian bookworm base works (CI uses a debootstrapped bookworm: no nvcc,
# so PyCUDA is left out there and `pufferbox doctor` says so).
ARG BASE_IMAGE=nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04
FROM ${BASE_IMAGE}

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# Pinning apt versions is impossible in a Dockerfile shared by Ubuntu and Debian bases;
# the Python stack, which is what matters for reproducibility, is pinned exactly.
# g++: host compiler for nvcc and pycuda; libgl1/libglib2.0-0/libegl1: renderers of
# procgen/moderngl; git: `pip install git+...` of third-party plugins.
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3.11 python3.11-venv python3.11-dev \
      g++ make git ca-certificates procps \
      libgl1 libegl1 libglib2.0-0 \
 && rm -rf /var/lib/apt/lists/*

# A non-root user whose UID/GID match the host user, so the bind-mounted workspace stays
# writable (compose passes PUFFERBOX_UID/PUFFERBOX_GID, default 1000).
ARG USER_NAME=puffer
ARG USER_UID=1000
ARG USER_GID=1000
ENV VENV=/opt/venv
RUN (getent group "${USER_GID}" >/dev/null || groupadd --gid "${USER_GID}" "${USER_NAME}") \
 && (id -u "${USER_UID}" >/dev/null 2>&1 && userdel --remove "$(id -nu "${USER_UID}")" || true) \
 && useradd --uid "${USER_UID}" --gid "${USER_GID}" --create-home --shell /bin/bash "${USER_NAME}" \
 && install -d -o "${USER_UID}" -g "${USER_GID}" "${VENV}" /workspace /workspace/runs /src \
      "/home/${USER_NAME}/.cache/pip" "/home/${USER_NAME}/.cache/kernels"

# The user owns the venv: `pip install` of a plugin inside the container just works.
USER ${USER_NAME}
ENV PATH=${VENV}/bin:${PATH} \
    PYTHONUNBUFFERED=1

# Build-time only: no pip cache baked into a layer; optional local wheels (find-links) and CA
# bundle for builds behind a proxy (ci/container-test.sh mounts both; Docker users need neither).
ARG PIP_NO_CACHE_DIR=1
ARG PIP_FIND_LINKS=""
ARG PIP_CERT=""

# The pinned stack, from the constraints alone: torch first (an unpinned torch pulls GBs of
# CUDA wheels) with its CUDA wheels pinned too (constraints-cuda.txt; a local CPU torch wheel
# needs none), then every other pin; pycuda only where nvcc exists to build it.
COPY --chown=${USER_UID}:${USER_GID} tank/constraints.txt tank/constraints-cuda.txt /src/tank/
RUN [ -n "${PIP_FIND_LINKS}" ] || unset PIP_FIND_LINKS; [ -n "${PIP_CERT}" ] || unset PIP_CERT; \
    python3.11 -m venv "${VENV}" \
 && pip install --no-cache-dir --quiet -c /src/tank/constraints.txt pip setuptools wheel \
 && pip install --no-cache-dir --quiet -c /src/tank/constraints.txt -c /src/tank/constraints-cuda.txt torch \
 && grep -v -E '^(pycuda|torch)==' /src/tank/constraints.txt > /tmp/stack.txt \
 && pip install --no-cache-dir --quiet -r /tmp/stack.txt \
 && if command -v nvcc >/dev/null; then pip install --no-cache-dir --quiet -c /src/tank/constraints.txt pycuda; \
    else echo "no nvcc in the base image: PyCUDA left out (CPU backends only)"; fi \
 && rm /tmp/stack.txt

# pufferbox and every first-party plugin, through the same script as `make setup`.
COPY --chown=${USER_UID}:${USER_GID} . /src
RUN [ -n "${PIP_FIND_LINKS}" ] || unset PIP_FIND_LINKS; [ -n "${PIP_CERT}" ] || unset PIP_CERT; \
    EDITABLE=0 VENV="${VENV}" EXTRAS="$(command -v nvcc >/dev/null && echo pycuda)" bash /src/tank/install.sh \
 && rm -rf /src/build /src/*.egg-info /src/plugins/*/build /src/plugins/*/*.egg-info

# Run-time settings, after the stack so changing them rebuilds nothing heavy. Compiled kernels
# (pufferbox's and PyCUDA's) go to one folder: compose mounts the kernel-cache volume there.
ENV SDL_VIDEODRIVER=dummy \
    RAY_AUTH_MODE=disabled \
    PUFFERBOX_CACHE=/home/${USER_NAME}/.cache/kernels/pufferbox \
    PYCUDA_CACHE_DIR=/home/${USER_NAME}/.cache/kernels/pycuda
COPY docker/entrypoint.sh /usr/local/bin/pufferbox-entrypoint
WORKDIR /workspace
ENTRYPOINT ["/usr/local/bin/pufferbox-entrypoint"]
# `docker compose up` keeps the tank running; work happens through `docker compose exec`.
CMD ["sleep", "infinity"]
