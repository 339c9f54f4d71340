"""``pufferbox tournament`` and ``pufferbox leaderboard``: population training on Ray."""

from __future__ import annotations

import json
import signal
import sys

import click
from rich.console import Console
from rich.table import Table

from pufferbox.cli import UserError, cli, plugin_option
from pufferbox.tournament.settings import SCORE_OPPONENTS, TournamentSettings, setting_default


@cli.command()
@click.argument("env", required=False)
@click.option(
    "--pods",
    type=click.IntRange(min=1),
    default=setting_default("pods"),
    show_default=True,
    help="Pods in the training pool.",
)
@click.option("--ray-address", envvar="RAY_ADDRESS", help="Join this Ray cluster (default: a local, loopback-only Ray).")
@click.option("--hours", type=click.FloatRange(min=0, min_open=True), help="Wall-time budget.")
@click.option("--total-steps", type=click.IntRange(min=1), help="Env-step budget over all pods.")
@click.option(
    "--slice-steps",
    type=click.IntRange(min=1),
    help="Longest slice: steps a pod trains before it is evaluated (default: a quarter of a pod's share).",
)
@click.option(
    "--first-slice-steps",
    type=click.IntRange(min=1),
    help="First generation's slice (default: 1/16 of --slice-steps, at least four updates).",
)
@click.option(
    "--slice-growth",
    type=click.FloatRange(min=1),
    default=setting_default("slice_growth"),
    show_default=True,
    help="Each generation's slice is this many times the previous one (1: fixed slices).",
)
@click.option(
    "--truncate-below",
    type=click.FloatRange(min=0),
    default=setting_default("truncate_below"),
    show_default=True,
    help="Stop a pod mid-slice when its training return is below best - F*|best| of the board (0: never).",
)
@click.option(
    "--halving/--no-halving",
    default=setting_default("halving"),
    show_default=True,
    help="Successive halving: generation g trains at most pods/growth**g branches at once (fewer steps "
    "spent on branches that lose, slots left idle).",
)
@click.option("--eval-episodes", type=click.IntRange(min=1), default=setting_default("eval_episodes"), show_default=True)
@click.option(
    "--capacity",
    type=click.IntRange(min=1),
    default=setting_default("capacity"),
    show_default=True,
    help="Leaderboard size K.",
)
@click.option(
    "--cpus-per-pod",
    type=click.FloatRange(min=0, min_open=True),
    default=setting_default("cpus_per_pod"),
    show_default=True,
    help="Ray CPUs each pod reserves; the pool shrinks to what the cluster has.",
)
@click.option(
    "--score-group",
    metavar="GROUP",
    help="Env with agent groups: score a checkpoint by this group's mean return (default: its first learning group).",
)
@click.option(
    "--score-opponent",
    type=click.Choice(list(SCORE_OPPONENTS)),
    default=setting_default("score_opponent"),
    show_default=True,
    help="Who plays the other groups when a checkpoint is scored: its own policies, or uniform random "
    "actions (comparable across checkpoints; turns --truncate-below off).",
)
@click.option("--seed", type=int, default=setting_default("seed"), show_default=True)
@click.option("--set", "overrides", multiple=True, metavar="SECTION.KEY=VALUE", help="Override the pods' config.")
@click.option("--run-dir", type=click.Path(file_okay=False), help="Default: runs/<env>-tournament-<timestamp>.")
@click.option("--resume", is_flag=True, help="Continue the tournament in --run-dir from its leaderboard.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@plugin_option
def tournament(ray_address, overrides, run_dir, resume, as_json, **flags) -> None:
    """Population training of ENV: pods on Ray, a leaderboard, a generator and an updater.

    --resume continues the tournament in --run-dir with the settings it started with (its env's plugin too);
    a --total-steps or --hours given with it is the tournament's new budget.
    """
    from pufferbox.tournament.orchestrator import run_tournament
    from pufferbox.tournament.settings import TournamentError
    from pufferbox.train.runner import default_run_dir

    settings = TournamentSettings(**flags)  # every option but the run's own: the settings, passed whole
    if resume and not run_dir:
        raise UserError("--resume needs --run-dir (the tournament's run directory)")
    if not resume and not settings.env:
        raise UserError("name an env: pufferbox tournament ENV --pods N --total-steps T")
    try:
        if not resume:
            settings.check()  # before Ray is reached
    except TournamentError as exc:
        raise UserError(str(exc)) from None
    if ray_address:
        from pufferbox.vector.ray import check_reachable

        check_reachable(ray_address)  # fail in seconds, before the leaderboard is created
    run_dir = run_dir or str(default_run_dir(f"{settings.env}-tournament"))

    def log(event: dict) -> None:
        if not as_json:
            fields = " ".join(f"{k}={v}" for k, v in event.items() if k not in ("event", "hyperparams", "perturbed"))
            click.echo(f"[{event['event']}] {fields}", err=False)
            sys.stdout.flush()

    try:
        result = run_tournament(
            settings, run_dir=run_dir, overrides=list(overrides), ray_address=ray_address, resume=resume, on_event=log
        )
    except TournamentError as exc:
        raise UserError(str(exc)) from None
    if as_json:
        click.echo(json.dumps(result.summary()))
    else:
        click.echo(
            f"tournament {'stopped' if result.stop_signal else 'finished'}: best score {result.best_score}, "
            f"{result.total_steps} steps, overhead {result.overhead:.1%}; leaderboard: pufferbox leaderboard {run_dir}"
            + (f"; continue with `pufferbox tournament --resume --run-dir {run_dir}`" if result.stop_signal else "")
        )
    if result.stop_signal == signal.SIGTERM:
        sys.exit(128 + signal.SIGTERM)  # as `train` does: supervisors expect 143 after a TERM


@cli.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the entries as JSON.")
@click.option("--all", "show_all", is_flag=True, help="Include entries that fell off the board.")
def leaderboard(run_dir: str, as_json: bool, show_all: bool) -> None:
    """Show the leaderboard of the tournament in RUN_DIR, best first."""
    from pufferbox.tournament.leaderboard import Leaderboard

    board = Leaderboard.open_read_only(run_dir)  # never writes: works on read-only storage
    entries = board.entries(on_board_only=not show_all)
    if as_json:
        rows = [dict(e.__dict__, rank=i) for i, e in enumerate(entries, start=1)]
        click.echo(json.dumps(rows, indent=2))
        return
    table = Table("rank", "entry", "pod", "score", "± std", "steps", "gen", "parent", "hyperparameters")
    for rank, e in enumerate(entries, start=1):
        hp = ", ".join(
            f"{k.split('.')[-1]}={v:.3g}" if isinstance(v, float) else f"{k.split('.')[-1]}={v}"
            for k, v in e.hyperparams.items()
        )
        table.add_row(
            str(rank),
            str(e.id),
            str(e.pod),
            f"{e.score:.2f}",
            f"{e.score_std:.2f}",
            str(e.steps),
            str(e.generation),
            "-" if e.parent is None else str(e.parent),
            hp,
        )
    Console().print(table)
