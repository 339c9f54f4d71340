"""No class in pufferbox/ grows past a size a reader can hold, and the two central ones keep their budgets.

Beside the function-length guard (tests/test_function_length.py): a class whose methods are each short
can still grow into a tangle of modes. The Trainer wires the loop (anything else it needs belongs in the
module that does it: snapshot, nonfinite, the tournament's pod) and the Learner's update is the whole
PPO update, readable on one screen.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pufferbox"
CLASS_LIMIT = 350  # lines from `class` to the class's last line
BUDGETS = {  # tighter budgets, by path::Class or path::Class.method
    "train/trainer.py::Trainer": 200,
    "train/learner.py::Learner.update": 60,
}


def sizes(root: Path) -> dict[str, int]:
    """``path::Class`` and ``path::Class.method`` (path relative to ``root``) -> lines."""
    found: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                found[f"{name}::{node.name}"] = (node.end_lineno or node.lineno) - node.lineno + 1
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        length = (item.end_lineno or item.lineno) - item.lineno + 1
                        found[f"{name}::{node.name}.{item.name}"] = length
    return found


def over_budget(root: Path, budgets: dict[str, int] = BUDGETS, limit: int = CLASS_LIMIT) -> list[str]:
    found = sizes(root)
    offenders = [f"{key}: {found[key]} lines (budget {n})" for key, n in budgets.items() if found.get(key, 0) > n]
    missing = [f"{key}: not found (a renamed class? update BUDGETS)" for key in budgets if key not in found]
    too_big = [
        f"{key}: {n} lines (limit {limit})" for key, n in found.items() if "." not in key.split("::")[1] and n > limit
    ]
    return offenders + missing + too_big


def test_classes_stay_within_their_budgets():
    offenders = over_budget(PACKAGE)
    assert not offenders, "split these (move what is not the class's own job to its module):\n  " + "\n  ".join(offenders)


def test_the_check_finds_a_class_over_its_budget(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(10))
    method = "".join(f"        y{i} = {i}\n" for i in range(10))
    (tmp_path / "a.py").write_text(f"class Small:\n{body}\n\nclass Big:\n{body}{body}\n    def f(self):\n{method}")
    assert over_budget(tmp_path, {"a.py::Small": 11}, limit=40) == []
    assert over_budget(tmp_path, {"a.py::Big.f": 5, "a.py::Gone": 1}, limit=20) == [
        "a.py::Big.f: 11 lines (budget 5)",
        "a.py::Gone: not found (a renamed class? update BUDGETS)",
        "a.py::Big: 33 lines (limit 20)",
    ]
