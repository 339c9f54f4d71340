"""``pufferbox export``: a thin wrapper over :func:`pufferbox.export.export_run`."""

from __future__ import annotations

import json
import signal
import sys

import click

from pufferbox.cli import cli


@cli.command("export")
@click.argument("run_dir", type=click.Path())
@click.argument("out_dir", metavar="DIR", type=click.Path())
@click.option("--to", "to", required=True, metavar="onnx|torchscript|hub", help="What to write into DIR.")
@click.option(
    "--episodes", type=click.IntRange(1), default=5, show_default=True, help="--to hub: episodes of the card's evaluation."
)
@click.option(
    "--encoder",
    metavar="MODULE:ATTR",
    help="Trust this encoder, named by the checkpoint but registered by no installed plugin (as eval --encoder).",
)
def export(run_dir, out_dir, to, episodes, encoder):
    """Export RUN_DIR's newest checkpoint (or a ckpt-*.pt, or a hub folder) into the new folder DIR.

    onnx / torchscript: one graph per policy (per agent group), observation row in, logits (or mean/std)
    and value out, with a JSON sidecar describing the row, each checked against the PyTorch policy on
    recorded observations. hub: a Hugging Face Hub model folder (model card, safetensors weights,
    config); upload it yourself with `huggingface-cli upload USER/REPO DIR .`.
    """
    from pufferbox.export import export_run

    signal.signal(signal.SIGTERM, stopped)  # the staging folder is removed on the way out, as on any failure
    click.echo(json.dumps(export_run(run_dir, to, out_dir, episodes=episodes, encoder=encoder)))


def stopped(signum: int, frame: object) -> None:
    """SIGTERM mid-export: one line, exit 143, nothing left (export_run removes its staging folder)."""
    click.echo(f"Error: {signal.Signals(signum).name}: export stopped; nothing was written", err=True)
    sys.exit(128 + signum)
