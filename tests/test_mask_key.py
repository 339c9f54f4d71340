"""EnvBuild.action_mask: an env whose legal actions sit under another observation key than ``action_mask``,
or in an info entry."""

from __future__ import annotations

import gymnasium
import pytest
from click.testing import CliRunner

from pufferbox.cli import cli, load_commands
from pufferbox.conformance import check_env_spec
from pufferbox.emulation import emulate
from pufferbox.registry import EnvBuild, EnvSpec, RegistryError
from pufferbox.spaces import SpaceError
from pufferbox.train.config import resolve_config
from pufferbox.train.trainer import Trainer
from pufferbox.vector.testenvs import CountdownAgents, HybridTargetEnv, env_spec_for, make_hybrid_target

KEY = "legal_targets"  # where HybridTargetEnv(mask_key=KEY) puts its legal targets


def named(key: str | None = KEY) -> EnvSpec:
    return env_spec_for("hybrid", action_mask=key, mask_key=KEY)


def test_the_named_key_is_the_mask_and_without_the_field_it_is_just_an_observation():
    mask = named().make_emulated().obs_spec.mask
    assert mask is not None and mask.key == KEY and mask.sizes == (3,)  # the hybrid action's discrete slot
    assert named(None).make_emulated().obs_spec.mask is None


def test_the_conformance_suite_checks_the_named_mask_of_a_hybrid_action():
    results = {r.name: r for r in check_env_spec(named(), steps=60, num_envs=2)}
    assert all(r.ok for r in results.values()), [str(r) for r in results.values() if not r.ok]
    assert results["masks"].detail == ""  # it ran, not skipped


def short_training(spec: EnvSpec) -> int:
    """Illegal targets the env received in a short PPO run on ``spec``."""
    HybridTargetEnv.illegal = 0
    overrides = ["train.checkpoint_interval=0", "vec.num_envs=4", "vec.backend=serial", "train.num_steps=32"]
    overrides += ["train.num_minibatches=2", "train.update_epochs=2"]
    trainer = Trainer(spec, resolve_config({}, overrides=overrides))
    try:
        trainer.train_steps(1024)
    finally:
        trainer.close()
    return HybridTargetEnv.illegal


def test_training_on_the_named_mask_never_sends_an_illegal_target():
    assert short_training(named()) == 0
    assert short_training(named(None)) > 0  # the same run without the field: the policy picks masked targets


def test_a_key_the_observation_lacks_is_one_line_naming_the_keys(tmp_path, monkeypatch):
    from pufferbox.registry import get_registry

    load_commands()
    registry = get_registry()
    real_get = registry.get
    wrong = env_spec_for("hybrid", action_mask="legal", mask_key=KEY)
    monkeypatch.setattr(registry, "get", lambda name, **kw: wrong if name == "wrongmask" else real_get(name, **kw))
    result = CliRunner().invoke(cli, ["train", "wrongmask", "--run-dir", str(tmp_path / "r"), "--total-steps", "64"])
    assert result.exit_code == 2, result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("Error: ") and "EnvBuild(action_mask='legal') names no key of the observation" in line
    assert f"its keys are {KEY!r}, 'view'" in line and "Traceback" not in result.output


def test_an_action_mask_that_is_not_a_key_is_refused_when_registered():
    with pytest.raises(RegistryError, match="action_mask must be an observation key, got 3"):
        EnvSpec("bad", EnvBuild(make_hybrid_target, action_mask=3))


# -- a mask in an info entry (Gymnasium's Taxi reports its legal moves in info["action_mask"]) -----------
def taxi(action_mask: str = "info:action_mask") -> EnvSpec:
    return EnvSpec("taxi", EnvBuild(gymnasium.make, kwargs={"id": "Taxi-v3"}, action_mask=action_mask))


def test_an_info_mask_becomes_the_action_mask_key_beside_the_observation():
    env = taxi().make_emulated()
    assert env.obs_spec.mask is not None and env.obs_spec.mask.sizes == (6,)
    row, info = env.reset(seed=0)
    tree = env.obs_spec.unflatten(row[None])
    assert int(tree["observation"][0]) == 314 and tree["action_mask"][0].tolist() == info["action_mask"].tolist()


def test_the_conformance_suite_checks_an_info_mask():
    results = {r.name: r for r in check_env_spec(taxi(), steps=60, num_envs=2)}
    assert all(r.ok for r in results.values()), [str(r) for r in results.values() if not r.ok]
    assert results["masks"].detail == ""


def test_an_info_entry_the_env_does_not_report_is_one_line(tmp_path, monkeypatch):
    from pufferbox.registry import get_registry

    load_commands()
    registry = get_registry()
    real_get = registry.get
    monkeypatch.setattr(registry, "get", lambda name, **kw: taxi("info:legal") if name == "taxi" else real_get(name, **kw))
    result = CliRunner().invoke(cli, ["train", "taxi", "--run-dir", str(tmp_path / "r"), "--total-steps", "64"])
    assert result.exit_code == 2, result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("Error: ") and "info has no 'legal' entry" in line and "Traceback" not in result.output
    with pytest.raises(SpaceError, match="info masks are for Gymnasium envs"):
        emulate(CountdownAgents(), action_mask="info:legal")
    with pytest.raises(SpaceError, match="masks apply to discrete actions"):
        emulate(gymnasium.make("Pendulum-v1"), action_mask="info:legal")
