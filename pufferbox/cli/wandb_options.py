"""The ``--wandb*`` options that ``pufferbox train`` and ``pufferbox sweep`` share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

OPTIONS = [
    click.option("--wandb", "wandb", is_flag=True, help="Also log to Weights & Biases (offline without an API key)."),
    click.option("--wandb-project", default="pufferbox", show_default=True, help="W&B project."),
    click.option("--wandb-entity", help="W&B entity (user or team)."),
    click.option("--wandb-group", help="W&B group (a sweep's trials default to the sweep's name)."),
    click.option("--wandb-tags", help="Comma-separated W&B tags."),
    click.option("--wandb-artifacts", is_flag=True, help="Upload checkpoints as W&B model artifacts."),
]


def wandb_options(command: Callable) -> Callable:
    for option in reversed(OPTIONS):
        command = option(command)
    return command


def tracker_factory(options: dict[str, Any], default_group: str | None = None) -> Callable[..., list[Any]]:
    """``(run_dir, name=None) -> [WandbTracker]`` from the parsed options, or ``[]`` without ``--wandb``."""
    from pufferbox.train.tracking import WandbTracker

    def make(run_dir: str, name: str | None = None) -> list[Any]:
        if not options["wandb"]:
            return []
        tags = [t.strip() for t in (options["wandb_tags"] or "").split(",") if t.strip()]
        return [
            WandbTracker(
                run_dir,
                project=options["wandb_project"],
                entity=options["wandb_entity"],
                group=options["wandb_group"] or default_group,
                tags=tags,
                artifacts=options["wandb_artifacts"],
                name=name,
            )
        ]

    return make
