"""``pufferbox train``, ``eval`` and ``plot``: thin wrappers over :mod:`pufferbox.train`."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any

import click

from pufferbox.cli import UserError, cli, plugin_option
from pufferbox.cli.wandb_options import tracker_factory, wandb_options
from pufferbox.registry import get_registry


@cli.command()
@click.argument("env", required=False)
@click.option(
    "--config", "config_file", type=click.Path(dir_okay=False), help="TOML file with [train]/[vec]/[policy]/[env]."
)
@click.option("--set", "overrides", multiple=True, metavar="SECTION.KEY=VALUE", help="Override one setting (repeatable).")
@click.option("--backend", help="Vector backend: serial, multiprocessing, ray, cuda.")
@click.option("--num-envs", type=int, help="Number of envs.")
@click.option("--num-workers", type=int, help="Worker processes (pool backends).")
@click.option("--batch-size", type=int, help="Envs per batch (async pool when < num-envs).")
@click.option("--main-envs", type=int, help="Envs the main process steps itself (multiprocessing).")
@click.option("--total-steps", type=int, help="Stop after this many agent steps.")
@click.option("--seed", type=int, help="Random seed.")
@click.option("--device", help="cpu, cuda, cuda:N or auto.")
@click.option("--compile", "compile_", is_flag=True, default=None, help="torch.compile the policy.")
@click.option("--learners", type=int, help="Data-parallel learner processes, each on num-envs/N envs (train.learners).")
@click.option(
    "--profile",
    default="auto",
    show_default=True,
    metavar="gpu|cpu|auto",
    help="The env's settings: gpu (its GPU profile: a GPU-sized batch that learns), cpu (the defaults "
    "tuned on 2 cores) or auto (gpu when the run trains on a CUDA device).",
)
@click.option(
    "--run-dir",
    type=click.Path(file_okay=False),
    help="Where the run goes: a new or empty directory (default: a fresh runs/ENV-TIMESTAMP).",
)
@click.option("--resume", type=click.Path(file_okay=False, exists=True), help="Continue the run in this directory.")
@click.option("--no-tensorboard", is_flag=True, help="Skip TensorBoard event files.")
@click.option(
    "--ray-address",
    help="--backend ray: join this Ray cluster (vec.ray_address; default: $RAY_ADDRESS, else a local Ray; "
    "a resumed run takes this command's); with --learners N: learners 1..N-1 are actors there (train.learners_on=ray).",
)
@click.option(
    "--check-obs",
    is_flag=True,
    default=None,
    help="Check every observation of emulated envs against its space's bounds and for NaN/inf (slow).",
)
@plugin_option
@wandb_options
def train(
    env,
    config_file,
    overrides,
    backend,
    num_envs,
    num_workers,
    batch_size,
    main_envs,
    total_steps,
    seed,
    device,
    compile_,
    learners,
    profile,
    run_dir,
    resume,
    no_tensorboard,
    ray_address,
    check_obs,
    plugin,
    **tracking,
):
    """Train PPO on ENV; the run directory gets config.toml, metrics.jsonl, tb/ and checkpoints/.

    Configuration layers: built-in defaults < plugin defaults < the env's GPU profile (--profile) < the
    scaling plan < --config < --set < flags.
    A --run-dir that already holds a run is refused (continue it with --resume), and so is a
    non-empty folder that is no run. Ctrl-C or SIGTERM saves a checkpoint after the current
    update; exit status 0 after Ctrl-C, 143 after SIGTERM.
    """
    from pufferbox.train.config import ConfigError
    from pufferbox.train.runner import default_run_dir, run
    from pufferbox.vector.base import WorkerError

    if env is None and resume is None:
        raise ConfigError("train: name an env (see `pufferbox envs`) or pass --resume RUN_DIR")
    if ray_address:
        use_ray_address(ray_address, backend, learners)
    if plugin and env:
        env = get_registry().get(env, plugin=plugin).name  # its own name: an alias may be another plugin's
    flags = {
        "vec.backend": backend,
        "vec.num_envs": num_envs,
        "vec.num_workers": num_workers,
        "vec.batch_size": batch_size,
        "vec.main_envs": main_envs,
        "train.total_steps": total_steps,
        "train.seed": seed,
        "train.device": device,
        "train.compile": compile_,
        "train.learners": learners,
        "train.learners_on": "ray" if ray_address and backend != "ray" else None,
        "vec.check_obs": check_obs,
        "vec.ray_address": ray_address or None,
    }
    if resume is None and not run_dir:
        run_dir = default_run_dir(get_registry().get(env).name)  # always a new directory, never refused
    try:
        result = run(
            env,
            config_file=config_file,
            overrides=list(overrides),
            flags=flags,
            run_dir=None if resume else run_dir,
            resume=resume,
            tensorboard=not no_tensorboard,
            callbacks=tracker_factory(tracking)(str(resume or run_dir)),
            profile=profile,
        )
    except WorkerError as exc:
        raise UserError(worker_error_line(exc, Path(resume or run_dir))) from None
    click.echo(summary_line(result))
    click.echo(f"run directory: {result.run_dir}")
    click.echo(f"checkpoint: {result.checkpoint}")
    if result.stop_signal == signal.SIGTERM:
        sys.exit(128 + signal.SIGTERM)  # what supervisors (Slurm, Kubernetes) expect after a TERM


def worker_error_line(exc: Exception, run_dir: Path) -> str:
    """One line for an env or worker that broke mid-run; the full message (the env's traceback)
    goes to ``RUN_DIR/worker-error.txt``, and the line says how to continue: ``--resume`` where the run
    saved a checkpoint, a new run where it saved none (or its directory is gone).

    Example:
        >>> worker_error_line(RuntimeError("cartpole: worker 0 died. Worker traceback:\\nX"), Path("/nonexistent"))
        'cartpole: worker 0 died; no checkpoint was saved: start a new run once the env is fixed'
    """
    from pufferbox.train.checkpoint import latest_checkpoint

    first = str(exc).splitlines()[0].removesuffix(" Traceback:").removesuffix(" Worker traceback:").rstrip(" .;:")
    saved = ""
    if run_dir.is_dir():
        try:
            (run_dir / "worker-error.txt").write_text(str(exc) + "\n")
            saved = f" (details: {run_dir / 'worker-error.txt'})"
        except OSError:
            pass
    if latest_checkpoint(run_dir / "checkpoints") is None:
        return f"{first}{saved}; no checkpoint was saved: start a new run once the env is fixed"
    return f"{first}{saved}; continue with `pufferbox train --resume {run_dir}`"


@cli.command("eval")
@click.argument("env", required=False)
@click.option(
    "--checkpoint",
    type=click.Path(exists=True),
    help="ckpt-*.pt file or a run directory (default: the newest checkpoint of ENV under --runs).",
)
@click.option(
    "--runs",
    "runs_root",
    default="runs",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Where to look for ENV's runs when --checkpoint is not given.",
)
@click.option("--episodes", type=click.IntRange(1), default=10, show_default=True)
@click.option("--render", is_flag=True, help="Print ANSI frames (text envs).")
@click.option("--video", type=click.Path(dir_okay=False), help="Save the first episode as .gif or .mp4 (headless).")
@click.option("--deterministic", is_flag=True, help="Take the most likely action instead of sampling.")
@click.option("--seed", type=int, default=12345, show_default=True)
@click.option(
    "--set",
    "env_overrides",
    multiple=True,
    metavar="env.KEY=VALUE",
    help="Play the game with this setting instead of the run's (repeatable): env.bot_share=100.",
)
@click.option(
    "--encoder",
    metavar="MODULE:ATTR",
    help="Trust this encoder, named by the checkpoint but registered "
    "by no installed plugin (a checkpoint alone never makes pufferbox import code).",
)
@click.option(
    "--opponent",
    metavar="CKPT|random",
    help="Multi-agent (grouped) runs: play a match, --checkpoint on "
    "--side, this checkpoint (or uniform random actions) on the other groups; prints win/draw/loss.",
)
@click.option("--side", metavar="GROUP", help="With --opponent: the group --checkpoint plays (default: the first).")
@click.option(
    "--league",
    "league_dir",
    type=click.Path(file_okay=False),
    help="With --opponent: record the match in DIR/league.sqlite (ratings).",
)
@plugin_option
def eval_(
    env,
    checkpoint,
    runs_root,
    episodes,
    render,
    video,
    deterministic,
    seed,
    env_overrides,
    encoder,
    opponent,
    side,
    league_dir,
    plugin,
):
    """Evaluate a checkpoint: prints mean/std return as JSON.

    Without --checkpoint, takes the newest checkpoint of ENV's runs under ./runs
    (`pufferbox eval nethack --render` right after `pufferbox train nethack`).
    """
    import os
    import sys

    from pufferbox.train.evaluate import evaluate, parse_env_overrides

    env_kwargs = parse_env_overrides(env_overrides)  # before any checkpoint loads
    if video is not None and Path(video).suffix.lower() not in (".gif", ".mp4"):
        raise UserError(f"{video}: video must end in .gif or .mp4")  # before any episode runs
    if video is not None:
        try:
            Path(video).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file where a folder should be, read-only storage, no permission
            raise UserError(f"{video}: cannot write the video there ({exc.strerror}); pass a writable --video") from None
    if plugin and env:
        env = get_registry().get(env, plugin=plugin).name
    if checkpoint is None:
        if env is None:
            raise UserError("eval: name an env (newest run under runs/) or pass --checkpoint PATH")
        checkpoint = newest_checkpoint(get_registry().get(env).name, Path(runs_root))
        click.echo(f"checkpoint: {checkpoint}", err=True)
    if opponent is not None and env_kwargs:
        raise UserError("--set plays a single checkpoint's episodes; a match (--opponent) keeps the run's settings")
    if opponent is not None:
        return print_match(env, checkpoint, opponent, episodes, side, seed, deterministic, league_dir)
    if side is not None or league_dir is not None:
        raise UserError("--side and --league go with --opponent CKPT|random")
    if video is not None:
        # rgb_array frames need no window; without this, pygame-drawn envs ask SDL for a display
        # and print "XDG_RUNTIME_DIR is invalid" on headless machines and in containers.
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    try:
        result = evaluate(
            env,
            checkpoint,
            episodes=episodes,
            render=render,
            video=video,
            deterministic=deterministic,
            seed=seed,
            stream=sys.stderr if render else None,
            encoder=encoder,
            env_overrides=env_kwargs,
        )
    except OSError as exc:  # the video could not be written (a full disk, read-only storage)
        if video is None or not exc.filename:
            raise
        raise UserError(f"{exc.filename}: cannot write the video ({exc.strerror}); pass a writable --video") from None
    click.echo(json.dumps(result))


def print_match(env, checkpoint, opponent, episodes, side, seed, deterministic, league_dir) -> None:
    """``eval --opponent``: one JSON line (counts, win rate, its 95% Wilson interval) and a summary on stderr."""
    from pufferbox.train.league import RANDOM, Ratings, grouped_state, play_match

    if opponent != RANDOM and not Path(opponent).exists():
        raise UserError(f"--opponent {opponent}: no such checkpoint; pass a ckpt-*.pt, a run directory or 'random'")
    trained = grouped_state(checkpoint)["env"]
    if env is not None and get_registry().get(env).name != trained:
        raise UserError(f"{checkpoint}: checkpoint was trained on {trained!r}, not {env!r}")
    result = play_match(checkpoint, opponent, episodes=episodes, side=side, seed=seed, deterministic=deterministic)
    summary = result.summary()
    if league_dir is not None:
        Ratings(Path(league_dir) / "league.sqlite").record(result)
    low, high = summary["win_rate_ci95"]
    click.echo(
        f"{result.side}: {result.wins} wins, {result.draws} draws, {result.losses} losses in {result.games} "
        f"games; win rate {summary['win_rate']:.3f} (95% CI {low:.3f}-{high:.3f})",
        err=True,
    )
    click.echo(json.dumps(summary))


@cli.command()
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True))
@click.option(
    "--play",
    "episodes",
    type=click.IntRange(0),
    default=0,
    show_default=True,
    help="First play every pair of the run's checkpoints (and random) this many episodes per side.",
)
@click.option("--seed", type=int, default=12345, show_default=True)
def league(run_dir, episodes, seed):
    """Ratings of a multi-agent run's checkpoints per group (RUN_DIR/league.sqlite), best first."""
    from rich.console import Console
    from rich.table import Table

    from pufferbox.train.league import Ratings, round_robin

    if episodes:
        round_robin(run_dir, episodes=episodes, seed=seed)
    path = Path(run_dir) / "league.sqlite"
    if not path.is_file():
        raise UserError(
            f"{run_dir}: no league.sqlite yet; rate the checkpoints with `pufferbox league {run_dir} "
            "--play 20` or `pufferbox eval --checkpoint A --opponent B --league DIR`"
        )
    table = Table(title=f"league: {run_dir} (each checkpoint rated per group it played)")
    for column in ("group", "rank", "checkpoint", "mu - 3 sigma", "mu", "sigma", "games", "W", "D", "L"):
        table.add_column(column, justify="left" if column in ("group", "checkpoint") else "right")
    rank, group = 0, None
    for row in Ratings(path).table():
        rank, group = (rank + 1 if row["group"] == group else 1), row["group"]
        table.add_row(
            row["group"],
            str(rank),
            row["name"],
            f"{row['ordinal']:.2f}",
            f"{row['mu']:.2f}",
            f"{row['sigma']:.2f}",
            str(row["games"]),
            str(row["wins"]),
            str(row["draws"]),
            str(row["losses"]),
        )
    Console(width=200).print(table)


def newest_checkpoint(env: str, root: Path) -> Path:
    """The newest ``ckpt-*.pt`` among the run directories under ``root`` that trained ``env``.

    A run directory is one with ``config.toml`` naming the env in ``[run] env`` (``runs/NAME/`` or,
    for names with a slash such as ``procgen/bigfish``, ``runs/procgen/bigfish-.../``).
    """
    import tomllib

    from pufferbox.train.checkpoint import latest_checkpoint

    found = []
    for config in [*root.glob("*/config.toml"), *root.glob("*/*/config.toml")]:
        try:
            trained = tomllib.loads(config.read_text()).get("run", {}).get("env")
        except (OSError, tomllib.TOMLDecodeError):
            continue
        ckpt = latest_checkpoint(config.parent / "checkpoints") if trained == env else None
        if ckpt is not None:
            found.append((Path(ckpt).stat().st_mtime, str(ckpt)))
    if not found:
        raise UserError(
            f"eval: no checkpoint of {env} under {root}/; train one (`pufferbox train {env}`) or pass --checkpoint PATH"
        )
    return Path(max(found)[1])


@cli.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(file_okay=False, exists=True))
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False), help="PNG path (default: RUN_DIR/curves.png of the first run)."
)
def plot(run_dirs, output):
    """PNG learning curves (return vs steps and vs wall time) of one or more runs, overlaid."""
    from pufferbox.tournament.curves import read_curves
    from pufferbox.train.plot import plot_runs

    output = output or str(Path(run_dirs[0]) / "curves.png")
    click.echo(plot_runs(list(run_dirs), output, read=read_curves))


