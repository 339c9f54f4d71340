"""OpenSkill ratings of a self-play run's snapshots, plotted against the training steps they were taken at.

Rates every pair of the run's checkpoints and ``random`` (``pufferbox league RUN --play N``: each pair,
each side, N episodes; ratings in ``RUN/league.sqlite``), then draws each group's conservative rating
(``mu - 3 sigma``) per checkpoint, with random play's as a line, and prints the table as markdown
(``--write NAME``: also as benchmarks/results/NAME.json, re-rendered in RESULTS.md):

    .venv/bin/python benchmarks/league_ratings.py runs/pzclassic-connect_four-... --play 10 --out c4-league.png
    .venv/bin/python benchmarks/league_ratings.py RUN --play 6 --out benchmarks/connect_four-league-defaults25.png \
        --write connect_four_league
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from results import load, machine, publish

from pufferbox.train.checkpoint import list_checkpoints, load_checkpoint
from pufferbox.train.league import RANDOM, Ratings, round_robin


def rated_snapshots(run_dir: Path) -> tuple[dict[str, list[tuple[int, float, float]]], dict[str, float]]:
    """Per group: ``(step, mu - 3 sigma, mu)`` of each checkpoint in step order; random play's ordinal per group."""
    steps = {str(p): int(load_checkpoint(p)["global_step"]) for p in list_checkpoints(run_dir / "checkpoints")}
    curves: dict[str, list[tuple[int, float, float]]] = {}
    random_rating: dict[str, float] = {}
    for row in Ratings(run_dir / "league.sqlite").table():
        if row["name"] == RANDOM:
            random_rating[row["group"]] = row["ordinal"]
        elif row["name"] in steps:
            curves.setdefault(row["group"], []).append((steps[row["name"]], row["ordinal"], row["mu"]))
    return {group: sorted(points) for group, points in curves.items()}, random_rating


def plot(curves: dict, random_rating: dict, title: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for group, points in curves.items():
        line = ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=f"{group} (snapshots)")[0]
        if group in random_rating:
            ax.axhline(random_rating[group], color=line.get_color(), linestyle=":", label=f"random as {group}")
    ax.set_xlabel("training steps at the snapshot")
    ax.set_ylabel("OpenSkill mu - 3 sigma")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--play", type=int, default=10, help="episodes per pair and side (0: rate nothing new)")
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--out", type=Path, default=None, help="PNG path (default: RUN/league-ratings.png)")
    parser.add_argument("--write", metavar="NAME", help="also write benchmarks/results/NAME.json and re-render")
    args = parser.parse_args()
    if args.play:
        round_robin(args.run_dir, episodes=args.play, seed=args.seed)
    curves, random_rating = rated_snapshots(args.run_dir)
    out = args.out or args.run_dir / "league-ratings.png"
    plot(curves, random_rating, f"league ratings: {args.run_dir.name}", out)
    rows = [
        [f"{step:,}", *(f"{points[i][1]:.2f}" for points in curves.values())]
        for i, step in enumerate(step for step, _, _ in next(iter(curves.values())))
    ]
    rows.append(["random", *(f"{random_rating.get(g, float('nan')):.2f}" for g in curves)])
    meta = {
        "command": " ".join([".venv/bin/python", "benchmarks/league_ratings.py", *sys.argv[1:]]),
        "machine": machine(),
        "load": load(),
        "peer": "uniformly random legal moves",
    }
    publish(args.write or "league_ratings", ["step", *curves], rows, meta, bool(args.write), align="r" * (len(curves) + 1))
    print(f"plot: {out}")


if __name__ == "__main__":
    main()
