"""Dependencies point one way, and plugins use only pufferbox's public API.

The package's layers (cli -> sweep/tournament -> train -> vector -> emulation -> spaces) are an
import-linter contract in pyproject.toml (``[tool.importlinter]``); this test runs it, so CI fails
on a wrong-way import. Plugins may import only what :mod:`pufferbox.api` (and ``pufferbox``
itself) export, ``pufferbox.vector.make``, the kernel RNG and, in their tests, the conformance helpers.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import pufferbox.api

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_MODULES = {"pufferbox", "pufferbox.api", "pufferbox.vector", "pufferbox.cuda.rng"}  # vector: its make()
PLUGIN_TEST_MODULES = PLUGIN_MODULES | {"pufferbox.conformance", "pufferbox.conformance.testing"}
TRAIN_FORBIDDEN = ("pufferbox.tournament", "pufferbox.sweep", "pufferbox.cli", "pufferbox.cuda")


def imported_modules(path: Path) -> list[str]:
    """Every module ``path`` imports, function-level imports included."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
    return out


def test_package_layers_hold():
    lint_imports = Path(sys.executable).with_name("lint-imports")
    if not lint_imports.exists():
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    done = subprocess.run([str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def test_train_never_reaches_up_or_into_cuda():
    package = ROOT / "pufferbox" / "train"
    bad = [
        f"{path.name}: {module}"
        for path in sorted(package.glob("*.py"))
        for module in imported_modules(path)
        if module.startswith(TRAIN_FORBIDDEN)
    ]
    assert not bad, bad


PLUGINS = sorted(p.name for p in (ROOT / "plugins").iterdir() if (p / "pyproject.toml").exists())


@pytest.mark.parametrize("plugin", PLUGINS)
def test_plugins_use_only_the_public_api(plugin):
    bad = []
    for path in sorted((ROOT / "plugins" / plugin).rglob("*.py")):
        if "build" in path.parts:
            continue
        allowed = PLUGIN_TEST_MODULES if "tests" in path.parts else PLUGIN_MODULES
        bad += [
            f"{path.relative_to(ROOT)}: {module}"
            for module in imported_modules(path)
            if module.split(".")[0] == "pufferbox" and module not in allowed
        ]
    assert not bad, "import these from pufferbox.api instead: " + "; ".join(bad)


def test_every_public_name_resolves():
    for name in pufferbox.api.__all__:
        assert getattr(pufferbox.api, name) is not None, name
    with pytest.raises(AttributeError, match="plugins may use"):
        pufferbox.api.Trainer  # noqa: B018


def test_the_import_scan_sees_function_level_imports(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from pufferbox.tournament.leaderboard import Leaderboard\n")
    assert imported_modules(sample) == ["pufferbox.tournament.leaderboard"]
