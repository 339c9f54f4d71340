"""Plugins that misbehave (issue 54): an env whose constructor raises is one line naming the env, its plugin
and the exception's message in every command that builds it, exit 2, no run dir left."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from pufferbox.cli import cli, load_commands
from pufferbox.registry import EnvMeta, EnvSpec, get_registry
from pufferbox.vector.testenvs import env_spec_for


def broken_spec(**kwargs) -> EnvSpec:
    """``faulty`` as if a plugin (distribution ``pufferbox-broken``) registered it."""
    build = env_spec_for("faulty", **kwargs).build
    return EnvSpec(name="faulty", build=build, meta=EnvMeta(plugin="broken", distribution="pufferbox-broken"))


@pytest.fixture
def faulty(monkeypatch):
    """``pufferbox ... faulty`` resolves to :func:`broken_spec` with the kwargs the test sets."""
    load_commands()
    registry, settings = get_registry(), {}
    real_get = registry.get
    monkeypatch.setattr(
        registry, "get", lambda name, plugin=None: broken_spec(**settings) if name == "faulty" else real_get(name, plugin)
    )
    return settings


@pytest.mark.parametrize(
    "args",
    [["train", "faulty", "--no-tensorboard", "--run-dir"], ["info", "faulty"], ["bench", "faulty"], ["check", "faulty"]],
    ids=["train", "info", "bench", "check"],
)
def test_an_env_whose_constructor_raises_is_one_line_naming_env_plugin_and_message(tmp_path, faulty, args):
    faulty["mode"] = "init"
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(cli, [*args, str(run_dir)] if args[-1] == "--run-dir" else args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    line = lines[0]
    for needle in ["Error: env 'faulty'", "pufferbox-broken", "FileNotFoundError: deliberate failure: no ROM"]:
        assert needle in line, line
    assert not run_dir.exists()
