"""Checkpoints: atomic under a crash mid-write, last K kept, no pickled code, deterministic resume, no cut episodes."""

from __future__ import annotations

import shutil
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
from pufferbox.train.trainer import Trainer


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


def resume(config: dict, run_dir, per_update: int, updates: int) -> tuple[Trainer, list[dict]]:
    trainer = Trainer("cartpole", config, run_dir=run_dir)
    trainer.load_checkpoint(latest_checkpoint(run_dir / "checkpoints"))
    history = trainer.train_steps(updates * per_update)
    trainer.close()
    return trainer, history


@pytest.mark.parametrize("extra", [{}, {"vec.native": "false", "policy.lstm": "true"}], ids=["native-mlp", "emulated-lstm"])
def test_two_resumes_of_one_checkpoint_train_identically(tmp_path, extra):
    """What a resume reproduces: the checkpoint's weights, optimizer, counters and RNG states, then fresh
    episodes seeded from (seed, update); so every resume of one checkpoint trains the same run."""
    config = tiny_config(**extra)
    per_update = 4 * 16
    first = Trainer("cartpole", config, run_dir=tmp_path / "split")
    first.train_steps(4 * per_update)  # checkpoints at updates 2 and 4
    first.close()
    shutil.copytree(tmp_path / "split", tmp_path / "again")
    second, resumed = resume(config, tmp_path / "split", per_update, 2)
    third, again = resume(config, tmp_path / "again", per_update, 2)

    assert second.update == 6 and resumed[0]["update"] == 5
    assert comparable(resumed) == comparable(again)
    for (name, a), (_, b) in zip(second.agent.state_dict().items(), third.agent.state_dict().items()):
        assert torch.equal(a, b), name
    assert second.global_step == third.global_step == 6 * per_update


def test_checkpoints_never_cut_an_episode(tmp_path):
    """A checkpoint at every update (32 steps) leaves the envs running: episodes outlive it, and the envs
    are reset once, when the trainer starts (they were re-seeded at every checkpoint, capping episodes at 32)."""
    config = tiny_config(**{"train.num_steps": "32", "train.checkpoint_interval": "1"})
    trainer = Trainer("cartpole", config, run_dir=tmp_path / "run")
    resets, lengths = [], []
    reset, collect = trainer.venv.async_reset, trainer.collector.collect
    trainer.venv.async_reset = lambda seed=None: resets.append(seed) or reset(seed)
    trainer.collector.collect = lambda *a: (got := collect(*a), lengths.extend(got.episodes.lengths.tolist()))[0]
    try:
        trainer.train_steps(40 * 4 * 32)
    finally:
        trainer.close()
    assert len(list_checkpoints(tmp_path / "run" / "checkpoints")) >= 1 and trainer.update == 40
    assert resets == []  # the one reset happened in the constructor
    assert max(lengths) > 32, sorted(lengths)[-5:]