def use_ray_address(ray_address: str, backend: str | None, learners: int | None = None) -> None:
    """Check, in seconds, that ``ray_address`` answers and that the run uses Ray (the ray backend, or learners)."""
    from pufferbox.train.config import ConfigError
    from pufferbox.vector.ray import check_reachable

    if backend not in (None, "ray") and (learners or 1) == 1:
        raise ConfigError(f"--ray-address applies to --backend ray, not {backend!r}; drop one of them (or add --learners N)")
    check_reachable(ray_address)  # fail in seconds, before a run directory is made


def summary_line(result: Any) -> str:
    """``done: cartpole 129,024 steps in 2.6 s (49,000 steps/s), recent return 480.00; solved (...)``."""
    solved = (
        f"solved (recent mean >= {result.solved_return:g}) at step {result.solved_at_step:,} "
        f"after {result.solved_at_time:.1f} s"
        if result.solved_at_step is not None
        else "not solved"
        if result.solved_return is not None
        else ""
    )
    recent = "n/a" if result.episode_return is None else f"{result.episode_return:.2f}"
    return (
        f"{'stopped' if result.interrupted else 'done'}: {result.env} {result.global_step:,} steps in "
        f"{result.wall_time:.1f} s ({result.sps:,.0f} steps/s), recent return {recent}" + (f"; {solved}" if solved else "")
    )
