"""The tank's constraints file pins every requirement that pufferbox and its plugins declare."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tank" / "check_constraints.py"


def run_check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def write_project(root: Path, plugin_deps: list[str], constraints: str) -> None:
    (root / "tank").mkdir()
    (root / "tank" / "constraints.txt").write_text(constraints)
    (root / "pyproject.toml").write_text('[project]\nname = "pufferbox"\nversion = "0"\ndependencies = ["numpy>=1.24,<2"]\n')
    plugin = root / "plugins" / "demo"
    plugin.mkdir(parents=True)
    deps = ", ".join(f'"{d}"' for d in plugin_deps)
    plugin.joinpath("pyproject.toml").write_text(
        f'[project]\nname = "pufferbox-demo"\nversion = "0"\ndependencies = ["pufferbox", {deps}]\n'
    )


def test_the_shipped_stack_pins_every_declared_requirement():
    result = run_check()
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_requirement_outside_the_pin_fails(tmp_path):
    write_project(tmp_path, ["ale-py>=0.13"], "numpy==1.26.4\nale-py==0.12.1\n")
    result = run_check("--root", str(tmp_path))
    assert result.returncode == 1
    assert "ale-py>=0.13" in result.stdout and "excludes the pinned ale-py==0.12.1" in result.stdout


def test_an_unpinned_requirement_fails(tmp_path):
    write_project(tmp_path, ["nle==1.3.0"], "numpy==1.26.4\n")
    result = run_check("--root", str(tmp_path))
    assert result.returncode == 1
    assert "'nle==1.3.0' is not pinned" in result.stdout


def test_a_loose_constraint_line_fails(tmp_path):
    write_project(tmp_path, ["ale-py"], "numpy==1.26.4\nale-py>=0.12\n")
    result = run_check("--root", str(tmp_path))
    assert result.returncode == 1
    assert "is not an exact pin" in result.stdout


def test_a_consistent_project_passes_and_names_are_normalized(tmp_path):
    write_project(
        tmp_path,
        ["Ale_Py>=0.12,<0.13", "pettingzoo[butterfly]>=1.26"],
        "numpy==1.26.4\nale-py==0.12.1\npettingzoo==1.27.0\n",
    )
    result = run_check("--root", str(tmp_path))
    assert result.returncode == 0, result.stdout


CUDA_PIN = 'nvidia-cublas==13.1.1.3; sys_platform == "linux" and platform_machine == "x86_64"\n'


def write_report(path: Path, installs: dict[str, str]) -> Path:
    import json

    path.write_text(json.dumps({"install": [{"metadata": {"name": n, "version": v}} for n, v in installs.items()]}))
    return path


def test_the_shipped_cuda_pins_are_exact_linux_x86_64_pins():
    """Every line of tank/constraints-cuda.txt: an exact pin limited to linux x86_64, not pinned twice."""
    import importlib.util

    loader = importlib.util.spec_from_file_location("check_constraints", SCRIPT)
    check_constraints = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(check_constraints)
    cuda = ROOT / "tank" / "constraints-cuda.txt"
    pins, problems = check_constraints.read_pins(cuda)
    assert problems == [] and "nvidia-cudnn-cu13" in pins and "triton" in pins
    lines = [line for line in cuda.read_text().splitlines() if line and not line.startswith("#")]
    assert len(lines) == len(pins)
    assert all(line.endswith('; sys_platform == "linux" and platform_machine == "x86_64"') for line in lines)
    main_pins, _ = check_constraints.read_pins(ROOT / "tank" / "constraints.txt")
    assert not set(pins) & set(main_pins)


def test_a_cuda_pin_that_is_loose_or_duplicated_fails(tmp_path):
    write_project(tmp_path, ["ale-py"], "numpy==1.26.4\nale-py==0.12.1\n")
    cuda = tmp_path / "tank" / "constraints-cuda.txt"
    cuda.write_text(CUDA_PIN + "nvidia-nccl-cu13>=2.29\nnumpy==1.26.4\n")
    result = run_check("--root", str(tmp_path))
    assert result.returncode == 1
    assert "'nvidia-nccl-cu13>=2.29' is not an exact pin" in result.stdout
    assert "numpy is pinned in" in result.stdout and "(pin it in one place)" in result.stdout
    cuda.write_text(CUDA_PIN)
    assert run_check("--root", str(tmp_path)).returncode == 0


def test_a_resolution_report_must_be_pinned_in_one_of_the_files(tmp_path):
    write_project(tmp_path, ["ale-py"], "numpy==1.26.4\nale-py==0.12.1\ntorch==2.13.0\n")
    (tmp_path / "tank" / "constraints-cuda.txt").write_text(CUDA_PIN)
    ok = write_report(
        tmp_path / "ok.json", {"torch": "2.13.0+cpu", "nvidia-cublas": "13.1.1.3", "numpy": "1.26.4", "pufferbox-demo": "0"}
    )
    result = run_check("--root", str(tmp_path), "--report", str(ok))
    assert result.returncode == 0, result.stdout
    bad = write_report(tmp_path / "bad.json", {"torch": "2.13.0", "nvidia-cublas": "13.2.0.1", "triton": "3.7.1"})
    result = run_check("--root", str(tmp_path), "--report", str(bad))
    assert result.returncode == 1
    assert "installs nvidia-cublas==13.2.0.1, pinned at 13.1.1.3" in result.stdout
    assert "installs triton==3.7.1, which no constraints file pins" in result.stdout
