"""Where `pufferbox train` spends its time: torch.profiler over a few updates, and policy sizes vs the peers.

Part 1 trains ``ENV`` for ``--updates`` PPO updates (after ``--warmup`` unprofiled ones) and
prints the top torch ops by self CPU time separately for the rollout (env stepping +
inference) and for the PPO update, each against the phase's wall time.

Part 2 prints parameters and FLOPs per sample (torch.utils.flop_counter) of pufferbox's
default policy for nethack, breakout and procgen/bigfish next to the peers' defaults, which
are re-declared here from their published sources (CleanRL 1.2.0's NatureCNN and IMPALA
agents, PufferLib 3.0.0's NetHack policy) so that no peer venv is needed.

    .venv/bin/python benchmarks/profile_train.py nethack --updates 3 [--set train.num_steps=64]
    .venv/bin/python benchmarks/profile_train.py --sizes-only
"""

from __future__ import annotations

import argparse
import collections
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile
from torch.utils.flop_counter import FlopCounterMode

from pufferbox.registry import get_registry
from pufferbox.train import Trainer, resolve_config

SIZE_ENVS = ("nethack", "breakout", "procgen/bigfish")


class PhaseProfile:
    """Self-CPU time per op name, summed over every call of one wrapped phase, and the phase's wall time."""

    def __init__(self, name: str):
        self.name, self.wall_s, self.calls = name, 0.0, 0
        self.ops: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0])  # name -> [self µs, count]
        self.enabled = False

    def wrap(self, fn: Callable) -> Callable:
        def profiled(*args: Any, **kwargs: Any) -> Any:
            if not self.enabled:
                return fn(*args, **kwargs)
            start = time.perf_counter()
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                out = fn(*args, **kwargs)
            self.wall_s += time.perf_counter() - start
            self.calls += 1
            for event in prof.key_averages():
                entry = self.ops[event.key]
                entry[0] += event.self_cpu_time_total
                entry[1] += event.count
            return out

        return profiled

    def table(self, top: int) -> str:
        total_ops = sum(v[0] for v in self.ops.values()) / 1e6
        title = (
            f"{self.name}: {self.calls} calls, {self.wall_s:.2f} s wall, torch ops (self CPU) {total_ops:.2f} s "
            f"({100 * total_ops / max(self.wall_s, 1e-9):.0f}%; the rest is Python, envs and copies outside torch)"
        )
        lines = [title, "| op | self CPU s | % of phase wall | calls |", "|---|---:|---:|---:|"]
        for key, (us, count) in sorted(self.ops.items(), key=lambda kv: -kv[1][0])[:top]:
            lines.append(f"| `{key}` | {us / 1e6:.3f} | {100 * us / 1e6 / max(self.wall_s, 1e-9):.1f}% | {count} |")
        return "\n".join(lines)


def phase_methods(trainer: Any) -> tuple[tuple[Any, str], tuple[Any, str]]:
    """(object, method name) of the rollout and of the update, for today's Trainer or a Collector/Learner split."""
    for owner, collect in ((trainer, "collect"), (getattr(trainer, "collector", None), "collect")):
        if owner is not None and hasattr(owner, collect):
            break
    for learner, learn in (
        (trainer, "learn"),
        (getattr(trainer, "learner", None), "update"),
        (getattr(trainer, "learner", None), "learn"),
    ):
        if learner is not None and hasattr(learner, learn):
            break
    return (owner, collect), (learner, learn)


