"""Shared by the benchmark scripts: timing a step function, and writing tables into RESULTS.md
(one ``## `` section per script).

Example:
    >>> write_section("## My comparison", "## My comparison\\n\\n| a | b |\\n")  # doctest: +SKIP
"""

from __future__ import annotations

import os
import platform
import re
import time
from collections.abc import Callable
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def machine_summary() -> str:
    """Platform, Python, CPU count and load average: what every table states next to its numbers."""
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} CPUs, load average {load}"


def write_section(title: str, text: str) -> None:
    """Replace the section headed ``title`` (up to the next ``## ``) with ``text``, or append it."""
    current = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    pattern = re.compile(rf"^{re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    text = text.rstrip("\n") + "\n"
    if pattern.search(current):
        current = pattern.sub(lambda _: text + "\n", current).rstrip("\n") + "\n"
    else:
        current = current.rstrip("\n") + "\n\n" + text
    RESULTS.write_text(current)


def timed(step: Callable[[], int], seconds: float) -> float:
    """Calls ``step`` (returning the steps it did) for ``seconds`` after one warm-up call; steps/s."""
    step()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        steps += step()
    return steps / (time.perf_counter() - start)
