"""The chaos suite's env plugin: ``chaosfault``, a :class:`~pufferbox.vector.testenvs.FaultyEnv`
whose fault comes from ``PUFFERBOX_CHAOS_FAULT`` (``MODE:STEP``, e.g. ``raise:300``), so a resume
run without the variable trains the same env healthily."""

import os

from pufferbox import EnvBuild, EnvMeta, EnvSpec, hookimpl
from pufferbox.vector.testenvs import FaultyEnv


class ChaosEnv(FaultyEnv):
    """Counts steps across resets (episode ends, a resume): the fault comes at a step of the env, not of an episode."""

    def reset(self, **kwargs):
        steps = self.t
        out = super().reset(**kwargs)
        self.t = steps
        return out


def make_chaos_env() -> FaultyEnv:
    mode, _, step = os.environ.get("PUFFERBOX_CHAOS_FAULT", "none:0").partition(":")
    if mode == "none":
        return ChaosEnv(fail_at=2**62)
    return ChaosEnv(fail_at=int(step), mode=mode)


@hookimpl
def register_envs(register):
    register(
        EnvSpec(
            name="chaosfault",
            build=EnvBuild(binding=make_chaos_env),
            meta=EnvMeta(description="FaultyEnv driven by the chaos suite"),
        )
    )
