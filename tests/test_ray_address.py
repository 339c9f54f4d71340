"""`pufferbox train --ray-address` reaches the Ray backends as an argument, never through the environment."""

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
