"""Update throughput of 1 vs N data-parallel learners (``train.learners``), one torch thread each.

The PPO update of a family's default policy and hyperparameters on a fixed batch of the plugin's
default size (no envs: the update alone, see ``profile_update.py``): one learner process on the whole
batch, then N learner processes (gloo, ``pufferbox.train.distributed``) on 1/N of it each, with the
gradients all-reduced every minibatch; and, as the machine's own limit, N processes on 1/N of it each
that never communicate (what N learners would reach with free all-reduces). Each measurement starts
fresh processes, warms up on one update and times ``--updates`` more (the slowest process counts); the
modes alternate (1, N, N independent, 1, ...) so background load falls on all alike. Reports samples
learned per second (batch x epochs / seconds per update), the ratios to one learner (medians over the
rounds, and per round), and ``uptime`` before and after.

    python benchmarks/bench_learners.py breakout --learners 2 --rounds 3
    python benchmarks/bench_learners.py cartpole-wide   # an MLP of width 1024 on CartPole's spaces
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pufferbox.train.config import PolicyConfig, TrainConfig, typed


def setup(name: str):
    """(obs spec, act spec, policy class or None, defaults) of a family, or of ``cartpole-wide``."""
    if name != "cartpole-wide":
        from profile_update import family

        return family(name)
    from gymnasium import spaces

    from pufferbox.spaces import ActionSpec, ObservationSpec

    obs = spaces.Box(-5, 5, (4,), "float32")
    defaults = {"vec": {"num_envs": 8}, "train": {"num_steps": 256}, "policy": {"hidden_size": 1024}}
    return ObservationSpec(obs), ActionSpec(spaces.Discrete(2)), None, defaults


def learner_rank(rank: int, size: int, sync: bool, address: str, name: str, updates: int, out: str) -> None:
    """One learner process: its share of the batch, a warm-up update, then ``updates`` timed ones
    (``sync``: gradients all-reduced with the other ranks; else it works alone)."""
    from profile_update import random_batch

    from pufferbox.train.distributed import Team, join_group
    from pufferbox.train.learner import Learner
    from pufferbox.train.policies import build_agent

    torch.set_num_threads(1)
    obs_spec, act_spec, policy, defaults = setup(name)
    rows, horizon = defaults["vec"]["num_envs"], defaults["train"]["num_steps"]
    batch = random_batch(obs_spec, rows, horizon, int(act_spec.flat_space.n))
    share = rows // size
    batch = {k: v[rank * share : (rank + 1) * share] for k, v in batch.items()}
    torch.manual_seed(1)
    agent = build_agent(obs_spec, act_spec, typed(PolicyConfig, defaults["policy"]), policy)
    team = None
    if sync:
        join_group(rank, size, address, "cpu", 600.0)
        team = Team(rank, size, torch.device("cpu"))
    learner = Learner(agent, typed(TrainConfig, defaults["train"]), team=team)
    learner.update(batch)  # warm-up
    if team is not None:
        team.all_reduce(torch.zeros(1))  # start the clock together
    t0 = time.perf_counter()
    for _ in range(updates):
        learner.update(batch)
    Path(f"{out}.{rank}").write_text(str((time.perf_counter() - t0) / updates))
    if team is not None:
        team.close()


def measure(size: int, sync: bool, name: str, updates: int) -> float:
    """Seconds per update of ``size`` learner processes started now (the slowest one's)."""
    from pufferbox.train.distributed import free_address

    context, address = torch.multiprocessing.get_context("spawn"), free_address()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "seconds")
        procs = [
            context.Process(target=learner_rank, args=(rank, size, sync, address, name, updates, out))
            for rank in range(size)
        ]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join()
            if proc.exitcode != 0:
                raise SystemExit(f"a learner process exited with {proc.exitcode}")
        return max(float(Path(f"{out}.{rank}").read_text()) for rank in range(size))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("family", help="breakout, nethack, procgen or cartpole-wide")
    parser.add_argument("--learners", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--updates", type=int, default=2, help="timed updates per measurement")
    args = parser.parse_args()
    _, _, _, defaults = setup(args.family)
    tc = typed(TrainConfig, defaults["train"])
    samples = defaults["vec"]["num_envs"] * tc.num_steps * tc.update_epochs
    print(f"uptime before: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    n = args.learners
    modes = {"1 learner": (1, False), f"{n} learners": (n, True), f"{n} independent (limit)": (n, False)}
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    for round_ in range(args.rounds):
        for mode, (size, sync) in modes.items():
            times[mode].append(measure(size, sync, args.family, args.updates))
            print(f"round {round_ + 1}: {mode}: {times[mode][-1]:.3f} s/update", flush=True)
    print(f"uptime after: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    print(
        f"== {args.family}: batch {defaults['vec']['num_envs']} x {tc.num_steps}, {tc.update_epochs} epochs, "
        f"{tc.num_minibatches} minibatches; one torch thread per process"
    )
    one = times["1 learner"]
    for mode, seconds in times.items():
        median = statistics.median(seconds)
        rounds = ", ".join(f"{a / b:.2f}x" for a, b in zip(one, seconds))
        print(
            f"{mode:>24}: {median:.3f} s/update ({samples / median:,.0f} samples/s), "
            f"{statistics.median(one) / median:.2f}x one learner (per round: {rounds})"
        )


if __name__ == "__main__":
    main()
