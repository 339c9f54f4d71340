"""Registers ``mujoco/<task>`` (short name ``<task>``) for Gymnasium's MuJoCo v5 tasks.

Each env is ``gymnasium.make("<Task>-v5")`` unchanged: float64 observations, a continuous
``Box`` action (the trainer samples a diagonal Gaussian and clips to the bounds), 1,000-step
episodes (Reacher 50, Pusher 100). Keyword arguments go to ``gymnasium.make``, e.g.
``--set env.ctrl_cost_weight=0.5``.

Observation and reward normalization (running mean/std, as in every MuJoCo PPO baseline)
is the trainer's job (``train.norm_obs``/``norm_reward``, on in these defaults), not the env's:
the plugin does not wrap the env, so evaluation sees true returns and the statistics can live in checkpoints.

Gymnasium imports mujoco when a task is made: without it the envs are listed as unavailable
with the install command.

Example:
    >>> env = make_mujoco("Hopper-v5")
    >>> env.action_space
    Box(-1.0, 1.0, (3,), float32)
"""

from __future__ import annotations

import gymnasium

from pufferbox import EnvBuild, EnvMeta, EnvSpec, TrainDefaults, hookimpl

REQUIRES = {"mujoco": "mujoco==3.3.7"}

# name -> (Gymnasium id, solved_return). solved_return is Gymnasium's reward_threshold where
# the task has one (Walker2d, Humanoid and HumanoidStandup have none).
TASKS = {
    "hopper": ("Hopper-v5", 3800.0),
    "halfcheetah": ("HalfCheetah-v5", 4800.0),
    "walker2d": ("Walker2d-v5", None),
    "ant": ("Ant-v5", 6000.0),
    "humanoid": ("Humanoid-v5", None),
    "humanoidstandup": ("HumanoidStandup-v5", None),
    "invertedpendulum": ("InvertedPendulum-v5", 950.0),
    "inverteddoublependulum": ("InvertedDoublePendulum-v5", 9100.0),
    "reacher": ("Reacher-v5", -3.75),
    "swimmer": ("Swimmer-v5", 360.0),
    "pusher": ("Pusher-v5", 0.0),
}

# CleanRL's ppo_continuous_action (the standard MuJoCo PPO: 2,048 steps per update, 32
# minibatches, 10 epochs, no entropy bonus, lr 3e-4 annealed, 64-unit tanh MLP), spread over
# 8 envs of 256 steps so the envs step in parallel.
DEFAULTS = {
    "train": {
        "total_steps": 1_000_000,
        "learning_rate": 3e-4,
        "num_steps": 256,
        "gamma": 0.99,
        "gae_lambda": 0.95,
        "update_epochs": 10,
        "num_minibatches": 32,
        "ent_coef": 0.0,
        "clip_coef": 0.2,
        "vf_coef": 0.5,
        "max_grad_norm": 0.5,
        "norm_obs": True,
        "norm_reward": True,
    },
    "vec": {"num_envs": 8},
    "policy": {"hidden_size": 64, "encoder": "mlp"},
}


def make_mujoco(gym_id: str, **kwargs) -> gymnasium.Env:
    """``gymnasium.make(gym_id, **kwargs)`` for a MuJoCo task."""
    return gymnasium.make(gym_id, **kwargs)


@hookimpl
def register_envs(register):
    for name, (gym_id, solved) in TASKS.items():
        register(
            EnvSpec(
                name=f"mujoco/{name}",
                build=EnvBuild(binding=make_mujoco, kwargs={"gym_id": gym_id}),
                training=TrainDefaults(config=DEFAULTS, solved_return=solved),
                meta=EnvMeta(description=f"MuJoCo {gym_id} (Gymnasium), continuous actions", requires=REQUIRES),
                aliases=(name,),
            )
        )