def profile_training(env: str, overrides: list[str], updates: int, warmup: int, top: int) -> None:
    spec = get_registry().get(env)
    config = resolve_config(spec.training.config, overrides=["train.total_steps=1000000000", *overrides])
    trainer = Trainer(spec, config)
    phases = [PhaseProfile("rollout (env + inference)"), PhaseProfile("update (PPO epochs)")]
    for phase, (owner, method) in zip(phases, phase_methods(trainer)):
        setattr(owner, method, phase.wrap(getattr(owner, method)))
    try:
        tc, vc = config["train"], config["vec"]
        print(
            f"{env}: {vc['num_envs']} envs x {tc['num_steps']} steps, {tc['update_epochs']} epochs x "
            f"{tc['num_minibatches']} minibatches, torch threads {torch.get_num_threads()}, "
            f"{warmup} warm-up + {updates} profiled updates"
        )
        for _ in range(warmup):
            trainer.train_update()
        for phase in phases:
            phase.enabled = True
        for _ in range(updates):
            trainer.train_update()
    finally:
        trainer.close()
    for phase in phases:
        print("\n" + phase.table(top))


# ---- peers' default policies, re-declared from their sources -----------------------------------------


def layer_init(layer: nn.Module, std: float = np.sqrt(2)) -> nn.Module:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, 0.0)
    return layer


