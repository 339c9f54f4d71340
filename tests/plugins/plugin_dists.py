"""Make a test-only plugin distribution visible to ``importlib.metadata`` for one test.

Instead of ``pip install`` (which would change the venv for every later test), this puts
the distribution's source folder on ``sys.path`` and writes a ``*.dist-info`` folder with
its entry points into a temporary folder, also on ``sys.path``; ``monkeypatch`` undoes
both at the end of the test. Loaded by path from the test modules (``tests`` is no package).
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

HERE = Path(__file__).parent

# The first-party env names the registry tests expect (the ocean and classic plugins).
# Every C game header in the ocean plugin is one registered game (a header that fails to register fails).
OCEAN_GAMES = {f"ocean/{h.stem}" for h in (HERE.parents[1] / "plugins/ocean/pufferbox_ocean/c").glob("*.h")}
OCEAN = {"squared", "password", "stochastic", "memory", "multiagent", "spaces", "bandit"} | OCEAN_GAMES
CLASSIC = {
    "cartpole",
    "acrobot",
    "mountaincar",
    "mountaincar_continuous",
    "pendulum",
    "lunarlander",
    "lunarlander_continuous",
    "bipedalwalker",
}


def install(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> dict:
    """Install ``tests/plugins/NAME`` for this test; returns its ``[project]`` table."""
    source = HERE / name
    project = tomllib.loads((source / "pyproject.toml").read_text())["project"]
    dist = project["name"].replace("-", "_")
    site = tmp_path / f"site-{name}"
    info = site / f"{dist}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    lines = ["[pufferbox]"] + [f"{k} = {v}" for k, v in project["entry-points"]["pufferbox"].items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    packages = [p.name for p in source.iterdir() if (p / "__init__.py").exists()]
    monkeypatch.syspath_prepend(str(source))
    monkeypatch.syspath_prepend(str(site))
    request.addfinalizer(lambda: forget(packages))
    return project


def forget(packages: list[str]) -> None:
    """Drop modules imported from a test distribution, so the next test imports them afresh."""
    for module in [m for m in sys.modules if m.split(".")[0] in packages]:
        del sys.modules[module]
