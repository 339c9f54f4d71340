"""The README's Architecture map names every module of pufferbox, so a newcomer finds each one there."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def architecture_block() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("## Architecture")
    end = text.find("\n## ", start + 1)  # the next section, or the end of the README
    return text[start : end if end != -1 else len(text)]


def test_the_architecture_map_names_every_module():
    block = architecture_block()
    modules = [p for p in sorted((ROOT / "pufferbox").rglob("*.py")) if p.name not in ("__init__.py", "__main__.py")]
    missing = [str(p.relative_to(ROOT)) for p in modules if p.name not in block]
    assert not missing, "add these to README.md's Architecture section: " + ", ".join(missing)
