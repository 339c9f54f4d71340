"""No function in pufferbox/ runs over 80 lines unless a reason is written beside it.

Long functions are where the upper floors rotted before (a 246-line tournament driver, a
394-line trainer). A function may still be long when splitting it would hurt reading (a table,
a state machine): then its ``def`` line, or the line above it, carries ``# long: <why>``.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pufferbox"
LIMIT = 80  # lines from `def` to the function's last line, docstring included


def long_functions(root: Path, limit: int = LIMIT) -> list[str]:
    """``path:line name (N lines)`` for each function over ``limit`` lines without a ``# long:`` reason."""
    found = []
    for path in sorted(root.rglob("*.py")):
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines), str(path))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            beside = lines[node.lineno - 1] + (lines[node.lineno - 2] if node.lineno >= 2 else "")
            if length > limit and "# long:" not in beside:
                found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_function_in_pufferbox_is_over_the_limit_without_a_reason():
    offenders = long_functions(PACKAGE)
    assert not offenders, (
        f"functions over {LIMIT} lines (split them, or write `# long: <why>` on the def line):\n  " + "\n  ".join(offenders)
    )


def test_the_check_finds_a_long_function_and_accepts_a_written_reason(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(LIMIT))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(f"def too_long():\n{body}\n\ndef fine():\n    return 1\n")
    (tmp_path / "pkg" / "b.py").write_text(f"# long: one table of constants, read top to bottom\ndef table():\n{body}")
    assert long_functions(tmp_path / "pkg") == [f"pkg/a.py:1 too_long ({LIMIT + 1} lines)"]
