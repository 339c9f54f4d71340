"""``train.device = "auto"`` and ``train.torch_threads = 0``: the choice, and where a run shows it."""

from __future__ import annotations

import io
import types

import pytest
import torch

from pufferbox.train.config import ConfigError
from pufferbox.train.dashboard import Dashboard, terminal_writer
from pufferbox.train.hardware import MAX_AUTO_THREADS, auto_threads, pick_device, resolve_hardware, usable_cores


@pytest.mark.parametrize(
    "cores, backend, workers, expected",
    [
        (2, "serial", 0, 1),  # one core kept for env stepping and the OS
        (16, "serial", 0, MAX_AUTO_THREADS),  # capped: small matrices do not use more
        (16, "native", 0, MAX_AUTO_THREADS),
        (4, "cuda", 0, 3),
        (16, "multiprocessing", 12, 3),  # each worker process keeps a core, and one spare
        (2, "multiprocessing", 2, 1),  # at least one
        (2, "multiprocessing", 8, 1),
        (6, "ray", 2, 3),
        (1, "serial", 0, 1),
    ],
)
def test_auto_threads_takes_the_cores_the_envs_leave(cores, backend, workers, expected):
    assert auto_threads(cores, backend, workers) == expected


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
    assert hw.torch_threads == 4 and hw.as_config() == {"device": "cpu", "torch_threads": 4}  # 8 - 3 workers - 1
    assert hw.describe() == "cpu (auto), 4 torch threads (auto)"
    fixed = resolve_hardware(torch.device("cpu"), "cpu", 1, pool, cores=8)
    assert fixed.torch_threads == 1 and fixed.describe() == "cpu, 1 torch thread"


def test_trainer_sets_the_resolved_threads(tmp_path):
    from pufferbox.train.config import resolve_config
    from pufferbox.train.ppo import Trainer

    before = torch.get_num_threads()
    try:
        trainer = Trainer("cartpole", resolve_config(overrides=["vec.num_envs=2", "train.num_steps=8"]))
        try:
            assert trainer.hardware.device == "cpu" and trainer.device == torch.device("cpu")
            assert torch.get_num_threads() == trainer.hardware.torch_threads == auto_threads(usable_cores(), "serial", 0)
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
