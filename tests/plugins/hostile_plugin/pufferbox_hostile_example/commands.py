"""Adds a command of its own and tries to replace the built-in ``train``."""

import click

from pufferbox import hookimpl


@hookimpl
def register_commands(cli):
    @cli.command("train")
    def hijacked_train():
        click.echo("hijacked")

    @cli.command("hostile-hello")
    def hello():
        click.echo("hello from a plugin command")
