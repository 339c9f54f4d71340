"""``train.device = "auto"`` and ``train.torch_threads = 0``: the choice, and where a run shows it."""

from __future__ import annotations

import io
import types

import pytest
import torch

from pufferbox.train.config import ConfigError
from pufferbox.train.dashboard import Dashboard, terminal_writer
from pufferbox.train.hardware import (
    MAX_AUTO_THREADS,
    SMALL_POLICY_MACS,
    auto_threads,
    pick_autocast,
    pick_device,
    policy_macs,
    resolve_hardware,
    usable_cores,
)


@pytest.mark.parametrize(
    "cores, backend, workers, expected",
    [
        (2, "serial", 0, 2),  # in-process envs and the update take turns: every core
        (16, "serial", 0, MAX_AUTO_THREADS),  # capped: past that threads synchronise more than they compute
        (16, "native", 0, MAX_AUTO_THREADS),
        (4, "cuda", 0, 4),
        (16, "multiprocessing", 12, 4),  # each worker process keeps a core
        (2, "multiprocessing", 2, 1),  # at least one
        (2, "multiprocessing", 8, 1),
        (6, "ray", 2, 4),
        (1, "serial", 0, 1),
    ],
)
def test_auto_threads_takes_the_cores_the_envs_leave(cores, backend, workers, expected):
    assert auto_threads(cores, backend, workers) == expected


def test_a_small_policy_gets_one_thread_a_conv_policy_the_free_cores():
    assert auto_threads(16, "serial", 0, macs=SMALL_POLICY_MACS - 1) == 1
    assert auto_threads(16, "serial", 0, macs=SMALL_POLICY_MACS) == MAX_AUTO_THREADS
    assert auto_threads(2, "serial", 0, macs=9.4e6) == 2


def test_policy_macs_counts_linear_conv_and_recurrent_layers_per_sample():
    from gymnasium import spaces

    from pufferbox.spaces import ActionSpec, ObservationSpec
    from pufferbox.train.config import PolicyConfig
    from pufferbox.train.policies import build_agent

    vector = ObservationSpec(spaces.Box(-1, 1, (4,)))
    mlp = build_agent(vector, ActionSpec(spaces.Discrete(2)), PolicyConfig(hidden_size=64))
    linears = [m for m in mlp.modules() if isinstance(m, torch.nn.Linear)]
    assert policy_macs(mlp, vector) == sum(m.in_features * m.out_features for m in linears) < SMALL_POLICY_MACS
    image = ObservationSpec(spaces.Box(0, 255, (4, 84, 84), "uint8"))
    cnn = build_agent(image, ActionSpec(spaces.Discrete(4)), PolicyConfig(hidden_size=512))
    rng_before = torch.random.get_rng_state()
    assert 9.3e6 < policy_macs(cnn, image) < 9.4e6  # NatureCNN: 18.7 MFLOPs per frame (torch's flop counter)
    assert torch.equal(torch.random.get_rng_state(), rng_before), "counting samples no action"
    recurrent = build_agent(vector, ActionSpec(spaces.Discrete(2)), PolicyConfig(hidden_size=64, lstm=True, lstm_size=32))
    assert policy_macs(recurrent, vector) > policy_macs(mlp, vector)  # the LSTM cell's weights count too


def test_usable_cores_honours_omp_num_threads(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    all_cores = usable_cores()
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # what Ray sets for an actor with num_cpus=1 (a tournament pod)
    assert usable_cores() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "100000")
    assert usable_cores() == all_cores
    monkeypatch.setenv("OMP_NUM_THREADS", "garbage")
    assert usable_cores() == all_cores


