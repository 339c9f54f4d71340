"""PufferLib 3.0's own trainer (`puffer train nethack`) as a benchmark peer; runs in PufferLib's venv.

PufferLib 3.0.0 cannot train NetHack as shipped with nle 1.x (see ../shared/notes/machine.md):
its binding calls ``gym.make("NetHackScore-v0")`` while nle 1.x registers with gymnasium, and its
NetHack ``Policy`` lacks the ``forward_eval`` its trainer calls. This launcher imports PufferLib,
fixes both in this process only (its installed files stay untouched), adds timers, and then
calls PufferLib's own CLI ``main()`` with the arguments it was given:

    $PUFFERBOX_PEERS_DIR/pufferlib/bin/python benchmarks/pufferlib_train_peer.py LOG.jsonl \\
        train nethack --train.device cpu --vec.backend Serial --vec.num-envs 16 ...

Every PPO update appends one JSON line to LOG.jsonl: ``update``, ``global_step``, ``t`` (seconds
since the trainer was built), cumulative ``env_s`` (vecenv send+recv), ``collect_s`` (the whole
rollout: env + inference + copies), ``learn_s`` (PufferLib's ``train()``), and the returns and
lengths of the episodes that ended since the last line. At the step budget it exits without
PufferLib's closing 32-rollout evaluation (not training, and not part of the other arms).
It imports nothing from pufferbox.
"""

from __future__ import annotations

import json
import os
import sys
import time

import gymnasium
import nle  # noqa: F401  (registers NetHackScore-v0 with gymnasium)
import pufferlib
import pufferlib.emulation
import pufferlib.environments.nethack.environment as nethack_env
import pufferlib.environments.nethack.torch as nethack_torch
from pufferlib import pufferl


def make_nethack(name: str = "nethack", buf=None, seed: int = 0):
    """PufferLib's NetHack ``make`` with ``gymnasium.make`` in place of ``gym.make`` + shimmy's gym-v21 layer."""
    env = gymnasium.make("NetHackScore-v0" if name == "nethack" else name)
    env = nethack_env.NethackWrapper(env)
    env = pufferlib.EpisodeStats(env)
    return pufferlib.emulation.GymnasiumPufferEnv(env=env, buf=buf)


class UpdateLog:
    """Phase timers around PufferLib's rollout, vecenv and update; one JSON line per update."""

    def __init__(self, path: str):
        self.file = open(path, "a", buffering=1)  # noqa: SIM115  (closed at the budget, see install())
        self.start = time.perf_counter()
        self.env_s = self.collect_s = self.learn_s = 0.0
        self.returns: list[float] = []
        self.lengths: list[float] = []

    def wrap_vecenv(self, vecenv):
        send, recv = vecenv.send, vecenv.recv

        def timed_send(actions):
            t0 = time.perf_counter()
            out = send(actions)
            self.env_s += time.perf_counter() - t0
            return out

        def timed_recv():
            t0 = time.perf_counter()
            out = recv()
            self.env_s += time.perf_counter() - t0
            for info in out[4]:  # infos: EpisodeStats puts episode_return/length in the last step's info
                if isinstance(info, dict) and "episode_return" in info:
                    self.returns.append(float(info["episode_return"]))
                    self.lengths.append(float(info["episode_length"]))
            return out

        vecenv.send, vecenv.recv = timed_send, timed_recv
        return vecenv

    def write(self, trainer) -> None:
        self.file.write(
            json.dumps(
                {
                    "update": trainer.epoch,
                    "global_step": int(trainer.global_step),
                    "t": round(time.perf_counter() - self.start, 4),
                    "env_s": round(self.env_s, 4),
                    "collect_s": round(self.collect_s, 4),
                    "learn_s": round(self.learn_s, 4),
                    "returns": self.returns,
                    "lengths": self.lengths,
                }
            )
            + "\n"
        )
        self.returns, self.lengths = [], []


def install(log: UpdateLog) -> None:
    """The two compatibility fixes and the timers, in this process only."""
    nethack_env.make = make_nethack  # env_creator's partial looks ``make`` up in this module
    nethack_torch.Policy.forward_eval = nethack_torch.Policy.forward
    load_env, evaluate, train = pufferl.load_env, pufferl.PuffeRL.evaluate, pufferl.PuffeRL.train
    pufferl.load_env = lambda env_name, args: log.wrap_vecenv(load_env(env_name, args))

    def timed_evaluate(self):
        t0 = time.perf_counter()
        out = evaluate(self)
        log.collect_s += time.perf_counter() - t0
        return out

    def timed_train(self):
        t0 = time.perf_counter()
        out = train(self)
        log.learn_s += time.perf_counter() - t0
        log.write(self)
        if self.global_step >= self.config["total_timesteps"]:
            self.vecenv.close()
            log.file.close()
            os._exit(0)  # its utilization thread is not a daemon; nothing else is left to flush
        return out

    pufferl.PuffeRL.evaluate, pufferl.PuffeRL.train = timed_evaluate, timed_train


def main() -> None:
    if len(sys.argv) < 4:
        raise SystemExit("usage: pufferlib_train_peer.py LOG.jsonl train nethack [puffer options]")
    log = UpdateLog(sys.argv.pop(1))
    install(log)
    pufferl.main()  # reads sys.argv: train nethack [options]


if __name__ == "__main__":
    main()
