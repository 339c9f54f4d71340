"""Registry rules: broken plugins are reported and skipped, a duplicate name is refused naming both
distributions, PUFFERBOX_PLUGINS restricts loading."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from pufferbox import EnvBuild, EnvSpec, hookimpl
from pufferbox.registry import Registry, RegistryError, UnknownEnvError

_helper = importlib.util.spec_from_file_location("plugin_dists", Path(__file__).parent / "plugins" / "plugin_dists.py")
plugin_dists = importlib.util.module_from_spec(_helper)
_helper.loader.exec_module(plugin_dists)

OCEAN = plugin_dists.OCEAN
CLASSIC = plugin_dists.CLASSIC

pytestmark = pytest.mark.usefixtures("fresh_registry")  # tests/conftest.py


def test_first_party_plugins_register_cartpole_and_ocean():
    registry = Registry(only=["classic", "ocean"])
    names = {spec.name for spec in registry.all_envs()}
    assert names == OCEAN | CLASSIC
    assert all(p.ok for p in registry.plugins)
    spec = registry.get("ocean/spaces")  # alias
    assert spec.name == "spaces" and spec.meta.distribution == "pufferbox-ocean" and spec.build.native is not None


def test_broken_plugin_is_reported_and_others_still_work(tmp_path, monkeypatch, request):
    plugin_dists.install("broken_plugin", tmp_path, monkeypatch, request)
    registry = Registry(only=["classic", "ocean", "broken_example"])
    (broken,) = registry.broken()
    assert broken.name == "broken_example"
    assert broken.distribution == "pufferbox-broken-example"
    assert broken.error.startswith("ImportError: pufferbox_broken_example needs")
    assert "Traceback" in broken.traceback
    assert registry.get("cartpole").make_emulated() is not None
    assert {s.name for s in registry.all_envs()} == OCEAN | CLASSIC
    with pytest.raises(UnknownEnvError, match="broken plugins: broken_example"):
        registry.get("no_such_env")


def test_a_duplicate_name_is_refused_naming_both_distributions(tmp_path, monkeypatch, request):
    plugin_dists.install("duplicate_plugin", tmp_path, monkeypatch, request)
    registry = Registry(only=["classic", "duplicate_example"])
    assert not registry.broken()  # the clash costs the name, not the plugin
    (clash,) = registry.clashes
    assert clash.holder.distribution == "pufferbox-classic"
    assert clash.refused.distribution == "pufferbox-duplicate-example"
    assert "first-party plugins keep their names" in clash.line()


def test_a_plugin_registering_one_name_twice_is_broken():
    class Twice:
        @hookimpl
        def register_envs(self, register):
            register(EnvSpec(name="twice", build=EnvBuild(binding=dict)))
            register(EnvSpec(name="twice", build=EnvBuild(binding=list)))

    registry = Registry(only=[], extra_plugins=[("twice", Twice())])
    (broken,) = registry.broken()
    assert "'twice' is registered twice by (in-process)" in broken.error and registry.all_envs() == []


def test_env_var_restricts_plugins(monkeypatch):
    monkeypatch.setenv("PUFFERBOX_PLUGINS", "ocean")
    registry = Registry()
    assert {p.name for p in registry.load().plugins} == {"ocean"}
    assert {s.name for s in registry.all_envs()} == OCEAN
    with pytest.raises(UnknownEnvError):
        registry.get("cartpole")
    monkeypatch.setenv("PUFFERBOX_PLUGINS", "")
    assert Registry().all_envs() == []


def test_plugin_failing_inside_register_envs_registers_nothing():
    class HalfBroken:
        @hookimpl
        def register_envs(self, register):
            register(EnvSpec(name="half_a", build=EnvBuild(binding=dict)))
            raise ValueError("simulator version mismatch")

    registry = Registry(only=[], extra_plugins=[("half", HalfBroken())])
    (broken,) = registry.broken()
    assert broken.error == "ValueError: simulator version mismatch"
    assert registry.all_envs() == []


def test_unknown_env_suggests_close_matches():
    registry = Registry(only=["ocean"])
    with pytest.raises(UnknownEnvError, match=r"unknown env 'sqaured'; did you mean squared"):
        registry.get("sqaured")


def test_bad_spec_fields_are_rejected():
    with pytest.raises(RegistryError, match="implementation must be one of"):
        EnvSpec(name="x", build=EnvBuild(binding=dict, implementation="tpu"))
    with pytest.raises(RegistryError, match="binding must be callable"):
        EnvSpec(name="x", build=EnvBuild(binding="not callable"))
    with pytest.raises(RegistryError, match="training must be a TrainDefaults"):
        EnvSpec(name="x", build=EnvBuild(binding=dict), training={"solved_return": 1.0})
    with pytest.raises(TypeError, match="needs build=EnvBuild"):
        EnvSpec(name="x")


def test_spec_parts_separate_building_training_and_metadata():
    from pufferbox import EnvMeta, TrainDefaults

    spec = EnvSpec(
        "x",
        EnvBuild(binding=dict, kwargs={"a": 1}, episode_metrics=("m",)),
        TrainDefaults(config={"train": {"gamma": 0.9}}, solved_return=2.0),
        EnvMeta(description="d", requires={"numpy": "numpy"}),
        aliases=("y",),
    )
    assert spec.make_raw(b=2) == {"a": 1, "b": 2}
    assert spec.training.config == {"train": {"gamma": 0.9}} and spec.training.solved_return == 2.0
    assert spec.meta.description == "d" and spec.unavailable_reason is None and spec.aliases == ("y",)
    with pytest.raises(AttributeError):  # the parts are frozen: a plugin's record cannot be edited in place
        spec.build.binding = list  # type: ignore[misc]


def test_flat_keywords_still_work_and_warn():
    with pytest.warns(DeprecationWarning, match="EnvSpec\\(binding, defaults, description, solved_return=...\\)"):
        spec = EnvSpec(name="x", binding=dict, defaults={"vec": {}}, description="d", solved_return=3.0)
    assert spec.build.binding is dict and spec.training.config == {"vec": {}}
    assert spec.training.solved_return == 3.0 and spec.meta.description == "d"
    with pytest.raises(TypeError, match="unknown keyword 'colour'"):
        EnvSpec(name="x", binding=dict, colour="red")
    with pytest.raises(TypeError, match="not both"), pytest.warns(DeprecationWarning):
        EnvSpec(name="x", build=EnvBuild(binding=dict), binding=list)
