"""benchmarks/RESULTS.md's tables are rendered from benchmarks/results/*.json and cannot drift from them."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


render = load("render_results")


def test_every_table_matches_its_json():
    problems = render.render_file(BENCH / "RESULTS.md", check=True)
    assert not problems, "RESULTS.md:\n" + "\n".join(problems) + "\nRun `python benchmarks/render_results.py`."


def test_every_referenced_json_exists_and_is_a_table():
    refs = render.references((BENCH / "RESULTS.md").read_text())
    assert refs, "RESULTS.md has no table markers"
    assert len(refs) == len(set(refs)), "a JSON is rendered twice"
    for rel in refs:
        path = BENCH / rel
        assert path.exists(), f"RESULTS.md names {rel}, which does not exist"
        data = json.loads(path.read_text())
        assert data["columns"] and data["rows"], f"{rel} has no columns or rows"
        assert data.get("meta", {}).get("date"), f"{rel} states no date"


def test_no_table_outside_markers():
    """A Markdown table written by hand would not be checked: every table line sits inside a marker."""
    text = (BENCH / "RESULTS.md").read_text()
    inside = render.BLOCK.sub("", text)
    stray = [i for i, line in enumerate(inside.splitlines(), 1) if line.startswith("|")]
    assert not stray, f"table lines outside <!-- table: ... --> markers (in the text without the tables): {stray[:5]}"


def copy_doc(tmp_path: Path) -> Path:
    shutil.copy(BENCH / "RESULTS.md", tmp_path / "RESULTS.md")
    shutil.copytree(BENCH / "results", tmp_path / "results")
    return tmp_path / "RESULTS.md"


def test_a_hand_edited_cell_fails_the_check_and_the_render_restores_it(tmp_path):
    doc = copy_doc(tmp_path)
    text = doc.read_text()
    rel = render.references(text)[0]
    data = json.loads((tmp_path / rel).read_text())
    row = "| " + " | ".join(data["rows"][0]) + " |"
    assert row in text
    edited = row.replace(data["rows"][0][-1], data["rows"][0][-1] + "0", 1) if data["rows"][0][-1] else row + "x"
    doc.write_text(text.replace(row, edited, 1))
    problems = render.render_file(doc, check=True)
    assert len(problems) == 1 and rel in problems[0] and "differs" in problems[0]
    assert render.main(["--check", "--doc", str(doc)]) == 1
    assert render.main(["--doc", str(doc)]) == 0
    assert doc.read_text() == text


def test_a_changed_json_makes_its_table_stale(tmp_path):
    doc = copy_doc(tmp_path)
    rel = render.references(doc.read_text())[-1]
    data = json.loads((tmp_path / rel).read_text())
    data["rows"][0][0] = "changed"
    (tmp_path / rel).write_text(json.dumps(data))
    assert [p for p in render.render_file(doc, check=True) if rel in p]
    render.render_file(doc)
    assert "| changed |" in doc.read_text()
    assert render.render_file(doc, check=True) == []


def test_a_missing_json_is_named(tmp_path):
    doc = copy_doc(tmp_path)
    rel = render.references(doc.read_text())[0]
    (tmp_path / rel).unlink()
    assert any(rel in p and "does not exist" in p for p in render.render_file(doc, check=True))


def test_rendering():
    data = {
        "meta": {"command": ["a --x", "b"], "machine": "m", "date": "2026-11-29", "peer": "p"},
        "columns": ["name", "n"],
        "align": ["l", "r"],
        "rows": [["x|y", "1"]],
        "notes": ["A note."],
    }
    assert render.render_table(data) == (
        "Command: `a --x`; `b` · Machine: m · Date: 2026-11-29 · Peer: p\n\n"
        "| name | n |\n|---|---:|\n| x\\|y | 1 |\n\nA note.\n"
    )
    with pytest.raises(ValueError, match="row 0 has 1 cells for 2 columns"):
        render.render_table({"columns": ["a", "b"], "rows": [["1"]]})


def test_write_table_writes_the_json_and_rerenders(tmp_path, monkeypatch):
    results = load("results")
    doc = tmp_path / "RESULTS.md"
    doc.write_text("# R\n\n<!-- table: results/t.json -->\nold\n<!-- /table -->\n")
    monkeypatch.setattr(results, "RESULTS", doc)
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path / "results")
    referenced = results.write_table("t", ["a", "b"], [["1", "2"]], {"command": "c", "date": "2026-11-29"}, align="lr")
    assert referenced
    assert json.loads((tmp_path / "results/t.json").read_text())["rows"] == [["1", "2"]]
    assert "| 1 | 2 |" in doc.read_text() and "old" not in doc.read_text()
    assert not results.write_table("u", ["a"], [["1"]], {"date": "2026-11-29"})
    assert (tmp_path / "results/u.json").exists()
