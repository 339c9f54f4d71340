"""Shared by the benchmark scripts: timing a step function, and writing a table's data for RESULTS.md.

A script writes each of its tables as ``benchmarks/results/<name>.json`` (columns, rows and the metadata:
command, machine, load, date, peer) and re-renders RESULTS.md, whose tables sit between
``<!-- table: results/<name>.json -->`` markers (``render_results.py``).

Example:
    >>> write_table("my_comparison", ["env", "steps/s"], [["cartpole", "1,000"]], {"command": "..."})  # doctest: +SKIP
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
import render_results  # noqa: E402

RESULTS = HERE / "RESULTS.md"
RESULTS_DIR = HERE / "results"


def machine_summary() -> str:
    """Platform, Python, CPU count and load average: what every table states next to its numbers."""
    return f"{platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} CPUs, load average {load()}"


def machine() -> str:
    """Platform, Python and CPU count (the load goes into the table's own ``load`` field)."""
    return f"{platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} CPUs"


def load() -> str:
    """The 1/5/15-minute load average, as the tables print it."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def today() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")


def write_table(
    name: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[object]],
    meta: dict,
    align: str | Sequence[str] | None = None,
    notes: Sequence[str] = (),
) -> bool:
    """Write ``results/<name>.json`` and re-render RESULTS.md; False if the document shows no such table.

    ``align``: one ``l`` or ``r`` per column (default: the first column left, the rest right).
    ``meta`` gets today's date unless it has one. Keys of an existing file that are not the table's
    (raw runs, for instance) are kept.
    """
    path = RESULTS_DIR / f"{name}.json"
    align = list(align) if align is not None else ["l"] + ["r"] * (len(columns) - 1)
    data = json.loads(path.read_text()) if path.exists() else {}
    table = {
        "meta": {"date": today(), **{k: v for k, v in meta.items() if v}},
        "columns": list(columns),
        "align": align,
        "rows": [["" if c is None else str(c) for c in row] for row in rows],
    }
    table["meta"] = {k: table["meta"][k] for k in render_results.META_KEYS if k in table["meta"]}
    render_results.render_table(table)  # raises on a malformed table before anything is written
    data.update(table)
    data.pop("notes", None)
    if notes:
        data["notes"] = list(notes)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    rel = f"results/{name}.json"
    referenced = rel in render_results.references(RESULTS.read_text()) if RESULTS.exists() else False
    if referenced:
        render_results.render_file(RESULTS, root=RESULTS_DIR.parent)
        print(f"wrote benchmarks/{rel} and re-rendered its table in {RESULTS.name}")
    else:
        print(f"wrote benchmarks/{rel}; {RESULTS.name} has no <!-- table: {rel} --> marker yet: add one where it belongs")
    return referenced


def publish(
    name: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[object]],
    meta: dict,
    write: bool,
    align: str | Sequence[str] | None = None,
    notes: Sequence[str] = (),
) -> None:
    """Print the table as RESULTS.md will show it; with ``write``, also write its JSON and re-render."""
    align = list(align) if align is not None else ["l"] + ["r"] * (len(columns) - 1)
    table = {"meta": {"date": today(), **meta}, "columns": list(columns), "align": align, "rows": rows}
    print(render_results.render_table({**table, "notes": list(notes)}))
    if write:
        write_table(name, columns, rows, meta, align=align, notes=notes)


def timed(step: Callable[[], int], seconds: float) -> float:
    """Calls ``step`` (returning the steps it did) for ``seconds`` after one warm-up call; steps/s."""
    step()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        steps += step()
    return steps / (time.perf_counter() - start)
