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


# The layers a plugin's runtime names may come from: below the trainer (pyproject.toml's layers).
ABOVE_ENV_LAYERS = ("pufferbox.train", "pufferbox.interop", "pufferbox.export", "pufferbox.sweep", "pufferbox.tournament")


def test_every_public_export_sits_below_the_trainer():
    """A plugin's modules get from pufferbox.api only what the env layers define, and using those names
    pulls no trainer module in (the api resolves names lazily, so import-linter cannot see this edge)."""
    runtime = {name: module for name, module in pufferbox.api.EXPORTS.items() if name not in pufferbox.api.TEST_EXPORTS}
    assert not {name: m for name, m in runtime.items() if m.startswith(ABOVE_ENV_LAYERS)}
    script = (
        "import sys, pufferbox.api as api\n"
        f"for name in {sorted(runtime)!r}: getattr(api, name)\n"
        f"print(sorted(m for m in sys.modules if m.startswith({ABOVE_ENV_LAYERS!r})))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]", done.stdout


@pytest.mark.parametrize("plugin", PLUGINS)
def test_plugin_modules_leave_the_trainer_entry_points_to_their_tests(plugin):
    bad = []
    for path in sorted((ROOT / "plugins" / plugin).rglob("*.py")):
        if "tests" in path.parts or "build" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "pufferbox.api":
                bad += [f"{path.relative_to(ROOT)}: {a.name}" for a in node.names if a.name in pufferbox.api.TEST_EXPORTS]
    assert not bad, "an env plugin's modules must not use the trainer: " + "; ".join(bad)


def test_the_import_scan_sees_function_level_imports(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from pufferbox.tournament.leaderboard import Leaderboard\n")
    assert imported_modules(sample) == ["pufferbox.tournament.leaderboard"]


def our_modules() -> dict[str, Path]:
    """Every module of pufferbox and of the first-party plugins, by dotted name."""
    packages = [ROOT / "pufferbox"] + sorted(ROOT.glob("plugins/*/pufferbox_*"))
    modules = {}
    for package in packages:
        for path in package.rglob("*.py"):
            parts = list(path.relative_to(package.parent).with_suffix("").parts)
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def module_edges(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of ``modules`` that ``name`` imports (function-level too; ``TYPE_CHECKING`` blocks not)."""
    tree = ast.parse(path.read_text())
    typing_only = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for n in ast.walk(node)
    }
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            out |= {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names}
    return {m for m in out if m in modules and m != name}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_import_cycles_finder_finds_a_cycle_through_a_function_level_import():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_itself_back_through_others():
    """No import cycles in pufferbox or the first-party plugins, function-level imports included: a cycle
    hides a dependency (each side needs the other) and makes import order matter (issue 40)."""
    modules = our_modules()
    graph = {name: module_edges(name, path, modules) for name, path in modules.items()}
    assert import_cycles(graph) == []
