# syntax=docker/dockerfile:1
# The tank: CUDA 12 + Python 3.11 + the pinned pufferbox stack + every first-party plugin.
#   docker compose up -d && docker compose exec tank pufferbox train nethack   (README: "The tank")
# Layers go from least to most often changed: system packages, the pinned stack
# (tank/constraints*.txt only), the user, then pufferbox's own code. Editing pufferbox or a plugin
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

# Build-time only: no pip cache baked into a layer; optional local wheels (find-links) and CA
# bundle for builds behind a proxy (ci/container-test.sh mounts both; Docker users need neither).
ARG PIP_NO_CACHE_DIR=1
ARG PIP_FIND_LINKS=""
ARG PIP_CERT=""
ENV VENV=/opt/venv
ENV PATH=${VENV}/bin:${PATH} \
    PYTHONUNBUFFERED=1

# The pinned stack, from the constraints alone, before any user exists (so one cached layer
# serves every USER_UID): torch first (an unpinned torch pulls GBs of CUDA wheels) with its
# CUDA wheels pinned too (constraints-cuda.txt; a local CPU torch wheel needs none), then every
# other pin; pycuda only where nvcc exists to build it. The venv belongs to the group `tank`
# (group-writable), which the user joins: `pip install` of a plugin inside the tank just works.
ARG TANK_GID=2718
COPY tank/constraints.txt tank/constraints-cuda.txt /src/tank/
RUN [ -n "${PIP_FIND_LINKS}" ] || unset PIP_FIND_LINKS; [ -n "${PIP_CERT}" ] || unset PIP_CERT; \
    python3.11 -m venv "${VENV}" \
 && pip install --no-cache-dir --quiet -c /src/tank/constraints.txt pip setuptools wheel \
 && pip install --no-cache-dir --quiet -c /src/tank/constraints.txt -c /src/tank/constraints-cuda.txt torch \
 && grep -v -E '^(pycuda|torch)==' /src/tank/constraints.txt > /tmp/stack.txt \
 && pip install --no-cache-dir --quiet -r /tmp/stack.txt \
 && if command -v nvcc >/dev/null; then pip install --no-cache-dir --quiet -c /src/tank/constraints.txt pycuda; \
    else echo "no nvcc in the base image: PyCUDA left out (CPU backends only)"; fi \
 && rm /tmp/stack.txt \
 && (getent group "${TANK_GID}" >/dev/null || groupadd --gid "${TANK_GID}" tank) \
 && chgrp -R "${TANK_GID}" "${VENV}" /src && chmod -R g+w "${VENV}" /src

# The user the tank runs as: its UID/GID match the owner of the checkout, so the bind-mounted
# workspace stays writable (compose passes PUFFERBOX_UID/PUFFERBOX_GID, default 1000). Any UID
# works: a user holding it already is replaced, a large one gets no lastlog entry (--no-log-init),
# and 0 (a root-owned checkout, common on cloud GPU boxes) runs the tank as root, no user added.
ARG USER_NAME=puffer
ARG USER_UID=1000
ARG USER_GID=1000
ENV HOME=/home/${USER_NAME}
RUN if [ "${USER_UID}" != 0 ]; then \
      (getent group "${USER_GID}" >/dev/null || groupadd --gid "${USER_GID}" "${USER_NAME}") \
      && (id -u "${USER_UID}" >/dev/null 2>&1 && userdel --remove "$(id -nu "${USER_UID}")" || true) \
      && useradd --no-log-init --uid "${USER_UID}" --gid "${USER_GID}" --groups "${TANK_GID}" \
           --home-dir "${HOME}" --create-home --shell /bin/bash "${USER_NAME}"; \
    fi \
 && install -d -o "${USER_UID}" -g "${USER_GID}" /workspace /workspace/runs "${HOME}" \
      "${HOME}/.cache" "${HOME}/.cache/pip" "${HOME}/.cache/kernels"
# The UID alone: the runtime then adds the user's supplementary groups (`tank`) from /etc/group.
USER ${USER_UID}

# pufferbox and every first-party plugin, through the same script as `make setup`.
COPY --chown=${USER_UID}:${USER_GID} . /src
RUN [ -n "${PIP_FIND_LINKS}" ] || unset PIP_FIND_LINKS; [ -n "${PIP_CERT}" ] || unset PIP_CERT; \
    umask 0002 \
 && EDITABLE=0 VENV="${VENV}" EXTRAS="$(command -v nvcc >/dev/null && echo pycuda)" bash /src/tank/install.sh \
 && rm -rf /src/build /src/*.egg-info /src/plugins/*/build /src/plugins/*/*.egg-info

# Run-time settings, after the stack so changing them rebuilds nothing heavy. Compiled kernels
# (pufferbox's and PyCUDA's) go to one folder: compose mounts the kernel-cache volume there.
ENV SDL_VIDEODRIVER=dummy \
    RAY_AUTH_MODE=disabled \
    PUFFERBOX_CACHE=${HOME}/.cache/kernels/pufferbox \
    PYCUDA_CACHE_DIR=${HOME}/.cache/kernels/pycuda
COPY docker/entrypoint.sh /usr/local/bin/pufferbox-entrypoint
WORKDIR /workspace
ENTRYPOINT ["/usr/local/bin/pufferbox-entrypoint"]
# `docker compose up` keeps the tank running; work happens through `docker compose exec`.
CMD ["sleep", "infinity"]
