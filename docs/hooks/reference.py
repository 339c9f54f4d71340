"""MkDocs hook: the reference pages, generated from the code at every build.

- ``reference/cli.md``: every command of the ``pufferbox`` click group, its arguments and options;
- ``reference/config.md``: every key of the config sections (``pufferbox/train/config.py``) with its
  default and its bounds (:func:`config_bounds`, read from the tables ``check_value`` enforces, plus
  the few bounds checked where a key is used, named with their module in :data:`CHECKED_WHERE_USED`);
- ``reference/envs.md``: every registered env with its agents and observation/action spaces. Building
  all of them takes longer than a docs build should, so the spaces come from ``env-spaces.json`` beside
  this file (``python docs/hooks/reference.py --record-spaces`` rewrites it; an env missing from it is
  built during the build; ``tests/test_docs_reference.py`` rebuilds every env and compares);
- ``architecture.md``: README.md's Architecture section, so the map is written in one place;
- ``assets/ocean/*.gif``: the Ocean games' clips from ``benchmarks/ocean/``.

Run as a script, it prints a page (``--page cli|config|envs``) or records the env spaces.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SPACES_FILE = Path(__file__).with_name("env-spaces.json")


def cell(text: Any) -> str:
    """``text`` as one Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def prose(docstring: str | None) -> str:
    """A docstring as Markdown: Sphinx roles (:class:`~a.b.C`) as code, ``x`` as `x`."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", inspect.cleandoc(docstring or ""))
    return text.replace("``", "`")


def code(text: Any) -> str:
    """``text`` as a code span in a table cell (the table extension does not split a row at a pipe inside one)."""
    return f"`{' '.join(str(text).split())}`" if str(text) != "" else ""


# ---------------------------------------------------------------- command line


def cli_root() -> Any:
    from pufferbox.cli import cli, load_commands

    load_commands()
    return cli


def option_row(param: Any, ctx: Any) -> str:
    import click

    names = ", ".join(f"`{n}`" for n in [*param.opts, *param.secondary_opts])
    if isinstance(param, click.Argument):
        kind = "argument" + ("" if param.required else ", optional") + (", repeatable" if param.nargs == -1 else "")
        return f"| `{param.human_readable_name}` | {kind} | | |"
    if param.is_flag and not param.secondary_opts:
        kind = "flag"
    else:
        kind = code(param.make_metavar(ctx))
        if isinstance(param.type, click.types._NumberRangeBase):
            kind += f" ({cell(param.type._describe_range())})"
    default = param.default
    shown = "" if default is None or callable(default) or default in ((), False) or param.is_flag else code(default)
    if param.multiple:
        kind += ", repeatable"
    return f"| {names} | {kind} | {shown} | {cell(param.help or '')} |"


def command_section(name: str, command: Any, parent: Any) -> list[str]:
    import click

    ctx = click.Context(command, info_name=name, parent=parent)
    usage = " ".join(command.collect_usage_pieces(ctx))
    lines = [f"## `{ctx.command_path}`", "", f"```\n{ctx.command_path} {usage}\n```", ""]
    lines += [prose(command.help), ""]
    params = [p for p in command.get_params(ctx) if "--help" not in getattr(p, "opts", ())]
    if params:
        lines += ["| argument or option | takes | default | what it does |", "|---|---|---|---|"]
        lines += [option_row(p, ctx) for p in params]
        lines.append("")
    if isinstance(command, click.Group):
        for sub in sorted(command.commands):
            lines += command_section(sub, command.commands[sub], ctx)
    return lines


def cli_page() -> str:
    import click

    root = cli_root()
    ctx = click.Context(root, info_name="pufferbox")
    lines = [
        "# Command line",
        "",
        "Every built-in command of `pufferbox`, generated from the click commands in `pufferbox/cli/` "
        "when the docs are built. Plugins may add commands of their own (`pufferbox plugins` lists them); "
        "`pufferbox COMMAND --help` prints the same text in a terminal.",
        "",
        f"```\npufferbox {' '.join(root.collect_usage_pieces(ctx))}\n```",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    for name in sorted(root.commands):
        lines.append(f"| [`{name}`](#pufferbox-{name}) | {cell(root.commands[name].get_short_help_str(200))} |")
    lines.append("")
    for name in sorted(root.commands):
        lines += command_section(name, root.commands[name], ctx)
    return "\n".join(lines)


# ---------------------------------------------------------------- config keys


def where_used() -> dict[str, Callable[[], str]]:
    """Bounds checked where the key is used rather than in ``config.check_value``: the text, from the
    constant the check reads where there is one."""

    def backends() -> str:
        from pufferbox.vector import BACKENDS

        return "one of " + ", ".join(BACKENDS) + " (`pufferbox/vector/__init__.py`)"

    def pools() -> str:
        from pufferbox.train.groups import POOL_MODES

        return "one of " + ", ".join(POOL_MODES) + " (`pufferbox/train/groups.py`)"

    return {
        "vec.backend": backends,
        "league.pool": pools,
        "vec.device": lambda: "gpu or host, with `--backend cuda` only (`pufferbox/vector/cuda.py`)",
        "train.device": lambda: "auto, cpu, cuda or cuda:N, a GPU torch sees (`pufferbox/train/hardware.py`)",
        "league.random_opponent": lambda: "below 1, for agent groups on a host backend (`pufferbox/train/assembly.py`)",
        "policy.encoder": lambda: (
            "auto, mlp, cnn, or a `module:Class` a plugin registers or you pass (`pufferbox/train/policies.py`)"
        ),
        "league.frozen": lambda: "names of the env's agent groups (`pufferbox/train/groups.py`)",
        "league.pool_source": lambda: "empty or one of the env's agent groups (`pufferbox/train/groups.py`)",
        "league.scripted_share": lambda: "between 0 and 1 (`pufferbox/train/scripted_seats.py`)",
        "league.scripted_opponent": lambda: "empty or an importable `module:function` (`pufferbox/train/scripted_seats.py`)",
    }


CHECKED_WHERE_USED = where_used()


def config_bounds(section: str, key: str) -> list[str]:
    """The bounds a value of ``section.key`` must meet: those ``config.check_value`` enforces (read from its
    tables, in its order) and those checked where the key is used."""
    from pufferbox.train import config

    name = f"{section}.{key}"
    kind = type(config.DEFAULTS[section][key])
    bounds: list[str] = []
    if kind is bool:
        bounds.append("true or false")
    elif kind in (int, float):
        if name in config.POSITIVE:
            bounds.append("> 0")
        elif name in config.AT_LEAST_ONE:
            bounds.append(">= 1")
        else:
            bounds.append(">= 0")
        if name in config.AT_MOST:
            limit, why = config.AT_MOST[name]
            bounds.append(f"at most {format(limit, 'g' if isinstance(limit, float) else 'd')} ({why})")
        if name in config.AT_MOST_ONE:
            bounds.append("at most 1 (a discount)")
        if kind is float:
            bounds.append(f"finite, at most {config.FLOAT32_MAX:.4g} (float32)")
        if name in config.FLAG_AT_LEAST_ONE:
            bounds.append("as a flag: >= 1 (0, the backend's choice, only in a config)")
    if name in config.CHOICES:
        bounds.append("one of " + ", ".join(config.CHOICES[name]))
    if name in CHECKED_WHERE_USED:
        bounds.append(CHECKED_WHERE_USED[name]())
    return bounds or ["any string"]


def field_notes(cls: type) -> dict[str, str]:
    """Each field's comment in the class source: the lines of ``#`` above it and the one beside it."""
    notes: dict[str, str] = {}
    above: list[str] = []
    for line in inspect.getsource(cls).splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            above.append(stripped.lstrip("# "))
            continue
        match = re.match(r"(\w+): [^=]+=.*?(?:#\s*(.*))?$", stripped)
        if match:
            notes[match.group(1)] = " ".join([*above, match.group(2) or ""]).strip()
        above = []
    return notes


