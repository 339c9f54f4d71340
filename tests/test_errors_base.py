"""Every error pufferbox raises on purpose derives from one base, PufferboxError, which is what the CLI
turns into one ``Error:`` line (exit status 2)."""

from __future__ import annotations

import ast
from pathlib import Path

from click.testing import CliRunner

PACKAGE = Path(__file__).resolve().parent.parent / "pufferbox"
BUILTIN_BASES = {"Exception", "ValueError", "RuntimeError", "KeyError", "AssertionError", "TypeError", "OSError"}


def classes_on_a_builtin_base_alone(root: Path) -> list[str]:
    """``path:line Name`` of each class that subclasses a built-in exception without PufferboxError."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                bases = {b.id for b in node.bases if isinstance(b, ast.Name)}
                if bases & BUILTIN_BASES and "PufferboxError" not in bases and node.name != "PufferboxError":
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name}")
    return found


def test_every_error_class_derives_from_pufferbox_error():
    offenders = classes_on_a_builtin_base_alone(PACKAGE)
    assert not offenders, "derive these from pufferbox.errors.PufferboxError too:\n  " + "\n  ".join(offenders)


def test_the_check_finds_a_stray_error_class(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(
        "class Good(PufferboxError, ValueError):\n    pass\n\n\nclass Stray(RuntimeError):\n    pass\n"
    )
    assert classes_on_a_builtin_base_alone(tmp_path / "pkg") == ["pkg/a.py:5 Stray"]


def test_the_cli_reports_any_pufferbox_error_as_one_line_with_exit_2():
    import click

    from pufferbox.cli import PufferboxGroup, user_errors
    from pufferbox.errors import PufferboxError
    from pufferbox.tournament.settings import TournamentError

    assert user_errors() == (PufferboxError,)

    @click.group(cls=PufferboxGroup)
    def group() -> None:
        pass

    @group.command()
    def fails() -> None:
        raise TournamentError("the board is full; fix: add --pods\nsecond line")

    result = CliRunner().invoke(group, ["fails"])
    assert result.exit_code == 2
    assert result.output.strip() == "Error: the board is full; fix: add --pods"
