"""Two plugins offering one env name (issue 38, defect 1): the clash costs only that name, first-party
plugins keep theirs by default, ``PUFFERBOX_PREFER`` / ``--plugin`` pick the owner, and ``plugins`` /
``envs`` say who holds each name and who was refused. The stranger is a real entry point
(tests/plugins/aadup_plugin: ``aadup`` loads before ``classic``, offers ``cartpole`` and alias ``acrobot``)."""

from __future__ import annotations

import importlib.util
import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from pufferbox.cli import cli, load_commands
from pufferbox.registry import FIRST_PARTY, Registry, RegistryError

_helper = importlib.util.spec_from_file_location("plugin_dists", Path(__file__).parent / "plugins" / "plugin_dists.py")
plugin_dists = importlib.util.module_from_spec(_helper)
_helper.loader.exec_module(plugin_dists)

CLASSIC = plugin_dists.CLASSIC
QUICK = ["--num-envs", "4", "--set", "train.num_steps=16", "--total-steps", "256", "--no-tensorboard"]

pytestmark = pytest.mark.usefixtures("fresh_registry")  # tests/conftest.py


@pytest.fixture
def stranger(tmp_path, monkeypatch, request) -> None:
    monkeypatch.delenv("PUFFERBOX_PREFER", raising=False)  # restored after the test (--plugin sets it)
    plugin_dists.install("aadup_plugin", tmp_path, monkeypatch, request)


def plugin(registry: Registry, name: str):
    return next(p for p in registry.plugins if p.name == name)


def test_a_stranger_offering_cartpole_costs_classic_nothing(stranger):
    registry = Registry(only=["aadup", "classic"]).load()
    assert [p.name for p in registry.plugins] == ["aadup", "classic"]  # the stranger loads first
    assert not registry.broken()
    classic, aadup = plugin(registry, "classic"), plugin(registry, "aadup")
    assert set(classic.envs) == CLASSIC and classic.refused == []
    assert {name: registry.get(name).meta.distribution for name in CLASSIC} == dict.fromkeys(CLASSIC, "pufferbox-classic")
    assert aadup.envs == ["aadup/coin"] and aadup.refused == ["cartpole"]  # its other env and alias still work
    assert registry.get("coin").meta.distribution == "aadup-envs"
    assert aadup.notes == [
        "env 'cartpole' refused: pufferbox-classic holds the name (first-party plugins keep their names); "
        "pick it with PUFFERBOX_PREFER=aadup-envs or --plugin aadup-envs"
    ]
    assert classic.notes == ["'cartpole' kept: aadup-envs offered it too (as env; refused)"]


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_prefer_gives_the_name_to_the_stranger_and_nothing_else(stranger, monkeypatch, how):
    if how == "environment":
        monkeypatch.setenv("PUFFERBOX_PREFER", "Aadup_Envs")  # compared as pip compares names
        registry = Registry(only=["aadup", "classic"]).load()
    else:
        registry = Registry(only=["aadup", "classic"], prefer=["aadup-envs"]).load()
    classic, aadup = plugin(registry, "classic"), plugin(registry, "aadup")
    assert registry.get("cartpole").meta.distribution == "aadup-envs"
    assert set(classic.envs) == CLASSIC - {"cartpole"} and classic.refused == ["cartpole"]
    assert registry.get("acrobot").meta.distribution == "pufferbox-classic"  # an alias never takes an env's name
    assert "aadup-envs is preferred by PUFFERBOX_PREFER" in classic.notes[0]
    assert "alias 'acrobot' of 'cartpole' refused: pufferbox-classic holds the name" in " ".join(aadup.notes)
    assert not registry.broken()


def test_get_from_a_plugin_takes_its_offer_even_when_refused(stranger):
    registry = Registry(only=["aadup", "classic"]).load()
    assert registry.get("cartpole").meta.distribution == "pufferbox-classic"
    assert registry.get("cartpole", plugin="aadup-envs").meta.distribution == "aadup-envs"
    assert registry.get("cartpole", plugin="aadup").build.binding.__module__ == "aadup_envs.plugin"
    assert registry.get("cartpole", plugin="pufferbox-classic").meta.plugin == "classic"
    with pytest.raises(RegistryError, match="plugin 'aadup-envs' offers no env 'pendulum' \\(it is pufferbox-classic's\\)"):
        registry.get("pendulum", plugin="aadup-envs")
    with pytest.raises(RegistryError, match="plugin 'nosuch' is not installed"):
        registry.get("cartpole", plugin="nosuch")


def test_two_strangers_tie_on_load_order_and_say_so(stranger, tmp_path, monkeypatch, request):
    plugin_dists.install("duplicate_plugin", tmp_path, monkeypatch, request)
    registry = Registry(only=["aadup", "duplicate_example"])
    assert registry.get("cartpole").meta.distribution == "aadup-envs"
    assert "plugin 'aadup' loads first (entry points load in name order)" in plugin(registry, "duplicate_example").notes[0]
    registry = Registry(only=["aadup", "duplicate_example"], prefer=["pufferbox-duplicate-example"])
    assert registry.get("cartpole").meta.distribution == "pufferbox-duplicate-example"


