"""The conformance suite passes on every first-party env and fails, precisely, on broken ones."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces

from pufferbox.conformance import ConformanceError, assert_conforms, check_env_spec
from pufferbox.registry import EnvBuild, EnvSpec, Registry, get_registry
from pufferbox.spaces import ActionSpec, ObservationSpec

_helper = importlib.util.spec_from_file_location("plugin_dists", Path(__file__).parent / "plugins" / "plugin_dists.py")
plugin_dists = importlib.util.module_from_spec(_helper)
_helper.loader.exec_module(plugin_dists)

ROOT = Path(__file__).resolve().parents[1]
FIRST_PARTY = ["cartpole", "squared", "password", "stochastic", "memory", "multiagent", "spaces", "bandit"]


def results(spec: EnvSpec, **kwargs) -> dict:
    return {r.name: r for r in check_env_spec(spec, **kwargs)}


@pytest.mark.parametrize("name", FIRST_PARTY)
def test_first_party_env_conforms(name):
    spec = Registry(only=["classic", "ocean"]).get(name)
    assert_conforms(spec, steps=150, seed=3, num_envs=3)


# -- envs that must fail ----------------------------------------------------------------
class WrongSpace(gymnasium.Env):
    """Declares observations in [0, 1] but drifts above 1 after a few steps."""

    observation_space = spaces.Dict({"pos": spaces.Box(0.0, 1.0, (2,), dtype=np.float32), "id": spaces.Discrete(3)})
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return {"pos": np.zeros(2, np.float32), "id": 0}, {}

    def step(self, action):
        self.t += 1
        return {"pos": np.full(2, 0.3 * self.t, np.float32), "id": 1}, 0.0, self.t >= 20, False, {}


class UnseededNoise(gymnasium.Env):
    """Rewards from an RNG the reset seed does not control."""

    observation_space = spaces.Box(0.0, 1.0, (1,), dtype=np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self):
        self.rng = np.random.default_rng()

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(1, np.float32), float(self.rng.random()), self.t >= 5, False, {}


class StartedActions(gymnasium.Env):
    """A Dict action with offset (``start``) discrete leaves; the obs echoes the action."""

    observation_space = spaces.MultiDiscrete([3, 4], start=[-1, 2])
    action_space = spaces.Dict({"a": spaces.Discrete(3, start=-1), "b": spaces.MultiDiscrete([4], start=[2])})

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([-1, 2]), {}

    def step(self, action):
        self.t += 1
        return np.array([int(action["a"]), int(action["b"][0])]), float(action["a"]), self.t >= 7, False, {}


def spec_for(binding, name="bad", **kwargs) -> EnvSpec:
    return EnvSpec(name=name, build=EnvBuild(binding=binding, **kwargs))


def test_wrong_space_fails_naming_the_field():
    found = results(spec_for(WrongSpace), steps=40)
    assert not found["spaces"].ok
    assert re.search(r"observation\['pos'\] = \[.*\] is outside Box\(0.0, 1.0", found["spaces"].detail)
    with pytest.raises(ConformanceError, match="bad fails"):
        assert_conforms(spec_for(WrongSpace), steps=40)


def test_wrong_dtype_fails_the_api_check():
    class Float64Obs(WrongSpace):
        def reset(self, *, seed=None, options=None):
            obs, info = super().reset(seed=seed)
            obs["pos"] = obs["pos"].astype(np.float64)
            return obs, info

    found = results(spec_for(Float64Obs), steps=10, checks=["api"])
    assert not found["api"].ok and "gymnasium check_env failed" in found["api"].detail


def test_non_deterministic_seed_fails():
    found = results(spec_for(UnseededNoise), steps=30)
    assert not found["determinism"].ok
    assert "seed 0, record 1: (reward, terminated, truncated)" in found["determinism"].detail
    assert found["spaces"].ok  # the failure is pinned on the right check


def test_flattening_bug_in_action_offsets_is_caught(monkeypatch):
    spec = spec_for(StartedActions)
    assert results(spec, steps=30)["flattening"].ok
    original = ActionSpec.unflatten

    def forgets_start(self, flat):  # a plausible bug: drop Discrete.start when unflattening
        tree = original(self, flat)
        return {k: v - self.space[k].start for k, v in tree.items()} if isinstance(tree, dict) else tree

    monkeypatch.setattr(ActionSpec, "unflatten", forgets_start)
    found = results(spec, steps=30)
    assert not found["flattening"].ok
    assert "action round trip" in found["flattening"].detail and "['a']" in found["flattening"].detail


def test_flattening_bug_in_torch_offsets_is_caught(monkeypatch):
    spec = Registry(only=["ocean"]).get("spaces")
    original = ObservationSpec.torch_layout

    def off_by_one(self):  # a plausible bug: the bits leaf read one byte early
        layout = list(original(self))
        if len(layout) == 3:
            start, length, dtype, shape = layout[2]
            layout[2] = (start - 1, length, dtype, shape)
        return tuple(layout)

    monkeypatch.setattr(ObservationSpec, "torch_layout", off_by_one)
    found = results(spec, steps=30, checks=["flattening"])
    assert not found["flattening"].ok
    assert "(torch unflatten)['meta'][1]['bits']: expected" in found["flattening"].detail


def test_native_bug_is_caught():
    from pufferbox_ocean.native import MemoryNative

    class LateRecall(MemoryNative):  # a plausible bug: recall compared with the next bit
        def step_envs(self, actions):
            self.tick += 1
            rewards, terminated, truncated = super().step_envs(actions)
            self.tick -= 1
            return rewards, terminated | (self.tick >= self.single.horizon), truncated

    good = Registry(only=["ocean"]).get("memory")
    bad = EnvSpec(name="memory", build=EnvBuild(binding=good.build.binding, native=LateRecall))
    found = results(bad, steps=60, checks=["native"])
    assert not found["native"].ok and "differ between native and emulated" in found["native"].detail


# -- the pytest plugin and the README example ------------------------------------------
def test_pytest_fixture_runs_the_suite(pufferbox_check):
    spec = Registry(only=["ocean"]).get("bandit")
    assert [r.name for r in pufferbox_check(spec, steps=20)] == [
        "api",
        "spaces",
        "determinism",
        "flattening",
        "serial",
        "native",
        "truncation",
        "masks",
        "groups",
    ]


def readme_blocks() -> dict[str, str]:
    """Code blocks of the plugin tutorial's 'A minimal plugin' section, keyed by the file they show."""
    text = (ROOT / "docs" / "tutorials" / "python-plugin.md").read_text()
    section = text.split("## A minimal plugin", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): m.group(2) for m in re.finditer(r"```\w*\n# (\S+)\n(.*?)```", section, re.S)}


def test_readme_example_is_the_installed_plugin_and_conforms(tmp_path, monkeypatch, request, pufferbox_check):
    source = ROOT / "tests" / "plugins" / "example_plugin"
    blocks = readme_blocks()
    assert set(blocks) == {"pyproject.toml", "pufferbox_coinflip/plugin.py", "tests/test_coinflip.py"}
    assert blocks["pyproject.toml"] == (source / "pyproject.toml").read_text()
    assert blocks["pufferbox_coinflip/plugin.py"] == (source / "pufferbox_coinflip" / "plugin.py").read_text()

    plugin_dists.install("example_plugin", tmp_path, monkeypatch, request)
    monkeypatch.setenv("PUFFERBOX_PLUGINS", "coinflip")
    get_registry.cache_clear()
    request.addfinalizer(get_registry.cache_clear)
    spec = get_registry().get("coinflip")
    assert spec.meta.distribution == "pufferbox-coinflip" and spec.training.solved_return == 9.0
    namespace: dict = {}
    exec(compile(blocks["tests/test_coinflip.py"], "test_coinflip.py", "exec"), namespace)
    namespace["test_coinflip_conforms"](pufferbox_check)