def config_page() -> str:
    from dataclasses import fields

    from pufferbox.train import config

    lines = [
        "# Config keys",
        "",
        "Every key of a run's settings, generated from the dataclasses in `pufferbox/train/config.py` when the docs "
        "are built. Set one in a `--config FILE.toml` table (`[train]`, `[vec]`, `[policy]`, `[league]`) or with "
        "`--set SECTION.KEY=VALUE`; [Training and config](../guides/training.md) explains the layers. A value "
        "outside its bounds is one `Error:` line naming the key and exit status 2, before a run directory exists; "
        "the bounds marked with a module are checked there, when the run is assembled. "
        "`[env]` (the env's own keyword arguments: `pufferbox info ENV`) and `[groups]` are free-form tables.",
        "",
    ]
    for section, cls in config.SECTIONS.items():
        notes = field_notes(cls)
        lines += [f"## `[{section}]`", "", prose(cls.__doc__), ""]
        lines += ["| key | type | default | bounds | what it is |", "|---|---|---|---|---|"]
        for f in fields(cls):
            default = config.DEFAULTS[section][f.name]
            shown = json.dumps(default) if not isinstance(default, float) else repr(default)
            bounds = "; ".join(config_bounds(section, f.name))
            kind = type(default).__name__
            lines.append(f"| `{f.name}` | {kind} | {code(shown)} | {cell(bounds)} | {cell(notes.get(f.name, ''))} |")
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------- environments


