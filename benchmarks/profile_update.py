"""Profile the default policies' PPO update and inference step (torch.profiler), no envs needed.

Builds each family's default agent with the plugin's default hyperparameters, fills a batch of
random observations of the right layout, and profiles one ``Learner.update`` and ``horizon``
inference steps. Prints the top ops by self CPU time, parameters and forward FLOPs per sample.

    python benchmarks/profile_update.py nethack breakout procgen [--threads 2] [--rows 32]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from gymnasium import spaces

from pufferbox.spaces import ActionSpec, ObservationSpec
from pufferbox.train.config import PolicyConfig, TrainConfig, typed
from pufferbox.train.learner import Learner
from pufferbox.train.policies import build_agent


def family(name: str):
    """(obs space, action space, policy class, [train] defaults, [policy] defaults, num_envs)."""
    if name == "nethack":
        from pufferbox_nethack.plugin import DEFAULTS
        from pufferbox_nethack.policy import NetHackEncoder as policy

        space = spaces.Dict(
            {
                "glyphs": spaces.Box(0, 5976, (21, 79), np.int16),
                "blstats": spaces.Box(-(2**31), 2**31 - 1, (27,), np.int64),
                "message": spaces.Box(0, 255, (256,), np.uint8),
            }
        )
        act = spaces.Discrete(23)
    elif name == "breakout":
        from pufferbox_atari.plugin import DEFAULTS
        from pufferbox_atari.policy import NatureCNN as policy

        space, act = spaces.Box(0, 255, (4, 84, 84), np.uint8), spaces.Discrete(4)
    elif name == "pong":  # Ocean Pong at its GPU profile (the plugin's gpu_config over its defaults)
        from pufferbox_ocean.games.pong import GAME

        DEFAULTS = {
            "train": {**GAME.config["train"], **GAME.gpu_config["train"]},
            "vec": {**GAME.config["vec"], **GAME.gpu_config["vec"]},
            "policy": {},
        }
        policy = None
        space, act = spaces.Box(-2.0, 2.0, (8,), np.float32), spaces.Discrete(3)
    elif name == "procgen":
        from pufferbox_procgen.plugin import DEFAULTS
        from pufferbox_procgen.policy import ImpalaResNet as policy

        space, act = spaces.Box(0, 255, (64, 64, 3), np.uint8), spaces.Discrete(15)
    else:
        raise SystemExit(f"unknown family {name}")
    return ObservationSpec(space), ActionSpec(act), policy, DEFAULTS


def random_batch(obs_spec: ObservationSpec, rows: int, horizon: int, act_n: int) -> dict[str, torch.Tensor]:
    rng = np.random.default_rng(0)
    flat = obs_spec.zeros(rows * (horizon + 1))
    for leaf, view in zip(obs_spec.leaves, obs_spec.leaf_views(flat)):
        high = 255 if leaf.space.dtype == np.uint8 else 5976 if view.dtype == np.int16 else 1000
        view[...] = rng.integers(0, high, view.shape)
    t = lambda x: torch.from_numpy(np.asarray(x))
    return {
        "obs": t(flat).reshape(rows, horizon + 1, -1),
        "actions": torch.randint(0, act_n, (rows, horizon + 1)),
        "logprobs": torch.full((rows, horizon + 1), -np.log(act_n), dtype=torch.float32),
        "values": torch.zeros(rows, horizon + 1),
        "rewards": t(rng.random((rows, horizon + 1), np.float32)),
        "starts": torch.zeros(rows, horizon + 1, dtype=torch.bool),
        "masks": torch.ones(rows, horizon + 1, dtype=torch.bool),
    }


def flops_per_sample(agent, obs: torch.Tensor) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter, torch.no_grad():
        agent.act(obs)
    return counter.get_total_flops() / len(obs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("families", nargs="+")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rows", type=int, default=0, help="agent rows (default: the plugin's num_envs)")
    parser.add_argument("--horizon", type=int, default=0, help="rollout length (default: the plugin's num_steps)")
    parser.add_argument("--top", type=int, default=14)
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for name in args.families:
        obs_spec, act_spec, policy, defaults = family(name)
        tc = typed(TrainConfig, {**defaults["train"], "compile": args.compile})
        rows, horizon = args.rows or defaults["vec"]["num_envs"], args.horizon or tc.num_steps
        agent = build_agent(obs_spec, act_spec, typed(PolicyConfig, defaults["policy"]), policy)
        learner = Learner(agent, tc, compile=args.compile)
        batch = random_batch(obs_spec, rows, horizon, int(act_spec.flat_space.n))
        params = sum(p.numel() for p in agent.parameters())
        flops = flops_per_sample(agent, batch["obs"][:, 0])
        learner.update(batch)  # warm-up (and compile)
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU]) as prof:
            t0 = time.perf_counter()
            learner.update(batch)
            t_update = time.perf_counter() - t0
            t0 = time.perf_counter()
            with torch.no_grad():
                for t in range(min(horizon, 32)):
                    agent.act(batch["obs"][:, t])
            t_infer = (time.perf_counter() - t0) / min(horizon, 32)
        print(
            f"== {name}: {params:,} params, {flops / 1e6:.1f} MFLOPs/sample forward; batch {rows}x{horizon}, "
            f"update {t_update:.2f} s, inference {t_infer * 1e3:.1f} ms/step ({args.threads} threads)"
        )
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.top))


if __name__ == "__main__":
    main()
