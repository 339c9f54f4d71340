"""``pufferbox envs``, ``plugins`` and ``info``: what is installed and how it is laid out."""

from __future__ import annotations

import json
from importlib import metadata
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from pufferbox.cli import cli
from pufferbox.registry import EnvSpec, get_registry


def env_status(spec: EnvSpec) -> tuple[str, str]:
    """What happens when you train ``spec`` here: ``ok``, ``unavailable`` or ``broken``, and why.

    Declared spaces are checked for flattening without building the env; a kernel env
    (``implementation="cuda"``) on a machine without a usable GPU trains its CPU reference.
    """
    reason = spec.unavailable_reason
    if reason:
        return "unavailable", reason
    from pufferbox.spaces import ActionSpec, ObservationSpec, SpaceError

    try:
        if spec.build.observation_space is not None:
            ObservationSpec(spec.build.observation_space)
        if spec.build.action_space is not None:
            ActionSpec(spec.build.action_space)
    except SpaceError as exc:
        return "broken", f"{exc} (pufferbox cannot flatten it)"
    if spec.build.implementation == "cuda":
        from pufferbox.cuda.device import gpu_unavailable_reason

        no_gpu = gpu_unavailable_reason()
        if no_gpu:
            return "ok (cpu reference; --backend cuda needs a GPU)", no_gpu
    return "ok", ""


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list instead of a table.")
def envs(as_json: bool) -> None:
    """List registered environments: name, plugin, version, implementation, status."""
    registry = get_registry()
    rows: list[dict[str, Any]] = []
    for spec in registry.all_envs():
        status, reason = env_status(spec)
        rows.append(
            {
                "name": spec.name,
                "plugin": spec.meta.plugin,
                "distribution": spec.meta.distribution,
                "version": spec.meta.version,
                "implementation": spec.build.implementation,
                "native": spec.build.native is not None,
                "status": status,
                "reason": reason,
                "aliases": list(spec.aliases),
                "description": spec.meta.description,
                "also_offered_by": [c.refused.distribution for c in registry.clashes_of(spec.name)],
            }
        )
    rows.extend(refused_rows(registry))
    for plugin in registry.broken():
        rows.append(
            {
                "name": f"({plugin.name})",
                "plugin": plugin.name,
                "distribution": plugin.distribution,
                "version": plugin.version,
                "implementation": "",
                "native": False,
                "status": "broken",
                "reason": plugin.error,
                "aliases": [],
                "description": "",
            }
        )
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    table = Table("env", "plugin", "version", "impl", "status")
    for row in rows:
        status = row["status"] if row["status"].startswith("ok") else f"[red]{row['status']}[/]: {row['reason']}"
        if row.get("also_offered_by"):
            status += f" (also offered by {', '.join(row['also_offered_by'])}: refused)"
        impl = row["implementation"] + (" +native" if row["native"] else "")
        table.add_row(row["name"], row["plugin"], row["version"], impl, status)
    Console().print(table)
    for clash in registry.clashes:
        if clash.kind == "env":
            click.echo(f"note: {clash.refused.name}: {clash.line()}")


