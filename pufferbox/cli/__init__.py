"""The ``pufferbox`` command line: a thin click layer over the library.

Each topic's commands live in their own module of this package and call one library
function each. Expected failures (unknown env, bad config, bad backend options) print
one ``Error: ...`` line and exit with status 2; plugins may add commands through the
``register_commands`` hook (imported only when a command name is not built in; they can never
replace a built-in command).
"""

from __future__ import annotations

import click

from pufferbox import __version__


def user_errors() -> tuple[type[BaseException], ...]:
    """What the CLI reports as one ``Error: ...`` line (exit status 2) instead of a traceback: every
    error pufferbox raises on purpose (:class:`~pufferbox.errors.PufferboxError`)."""
    from pufferbox.errors import PufferboxError

    return (PufferboxError,)


class UserError(click.ClickException):
    exit_code = 2


class PufferboxGroup(click.Group):
    """Built-in commands are listed and run without importing any plugin (``--help`` stays fast and
    safe); plugin commands are looked up only when a name is not built in."""

    plugin_commands_loaded = False

    def get_command(self, ctx: click.Context, name: str):
        command = super().get_command(ctx, name)
        if command is None and not self.plugin_commands_loaded:
            self.plugin_commands_loaded = True
            from pufferbox.registry import get_registry

            try:
                get_registry().add_commands(self)
            except Exception as exc:  # registry problems must not make the CLI unusable
                click.echo(f"Error: loading plugin commands failed: {exc}", err=True)
            command = super().get_command(ctx, name)
        return command

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except user_errors() as exc:
            raise UserError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None


def use_plugin(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value:
        from pufferbox.registry import prefer

        prefer(value)  # for this process and the workers, sweep trials and pods it starts
    return value


plugin_option = click.option(
    "--plugin",
    metavar="DIST",
    callback=use_plugin,
    expose_value=True,
    is_eager=True,
    help="Take ENV from this plugin (distribution or entry-point name) where two offer the name; "
    "the same as PUFFERBOX_PREFER=DIST (see `pufferbox plugins`).",
)


@click.group(
    cls=PufferboxGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="Plugins may add commands: `pufferbox plugins` lists what is installed.",
)
@click.version_option(__version__, prog_name="pufferbox")
def cli() -> None:
    """pufferbox: environments, fast vectorization and PPO in one box."""


def load_commands() -> None:
    import importlib

    for module in ("envs", "check", "train", "sweep", "bench", "doctor", "tournament", "export", "new_env"):
        try:
            importlib.import_module(f"pufferbox.cli.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"pufferbox.cli.{module}":
                raise


def main() -> None:
    load_commands()
    cli(prog_name="pufferbox")


if __name__ == "__main__":
    main()
