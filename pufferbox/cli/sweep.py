"""``pufferbox sweep``: hyperparameter sweeps on Optuna (a thin wrapper over :mod:`pufferbox.sweep`)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import click

from pufferbox.cli import cli, plugin_option
from pufferbox.cli.wandb_options import tracker_factory, wandb_options


@cli.command()
@click.argument("env", required=False)
@click.option("--trials", type=int, default=20, show_default=True, help="Finished trials to reach (re-run to continue).")
@click.option("--run-dir", type=click.Path(file_okay=False), help="Sweep directory (default runs/ENV-sweep-TIMESTAMP).")
@click.option("--parallel", type=int, default=1, show_default=True, help="Trials at once (worker processes).")
@click.option("--ray-address", help="Run trials as Ray tasks on this cluster ('local' starts one here).")
@click.option("--set", "overrides", multiple=True, metavar="SECTION.KEY=VALUE", help="Fix a setting for every trial.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="TOML with settings and [sweep.space].")
@click.option("--objective", help="steps (default with a solved_return), return, return,steps or return,wall_time.")
@click.option("--storage", help="Optuna RDB URL shared by many machines (default: SQLite in the sweep directory).")
@click.option("--study-name", help="Study name in --storage (default: the sweep directory's name).")
@click.option("--pruner", default="median", show_default=True, help="median, hyperband or none.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the sampler (trials keep train.seed).")
@click.option(
    "--show", "show_dir", type=click.Path(file_okay=False, exists=True), help="Report the sweep in this directory."
)
@plugin_option
@wandb_options
def sweep(
    env,
    trials,
    run_dir,
    parallel,
    ray_address,
    overrides,
    config_file,
    objective,
    storage,
    study_name,
    pruner,
    seed,
    show_dir,
    plugin,
    **tracking,
):
    """Tune PPO on ENV with Optuna: each trial is a training run in RUN_DIR/trials/<n>.

    Prints the best trials (the Pareto front with two objectives) and writes RUN_DIR/sweep.png.
    """
    from pufferbox.sweep import show
    from pufferbox.sweep import sweep as run_sweep
    from pufferbox.sweep.study import SweepError

    try:
        import optuna  # noqa: F401
    except ImportError:
        raise SweepError("sweep needs optuna, which is not installed; pip install 'pufferbox[sweep]'") from None

    if show_dir is not None:
        show(show_dir)
        return
    if env is None:
        raise SweepError("sweep: name an env (see `pufferbox envs`) or pass --show RUN_DIR")
    if run_dir is None:
        from pufferbox.registry import get_registry
        from pufferbox.train.runner import default_run_dir

        run_dir = default_run_dir(f"{get_registry().get(env, plugin=plugin).name}-sweep")
    result = run_sweep(
        env,
        trials,
        run_dir,
        parallel=parallel,
        ray_address=ray_address,
        overrides=list(overrides),
        config_file=config_file,
        objective=objective,
        storage=storage,
        study_name=study_name,
        pruner=pruner,
        seed=seed,
        plugin=plugin,
        log=click.echo,
        callbacks=tracker_factory(tracking, default_group=study_name or Path(run_dir).resolve().name),
    )
    show(run_dir)
    if result.stop_signal == signal.SIGTERM:
        sys.exit(128 + signal.SIGTERM)  # as `train` does: supervisors expect 143 after a TERM
