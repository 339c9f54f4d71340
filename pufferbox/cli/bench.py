"""``pufferbox bench`` and ``pufferbox autotune``: vector-env throughput from the command line."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from pufferbox.cli import cli


@cli.command("bench")
@click.argument("env")
@click.option("--backend", type=click.Choice(["serial", "multiprocessing", "ray"]), default="serial", show_default=True)
@click.option("--num-envs", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--num-workers", type=click.IntRange(min=1), default=None, help="default: a divisor of num-envs <= CPUs")
@click.option("--batch-size", type=click.IntRange(min=1), default=None, help="envs per recv (default: num-envs)")
@click.option("--seconds", type=click.FloatRange(min=0, min_open=True), default=3.0, show_default=True)
@click.option("--zero-copy", is_flag=True, help="pools return contiguous views instead of the first workers")
@click.option(
    "--main-envs",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="multiprocessing: the main process steps this many envs itself while the workers step theirs",
)
@click.option("--no-native", is_flag=True, help="emulate single envs even if the plugin has a native batch")
@click.option("--ray-address", default=None, help="join this Ray cluster (default: $RAY_ADDRESS, else a local one)")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
def bench_command(
    env: str,
    backend: str,
    num_envs: int,
    num_workers: int | None,
    batch_size: int | None,
    seconds: float,
    zero_copy: bool,
    main_envs: int,
    no_native: bool,
    ray_address: str | None,
    as_json: bool,
) -> None:
    """Step ENV with random actions and print steps/s (agent steps for multi-agent envs)."""
    from pufferbox.throughput import bench

    extra: dict[str, Any] = {}
    if backend == "ray":
        extra["address"] = ray_address or os.environ.get("RAY_ADDRESS")
    elif ray_address:
        raise click.UsageError("--ray-address needs --backend ray")
    result = bench(
        env,
        backend=backend,
        num_envs=num_envs,
        num_workers=num_workers,
        batch_size=batch_size,
        seconds=seconds,
        native=not no_native,
        zero_copy=zero_copy,
        main_envs=main_envs,
        **extra,
    )
    if as_json:
        click.echo(json.dumps(result))
        return
    unit = "agent steps/s" if result["agents_per_env"] > 1 else "steps/s"
    click.echo(
        f"{result['env']}: {result['sps']:,.0f} {unit}  (backend={backend}, num_envs={num_envs}, "
        f"num_workers={result['num_workers']}, batch_size={result['batch_size']}, "
        + (f"main_envs={result['main_envs']}, " if result["main_envs"] else "")
        + f"native={result['native']}, {result['seconds']:.1f} s)"
    )


@cli.command("autotune")
@click.argument("env")
@click.option(
    "--seconds", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True, help="time per configuration"
)
@click.option("--max-envs", type=click.IntRange(min=1), default=256, show_default=True)
@click.option("--no-native", is_flag=True, help="emulate single envs even if the plugin has a native batch")
@click.option("--json", "as_json", is_flag=True, help="print the ranked results as a JSON list")
def autotune_command(env: str, seconds: float, max_envs: int, no_native: bool, as_json: bool) -> None:
    """Time the backend configurations that fit this machine for ENV and rank them."""
    from pufferbox.throughput import autotune

    progress = None if as_json else (lambda r: click.echo(f"  timed {r['command']}: {r['sps']:,.0f}", err=True))
    results = autotune(env, seconds=seconds, max_envs=max_envs, native=not no_native, progress=progress)
    if as_json:
        click.echo(json.dumps(results))
        return
    click.echo(f"{'rank':>4}  {'steps/s':>12}  configuration")
    for rank, r in enumerate(results, 1):
        click.echo(f"{rank:>4}  {r['sps']:>12,.0f}  {r['command']}")
    click.echo(f"\nbest ({os.cpu_count()} CPUs):\n{results[0]['command']}")
