"""Every row of the guarantees table (docs/guarantees.md, "What pufferbox guarantees"; it was README's
until issue 53) names tests that exist (issue 15: each guarantee is backed by a named test); a renamed
or deleted test makes its row fail here, naming both."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "guarantees.md"


def guarantee_rows() -> list[tuple[str, str]]:
    """(fault, test cell) of each table row in the section."""
    text = PAGE.read_text()
    section = text.split("# What pufferbox guarantees", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] not in ("Fault", "---"):
            rows.append((cells[0], cells[2]))
    return rows


def named_tests(cell: str) -> list[tuple[str, str]]:
    """``a.py::t1``, ``::t2`` (same file as before), ``b.py::t3`` -> [(tests/a.py, t1), ...]."""
    found, current = [], None
    for file, name in re.findall(r"`([\w/]+\.py)?::(\w+)", cell):
        current = file or current
        assert current, f"{cell!r}: '::{name}' follows no file"
        found.append((current, name))
    return found


def test_every_guarantee_names_tests_that_exist() -> None:
    rows = guarantee_rows()
    assert len(rows) >= 20, f"the guarantees table was not found in {PAGE.relative_to(ROOT)}"
    for fault, cell in rows:
        tests = named_tests(cell)
        assert tests, f"guarantee {fault!r} names no test"
        for file, name in tests:
            path = ROOT / "tests" / file
            assert path.is_file(), f"guarantee {fault!r}: tests/{file} does not exist"
            defined = {n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)}
            assert name in defined, f"guarantee {fault!r}: tests/{file} has no {name}"


def test_the_readme_links_to_the_guarantees():
    assert "docs/guarantees.md" in (ROOT / "README.md").read_text(), "README.md should link to docs/guarantees.md"
