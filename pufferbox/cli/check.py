"""``pufferbox check ENV``: run the plugin conformance suite (and optionally the CUDA one)."""

from __future__ import annotations

import sys

import click

from pufferbox.cli import UserError, cli, plugin_option
from pufferbox.registry import get_registry


@cli.command()
@click.argument("env")
@click.option("--steps", default=200, show_default=True, type=click.IntRange(1), help="Steps per check.")
@click.option("--seed", default=0, show_default=True, type=int, help="Base seed (env i gets seed + i).")
@click.option("--num-envs", default=3, show_default=True, type=click.IntRange(1), help="Envs in the vector checks.")
@click.option(
    "--check",
    "only",
    multiple=True,
    help="Run only this check (repeatable): api, spaces, determinism, flattening, serial, native.",
)
@click.option("--cuda", is_flag=True, help="Also compare the CUDA kernel with its CPU reference (needs a GPU).")
@click.option(
    "--host",
    is_flag=True,
    help="Run the --cuda comparison on the CPU: the same kernel source built "
    "with g++ (pufferbox.cuda.hostsim), the same per-index report; implies --cuda.",
)
@plugin_option
def check(
    env: str, steps: int, seed: int, num_envs: int, only: tuple[str, ...], cuda: bool, host: bool, plugin: str | None
) -> None:
    """Check that ENV conforms to the plugin contract; exit 1 naming each failed check.

    `pufferbox check tag --cuda --host` checks a kernel against its CPU reference without a GPU.
    """
    from pufferbox.conformance import CHECKS, check_env_spec
    from pufferbox.vector.base import EnvFactory, refuse_oversized

    unknown = [c for c in only if c not in CHECKS]
    if unknown:
        raise UserError(f"unknown check {unknown[0]!r}; choose from {', '.join(CHECKS)}")
    cuda = cuda or host
    spec = get_registry().get(env, plugin=plugin)
    spec.ensure_available()
    if cuda and (spec.build.implementation != "cuda" or spec.build.cuda is None):
        raise UserError(f"--cuda: env {spec.name!r} has no CUDA kernel; `pufferbox envs` lists the cuda ones")
    refuse_oversized(EnvFactory(spec, use_native=False), num_envs)  # the vector checks' emulated envs
    results = check_env_spec(spec, steps=steps, seed=seed, num_envs=num_envs, checks=list(only) or None)
    for result in results:
        click.echo(f"{spec.name}: {result}")
    failed = [r.name for r in results if not r.ok]
    if cuda and not check_kernel(spec, "host" if host else "gpu"):
        failed.append("cuda")
    if failed:
        click.echo(f"{spec.name}: failed {', '.join(failed)}", err=True)
        sys.exit(1)
    click.echo(f"{spec.name}: all {len(results) + cuda} checks passed")


def check_kernel(spec, device: str) -> bool:
    """Kernel vs CPU reference on ``device`` ("gpu" or "host"); prints the per-index report."""
    try:
        from pufferbox.cuda.consistency import check_env as check_cuda
    except ImportError as exc:
        raise UserError(f"--cuda needs pufferbox.cuda.consistency, which cannot be imported here: {exc}") from None
    if device == "host":
        from pufferbox.cuda.hostsim import find_cxx

        if find_cxx() is None:
            raise UserError("--host builds the kernel source with a C++ compiler: none found (install g++)")
    report = check_cuda(spec, num_envs=8, steps=200, seed=0, device=device)
    click.echo(f"{spec.name}: {'ok  ' if report.ok else 'FAIL'} cuda: {report.summary()}")
    return report.ok
