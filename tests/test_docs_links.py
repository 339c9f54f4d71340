"""The README's links into the docs (issue 53: the README is the front page, the docs hold the rest) name
pages that exist, and every page under docs/ is in the site's nav (mkdocs.yml) or generated."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_links_name_existing_files():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", (ROOT / "README.md").read_text())
    assert any(link.startswith("docs/") for link in links)
    missing = [link for link in links if "://" not in link and not (ROOT / link).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_every_docs_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = [p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")]
    absent = [page for page in pages if f": {page}" not in nav]
    assert not absent, f"docs pages missing from mkdocs.yml's nav: {absent}"
