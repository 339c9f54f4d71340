"""Exact results of a tic-tac-toe checkpoint's seat against uniformly random play (issue 39's target).

Walks every game a uniformly random opponent can play against the checkpoint's seat (its greedy move,
as `pufferbox eval --deterministic` plays), weighting each line by its probability, and prints the
probabilities of a win, draw and loss and the first losing lines. "Never loses in 200 games" needs a
loss probability of about 0 (at 0.5% a 200-game evaluation still loses once 63% of the time).

    .venv/bin/python benchmarks/tictactoe_exact.py runs/pzclassic-tictactoe-.../checkpoints/ckpt-00000245.pt second

A run directory instead of a checkpoint evaluates each of its checkpoints from update ``--from-update`` on,
both seats, one line each: a loss probability that is zero at one checkpoint and not at the next is noise
around zero, not a solved seat (RESULTS.md, "Action masks and turn-based games": zero at every checkpoint).

    .venv/bin/python benchmarks/tictactoe_exact.py runs/pzclassic-tictactoe-... --from-update 150
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np
import torch
from pettingzoo.classic import tictactoe_v3

import pufferbox.vector
from pufferbox.registry import get_registry
from pufferbox.train.checkpoint import load_checkpoint
from pufferbox.train.config import RunConfig
from pufferbox.train.evaluate import checkpoint_agent


def seat_policy(checkpoint: str, seat: int):
    """``move(env) -> cell``: the checkpoint's greedy move for ``seat`` (0 first, 1 second) in a PettingZoo game."""
    state = load_checkpoint(checkpoint)
    spec = get_registry().get("pzclassic/tictactoe")
    config = RunConfig.from_toml(state["config"])
    venv = pufferbox.vector.make(spec, backend="serial", num_envs=1)
    agent, obs_spec = checkpoint_agent(spec, venv, config, state, checkpoint), venv.obs_spec
    venv.close()

    def move(env) -> int:
        rows = np.zeros((2, obs_spec.flat_size), obs_spec.flat_dtype)  # the agent's rows: one per seat
        rows[seat] = obs_spec.flatten(env.observe(env.agent_selection))
        with torch.no_grad():
            action, _ = agent.greedy(torch.from_numpy(rows), None, torch.zeros(2, dtype=torch.bool))
        return int(action[seat])

    return move


def replay(moves: list[int]):
    env = tictactoe_v3.env()
    env.reset(seed=0)
    for cell in moves:
        env.step(cell)
    return env


def outcomes(move, seat: int) -> tuple[dict[str, float], list[list[int]]]:
    """Probabilities of each outcome for ``seat`` against a uniformly random opponent, and the losing lines."""
    totals = {"win": 0.0, "draw": 0.0, "loss": 0.0}
    lost: list[list[int]] = []
    pending = [([], 1.0)]
    while pending:
        moves, p = pending.pop()
        env = replay(moves)
        if any(env.terminations.values()):
            reward = env.rewards[env.possible_agents[seat]]
            kind = "win" if reward > 0 else "loss" if reward < 0 else "draw"
            totals[kind] += p
            if kind == "loss":
                lost.append(moves)
            continue
        if env.agent_selection == env.possible_agents[seat]:
            pending.append((moves + [move(env)], p))
            continue
        legal = np.flatnonzero(env.observe(env.agent_selection)["action_mask"])
        pending += [(moves + [int(cell)], p / len(legal)) for cell in legal]
    return totals, lost


def report(checkpoint: str, side: str) -> tuple[str, list[list[int]]]:
    """``side: P(win)=.. P(draw)=.. P(loss)=..; N losing lines`` for one seat of one checkpoint, and those lines."""
    seat = 0 if side == "first" else 1
    totals, lost = outcomes(seat_policy(checkpoint, seat), seat)
    return f"{side}: " + " ".join(f"P({k})={v:.4f}" for k, v in totals.items()) + f"; {len(lost)} losing lines", lost


def fail(message: str) -> None:
    """Bad input: one ``Error:`` line on stderr, exit status 2."""
    print(f"Error: {message}.", file=sys.stderr)
    sys.exit(2)


def run_series(run: Path, from_update: int) -> None:
    """One line per checkpoint of ``run`` from ``from_update`` on: both seats' exact results."""
    checkpoints = sorted(run.glob("checkpoints/ckpt-*.pt"))
    if not checkpoints:
        fail(f"{run} holds no checkpoints/ckpt-*.pt: pass a run directory or a checkpoint file")
    for checkpoint in checkpoints:
        update = int(re.search(r"ckpt-(\d+)", checkpoint.name).group(1))
        if update >= from_update:
            print(f"update {update}: " + " | ".join(report(str(checkpoint), side)[0] for side in ("first", "second")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", help="a checkpoint file, or a run directory (its checkpoints, both seats)")
    parser.add_argument("side", nargs="?", choices=["first", "second"], help="the seat (a checkpoint file only)")
    parser.add_argument("--from-update", type=int, default=0, help="a run directory: skip earlier checkpoints")
    args = parser.parse_args()
    if not Path(args.checkpoint).exists():
        fail(f"{args.checkpoint} does not exist: pass a checkpoint file or a run directory")
    if Path(args.checkpoint).is_dir():
        run_series(Path(args.checkpoint), args.from_update)
        return
    if args.side is None:
        parser.error("a checkpoint file needs its seat: first or second")
    line, lost = report(args.checkpoint, args.side)
    print(line)
    for moves in sorted(lost)[:10]:
        print("  lost:", moves)


if __name__ == "__main__":
    main()