def live_spaces(spec: Any) -> dict[str, Any]:
    """What building ``spec`` shows: agents per env and its spaces, or why it could not be built."""
    try:
        obs, act, agents = spec.flattening()
    except Exception as exc:
        return {"error": cell(f"{type(exc).__name__}: {exc}").split("; fix")[0]}
    return {"agents": agents, "observation": cell(obs.space), "action": cell(act.space)}


def record_spaces() -> None:
    """Build every registered env once and write what it shows to ``env-spaces.json``."""
    from pufferbox.registry import get_registry

    envs = {spec.name: live_spaces(spec) for spec in get_registry().all_envs()}
    SPACES_FILE.write_text(json.dumps(envs, indent=1, sort_keys=True) + "\n")
    print(f"{SPACES_FILE.relative_to(ROOT)}: {len(envs)} envs")


def env_rows(specs: list[Any], recorded: dict[str, Any]) -> list[str]:
    rows = ["| env | agents | observation space | action space | solved at |", "|---|---|---|---|---|"]
    for spec in specs:
        spaces = recorded.get(spec.name) or live_spaces(spec)
        aliases = f" (also {', '.join(f'`{a}`' for a in spec.aliases)})" if getattr(spec, "aliases", None) else ""
        built = "" if spec.name in recorded else " (built during the docs build: not recorded yet)"
        name = f"`{spec.name}`{aliases}{built}"
        solved = "" if spec.training.solved_return is None else spec.training.solved_return
        if "error" in spaces:
            rows.append(f"| {name} | | not built here: {code(spaces['error'])} | | {solved} |")
        else:
            rows.append(
                f"| {name} | {spaces['agents']} | {code(spaces['observation'])} | {code(spaces['action'])} | {solved} |"
            )
    return rows


def envs_page() -> str:
    from pufferbox.registry import get_registry

    recorded = json.loads(SPACES_FILE.read_text()) if SPACES_FILE.exists() else {}
    by_plugin: dict[str, list[Any]] = {}
    for spec in get_registry().all_envs():
        by_plugin.setdefault(spec.meta.distribution or spec.meta.plugin, []).append(spec)
    lines = [
        "# Environments",
        "",
        "Every env the installed plugins register, generated from the registry (`pufferbox/registry.py`) when the "
        "docs are built: its agents per env, the observation and action spaces pufferbox flattens (one row per agent) "
        "and the mean return that counts as solved. Building every env takes longer than a docs build should, so "
        "the spaces are the ones recorded in `docs/hooks/env-spaces.json` by "
        "`.venv/bin/python docs/hooks/reference.py --record-spaces` (an env missing there is built during the build); "
        "`tests/test_docs_reference.py` builds every env again and fails where the record differs. "
        "`pufferbox info ENV` shows the same, plus the flat layout, defaults and pinned versions; "
        "[Environments](../guides/environments.md) describes each family.",
        "",
    ]
    for dist in sorted(by_plugin):
        specs = by_plugin[dist]
        lines += [f"## {dist}", "", f"{len(specs)} envs, plugin `{specs[0].meta.plugin}`.", ""]
        lines += env_rows(specs, recorded) + [""]
    return "\n".join(lines)


# ---------------------------------------------------------------- pages from README.md


def architecture_page() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("## Architecture")
    end = text.find("\n## ", start + 1)  # the next section, or the end of the README
    section = text[start : end if end != -1 else len(text)]
    body = section.split("\n", 1)[1]
    intro = "The map of the code, kept in README.md (where a test checks that it names every module)."
    return f"# Architecture\n\n{intro}\n{body}"


PAGES: dict[str, Callable[[], str]] = {
    "reference/cli.md": cli_page,
    "reference/config.md": config_page,
    "reference/envs.md": envs_page,
    "architecture.md": architecture_page,
}


def on_files(files: Any, config: Any) -> Any:
    """MkDocs: add the generated pages and the Ocean clips to the site's files."""
    from mkdocs.structure.files import File

    for uri, page in PAGES.items():
        files.append(File.generated(config, uri, content=page()))
    for gif in sorted((ROOT / "benchmarks" / "ocean").glob("*.gif")):
        files.append(File.generated(config, f"assets/ocean/{gif.name}", abs_src_path=str(gif)))
    return files


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--page", choices=["cli", "config", "envs", "architecture"], help="print one generated page")
    parser.add_argument("--record-spaces", action="store_true", help=f"rewrite {SPACES_FILE.name} by building every env")
    args = parser.parse_args(argv)
    if args.record_spaces:
        record_spaces()
    if args.page:
        sys.stdout.write(PAGES[f"reference/{args.page}.md" if args.page != "architecture" else "architecture.md"]())


if __name__ == "__main__":
    main()
