"""``pufferbox check ENV``: run the plugin conformance suite (and optionally the CUDA one)."""

from __future__ import annotations

import sys

import click

from pufferbox.cli import UserError, cli
from pufferbox.registry import get_registry


@cli.command()
@click.argument("env")
@click.option("--steps", default=200, show_default=True, type=click.IntRange(1), help="Steps per check.")
@click.option("--seed", default=0, show_default=True, type=int, help="Base seed (env i gets seed + i).")
@click.option("--num-envs", default=3, show_default=True, type=click.IntRange(1), help="Envs in the vector checks.")
@click.option("--check", "only", multiple=True, help="Run only this check (repeatable): api, spaces, "
              "determinism, flattening, serial, native.")
@click.option("--cuda", is_flag=True, help="Also compare the CUDA kernel with its CPU reference (needs a GPU).")
def check(env: str, steps: int, seed: int, num_envs: int, only: tuple[str, ...], cuda: bool) -> None:
    """Check that ENV conforms to the plugin contract; exit 1 naming each failed check."""
    from pufferbox.conformance import CHECKS, check_env_spec

    unknown = [c for c in only if c not in CHECKS]
    if unknown:
        raise UserError(f"unknown check {unknown[0]!r}; choose from {', '.join(CHECKS)}")
    spec = get_registry().get(env)
    spec.ensure_available()
    results = check_env_spec(spec, steps=steps, seed=seed, num_envs=num_envs, checks=list(only) or None)
    for result in results:
        click.echo(f"{spec.name}: {result}")
    failed = [r.name for r in results if not r.ok]
    if cuda:
        try:
            from pufferbox.cuda.consistency import check_env as check_cuda
        except ImportError as exc:
            raise UserError(f"--cuda needs pufferbox.cuda.consistency, which cannot be imported here: {exc}") from None
        report = check_cuda(spec, num_envs=8, steps=200, seed=0)
        click.echo(f"{spec.name}: {'ok  ' if report.ok else 'FAIL'} cuda: {report.summary()}")
        if not report.ok:
            failed.append("cuda")
    if failed:
        click.echo(f"{spec.name}: failed {', '.join(failed)}", err=True)
        sys.exit(1)
    click.echo(f"{spec.name}: all {len(results) + cuda} checks passed")
