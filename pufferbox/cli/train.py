"""``pufferbox train``, ``eval`` and ``plot``: thin wrappers over :mod:`pufferbox.train`."""

from __future__ import annotations

import json
from pathlib import Path

import click

from pufferbox.cli import cli


@cli.command()
@click.argument("env", required=False)
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="TOML file with [train]/[vec]/[policy]/[env].")
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
@click.option("--run-dir", type=click.Path(file_okay=False), help="Where the run goes (default runs/ENV-TIMESTAMP).")
@click.option("--resume", type=click.Path(file_okay=False, exists=True), help="Continue the run in this directory.")
@click.option("--no-tensorboard", is_flag=True, help="Skip TensorBoard event files.")
@click.option("--check-obs", is_flag=True, default=None,
              help="Check every observation of emulated envs against its space's bounds and for NaN/inf (slow).")
def train(env, config_file, overrides, backend, num_envs, num_workers, batch_size, main_envs, total_steps, seed,
          device, compile_, run_dir, resume, no_tensorboard, check_obs):
    """Train PPO on ENV; the run directory gets config.toml, metrics.jsonl, tb/ and checkpoints/.

    Configuration layers: built-in defaults < plugin defaults < --config < --set < flags.
    """
    from pufferbox.train.config import ConfigError
    from pufferbox.train.runner import default_run_dir, run

    if env is None and resume is None:
        raise ConfigError("train: name an env (see `pufferbox envs`) or pass --resume RUN_DIR")
    flags = {"vec.backend": backend, "vec.num_envs": num_envs, "vec.num_workers": num_workers,
             "vec.batch_size": batch_size, "vec.main_envs": main_envs, "train.total_steps": total_steps,
             "train.seed": seed, "train.device": device, "train.compile": compile_, "vec.check_obs": check_obs}
    if resume is None:
        from pufferbox.registry import get_registry

        run_dir = Path(run_dir) if run_dir else default_run_dir(get_registry().get(env).name)
    result = run(env, config_file=config_file, overrides=list(overrides), flags=flags,
                 run_dir=None if resume else run_dir, resume=resume, tensorboard=not no_tensorboard)
    solved = (f"solved (recent mean >= {result.solved_return:g}) at step {result.solved_at_step:,} "
              f"after {result.solved_at_time:.1f} s" if result.solved_at_step is not None else
              "not solved" if result.solved_return is not None else "")
    recent = "n/a" if result.episode_return is None else f"{result.episode_return:.2f}"
    click.echo(f"{'stopped' if result.interrupted else 'done'}: {result.env} {result.global_step:,} steps in "
               f"{result.wall_time:.1f} s ({result.sps:,.0f} steps/s), recent return {recent}"
               + (f"; {solved}" if solved else ""))
    click.echo(f"run directory: {result.run_dir}")
    click.echo(f"checkpoint: {result.checkpoint}")


@cli.command("eval")
@click.argument("env", required=False)
@click.option("--checkpoint", required=True, type=click.Path(exists=True), help="ckpt-*.pt file or a run directory.")
@click.option("--episodes", type=int, default=10, show_default=True)
@click.option("--render", is_flag=True, help="Print ANSI frames (text envs).")
@click.option("--video", type=click.Path(dir_okay=False), help="Save rgb_array frames as .gif or .mp4.")
@click.option("--deterministic", is_flag=True, help="Take the most likely action instead of sampling.")
@click.option("--seed", type=int, default=12345, show_default=True)
def eval_(env, checkpoint, episodes, render, video, deterministic, seed):
    """Evaluate a checkpoint: prints mean/std return as JSON."""
    import sys

    from pufferbox.train.evaluate import evaluate

    result = evaluate(env, checkpoint, episodes=episodes, render=render, video=video,
                      deterministic=deterministic, seed=seed, stream=sys.stderr if render else None)
    click.echo(json.dumps(result))


@cli.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(file_okay=False, exists=True))
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="PNG path (default: RUN_DIR/curves.png of the first run).")
def plot(run_dirs, output):
    """PNG learning curves (return vs steps and vs wall time) of one or more runs, overlaid."""
    from pufferbox.train.plot import plot_runs

    output = output or str(Path(run_dirs[0]) / "curves.png")
    click.echo(plot_runs(list(run_dirs), output))
