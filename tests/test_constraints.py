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
        f'[project]\nname = "pufferbox-demo"\nversion = "0"\ndependencies = ["pufferbox", {deps}]\n')


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
    write_project(tmp_path, ["Ale_Py>=0.12,<0.13", "pettingzoo[butterfly]>=1.26"],
                  "numpy==1.26.4\nale-py==0.12.1\npettingzoo==1.27.0\n")
    result = run_check("--root", str(tmp_path))
    assert result.returncode == 0, result.stdout
