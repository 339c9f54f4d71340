"""Rewrites every table of benchmarks/RESULTS.md from its JSON under benchmarks/results/.

    python benchmarks/render_results.py            # rewrite the tables in place
    python benchmarks/render_results.py --check    # exit 1 naming each table that differs from its JSON

A table in RESULTS.md sits between two markers naming its data::

    <!-- table: results/ocean_speed.json -->
    ... (rendered: a line of metadata, then the Markdown table)
    <!-- /table -->

The JSON holds ``columns`` (headers), ``align`` (``"l"`` or ``"r"`` per column, optional), ``rows`` (lists of
cells, already formatted as they read) and ``meta`` (``command`` (a string or a list), ``machine``, ``load``,
``date``, ``peer``; each optional) and ``notes`` (paragraphs computed from the rows, shown under the
table; optional). Other keys (raw runs, for instance) are left alone. The benchmark scripts
write these files through ``results.write_table`` and re-render; nothing else writes inside the markers.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"
META_KEYS = ("command", "machine", "load", "date", "peer")
BLOCK = re.compile(r"^<!-- table: (?P<path>\S+) -->\n(?P<body>.*?)^<!-- /table -->$", re.S | re.M)


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return text.replace("\n", " ").replace("|", "\\|")


def render_meta(meta: dict) -> str:
    """One line: the command(s) in code spans, then machine, load, date and peer, each named."""
    parts = []
    for key in META_KEYS:
        value = meta.get(key)
        if not value:
            continue
        if key == "command":
            commands = [value] if isinstance(value, str) else list(value)
            parts.append("Command: " + "; ".join(f"`{c}`" for c in commands))
        else:
            parts.append(f"{key.capitalize()}: {value}")
    return " · ".join(parts)


def render_table(data: dict) -> str:
    """The text between a table's markers: its metadata line, a blank line, the Markdown table."""
    columns = [str(c) for c in data["columns"]]
    align = data.get("align") or ["l"] * len(columns)
    if len(align) != len(columns):
        raise ValueError(f"align has {len(align)} entries for {len(columns)} columns")
    lines = []
    meta = render_meta(data.get("meta") or {})
    if meta:
        lines += [meta, ""]
    lines.append("| " + " | ".join(columns) + " |")
    lines.append("|" + "|".join("---:" if a == "r" else "---" for a in align) + "|")
    for i, row in enumerate(data["rows"]):
        if len(row) != len(columns):
            raise ValueError(f"row {i} has {len(row)} cells for {len(columns)} columns")
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    for note in data.get("notes") or []:
        lines += ["", str(note)]
    return "\n".join(lines) + "\n"


def references(text: str) -> list[str]:
    """The JSON paths (relative to benchmarks/) that the document's table markers name, in order."""
    return [m.group("path") for m in BLOCK.finditer(text)]


def render_text(text: str, root: Path = HERE) -> tuple[str, list[str]]:
    """``text`` with every table re-rendered from its JSON, and the problems: stale tables, missing JSON."""
    problems: list[str] = []

    def replace(match: re.Match) -> str:
        rel = match.group("path")
        line = text.count("\n", 0, match.start()) + 1
        path = root / rel
        if not path.exists():
            problems.append(f"line {line}: {rel} does not exist")
            return match.group(0)
        try:
            body = render_table(json.loads(path.read_text()))
        except (ValueError, KeyError, TypeError) as error:
            problems.append(f"line {line}: {rel}: {error}")
            return match.group(0)
        if body != match.group("body"):
            problems.append(f"line {line}: the table of {rel} differs from its JSON")
        return f"<!-- table: {rel} -->\n{body}<!-- /table -->"

    return BLOCK.sub(replace, text), problems


def render_file(doc: Path = RESULTS, root: Path | None = None, check: bool = False) -> list[str]:
    """Re-render ``doc``'s tables (or only compare, with ``check``); returns the problems found."""
    text = doc.read_text()
    new, problems = render_text(text, root or doc.parent)
    if not check and new != text:
        doc.write_text(new)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a table is stale")
    parser.add_argument("--doc", default=str(RESULTS), help="the document (default: benchmarks/RESULTS.md)")
    args = parser.parse_args(argv)
    doc = Path(args.doc)
    problems = render_file(doc, check=args.check)
    for problem in problems:
        if not args.check:
            problem = problem.replace("differs from its JSON", "was rewritten from its JSON")
        print(f"{doc.name}: {problem}", file=sys.stderr)
    if args.check and problems:
        print("Run `python benchmarks/render_results.py` to rewrite the tables from their JSON.", file=sys.stderr)
        return 1
    if not args.check:
        missing = [p for p in problems if "does not exist" in p]
        return 1 if missing else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