def test_plugins_and_envs_say_who_holds_the_name_and_who_was_refused(stranger, monkeypatch):
    monkeypatch.setenv("PUFFERBOX_PLUGINS", "aadup,classic")
    load_commands()
    rows = {row["name"]: row for row in json.loads(CliRunner().invoke(cli, ["plugins", "--json"]).output)}
    assert rows["classic"]["status"] == "ok" and len(rows["classic"]["envs"]) == len(CLASSIC)
    assert rows["aadup"]["refused"] == ["cartpole"] and rows["aadup"]["envs"] == ["aadup/coin"]
    table = CliRunner().invoke(cli, ["plugins"]).output
    assert "note: aadup: env 'cartpole' refused: pufferbox-classic holds the name" in table
    assert "note: classic: 'cartpole' kept: aadup-envs offered it too" in table
    envs = json.loads(CliRunner().invoke(cli, ["envs", "--json"]).output)
    (held,) = [r for r in envs if r["name"] == "cartpole" and r["status"] == "ok"]
    (refused,) = [r for r in envs if r["name"] == "cartpole" and r["status"] == "refused"]
    assert held["distribution"] == "pufferbox-classic" and held["also_offered_by"] == ["aadup-envs"]
    assert refused["distribution"] == "aadup-envs" and "PUFFERBOX_PREFER=aadup-envs" in refused["reason"]
    table = CliRunner().invoke(cli, ["envs"]).output
    assert "note: aadup: env 'cartpole' refused: pufferbox-classic holds the name" in table


def mean_episode_length(run_dir: Path) -> float:
    lengths = [json.loads(line).get("episode_length") for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return max(x for x in lengths if x is not None)


def test_train_plugin_trains_the_strangers_env_and_resume_keeps_it(stranger, monkeypatch, tmp_path):
    monkeypatch.setenv("PUFFERBOX_PLUGINS", "aadup,classic")
    load_commands()
    run_dir = tmp_path / "theirs"
    result = CliRunner().invoke(cli, ["train", "cartpole", "--plugin", "aadup-envs", "--run-dir", str(run_dir), *QUICK])
    assert result.exit_code == 0, result.output
    assert tomllib.loads((run_dir / "config.toml").read_text())["run"]["distribution"] == "aadup-envs"
    assert mean_episode_length(run_dir) <= 5  # the stranger's CartPole ends after 5 steps; classic's never that soon
    monkeypatch.delenv("PUFFERBOX_PREFER")  # a later resume without --plugin still trains the stranger's env
    from pufferbox.registry import get_registry

    get_registry.cache_clear()
    result = CliRunner().invoke(cli, ["train", "--resume", str(run_dir), "--total-steps", "512", "--no-tensorboard"])
    assert result.exit_code == 0, result.output
    assert mean_episode_length(run_dir) <= 5
    mine = tmp_path / "mine"
    result = CliRunner().invoke(cli, ["train", "cartpole", "--run-dir", str(mine), *QUICK])
    assert result.exit_code == 0 and mean_episode_length(mine) > 5  # without --plugin: classic's


def test_plugin_option_errors_are_one_line(stranger, monkeypatch, tmp_path):
    monkeypatch.setenv("PUFFERBOX_PLUGINS", "aadup,classic")
    load_commands()
    for args in (["train", "pendulum", "--plugin", "aadup-envs"], ["check", "cartpole", "--plugin", "nosuch"]):
        result = CliRunner().invoke(cli, [*args, "--run-dir", str(tmp_path / "x")] if args[0] == "train" else args)
        assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
        assert result.output.startswith("Error: plugin ")
    assert not (tmp_path / "x").exists()


def test_first_party_lists_this_repositorys_plugins():
    root = Path(__file__).resolve().parents[1]
    names = {tomllib.loads(p.read_text())["project"]["name"] for p in root.glob("plugins/*/pyproject.toml")}
    assert names == FIRST_PARTY, "a plugin was added to plugins/: add its distribution to registry.FIRST_PARTY"


def test_eval_of_the_strangers_checkpoint_plays_the_strangers_env(stranger, monkeypatch, tmp_path):
    monkeypatch.setenv("PUFFERBOX_PLUGINS", "aadup,classic")
    load_commands()
    run_dir = tmp_path / "theirs"
    result = CliRunner().invoke(cli, ["train", "cartpole", "--plugin", "aadup-envs", "--run-dir", str(run_dir), *QUICK])
    assert result.exit_code == 0, result.output
    monkeypatch.delenv("PUFFERBOX_PREFER")  # eval without --plugin: the checkpoint says whose env it is
    from pufferbox.registry import get_registry

    get_registry.cache_clear()
    result = CliRunner().invoke(cli, ["eval", "--checkpoint", str(run_dir), "--episodes", "3"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["mean_length"] <= 5  # the stranger's CartPole: 5 steps at most


def test_a_checkpoint_of_a_plugin_no_longer_installed_is_refused_in_one_line(stranger):
    registry = Registry(only=["classic"])
    with pytest.raises(RegistryError, match="env 'cartpole' was trained from aadup-envs, which no longer offers it"):
        registry.get_trained("cartpole", "aadup-envs")
    assert registry.get_trained("cartpole", "pufferbox-classic") is registry.get("cartpole")
    assert registry.get_trained("cartpole", None) is registry.get("cartpole")  # checkpoints from before the record


def test_an_alias_two_plugins_offer_follows_the_same_rules():
    from pufferbox import EnvBuild, EnvSpec, hookimpl

    def plugin_offering(env: str):
        class Offer:
            @hookimpl
            def register_envs(self, register):
                register(EnvSpec(env, EnvBuild(binding=dict), aliases=("shared",)))

        return Offer()

    plugins = [("alpha", plugin_offering("a_env")), ("beta", plugin_offering("b_env"))]
    registry = Registry(only=[], extra_plugins=plugins).load()
    assert registry.get("shared").name == "a_env" and {s.name for s in registry.all_envs()} == {"a_env", "b_env"}
    assert "alias 'shared' of 'b_env' refused" in plugin(registry, "beta").notes[0]
    assert "plugin 'alpha' loads first" in plugin(registry, "beta").notes[0]
    assert Registry(only=[], extra_plugins=plugins, prefer=["beta"]).get("shared").name == "b_env"