def refused_rows(registry: Any) -> list[dict]:
    """One row per env offer refused because another plugin holds the name (who holds it, how to pick)."""
    return [
        {
            "name": clash.name,
            "plugin": clash.refused.name,
            "distribution": clash.refused.distribution,
            "version": clash.refused.version,
            "implementation": "",
            "native": False,
            "status": "refused",
            "reason": clash.line(),
            "aliases": [],
            "description": "",
        }
        for clash in registry.clashes
        if clash.kind == "env"
    ]


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON (with every env name).")
@click.option("--all", "-v", "show_all", is_flag=True, help="List each plugin's env names too.")
def plugins(as_json: bool, show_all: bool) -> None:
    """List installed plugins (one row each, with their env count) and errors of broken ones."""
    registry = get_registry().load()
    rows: list[dict[str, Any]] = [
        {
            "name": p.name,
            "distribution": p.distribution,
            "version": p.version,
            "module": p.module,
            "envs": p.envs,
            "refused": p.refused,
            "status": "ok" if p.ok else "broken",
            "error": p.error,
            "notes": p.notes,
        }
        for p in registry.plugins
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    table = Table("plugin", "distribution", "version", "envs", "status")
    for row in rows:
        status = "ok" if row["status"] == "ok" else f"[red]broken[/]: {row['error']}"
        if row["notes"]:
            status += f" ({len(row['notes'])} note{'s' if len(row['notes']) > 1 else ''} below)"
        envs = f"{len(row['envs'])}" + (f": {', '.join(row['envs'])}" if show_all and row["envs"] else "")
        envs += f" ({len(row['refused'])} refused)" if row["refused"] else ""
        table.add_row(row["name"], row["distribution"], row["version"], envs, status)
    Console().print(table)
    for row in rows:  # plain lines: a table cell would wrap what the user must read to pick a plugin
        for note in row["notes"]:
            click.echo(f"note: {row['name']}: {note}")
    if not show_all:
        click.echo("(env names: pufferbox plugins --all, or pufferbox envs)")


def describe(spec: EnvSpec) -> dict:
    """Everything ``info`` shows, as plain data."""
    obs_spec, act_spec, agents = spec.flattening()
    requires = {}
    for _module, requirement in spec.meta.requires.items():
        name = requirement.split("[")[0].split("=")[0].split("<")[0].split(">")[0].strip()
        try:
            requires[requirement] = metadata.version(name)
        except metadata.PackageNotFoundError:
            requires[requirement] = "missing"
    return {
        "name": spec.name,
        "plugin": spec.meta.plugin,
        "distribution": f"{spec.meta.distribution} {spec.meta.version}",
        "implementation": spec.build.implementation,
        "native_batched": spec.build.native is not None,
        "description": spec.meta.description,
        "agents_per_env": agents,
        "observation_space": str(obs_spec.space),
        "action_space": str(act_spec.space),
        "flat_observation": f"{obs_spec.flat_dtype}[{obs_spec.flat_size}] ({obs_spec.dtype.itemsize} bytes per agent)",
        "flat_action": str(act_spec.flat_space),
        "observation_fields": [
            {
                "path": "/".join(map(str, leaf.path)) or "(root)",
                "dtype": str(leaf.dtype),
                "shape": list(leaf.shape),
                "byte_offset": leaf.offset,
            }
            for leaf in obs_spec.leaves
        ],
        "defaults": spec.training.config,
        "gpu_profile": spec.training.gpu_config,
        **scaling_plan(spec),
        "solved_return": spec.training.solved_return,
        "requires": requires,
    }


def scaling_plan(spec: EnvSpec) -> dict[str, Any]:
    """The plan ``pufferbox train`` makes for ``spec`` on this machine (pufferbox/train/plan.py), one line,
    and the settings that are not built-ins, each with the layer that set it (plugin defaults, GPU profile, plan)."""
    from pufferbox.train.config import flat_settings
    from pufferbox.train.plan import Machine, expected_threads, planned_config

    run, plan = planned_config(spec, machine=Machine.here())  # the GPU profile where a GPU trains
    values = flat_settings(run.to_dict())
    settings = {key: {"value": values[key], "source": source} for key, source in sorted(run.sources.items())}
    return {"plan": plan.describe(expected_threads(plan, spec, run)), "settings": settings}


@cli.command()
@click.argument("env")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def info(env: str, as_json: bool) -> None:
    """Show ENV's spaces, flat layout, agents, defaults, its scaling plan here and pinned requirements."""
    data = describe(get_registry().get(env))
    if as_json:
        click.echo(json.dumps(data, indent=2, default=str))
        return
    console = Console()
    console.print(
        f"[bold]{data['name']}[/]  ({data['distribution']}, {data['implementation']}"
        f"{', native batched' if data['native_batched'] else ''})"
    )
    if data["description"]:
        console.print(data["description"])
    for key in ("agents_per_env", "observation_space", "action_space", "flat_observation", "flat_action", "solved_return"):
        console.print(f"  {key}: {data[key]}")
    table = Table("field", "dtype", "shape", "byte offset")
    for f in data["observation_fields"]:
        table.add_row(f["path"], f["dtype"], str(tuple(f["shape"])), str(f["byte_offset"]))
    console.print(table)
    for requirement, version in data["requires"].items():
        console.print(f"  requires {requirement}: installed {version}")
    if data["defaults"]:
        console.print(f"  defaults: {data['defaults']}")
    if data["gpu_profile"]:
        console.print(f"  GPU profile (--profile gpu; on a CUDA device): {data['gpu_profile']}")
    console.print(f"  {data['plan']}", highlight=False, soft_wrap=True)
    if data["settings"]:
        click.echo("  settings here (built-ins aside), each with the layer that set it:")
        for key, setting in data["settings"].items():
            click.echo(f"    {key} = {setting['value']!r}  ({setting['source']})")
