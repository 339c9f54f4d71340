"""A self-play checkpoint's seats against uniformly random legal moves: W/D/L, win rate and its 95%
interval, and the seat's mean return per game (chips per hand for poker), as one markdown row per seat.

What ``pufferbox eval ENV --checkpoint CKPT --opponent random --side SEAT --episodes N`` plays, plus the
returns that command does not print:

    .venv/bin/python benchmarks/pzclassic_vs_random.py runs/leduc/checkpoints/ckpt-00000100.pt --episodes 1000
"""

from __future__ import annotations

import argparse
import statistics

from pufferbox.train.league import RANDOM, grouped_state, play_match


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--deterministic", action="store_true", help="the checkpoint plays its mode")
    parser.add_argument("--seed", type=int, default=12345)
    args = parser.parse_args()
    state = grouped_state(args.checkpoint)
    print(f"{state['env']}, {args.checkpoint} (step {state.get('global_step', 0):,}), {args.episodes} games per seat")
    print("| seat | W / D / L | win rate (95% CI) | mean return per game (se) |\n|---|---|---|---|")
    for side in state["groups"]:
        match = play_match(args.checkpoint, RANDOM, args.episodes, side, args.seed, deterministic=args.deterministic)
        summary, mine = match.summary(), [r[side] for r in match.returns]
        low, high = summary["win_rate_ci95"]
        se = statistics.stdev(mine) / len(mine) ** 0.5 if len(mine) > 1 else float("nan")
        print(
            f"| {side} | {match.wins} / {match.draws} / {match.losses} | {summary['win_rate']:.3f} "
            f"({low:.3f}-{high:.3f}) | {statistics.fmean(mine):+.3f} ({se:.3f}) |"
        )


if __name__ == "__main__":
    main()
