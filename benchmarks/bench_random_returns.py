"""The floor of a return check: the mean return of uniformly random actions, in the trainer's unit.

"Both trainers are still at the random policy's score" needs that score measured. The env is built
as ``pufferbox train ENV`` builds it (the plugin's training defaults: its ``[env]`` table, such as
procgen's ``distribution_mode``, its env count and native block), every step draws fresh actions
from the action space, and the returns of the episodes that ended are averaged, with the plugin's
episode metrics (e.g. Atari's raw game score) beside them. One JSON line per seed; steps, not
seconds, so the machine's load does not matter.

    .venv/bin/python benchmarks/bench_random_returns.py procgen/bigfish --steps 300000 --seeds 1 2 3
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence

import numpy as np

from pufferbox.episodes import Episodes
from pufferbox.registry import UnknownEnvError, get_registry
from pufferbox.train.collector import make_vec_env
from pufferbox.train.config import ConfigError, VecConfig, resolve_config, typed


def random_returns(env: str, steps: int, seed: int, overrides: Sequence[str] = ()) -> dict:
    """Mean return (and episode metrics) of uniformly random actions over ``steps`` agent steps of ``env``."""
    spec = get_registry().get(env)
    config = resolve_config(spec.training.config, overrides=list(overrides))
    vec = typed(VecConfig, config["vec"])
    with make_vec_env(spec, vec, config.get("env", {}), seed=seed) as venv:
        venv.action_space.seed(seed)
        venv.async_reset(seed=seed)
        venv.recv()
        ended, batches = [], max(1, steps // venv.batch_size)
        for _ in range(batches):
            venv.send(np.asarray(venv.action_space.sample()))
            episodes = venv.recv()[4]
            if len(episodes):
                ended.append(episodes)
        done = Episodes.concat(ended) if ended else Episodes.empty()
        taken = batches * venv.batch_size
    n = len(done)
    return {
        "env": spec.name,
        "seed": seed,
        "steps": taken,
        "num_envs": vec.num_envs,
        "episodes": n,
        "mean_return": float(np.mean(done.returns)) if n else None,
        "sem_return": float(np.std(done.returns, ddof=1) / math.sqrt(n)) if n > 1 else None,
        "mean_length": float(np.mean(done.lengths)) if n else None,
        # a metric some episodes lack is NaN for them (e.g. Atari's raw score on a life that did not end the game)
        "metrics": {name: mean_of_reported(values) for name, values in done.metrics.items()},
    }


def mean_of_reported(values: np.ndarray) -> float | None:
    reported = values[~np.isnan(values)]
    return float(reported.mean()) if reported.size else None


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("env")
    parser.add_argument("--steps", type=int, default=100_000, help="agent steps per seed (default 100000)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    if args.steps < 1:
        raise SystemExit(f"Error: --steps must be at least 1, got {args.steps}")
    for seed in args.seeds:
        try:
            row = random_returns(args.env, args.steps, seed, args.overrides)
        except (UnknownEnvError, ConfigError) as exc:
            raise SystemExit(f"Error: {exc.args[0] if exc.args else exc}") from None
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
