"""PPO reaches the solved threshold (EnvSpec.solved_return) of a few Ocean sanity envs.

Short budgets with margin: each env's plugin default step budget, which is several times
what a correct PPO needs. Marked slow (tens of seconds on 2 cores); still runs in CI.
"""

from __future__ import annotations

import pytest

from pufferbox.registry import UnknownEnvError, get_registry
from pufferbox.train.config import resolve_config
from pufferbox.train.trainer import Trainer


@pytest.mark.slow
@pytest.mark.parametrize("env", ["bandit", "multiagent", "password"])
def test_reaches_solved_return(env):
    try:
        spec = get_registry().get(env)
    except UnknownEnvError:
        pytest.skip(f"{env}: the ocean plugin is not installed")
    config = resolve_config(
        spec.training.config, overrides=["train.checkpoint_interval=0", "train.stop_on_solve=true", "train.seed=2"]
    )
    trainer = Trainer(spec, config)
    result = trainer.train()
    trainer.close()
    assert result.solved_at_step is not None, (
        f"{env}: recent return {result.episode_return} < {spec.training.solved_return} after {result.global_step} steps"
    )
