"""`pufferbox train --ray-address` reaches the Ray backends through the run config (`vec.ray_address`), never through
the environment; a resumed run joins the resuming command's cluster."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner


class Joined(Exception):
    """Raised where Ray would be joined, carrying the address it was given."""


@pytest.fixture
def joins(monkeypatch):
    """Every ensure_ray call of the Ray backends raises Joined(address) instead of starting Ray."""

    def record(address=None, num_cpus=None):
        raise Joined(address)

    import pufferbox.vector.ray
    import pufferbox.vector.ray_rollout

    monkeypatch.setattr(pufferbox.vector.ray_rollout, "ensure_ray", record)
    monkeypatch.setattr(pufferbox.vector.ray, "ensure_ray", record)
    monkeypatch.setattr(pufferbox.vector.ray, "check_reachable", lambda address: None)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)


@pytest.mark.parametrize("env", ["cartpole", "tag"])  # rollouts on the actors; a grouped env's send/recv actors
def test_the_cli_passes_the_address_to_the_backend(env, joins, tmp_path):
    from pufferbox.cli import cli, load_commands

    load_commands()
    args = ["train", env, "--backend", "ray", "--ray-address", "10.1.2.3:6379", "--run-dir", str(tmp_path / "r")]
    result = CliRunner().invoke(cli, args)
    assert isinstance(result.exception, Joined), result.output
    assert result.exception.args == ("10.1.2.3:6379",)
    assert "RAY_ADDRESS" not in os.environ


def test_without_an_address_the_backend_decides(joins, tmp_path):
    from pufferbox.train.runner import run

    with pytest.raises(Joined) as joined:
        run("cartpole", flags={"vec.backend": "ray"}, run_dir=tmp_path / "r", dashboard=False, tensorboard=False)
    assert joined.value.args == (None,)  # ensure_ray then reads $RAY_ADDRESS, else starts a local Ray


def test_the_address_is_a_setting_of_the_run_config(joins, tmp_path):
    from pufferbox.registry import get_registry
    from pufferbox.train.plan import planned_config

    run, _ = planned_config(get_registry().get("cartpole"), flags={"vec.ray_address": "10.1.2.3:6379"})
    assert run.vec.ray_address == "10.1.2.3:6379" and run.sources["vec.ray_address"] == "--ray-address"
    assert planned_config(get_registry().get("cartpole"))[0].vec.ray_address == ""  # "": $RAY_ADDRESS, else local


def test_a_resumed_run_joins_the_resuming_commands_cluster_not_the_recorded_one(joins, tmp_path):
    from pufferbox.train.config import load_toml
    from pufferbox.train.runner import resolve_resume, run

    run_dir = tmp_path / "r"
    recorded = "vec.ray_address=10.9.9.9:6379"  # a cluster of the machine the run started on
    quick = ["vec.num_envs=4", "train.num_steps=16", "train.total_steps=64", recorded]
    run("cartpole", overrides=quick, run_dir=run_dir, dashboard=False, tensorboard=False)
    config = load_toml(run_dir / "config.toml")
    assert config["vec"]["ray_address"] == "10.9.9.9:6379"
    assert config["run"]["sources"]["vec.ray_address"] == f"--set {recorded}"
    _, resumed, _, _ = resolve_resume(None, run_dir, None, None)
    assert resumed.vec.ray_address == "" and "vec.ray_address" not in resumed.sources
    _, flagged, _, _ = resolve_resume(None, run_dir, None, {"vec.ray_address": "10.1.2.3:6379"})
    assert flagged.vec.ray_address == "10.1.2.3:6379" and flagged.sources["vec.ray_address"] == "--ray-address"
    more = {"vec.backend": "ray", "train.total_steps": 128}
    with pytest.raises(Joined) as joined:
        run(resume=run_dir, flags=more, dashboard=False, tensorboard=False)
    assert joined.value.args == (None,)  # $RAY_ADDRESS of this command, else a local Ray
    with pytest.raises(Joined) as joined:
        run(resume=run_dir, flags=more | {"vec.ray_address": "10.1.2.3:6379"}, dashboard=False, tensorboard=False)
    assert joined.value.args == ("10.1.2.3:6379",)


def test_a_tournament_joins_the_address_its_command_gives(joins, tmp_path):
    from pufferbox.tournament.orchestrator import Tournament
    from pufferbox.tournament.settings import TournamentSettings

    settings = TournamentSettings(env="cartpole", pods=1, total_steps=4096)
    recorded = ["vec.ray_address=10.9.9.9:6379"]  # on the board: the pods' config
    with pytest.raises(Joined) as joined:
        Tournament.open(settings, tmp_path / "t", False, overrides=recorded)
    assert joined.value.args == ("10.9.9.9:6379",)
    with pytest.raises(Joined) as joined:
        Tournament.open(TournamentSettings(), tmp_path / "t", True, ray_address="10.1.2.3:6379")
    assert joined.value.args == ("10.1.2.3:6379",)
    with pytest.raises(Joined) as joined:  # resumed without --ray-address: $RAY_ADDRESS, else a local Ray
        Tournament.open(TournamentSettings(), tmp_path / "t", True)
    assert joined.value.args == (None,)