def test_auto_device_is_cuda_when_torch_sees_one(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert pick_device("auto") == torch.device("cpu")
    with pytest.raises(ConfigError, match="no CUDA device"):
        pick_device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert pick_device("auto") == torch.device("cuda")


def test_resolved_hardware_reads_the_backend_and_its_workers():
    pool = types.SimpleNamespace(backend="multiprocessing", num_workers=3)
    hw = resolve_hardware(torch.device("cpu"), "auto", 0, pool, cores=8)
    assert hw.torch_threads == 5 and hw.as_config() == {"device": "cpu", "torch_threads": 5, "autocast": "none"}
    assert hw.describe() == "cpu (auto), 5 torch threads (auto)"
    fixed = resolve_hardware(torch.device("cpu"), "cpu", 1, pool, cores=8)
    assert fixed.torch_threads == 1 and fixed.describe() == "cpu, 1 torch thread"
    low = resolve_hardware(torch.device("cpu"), "cpu", 1, pool, autocast="bf16", requested_autocast="auto")
    assert low.describe() == "cpu, 1 torch thread, bf16 autocast (auto)" and low.as_config()["autocast"] == "bf16"
    plain = resolve_hardware(torch.device("cpu"), "cpu", 1, pool, autocast="none", requested_autocast="auto")
    assert plain.describe() == "cpu, 1 torch thread, float32 (auto: no native bf16)"


@pytest.mark.parametrize(
    ("avx512_bf16", "amx", "expected"), [(True, False, "bf16"), (False, True, "bf16"), (False, False, "none")]
)
def test_auto_autocast_is_bf16_only_where_the_cpu_multiplies_bf16(monkeypatch, avx512_bf16, amx, expected):
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx)
    assert pick_autocast("auto", torch.device("cpu")) == expected
    assert pick_autocast("none", torch.device("cpu")) == "none" and pick_autocast("bf16", torch.device("cpu")) == "bf16"


def test_auto_autocast_on_a_gpu_asks_for_native_bf16(monkeypatch):
    asked = []

    def supported(including_emulation=True):
        asked.append(including_emulation)
        return True

    monkeypatch.setattr(torch.cuda, "is_bf16_supported", supported)
    assert pick_autocast("auto", torch.device("cuda")) == "bf16" and asked == [False]  # emulated bf16 is slower


def test_learner_and_run_config_see_the_resolved_autocast(tmp_path, monkeypatch):
    import tomllib

    from click.testing import CliRunner
    from tiny import tiny_agent

    from pufferbox.cli import cli, load_commands
    from pufferbox.train.config import TrainConfig
    from pufferbox.train.learner import Learner

    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    assert not Learner(tiny_agent(seed=1), TrainConfig(autocast="auto")).low_precision
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: True)
    assert Learner(tiny_agent(seed=1), TrainConfig(autocast="auto")).low_precision
    load_commands()
    run = tmp_path / "run"
    args = ["train", "cartpole", "--run-dir", str(run), "--total-steps", "2048", "--set", "train.autocast=auto"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    saved = tomllib.loads((run / "config.toml").read_text())
    assert saved["run"]["autocast"] == "bf16" and saved["train"]["autocast"] == "auto"  # what ran, what was asked


def test_trainer_sets_the_resolved_threads(tmp_path):
    from pufferbox.train.config import resolve_config
    from pufferbox.train.trainer import Trainer

    before = torch.get_num_threads()
    try:
        trainer = Trainer("cartpole", resolve_config(overrides=["vec.num_envs=2", "train.num_steps=8"]))
        try:
            assert trainer.hardware.device == "cpu" and trainer.device == torch.device("cpu")
            assert torch.get_num_threads() == trainer.hardware.torch_threads == 1  # CartPole's MLP: one thread
        finally:
            trainer.close()
    finally:
        torch.set_num_threads(before)


def test_dashboard_and_plain_log_show_the_device():
    stream = io.StringIO()
    terminal_writer("cartpole", None, 100, stream=stream, hardware="cuda:0 (auto), 4 torch threads (auto)")
    assert "training on cuda:0 (auto), 4 torch threads (auto)" in stream.getvalue()
    board = Dashboard.__new__(Dashboard)  # render() only: no live terminal in tests
    board.env, board.run_dir, board.total_steps, board.hardware = "cartpole", None, 100, "cpu (auto), 2 torch threads"
    board.system = types.SimpleNamespace(read=lambda: {})
    from rich.console import Console

    console = Console(file=io.StringIO(), width=120)
    console.print(board.render({}))
    assert "cpu (auto), 2 torch threads" in console.file.getvalue()
