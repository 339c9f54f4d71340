"""Registers the kernel envs: ``tag`` (discrete), ``tag_continuous``, ``cuda_cartpole``.

Each is ``implementation="cuda"``: ``binding`` builds the CPU reference (a PettingZoo or
Gymnasium env that trains on any CPU backend), ``cuda`` describes the kernel for
``--backend cuda`` and ``pufferbox check ENV --cuda``.
"""

from __future__ import annotations

from pufferbox import EnvBuild, EnvMeta, EnvSpec, TrainDefaults, hookimpl
from pufferbox.api import CudaImplementation
from pufferbox_warp import cartpole, tag, tag_continuous

# 2000 envs x 5 agents x 128 steps = 1.28M samples per update: a few large minibatches. The built-in
# defaults (256 steps, 10 epochs x 32 minibatches, chosen for small CPU batches) made the update 90% of a
# GPU run's time (benchmarks/RESULTS.md, "GPU: kernels, CUDA backend, PPO and the trainer on an H200").
GPU_BATCH_PPO = {"num_steps": 128, "update_epochs": 4, "num_minibatches": 8}
# Tag's GPU profile: 2,048 envs x 5 agents x 16 steps = 163,840 agent rows per update (32,768 the
# tagger's), four epochs over four minibatches per group at 1e-3. On a GPU it steps on the kernels
# (--backend cuda); measured by the tagger against the update-0 runners (benchmarks/gpu_profiles.py;
# RESULTS.md, "GPU profiles").
TAG_GPU_CONFIG = {
    "train": {
        "total_steps": 100 * 163_840,
        "num_steps": 16,
        "update_epochs": 4,
        "num_minibatches": 4,
        "learning_rate": 1e-3,
    },
    "vec": {"num_envs": 2048},
}


def make_tag(**kwargs):
    return tag.TagEnv(**kwargs)


def make_tag_continuous(**kwargs):
    return tag_continuous.TagContinuousEnv(**kwargs)


def tag_groups(env):
    """Taggers (the first ``num_taggers`` agents) and runners train as two policies."""
    taggers = env.core.num_taggers
    return {"tagger": env.possible_agents[:taggers], "runner": env.possible_agents[taggers:]}


def tag_outcome(returns, env_kwargs):
    """Tag's game: the taggers win an episode by tagging every runner before time runs out, the runners
    by one of them surviving. A runner's return is ``tag_penalty`` once tagged, else 0, so every runner
    was tagged exactly when the runners' mean return is ``tag_penalty`` (no winner when it is 0)."""
    penalty = float(env_kwargs.get("tag_penalty", -1.0))
    if penalty == 0.0:
        return None
    return "tagger" if abs(returns["runner"] - penalty) <= 1e-6 * abs(penalty) else "runner"


def make_cuda_cartpole(**kwargs):
    return cartpole.CartPoleEnv(**kwargs)


TAG = CudaImplementation(
    source=tag.SOURCE,
    reference=tag.TagReference,
    step_kernels=tag.TagReference.step_kernels,
    observe_kernel=tag.TagReference.observe_kernel,
    events={"tagged": "tag_rate"},
)
TAG_CONTINUOUS = CudaImplementation(
    source=tag_continuous.SOURCE,
    reference=tag_continuous.TagContinuousReference,
    step_kernels=tag_continuous.TagContinuousReference.step_kernels,
    observe_kernel=tag_continuous.TagContinuousReference.observe_kernel,
    events={"tagged": "tag_rate"},
)
CARTPOLE = CudaImplementation(
    source=cartpole.SOURCE,
    reference=cartpole.CartPoleReference,
    step_kernels=cartpole.CartPoleReference.step_kernels,
    observe_kernel=cartpole.CartPoleReference.observe_kernel,
    layout="env_per_thread",
)


@hookimpl
def register_envs(register):
    register(
        EnvSpec(
            name="tag",
            build=EnvBuild(binding=make_tag, kwargs={"num_taggers": 1, "num_runners": 4}, implementation="cuda", cuda=TAG),
            training=TrainDefaults(
                config={"train": {"total_steps": 2_000_000, **GPU_BATCH_PPO}, "vec": {"num_envs": 2000}},
                gpu_config=TAG_GPU_CONFIG,
                groups=tag_groups,
                outcome=tag_outcome,
            ),
            meta=EnvMeta(
                description="WarpDrive's discrete Tag: taggers chase runners on a grid (PyCUDA kernel + CPU reference)."
            ),
            aliases=("warp_tag",),
        )
    )
    register(
        EnvSpec(
            name="tag_continuous",
            build=EnvBuild(
                binding=make_tag_continuous,
                kwargs={"num_taggers": 2, "num_runners": 10},
                implementation="cuda",
                cuda=TAG_CONTINUOUS,
            ),
            training=TrainDefaults(
                config={"train": {"total_steps": 5_000_000, **GPU_BATCH_PPO}, "vec": {"num_envs": 2000}},
                groups=tag_groups,
                outcome=tag_outcome,
            ),
            meta=EnvMeta(
                description="WarpDrive's continuous Tag: accelerate/turn in a 2-D world, tag within a radius "
                "(PyCUDA kernel + CPU reference)."
            ),
            aliases=("warp_tag_continuous",),
        )
    )
    register(
        EnvSpec(
            name="cuda_cartpole",
            build=EnvBuild(binding=make_cuda_cartpole, implementation="cuda", cuda=CARTPOLE),
            training=TrainDefaults(config={"train": {"total_steps": 200_000}}, solved_return=475.0),
            meta=EnvMeta(description="CartPole as a PyCUDA kernel, one thread per env (float32 CPU reference)."),
        )
    )
