"""Multi-agent groups: arms-race curves, and self-play against random and frozen-early opponents.

1. Trains ENV (default ``tag``, the CPU reference; or a team env such as ``mpe/simple_tag``) with
   one policy per group, a checkpoint every ``--checkpoint-every`` updates, and plots each
   group's mean episode return per update against steps (``--plot``). For Tag (tag_penalty -1)
   the runners' survival is ``1 + runner return`` and the taggers' tags per episode their return.
2. Plays the final checkpoint on each side (group) against ``random`` (uniform actions) and
   against the first checkpoint (a frozen early self) for ``--episodes`` episodes each, and
   reports win/draw/loss, the win rate's 95% Wilson interval, and the mean score margin
   (win 1, draw 0.5, loss 0; minus 0.5) with a 95% bootstrap interval: the margin is
   significant when that interval excludes 0. Win = the side's group has the higher episode
   return (mean over its agents); ties are draws.

    .venv/bin/python benchmarks/bench_selfplay.py --env tag --steps 2000000 --num-envs 16 --episodes 200
    .venv/bin/python benchmarks/bench_selfplay.py --env mpe/simple_tag --steps 2000000
    .venv/bin/python benchmarks/bench_selfplay.py --smoke          # a few seconds: checks the script runs

``--write NAME`` also writes the curves at ten points of the run as benchmarks/results/NAME.json (RESULTS.md
shows ``selfplay_tag`` and ``selfplay_simple_tag``) and re-renders it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from pufferbox.registry import get_registry
from pufferbox.train.checkpoint import list_checkpoints
from pufferbox.train.config import resolve_config
from pufferbox.train.league import RANDOM, play_match
from pufferbox.train.trainer import Trainer


def train(env: str, steps: int, num_envs: int, every: int, seed: int, run_dir: Path) -> list[dict]:
    spec = get_registry().get(env)
    config = resolve_config(
        spec.training.config,
        overrides=[
            f"train.total_steps={steps}",
            f"vec.num_envs={num_envs}",
            f"train.checkpoint_interval={every}",
            f"train.seed={seed}",
            "train.keep_checkpoints=1000",
        ],
    )
    trainer = Trainer(spec, config, run_dir=run_dir)
    try:
        if trainer.league is None:
            raise SystemExit(f"{env}: declares no agent groups; pass --set-like [groups] in a config instead")
        trainer.save_checkpoint()  # update 0: the untrained policies, the earliest frozen self
        trainer.train()
        return trainer.history
    finally:
        trainer.close()


def margin_ci(outcomes: list[float], seed: int, draws: int = 2000) -> tuple[float, float, float]:
    """Mean score minus 0.5 and its 95% bootstrap interval."""
    x = np.asarray(outcomes) - 0.5
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), (draws, len(x)))].mean(1)
    return float(x.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def difference_ci(a: list[float], b: list[float], seed: int, draws: int = 2000) -> tuple[float, float, float]:
    """mean(a) - mean(b) of two independent samples and its 95% bootstrap interval."""
    x, y, rng = np.asarray(a), np.asarray(b), np.random.default_rng(seed)
    diffs = x[rng.integers(0, len(x), (draws, len(x)))].mean(1) - y[rng.integers(0, len(y), (draws, len(y)))].mean(1)
    return float(x.mean() - y.mean()), float(np.quantile(diffs, 0.025)), float(np.quantile(diffs, 0.975))


def matches(run_dir: Path, episodes: int, seed: int) -> tuple[list[dict], list[dict]]:
    """Win/draw/loss of the final checkpoint on each side against random and the earliest checkpoint, and
    (two-group envs) each side's return margin: the trained side vs a random or early one on that side,
    both against the trained other side. The margin stays informative where the env's win rule is
    lopsided (one tagger can rarely tag every runner, so Tag's runners win nearly every game)."""
    ckpts = list_checkpoints(run_dir / "checkpoints")
    final, early = ckpts[-1], ckpts[0]
    import torch

    sides = list(torch.load(final, weights_only=True)["groups"])
    out, played = [], {}
    for side in sides:
        for opponent in (RANDOM, early):
            result = play_match(final, opponent, episodes=episodes, side=side, seed=seed)
            played[(side, "random" if opponent == RANDOM else "early")] = result
            mean, low, high = margin_ci(result.outcomes, seed)
            out.append(
                result.summary()
                | {
                    "opponent": "random" if opponent == RANDOM else f"early ({early.name})",
                    "margin": round(mean, 4),
                    "margin_ci95": [round(low, 4), round(high, 4)],
                    "significant": low > 0 or high < 0,
                }
            )
    margins = []
    if len(sides) == 2:
        both = play_match(final, final, episodes=episodes, side=sides[0], seed=seed)
        for side, other in (sides, sides[::-1]):
            trained = [r[side] for r in both.returns]
            for baseline in ("random", "early"):
                # the final policy plays `other`, the baseline plays `side`
                base = [r[side] for r in played[(other, baseline)].returns]
                mean, low, high = difference_ci(trained, base, seed)
                margins.append(
                    {
                        "side": side,
                        "baseline": baseline,
                        "trained_return": round(float(np.mean(trained)), 4),
                        "baseline_return": round(float(np.mean(base)), 4),
                        "return_margin": round(mean, 4),
                        "return_margin_ci95": [round(low, 4), round(high, 4)],
                        "significant": low > 0 or high < 0,
                    }
                )
    return out, margins


def plot(history: list[dict], groups: list[str], path: Path, env: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for group in groups:
        points = [
            (m["global_step"], m[f"{group}/episode_return"]) for m in history if m.get(f"{group}/episode_return") is not None
        ]
        if points:
            ax.plot(*zip(*points), label=f"{group} return")
    ax.set_xlabel("agent steps")
    ax.set_ylabel("mean episode return (per agent)")
    ax.set_title(f"{env}: groups trained against each other")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="tag")
    parser.add_argument("--steps", type=int, default=2_000_000)
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--checkpoint-every", type=int, default=50)
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--run-dir", type=Path, help="default: a fresh temporary directory")
    parser.add_argument("--plot", type=Path, help="PNG of the per-group return curves")
    parser.add_argument("--smoke", action="store_true", help="tiny run: checks the script works, no numbers")
    parser.add_argument("--write", metavar="NAME", help="write the curves' table as benchmarks/results/NAME.json")
    args = parser.parse_args()
    if args.smoke:
        args.steps, args.num_envs, args.checkpoint_every, args.episodes = 4000, 2, 2, 4
    run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix="selfplay-")) / "run"
    history = train(args.env, args.steps, args.num_envs, args.checkpoint_every, args.seed, run_dir)
    groups = sorted({k.split("/")[0] for m in history for k in m if k.endswith("/episode_return")})
    if args.plot:
        plot(history, groups, args.plot, args.env)
    played, margins = matches(run_dir, args.episodes, args.seed)
    curves = {
        g: [(m["global_step"], m[f"{g}/episode_return"]) for m in history if m.get(f"{g}/episode_return") is not None]
        for g in groups
    }
    print(
        json.dumps(
            {
                "env": args.env,
                "run_dir": str(run_dir),
                "steps": history[-1]["global_step"],
                "sps": history[-1]["sps"],
                "curves": curves,
                "matches": played,
                "return_margins": margins,
            },
            indent=1,
        )
    )
    if args.write:
        publish_curves(args.write, curves, history[-1]["sps"])


def publish_curves(name: str, curves: dict[str, list[tuple[int, float]]], sps: float, points: int = 10) -> None:
    """Each group's mean episode return at ``points`` updates spread over the run, as a RESULTS.md table."""
    from results import load, machine, publish

    first = next(iter(curves.values()))
    picks = sorted({round(i) for i in np.linspace(0, len(first) - 1, points)})
    columns = ["k steps", *(f"{first[i][0] / 1000:.0f}" for i in picks)]
    rows = [[group, *(f"{curve[i][1]:.2f}" for i in picks if i < len(curve))] for group, curve in curves.items()]
    rows = [row + [""] * (len(columns) - len(row)) for row in rows]
    meta = {
        "command": " ".join([".venv/bin/python", "benchmarks/bench_selfplay.py", *sys.argv[1:]]),
        "machine": f"{machine()}, {sps:,.0f} agent steps/s",
        "load": load(),
    }
    publish(name, columns, rows, meta, True, align="l" * len(columns))


if __name__ == "__main__":
    main()
