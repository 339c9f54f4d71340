"""Exact results of a tic-tac-toe checkpoint's seat against uniformly random play (issue 39's target).

Walks every game a uniformly random opponent can play against the checkpoint's seat (its greedy move,
as `pufferbox eval --deterministic` plays), weighting each line by its probability, and prints the
probabilities of a win, draw and loss and the first losing lines. "Never loses in 200 games" needs a
loss probability of about 0 (at 0.5% a 200-game evaluation still loses once 63% of the time).

    .venv/bin/python benchmarks/tictactoe_exact.py runs/pzclassic-tictactoe-.../checkpoints/ckpt-00000245.pt second
"""

from __future__ import annotations

import argparse

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("side", choices=["first", "second"])
    args = parser.parse_args()
    seat = 0 if args.side == "first" else 1
    totals, lost = outcomes(seat_policy(args.checkpoint, seat), seat)
    print(f"{args.side}: " + " ".join(f"P({k})={v:.4f}" for k, v in totals.items()) + f"; {len(lost)} losing lines")
    for line in sorted(lost)[:10]:
        print("  lost:", line)


if __name__ == "__main__":
    main()
