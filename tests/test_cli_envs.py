"""The CLI: envs/plugins/info/check through click's runner, and one real subprocess."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
from click.testing import CliRunner

from pufferbox import EnvBuild, EnvSpec, __version__, hookimpl
from pufferbox.cli import cli, load_commands
from pufferbox.registry import Registry

_helper = importlib.util.spec_from_file_location("plugin_dists", Path(__file__).parent / "plugins" / "plugin_dists.py")
plugin_dists = importlib.util.module_from_spec(_helper)
_helper.loader.exec_module(plugin_dists)

ROOT = Path(__file__).resolve().parents[1]
FIRST_PARTY = {"cartpole", "squared", "password", "stochastic", "memory", "multiagent", "spaces", "bandit"}
load_commands()

pytestmark = pytest.mark.usefixtures("fresh_registry")  # tests/conftest.py


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), prog_name="pufferbox")


def test_version_and_help_on_every_command():
    result = invoke("--version")
    assert result.exit_code == 0 and __version__ in result.output
    assert {"envs", "plugins", "info", "check"} <= set(cli.commands)
    for name in cli.commands:
        result = invoke(name, "--help")
        assert result.exit_code == 0, (name, result.output)
        assert "Usage: pufferbox " + name in result.output


def test_envs_json_lists_first_party_ok_and_the_broken_plugin(tmp_path, monkeypatch, request):
    plugin_dists.install("broken_plugin", tmp_path, monkeypatch, request)
    monkeypatch.setenv("PUFFERBOX_PLUGINS", "classic,ocean,broken_example")
    result = invoke("envs", "--json")
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.output)}
    for name in FIRST_PARTY:
        assert rows[name]["status"] == "ok"
        assert rows[name]["version"] == "0.1.0" and rows[name]["implementation"] == "cpu"
    assert rows["squared"]["plugin"] == "ocean" and rows["squared"]["native"] is True
    broken = rows["(broken_example)"]
    assert broken["status"] == "broken" and "no-such-simulator" in broken["reason"]
    assert broken["distribution"] == "pufferbox-broken-example"
    plugins = {row["name"]: row for row in json.loads(invoke("plugins", "--json").output)}
    assert plugins["broken_example"]["status"] == "broken"
    assert plugins["ocean"]["status"] == "ok"
    assert len(plugins["ocean"]["envs"]) == 7 + len(plugin_dists.OCEAN_GAMES)  # the sanity envs, every C game
    table = invoke("envs")
    assert table.exit_code == 0 and "broken" in table.output and "cartpole" in table.output


def test_info_shows_nested_layout():
    result = invoke("info", "spaces", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["agents_per_env"] == 1 and data["native_batched"] is True
    assert [f["path"] for f in data["observation_fields"]] == ["image", "meta/0", "meta/1/bits"]
    assert data["flat_action"].startswith("MultiDiscrete")
    assert data["solved_return"] == 0.9
    assert invoke("info", "multiagent", "--json").exit_code == 0
    assert json.loads(invoke("info", "multiagent", "--json").output)["agents_per_env"] == 2
    assert "flat_observation" in invoke("info", "cartpole").output


@pytest.mark.parametrize("gpus", [0, 1])
def test_info_names_the_layer_behind_each_setting(monkeypatch, gpus):
    from pufferbox.train.plan import Machine

    here = Machine(cores=16, memory=60 * 2**30, shm=30 * 2**30, gpus=gpus, gpu_memory=80 * 2**30 * gpus)
    monkeypatch.setattr(Machine, "here", classmethod(lambda cls, shm_dir="/dev/shm": here))
    text = invoke("info", "cartpole")
    assert text.exit_code == 0, text.output
    assert "    train.gamma = 0.98  (plugin defaults)" in text.output
    settings = json.loads(invoke("info", "cartpole", "--json").output)["settings"]
    assert settings["train.gamma"] == {"value": 0.98, "source": "plugin defaults"}
    assert "train.clip_coef" not in settings  # a built-in
    if gpus:  # a CUDA device trains: cartpole's GPU profile, which the plan keeps for a native env
        assert "    train.update_epochs = 4  (GPU profile)" in text.output
        assert settings["vec.num_envs"] == {"value": 2048, "source": "GPU profile"}
    else:
        assert settings["train.update_epochs"]["source"] == "plugin defaults"


def test_info_names_the_plan_where_it_scales(monkeypatch):
    from pufferbox.train.plan import Machine

    here = Machine(cores=16, memory=60 * 2**30, shm=30 * 2**30)  # nethack: spread over 8 worker processes
    monkeypatch.setattr(Machine, "here", classmethod(lambda cls, shm_dir="/dev/shm": here))
    settings = json.loads(invoke("info", "nethack", "--json").output)["settings"]
    assert settings["vec.backend"] == {"value": "multiprocessing", "source": "plan"}


def test_unknown_env_is_one_line_exit_2(monkeypatch):
    monkeypatch.setenv("PUFFERBOX_PLUGINS", "classic,ocean")  # other installed plugins would add matches
    for command in ("info", "check"):
        result = invoke(command, "sqaured")
        assert result.exit_code == 2
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: unknown env 'sqaured'; did you mean squared")


def test_check_passes_on_a_first_party_env():
    result = invoke("check", "multiagent", "--steps", "30")
    assert result.exit_code == 0, result.output
    assert "multiagent: all 9 checks passed" in result.output


class NoisyEnv:
    """Observations from the global numpy RNG: not reproducible from the reset seed."""

    def __new__(cls):
        import gymnasium
        import numpy as np

        class Noisy(gymnasium.Env):
            observation_space = gymnasium.spaces.Box(0.0, 1.0, (2,), dtype=np.float32)
            action_space = gymnasium.spaces.Discrete(2)

            def reset(self, *, seed=None, options=None):
                super().reset(seed=seed)
                return np.zeros(2, np.float32), {}

            def step(self, action):
                return np.random.random(2).astype(np.float32), 0.0, False, False, {}

        return Noisy()


def test_check_fails_with_exit_1_naming_the_check(monkeypatch):
    class Plugin:
        @hookimpl
        def register_envs(self, register):
            register(EnvSpec(name="noisy", build=EnvBuild(binding=NoisyEnv)))

    registry = Registry(only=[], extra_plugins=[("noisy_plugin", Plugin())])
    monkeypatch.setattr("pufferbox.cli.check.get_registry", lambda: registry)
    result = invoke("check", "noisy", "--steps", "20", "--check", "determinism", "--check", "api")
    assert result.exit_code == 1
    assert "FAIL determinism: seed 0, record 1: observation" in result.output
    assert "noisy: failed determinism" in result.output
    assert invoke("check", "noisy", "--check", "vibes").exit_code == 2


def test_check_cuda_missing_module_is_one_line_exit_2(monkeypatch):
    monkeypatch.setitem(sys.modules, "pufferbox.cuda.consistency", None)  # makes the import fail
    result = invoke("check", "tag", "--steps", "5", "--check", "api", "--cuda")
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1].startswith("Error: --cuda needs pufferbox.cuda.consistency")


def test_check_cuda_on_an_env_without_kernel_is_one_line_exit_2():
    result = invoke("check", "bandit", "--steps", "5", "--cuda", "--host")
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == (
        "Error: --cuda: env 'bandit' has no CUDA kernel; `pufferbox envs` lists the cuda ones"
    )


def test_check_cuda_reports_the_consistency_result(monkeypatch):
    calls = []

    class Report:
        ok = False

        def summary(self):
            return "step 17: observations differ in env 3"

    def check_env(spec, num_envs, steps, seed, device):
        calls.append((spec.name, num_envs, steps, seed, device))
        return Report()

    monkeypatch.setitem(sys.modules, "pufferbox.cuda.consistency", types.SimpleNamespace(check_env=check_env))
    result = invoke("check", "tag", "--steps", "5", "--check", "api", "--cuda")
    assert calls == [("tag", 8, 200, 0, "gpu")]
    assert result.exit_code == 1 and "FAIL cuda: step 17: observations differ in env 3" in result.output


def test_real_subprocess_envs_json():
    exe = ROOT / ".venv" / "bin" / "pufferbox"
    if not exe.exists():
        exe = Path(sys.executable).parent / "pufferbox"
    out = subprocess.run([str(exe), "envs", "--json"], capture_output=True, text=True, timeout=120, check=True)
    rows = {row["name"]: row for row in json.loads(out.stdout)}
    assert {name for name in FIRST_PARTY if rows.get(name, {}).get("status") == "ok"} == FIRST_PARTY
