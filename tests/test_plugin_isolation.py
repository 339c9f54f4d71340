"""One bad plugin never changes what another plugin's envs do, never kills or hangs the CLI, never replaces
a built-in command; hooks are called through pluggy; names and bindings are checked at registration."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from gymnasium import spaces

from pufferbox import EnvBuild, EnvSpec, hookimpl
from pufferbox.cli import cli, load_commands
from pufferbox.registry import Registry, RegistryError

_helper = importlib.util.spec_from_file_location("plugin_dists", Path(__file__).parent / "plugins" / "plugin_dists.py")
plugin_dists = importlib.util.module_from_spec(_helper)
_helper.loader.exec_module(plugin_dists)

OCEAN = plugin_dists.OCEAN
CLASSIC = plugin_dists.CLASSIC

pytestmark = pytest.mark.usefixtures("fresh_registry")  # tests/conftest.py


@pytest.fixture
def hostile(tmp_path, monkeypatch, request) -> dict:
    """Installs tests/plugins/hostile_plugin (and duplicate_plugin); returns an env for subprocesses."""
    plugin_dists.install("hostile_plugin", tmp_path, monkeypatch, request)
    plugin_dists.install("duplicate_plugin", tmp_path, monkeypatch, request)
    here = Path(plugin_dists.__file__).parent
    paths = [
        tmp_path / "site-hostile_plugin",
        here / "hostile_plugin",
        tmp_path / "site-duplicate_plugin",
        here / "duplicate_plugin",
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, paths), os.environ.get("PYTHONPATH", "")])}
    env.pop("PUFFERBOX_PLUGINS", None)
    return env


def test_a_duplicate_env_name_costs_only_that_name(hostile):
    registry = Registry(only=["classic", "duplicate_example", "ocean"])
    assert not registry.broken()
    assert registry.get("cartpole").meta.distribution == "pufferbox-classic"
    assert {s.name for s in registry.all_envs()} == OCEAN | CLASSIC  # ocean, loaded after it, is intact
    duplicate = next(p for p in registry.plugins if p.name == "duplicate_example")
    assert duplicate.envs == [] and duplicate.refused == ["cartpole"]
    assert "env 'cartpole' refused: pufferbox-classic holds the name" in duplicate.notes[0]


def test_an_alias_never_takes_another_plugins_env_name(hostile):
    registry = Registry(only=["classic", "hostile_aliases", "ocean"])
    assert not registry.broken()
    assert registry.get("cartpole").meta.plugin == "classic"  # env loaded before the alias: the alias is refused
    assert registry.get("squared").meta.plugin == "ocean"  # env loaded after the alias: refused all the same
    assert registry.get("robber").name == "thief"  # its own alias still works
    notes = " ".join(next(p for p in registry.plugins if p.name == "hostile_aliases").notes)
    assert "alias 'cartpole' of 'thief' refused: pufferbox-classic holds the name" in notes
    assert "alias 'squared' of 'thief' refused: pufferbox-ocean holds the name" in notes


def test_a_plugin_raising_systemexit_at_import_is_reported(hostile):
    registry = Registry(only=["classic", "hostile_exit", "ocean"])
    (broken,) = registry.broken()
    assert broken.name == "hostile_exit" and broken.error == "SystemExit: 2"
    assert "Traceback" in broken.traceback
    assert {s.name for s in registry.all_envs()} == OCEAN | CLASSIC


def test_a_plugin_whose_import_hangs_is_reported_after_the_timeout(hostile, monkeypatch):
    monkeypatch.setenv("PUFFERBOX_PLUGIN_IMPORT_TIMEOUT", "1")
    start = time.monotonic()
    registry = Registry(only=["classic", "hostile_hang", "ocean"])
    (broken,) = registry.broken()
    assert time.monotonic() - start < 30
    assert broken.name == "hostile_hang" and "did not finish within 1 s" in broken.error
    assert {s.name for s in registry.all_envs()} == OCEAN | CLASSIC


def test_help_imports_no_plugin_and_commands_that_need_plugins_are_bounded(hostile):
    for args in (["--help"], ["train", "--help"], ["--version"]):
        proc = subprocess.run(
            [sys.executable, "-m", "pufferbox", *args], capture_output=True, text=True, env=hostile, timeout=30
        )  # the hanging plugin is installed: no plugin imported
        assert proc.returncode == 0, proc.stderr
    env = {**hostile, "PUFFERBOX_PLUGIN_IMPORT_TIMEOUT": "2", "PUFFERBOX_PLUGINS": "classic,hostile_hang,hostile_exit"}
    proc = subprocess.run(
        [sys.executable, "-m", "pufferbox", "envs", "--json"], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    rows = {row["name"]: row for row in json.loads(proc.stdout)}
    assert rows["cartpole"]["status"] == "ok"
    assert "did not finish within 2 s" in rows["(hostile_hang)"]["reason"]
    assert rows["(hostile_exit)"]["reason"] == "SystemExit: 2"


def test_a_plugin_cannot_replace_a_built_in_command(hostile):
    load_commands()
    group = click.Group("pufferbox", commands=dict(cli.commands))
    train = group.commands["train"]
    registry = Registry(only=["hostile_commands"])
    registry.add_commands(group)
    assert group.commands["train"] is train and "hostile-hello" in group.commands
    (info,) = registry.plugins
    assert info.ok and info.notes == ["command 'train' refused: it exists already"]


def test_plugin_commands_run_from_the_command_line(hostile):
    env = {**hostile, "PUFFERBOX_PLUGINS": "hostile_commands"}
    proc = subprocess.run(
        [sys.executable, "-m", "pufferbox", "hostile-hello"], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0 and "hello from a plugin command" in proc.stdout, proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "pufferbox", "train", "--help"], capture_output=True, text=True, env=env, timeout=60
    )
    assert "hijacked" not in proc.stdout and "Train PPO on ENV" in proc.stdout


def test_hooks_are_called_through_pluggy():
    called = []

    class Plugin:
        @hookimpl
        def register_envs(self, register):
            register(EnvSpec(name="traced", build=EnvBuild(binding=dict)))

    registry = Registry(only=[], extra_plugins=[("traced_plugin", Plugin())])
    registry.manager.add_hookcall_monitoring(
        before=lambda hook, impls, kwargs: called.append((hook, [i.plugin_name for i in impls])),
        after=lambda outcome, hook, impls, kwargs: None,
    )
    registry.load()
    assert ("register_envs", ["traced_plugin"]) in called
    assert registry.get("traced").meta.plugin == "traced_plugin"


@pytest.mark.parametrize("name", ["", "../escape", "/abs/path", "a//b", "a/../b", ".hidden", "a b", "x/"])
def test_env_names_that_are_not_plain_paths_are_refused(name):
    with pytest.raises(RegistryError, match="use letters, digits"):
        EnvSpec(name=name, build=EnvBuild(binding=dict))
    with pytest.raises(RegistryError, match="use letters, digits"):
        EnvSpec(name="fine", build=EnvBuild(binding=dict), aliases=(name,))
    EnvSpec(name="family/env-v1.2_x+", build=EnvBuild(binding=dict))


def test_a_binding_that_is_not_importable_by_reference_is_refused():
    def local_binding():
        return None

    for binding in (lambda: None, local_binding):
        with pytest.raises(RegistryError, match="not importable by reference.*define it with `def` at module level"):
            EnvSpec(name="x", build=EnvBuild(binding=binding))


def test_envs_status_says_what_training_will_do(monkeypatch):
    class Plugin:
        @hookimpl
        def register_envs(self, register):
            register(
                EnvSpec(
                    name="texty",
                    build=EnvBuild(binding=dict, observation_space=spaces.Box(0, 1, (2,)), action_space=spaces.Text(5)),
                )
            )
            register(EnvSpec(name="fine", build=EnvBuild(binding=dict, action_space=spaces.Discrete(2))))

    registry = Registry(only=["warp"], extra_plugins=[("texty_plugin", Plugin())])
    monkeypatch.setattr("pufferbox.cli.envs.get_registry", lambda: registry)
    load_commands()
    rows = {r["name"]: r for r in json.loads(CliRunner().invoke(cli, ["envs", "--json"]).output)}
    assert rows["texty"]["status"] == "broken" and "cannot flatten" in rows["texty"]["reason"]
    assert rows["fine"]["status"] == "ok"
    from pufferbox.cuda.device import gpu_unavailable_reason

    if gpu_unavailable_reason() is None:
        assert rows["tag"]["status"] == "ok"
    else:
        assert rows["tag"]["status"] == "ok (cpu reference; --backend cuda needs a GPU)"
        assert rows["tag"]["reason"] == gpu_unavailable_reason()
    table = CliRunner().invoke(cli, ["envs"]).output
    assert "broken" in table and "cannot flatten" in table


def test_plugins_lists_one_row_per_plugin_with_its_env_count(monkeypatch):
    monkeypatch.setenv("PUFFERBOX_PLUGINS", "ocean,classic")
    load_commands()
    short = CliRunner().invoke(cli, ["plugins"]).output
    assert "ocean" in short and f" {len(OCEAN)} " in short and "squared" not in short
    assert "squared" in CliRunner().invoke(cli, ["plugins", "--all"]).output
    assert "squared" in CliRunner().invoke(cli, ["plugins", "-v"]).output
