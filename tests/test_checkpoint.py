"""Checkpoints: atomic under a crash mid-write, last K kept, no pickled code, exact resume."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from pufferbox.registry import get_registry
from pufferbox.train.checkpoint import (
    CheckpointError,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    save_checkpoint,
)
from pufferbox.train.config import resolve_config
from pufferbox.train.ppo import Trainer


def test_keeps_the_last_k(tmp_path):
    for update in range(1, 6):
        save_checkpoint({"update": update}, tmp_path, update, keep=2)
    assert [load_checkpoint(p)["update"] for p in list_checkpoints(tmp_path)] == [4, 5]
    assert load_checkpoint(tmp_path)["update"] == 5  # a directory means its newest checkpoint


def test_crash_mid_write_leaves_the_previous_checkpoint_intact(tmp_path):
    """A process killed inside torch.save (after writing part of the file) must not clobber anything."""
    script = textwrap.dedent(f"""
        import os, torch
        from pufferbox.train import checkpoint
        checkpoint.save_checkpoint({{"update": 1, "w": torch.arange(1000)}}, {str(tmp_path)!r}, 1)
        def dying_save(obj, fh):
            fh.write(b"partial checkpoint bytes")
            fh.flush()
            os._exit(17)  # killed mid-write: no cleanup handlers run
        torch.save = dying_save
        checkpoint.save_checkpoint({{"update": 2}}, {str(tmp_path)!r}, 2)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 17, proc.stderr
    assert latest_checkpoint(tmp_path).name == "ckpt-00000001.pt"
    state = load_checkpoint(latest_checkpoint(tmp_path))
    assert state["update"] == 1 and torch.equal(state["w"], torch.arange(1000))
    assert not (tmp_path / "ckpt-00000002.pt").exists()


def test_exception_mid_write_removes_the_temp_file(tmp_path, monkeypatch):
    save_checkpoint({"update": 1}, tmp_path, 1)

    def failing_save(obj, fh):
        fh.write(b"xx")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", failing_save)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint({"update": 2}, tmp_path, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt-00000001.pt"]


class Exploit:
    def __reduce__(self):
        return (open, ("/tmp/pufferbox-pwned-by-checkpoint", "w"))


def test_loading_never_runs_pickled_code(tmp_path):
    path = tmp_path / "ckpt-00000001.pt"
    torch.save({"model": Exploit()}, path)
    with pytest.raises(CheckpointError, match="not a loadable pufferbox checkpoint"):
        load_checkpoint(path)
    import os

    assert not os.path.exists("/tmp/pufferbox-pwned-by-checkpoint")


def tiny_config(**extra: str) -> dict:
    overrides = [
        "vec.num_envs=4",
        "train.num_steps=16",
        "train.checkpoint_interval=2",
        "train.total_steps=100000",
        "train.stop_on_solve=false",
        *[f"{k}={v}" for k, v in extra.items()],
    ]
    return resolve_config(get_registry().get("cartpole").training.config, overrides=overrides)


def comparable(history: list[dict]) -> list[dict]:
    return [{k: v for k, v in m.items() if k not in ("wall_time", "sps") and not k.startswith("time_")} for m in history]


@pytest.mark.parametrize("extra", [{}, {"vec.native": "false", "policy.lstm": "true"}], ids=["native-mlp", "emulated-lstm"])
def test_resume_matches_an_uninterrupted_run(tmp_path, extra):
    config = tiny_config(**extra)
    per_update = 4 * 16
    whole = Trainer("cartpole", config, run_dir=tmp_path / "whole")
    whole_history = whole.train_steps(6 * per_update)
    whole.close()

    first = Trainer("cartpole", config, run_dir=tmp_path / "split")
    first.train_steps(4 * per_update)  # checkpoints at updates 2 and 4
    first.close()
    second = Trainer("cartpole", config, run_dir=tmp_path / "split")
    second.load_checkpoint(latest_checkpoint(tmp_path / "split" / "checkpoints"))
    assert second.update == 4
    resumed_history = second.train_steps(2 * per_update)
    second.close()

    assert comparable(resumed_history) == comparable(whole_history[4:])
    for (name, a), (_, b) in zip(whole.agent.state_dict().items(), second.agent.state_dict().items()):
        assert torch.equal(a, b), name
    assert whole.global_step == second.global_step == 6 * per_update
