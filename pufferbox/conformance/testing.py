"""Test helpers for plugin authors: the CLI as users see it, with and without your env's packages.

Each helper runs ``pufferbox`` in a fresh interpreter (so a hidden package stays hidden and
plugin loading starts from scratch) and fails with an ``AssertionError`` that shows what the
CLI printed. They check what every plugin should promise:

* :func:`assert_unavailable_without`: with its packages missing, ``pufferbox envs --json``
  lists the env as ``unavailable`` with the install command, and ``pufferbox info ENV``
  exits 2 with one ``Error:`` line and no traceback;
* :func:`info_json`: ``pufferbox info ENV --json`` (spaces, agents, pinned versions);
* :func:`smoke_train`: ``pufferbox train ENV`` finishes on CPU and writes a run directory.

Example (a plugin's test file)::

    import pytest
    from pufferbox.conformance.testing import assert_unavailable_without, info_json, smoke_train

    def test_unavailable_without_coinlib():
        rows, error = assert_unavailable_without(["coinflip"], hide=["coinlib"])
        assert "pip install -c tank/constraints.txt 'coinlib==1.0'" in rows["coinflip"]["reason"]
        assert error.startswith("Error: env 'coinflip' is unavailable: missing coinlib")

    def test_info_shows_pinned_versions():
        assert info_json("coinflip")["requires"] == {"coinlib==1.0": "1.0"}

    @pytest.mark.slow
    def test_smoke_training(tmp_path):
        smoke_train("coinflip", tmp_path / "run", total_steps=2048, num_envs=2)
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["run_cli", "assert_unavailable_without", "info_json", "smoke_train"]

# Hiding works by ``sys.modules[name] = None``: any import of ``name`` then raises ImportError,
# exactly what a user without the package sees.
_RUN_HIDDEN = (
    "import sys\nfor name in sys.argv[1].split(','):\n    if name: sys.modules[name] = None\n"
    "sys.argv = ['pufferbox', *sys.argv[2:]]\nfrom pufferbox.cli import main\nmain()\n"
)


def run_cli(
    *args: str, hide: Sequence[str] = (), cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    """``pufferbox ARGS...`` in a fresh interpreter in which the modules ``hide`` cannot be imported."""
    return subprocess.run(
        [sys.executable, "-c", _RUN_HIDDEN, ",".join(hide), *args], capture_output=True, text=True, timeout=timeout, cwd=cwd
    )


def assert_unavailable_without(
    names: Sequence[str], hide: Sequence[str], made: str | None = None, made_hide: Sequence[str] | None = None
) -> tuple[dict[str, dict], str]:
    """With ``hide`` missing, every env in ``names`` is listed ``unavailable`` and making one is a one-line error.

    ``made`` (default ``names[0]``) is the env given to ``pufferbox info``, with ``made_hide``
    (default ``hide``) missing. Returns the ``envs --json`` rows by name, to check each reason,
    and the ``Error:`` line, to check its wording.
    """
    listing = run_cli("envs", "--json", hide=hide)
    assert listing.returncode == 0, listing.stderr
    rows = {row["name"]: row for row in json.loads(listing.stdout)}
    for name in names:
        status = rows[name]["status"]
        assert status == "unavailable", f"{name} is listed {status!r}, expected 'unavailable': {rows[name]}"
        assert "pip install" in rows[name]["reason"], (name, rows[name]["reason"])
    result = run_cli("info", made or names[0], hide=hide if made_hide is None else made_hide)
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "Traceback" not in result.stderr
    return rows, lines[0]


def info_json(name: str) -> dict:
    """What ``pufferbox info NAME --json`` prints, parsed (the command must succeed)."""
    result = run_cli("info", name, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def smoke_train(name: str, run_dir: Path, total_steps: int = 2048, num_envs: int = 2, timeout: float = 280) -> None:
    """``pufferbox train NAME`` for ``total_steps`` on CPU exits 0 and writes into ``run_dir``."""
    result = run_cli(
        "train",
        name,
        "--total-steps",
        str(total_steps),
        "--num-envs",
        str(num_envs),
        "--run-dir",
        str(run_dir),
        timeout=timeout,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert any(Path(run_dir).iterdir()), f"training wrote nothing into {run_dir}"
