"""The docs' reference pages (docs/hooks/reference.py, issue 53) say what the code does: every command and
option, every config key with its default and the bounds that are enforced, every registered env with the
spaces it shows when built."""

from __future__ import annotations

import importlib.util
import json
import math
import re
from pathlib import Path

import pytest

from pufferbox.train import config

ROOT = Path(__file__).resolve().parents[1]


def load_hook():
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "docs" / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hook = load_hook()


def test_the_cli_page_names_every_command_and_option():
    page = hook.cli_page()
    root = hook.cli_root()
    assert len(root.commands) >= 15
    for name, command in root.commands.items():
        assert f"## `pufferbox {name}`" in page, f"pufferbox {name} is not on the CLI page"
        for param in command.params:
            for opt in getattr(param, "opts", []):
                shown = opt if opt.startswith("-") else param.human_readable_name
                assert f"`{shown}`" in page, f"pufferbox {name} {shown} is not on the CLI page"


def config_rows(page: str) -> dict[str, list[str]]:
    rows, section = {}, ""
    for line in page.splitlines():
        if line.startswith("## `["):
            section = line.strip("#` []")
        elif line.startswith("| `") and section:
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            rows[f"{section}.{cells[0].strip('`')}"] = cells
    return rows


def test_the_config_page_shows_every_key_with_its_default_and_bounds():
    rows = config_rows(hook.config_page())
    keys = {f"{s}.{k}" for s, table in config.DEFAULTS.items() if s in config.SECTIONS for k in table}
    assert set(rows) == keys
    for name, cells in rows.items():
        section, key = name.split(".")
        default = config.DEFAULTS[section][key]
        assert cells[2].strip("`") == (repr(default) if isinstance(default, float) else json.dumps(default)), name
        assert cells[3], f"{name}: no bounds shown"


def refused(section: str, key: str, value) -> bool:
    try:
        config.RunConfig.from_dict({section: {key: value}})
    except config.ConfigError:
        return True
    return False


def probes(kind: type, bound: str) -> list[tuple[object, bool]]:
    """(value, refused?) pairs that the documented ``bound`` promises."""
    if bound == ">= 1":
        return [(kind(0), True), (kind(1), False)]
    if bound == "> 0":
        return [(kind(0), True), (kind(1), False)]
    if bound == ">= 0":
        return [(kind(-1), True), (kind(0), False)]
    if bound.startswith("at most 1 (a discount)"):
        return [(1.0, False), (1.5, True)]
    if match := re.match(r"at most ([\d.e+]+) \(", bound):
        limit = kind(float(match.group(1)))
        return [(limit, False), (limit * 2 if kind is float else limit + 1, True)]
    if bound.startswith("finite"):
        return [(math.inf, True), (1e39, True)]
    if bound.startswith("one of ") and "`" not in bound:
        return [*((choice, False) for choice in bound[7:].split(", ")), ("no-such-choice", True)]
    return []


def test_the_documented_bounds_are_the_ones_enforced():
    """Each bound the page shows for a key is probed on both sides through the config's own checks."""
    probed = 0
    for section in config.SECTIONS:
        for key, default in config.DEFAULTS[section].items():
            for bound in hook.config_bounds(section, key):
                for value, expect_refused in probes(type(default), bound):
                    assert refused(section, key, value) == expect_refused, f"{section}.{key}={value!r} vs '{bound}'"
                    probed += 1
    assert probed > 100


def test_the_recorded_spaces_list_every_registered_env():
    """Every recorded env is registered; an env not recorded yet is built during the docs build, which
    must stay cheap: past a few seconds of building, record the spaces again."""
    import time

    from pufferbox.registry import get_registry

    recorded = json.loads(hook.SPACES_FILE.read_text())
    specs = get_registry().all_envs()
    gone = sorted(set(recorded) - {spec.name for spec in specs})
    assert not gone, f"record the spaces again (.venv/bin/python docs/hooks/reference.py --record-spaces): gone {gone[:5]}"
    broken = {name: entry["error"] for name, entry in recorded.items() if "error" in entry}
    assert not broken, f"registered envs that do not build (fix or unregister them): {broken}"
    start = time.perf_counter()
    new = [spec.name for spec in specs if spec.name not in recorded and hook.live_spaces(spec)]
    assert time.perf_counter() - start < 5, f"building {new} takes too long for a docs build: record the spaces again"
    page = hook.envs_page()
    assert all(f"| `{spec.name}`" in page for spec in specs)


@pytest.mark.slow
def test_the_recorded_spaces_are_what_the_envs_show_when_built():
    from pufferbox.registry import get_registry

    recorded = json.loads(hook.SPACES_FILE.read_text())
    specs = [spec for spec in get_registry().all_envs() if spec.name in recorded]
    differ = [spec.name for spec in specs if hook.live_spaces(spec) != recorded[spec.name]]
    assert not differ, f"record the spaces again (docs/hooks/reference.py --record-spaces): {differ[:10]}"


def test_the_architecture_page_is_the_readmes_section():
    page = hook.architecture_page()
    readme = (ROOT / "README.md").read_text()
    assert page.startswith("# Architecture") and page.split("\n", 3)[3].strip() in readme
