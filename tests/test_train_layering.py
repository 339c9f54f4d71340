"""pufferbox.train depends downward only: never on pufferbox.tournament or pufferbox.cuda (vector wraps cuda)."""

from __future__ import annotations

import ast
from pathlib import Path

import pufferbox.train

FORBIDDEN = ("pufferbox.tournament", "pufferbox.cuda", "pufferbox.cli")


def imported_modules(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.append(node.module)
    return out


def test_train_imports_nothing_above_or_beside_it():
    package = Path(pufferbox.train.__file__).parent
    bad = [f"{path.name}: {module}" for path in sorted(package.glob("*.py")) for module in imported_modules(path)
           if module.startswith(FORBIDDEN)]
    assert not bad, bad


def test_the_check_sees_a_wrong_way_import(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from pufferbox.tournament.leaderboard import Leaderboard\n")
    assert imported_modules(sample) == ["pufferbox.tournament.leaderboard"]


def test_vector_imports_nothing_above_it():
    """Ray rollout actors run a policy, but get it as a module object: vector never imports train."""
    import pufferbox.vector

    package = Path(pufferbox.vector.__file__).parent
    above = ("pufferbox.train", "pufferbox.tournament", "pufferbox.cli")
    bad = [f"{path.name}: {module}" for path in sorted(package.glob("*.py")) for module in imported_modules(path)
           if module.startswith(above)]
    assert not bad, bad