class NatureCNNAgent(nn.Module):
    """CleanRL 1.2.0 ``cleanrl/ppo_atari_envpool.py`` ``Agent`` (input uint8[4, 84, 84])."""

    def __init__(self, actions: int = 4):
        super().__init__()
        self.network = nn.Sequential(
            layer_init(nn.Conv2d(4, 32, 8, stride=4)),
            nn.ReLU(),
            layer_init(nn.Conv2d(32, 64, 4, stride=2)),
            nn.ReLU(),
            layer_init(nn.Conv2d(64, 64, 3, stride=1)),
            nn.ReLU(),
            nn.Flatten(),
            layer_init(nn.Linear(64 * 7 * 7, 512)),
            nn.ReLU(),
        )
        self.actor, self.critic = layer_init(nn.Linear(512, actions), 0.01), layer_init(nn.Linear(512, 1), 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.network(x / 255.0)
        return self.actor(hidden), self.critic(hidden)


class ResidualBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv0 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv1(torch.relu(self.conv0(torch.relu(x))))


class ImpalaAgent(nn.Module):
    """CleanRL 1.2.0 ``cleanrl/ppo_procgen.py`` ``Agent`` (IMPALA CNN 16/32/32, input uint8[64, 64, 3])."""

    def __init__(self, actions: int = 15):
        super().__init__()
        layers, channels, size = [], 3, 64
        for out in (16, 32, 32):
            layers += [
                nn.Conv2d(channels, out, 3, padding=1),
                nn.MaxPool2d(3, 2, padding=1),
                ResidualBlock(out),
                ResidualBlock(out),
            ]
            channels, size = out, (size + 1) // 2
        self.network = nn.Sequential(*layers, nn.Flatten(), nn.ReLU(), nn.Linear(channels * size * size, 256), nn.ReLU())
        self.actor, self.critic = layer_init(nn.Linear(256, actions), 0.01), layer_init(nn.Linear(256, 1), 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.network(x.permute(0, 3, 1, 2) / 255.0)
        return self.actor(hidden), self.critic(hidden)


class PufferNetHackPolicy(nn.Module):
    """PufferLib 3.0.0 ``pufferlib/environments/nethack/torch.py`` ``Policy`` (blstats[27] + chars[21, 79])."""

    def __init__(self):
        super().__init__()
        self.blstats_net = nn.Sequential(nn.Embedding(256, 32), nn.Flatten())
        self.char_embed = nn.Embedding(256, 32)
        self.chars_net = nn.Sequential(
            nn.Conv2d(32, 32, 5, stride=(2, 3)),
            nn.ReLU(),
            nn.Conv2d(32, 64, 5, stride=(1, 3)),
            nn.ReLU(),
            nn.Conv2d(64, 64, 3, stride=1),
            nn.ReLU(),
            nn.Flatten(),
        )
        self.proj = nn.Linear(864 + 960, 256)
        self.actor, self.critic = nn.Linear(256, 8), nn.Linear(256, 1)  # 8 logits: as published (NetHackScore has 23)

    def forward(self, x: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        blstats = self.blstats_net(torch.clip(x["blstats"] + 1, 0, 255).int())
        chars = self.chars_net(self.char_embed(x["chars"].int()).permute(0, 3, 1, 2))
        hidden = self.proj(torch.cat([blstats, chars], dim=1))
        return self.actor(hidden), self.critic(hidden)


def flops(fn: Callable[[], Any], backward: bool = False) -> int:
    with FlopCounterMode(display=False) as counter:
        out = fn()
        if backward:
            sum(o.float().sum() for o in out).backward()
    return counter.get_total_flops()


def pufferbox_agent(env: str) -> tuple[nn.Module, torch.Tensor]:
    """pufferbox's default agent for ``env`` (its plugin's policy settings) and one observation row."""
    spec = get_registry().get(env)
    # on the CPU whatever the machine has: the table counts parameters and FLOPs, which do not depend on the device
    config = resolve_config(spec.training.config, overrides=["vec.num_envs=1", "vec.backend=serial", "train.device=cpu"])
    trainer = Trainer(spec, config)
    try:
        agent = getattr(trainer, "agent", None) or trainer.learner.agent
        obs = torch.zeros(
            (1, trainer.obs_spec.flat_size), dtype=torch.from_numpy(np.zeros(0, trainer.obs_spec.flat_dtype)).dtype
        )
        return agent, obs
    finally:
        trainer.close()


def pufferbox_row(env: str) -> tuple:
    try:
        agent, obs = pufferbox_agent(env)
    except (ImportError, RuntimeError, KeyError, ValueError) as exc:  # env family not installed here: keep other rows
        return (f"pufferbox {env}", None, None, None, f"unavailable: {exc}")
    actions = agent.act(obs)[0]
    return (
        f"pufferbox {env} ({type(getattr(agent, 'encoder', agent)).__name__})",
        sum(p.numel() for p in agent.parameters()),
        flops(lambda: agent.act(obs)),
        flops(lambda: agent.evaluate(obs, actions), backward=True),
        "",
    )


def peer_row(name: str, model: nn.Module, example: Any) -> tuple:
    return (
        name,
        sum(p.numel() for p in model.parameters()),
        flops(lambda: model(example)),
        flops(lambda: model(example), backward=True),
        "re-declared from the source named in its class",
    )


def policy_sizes() -> None:
    """Parameters, forward FLOPs per sample (inference) and forward+backward FLOPs per sample (update)."""
    rows = [pufferbox_row(env) for env in SIZE_ENVS]
    rows.append(peer_row("CleanRL NatureCNN (breakout)", NatureCNNAgent(), torch.zeros(1, 4, 84, 84)))
    rows.append(peer_row("CleanRL IMPALA CNN (bigfish)", ImpalaAgent(), torch.zeros(1, 64, 64, 3)))
    rows.append(
        peer_row(
            "PufferLib NetHack Policy",
            PufferNetHackPolicy(),
            {"blstats": torch.zeros(1, 27, dtype=torch.long), "chars": torch.zeros(1, 21, 79, dtype=torch.long)},
        )
    )
    print("\n| policy | parameters | forward FLOPs / sample | forward+backward FLOPs / sample | note |")
    print("|---|---:|---:|---:|---|")
    for name, params, fwd, fwd_bwd, note in rows:
        cells = ["n/a" if v is None else f"{v / 1e6:,.2f}M" for v in (params, fwd, fwd_bwd)]
        print(f"| {name} | {' | '.join(cells)} | {note} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("env", nargs="?", default="nethack")
    parser.add_argument("--updates", type=int, default=3, help="profiled PPO updates")
    parser.add_argument("--warmup", type=int, default=1, help="unprofiled updates first (allocation, first calls)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE")
    parser.add_argument("--top", type=int, default=12, help="ops per table")
    parser.add_argument("--sizes-only", action="store_true", help="only the parameters/FLOPs table")
    args = parser.parse_args()
    if not args.sizes_only:
        profile_training(args.env, args.overrides, args.updates, args.warmup, args.top)
    policy_sizes()


if __name__ == "__main__":
    main()
