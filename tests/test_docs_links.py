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


TOP = ("pufferbox/", "plugins/", "benchmarks/", "tests/", "tank/", "docker/", "ci/", "docs/", ".ci/", ".devcontainer/")
FILE = re.compile(r"\.(py|h|c|cuh|cu|sh|md|toml|yaml|yml|json|txt|png|gif)$")


def test_the_files_the_docs_name_exist():
    """A path in a code span of README.md or a docs page (``plugins/ocean/...``) names a file of the checkout,
    so a moved or deleted file is caught where the docs still point at it."""
    stale = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for token in re.findall(r"`([^`\s]+)`", page.read_text()):
            path = token.rstrip(".,:;")
            named = path.startswith(TOP) and FILE.search(path) and not re.search(r"[<*]|NAME", path)
            if named and not (ROOT / path).exists():
                stale.append(f"{page.relative_to(ROOT)}: {path}")
    assert not stale, "the docs name files that do not exist:\n  " + "\n  ".join(stale)
