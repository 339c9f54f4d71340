"""``pufferbox new-env NAME [--c]``: scaffold a plugin folder (:mod:`pufferbox.native.scaffold`)."""

from __future__ import annotations

from pathlib import Path

import click

from pufferbox.cli import UserError, cli


@cli.command("new-env")
@click.argument("name")
@click.option("--c", "c_game", is_flag=True, help="A C game (c/NAME.h) with its Python reference, via the C game SDK.")
@click.option(
    "--dir",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where to write the plugin (default: ./pufferbox-NAME); must be new or empty.",
)
def new_env(name: str, c_game: bool, folder: Path | None) -> None:
    """Write a new env plugin, pufferbox-NAME: it installs, passes `pufferbox check NAME` and trains as written.

    The env is Catch (move the paddle under the falling ball); with --c its rules are also a C header that
    pufferbox compiles, steps in blocks and runs as a CUDA kernel. Then:
    pip install -e ./pufferbox-NAME && pufferbox check NAME && pufferbox train NAME
    """
    from pufferbox.native.scaffold import ScaffoldError, write_plugin

    folder = folder if folder is not None else Path(f"pufferbox-{name}")
    try:
        written = write_plugin(name, folder, c_game)
    except ScaffoldError as exc:
        raise UserError(str(exc)) from None
    except OSError as exc:
        raise UserError(
            f"new-env: cannot write {folder}: {exc.strerror or exc}; fix: pass --dir to a writable folder"
        ) from None
    click.echo(f"wrote {len(written)} files to {folder}/ (env {name!r}{', a C game' if c_game else ''})")
    click.echo(f"next: pip install -e {folder} && pufferbox check {name} && pufferbox train {name}")
