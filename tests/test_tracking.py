"""W&B tracking: offline run files hold the metrics, config and checkpoints; a failing tracker never stops training."""

from __future__ import annotations

import json
import struct
import time
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

wandb = pytest.importorskip("wandb", reason="wandb is the pufferbox[wandb] extra")

from pufferbox.cli import cli, load_commands  # noqa: E402
from pufferbox.train import tracking  # noqa: E402

QUICK = ["--num-envs", "4", "--total-steps", "1024", "--set", "train.num_steps=32", "--set", "train.checkpoint_interval=4"]


@pytest.fixture(autouse=True)
def offline_wandb(tmp_path, monkeypatch):
    """W&B offline, everything it writes in tmp_path (never ~/.config or ~/.cache)."""
    monkeypatch.setenv("WANDB_MODE", "offline")
    for var, sub in (
        ("WANDB_DIR", "wandb-dir"),
        ("WANDB_CACHE_DIR", "cache"),
        ("WANDB_CONFIG_DIR", "config"),
        ("WANDB_DATA_DIR", "data"),
    ):
        (tmp_path / sub).mkdir()
        monkeypatch.setenv(var, str(tmp_path / sub))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    return tmp_path / "wandb-dir"


def read_offline_run(path: Path) -> list:
    """The protobuf records of an offline ``run-*.wandb`` file (W&B's LevelDB-style log: 7-byte file
    header, 32 KiB blocks of chunks with a 7-byte header: crc32 of type and data, length, type
    FULL/FIRST/MIDDLE/LAST). wandb-core writes the file from another process while it runs: reading
    stops at the first chunk not yet on disk whole (short, or its checksum does not match yet)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data, pos, block, buf, records = path.read_bytes(), 7, 32768, b"", []
    while pos + 7 <= len(data):
        if block - pos % block < 7:
            pos += block - pos % block
            continue
        crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunk = data[pos + 7 : pos + 7 + length]
        if kind == 0 or len(chunk) < length or zlib.crc32(chunk, zlib.crc32(bytes([kind]))) != crc:
            break
        pos += 7 + length
        buf = chunk if kind in (1, 2) else buf + chunk
        if kind in (1, 4):
            record = pb.Record()
            record.ParseFromString(buf)
            records.append(record)
    return records


def finished_files(root: Path, count: int, timeout: float = 60.0) -> list[Path]:
    """The ``count`` offline run files once each ends with its exit record: ``run.finish()`` returns
    before wandb-core (another process) has flushed the last records to disk."""
    deadline = time.monotonic() + timeout
    while True:
        paths = sorted(root.glob("wandb/offline-run-*/run-*.wandb"))
        done = [p for p in paths if any(r.WhichOneof("record_type") == "exit" for r in read_offline_run(p))]
        if len(done) >= count or time.monotonic() > deadline:
            return paths
        time.sleep(0.2)


def offline_runs(root: Path, count: int = 1) -> list[dict]:
    runs = []
    for path in finished_files(root, count):
        out = {"history": [], "artifacts": []}
        for record in read_offline_run(path):
            kind = record.WhichOneof("record_type")
            if kind == "run":
                out["run"] = record.run
                out["config"] = {i.key: json.loads(i.value_json) for i in record.run.config.update}
            elif kind == "history":
                out["history"].append(
                    {i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in record.history.item}
                )
            elif kind == "artifact":
                out["artifacts"].append(record.artifact)
        runs.append(out)
    return runs


def train(*args: str):
    load_commands()
    return CliRunner().invoke(cli, ["train", "cartpole", *QUICK, *args])


@pytest.mark.slow
def test_offline_run_holds_metrics_config_and_checkpoints(tmp_path, offline_wandb):
    run_dir = tmp_path / "run"
    result = train(
        "--run-dir",
        str(run_dir),
        "--wandb",
        "--wandb-project",
        "proj",
        "--wandb-group",
        "grp",
        "--wandb-tags",
        "a, b",
        "--wandb-artifacts",
    )
    assert result.exit_code == 0, result.output
    assert "W&B" not in result.stderr, result.stderr
    (run,) = offline_runs(offline_wandb)
    assert "run" in run, f"no run record in the offline file: {run}"
    assert (run["run"].project, run["run"].run_group, list(run["run"].tags)) == ("proj", "grp", ["a", "b"])
    assert run["run"].display_name == "run"
    assert run["config"]["train"]["num_steps"] == 32 and run["config"]["run"]["env"] == "cartpole"
    logged = {row["global_step"]: row for row in run["history"] if "global_step" in row}
    jsonl = [json.loads(line) for line in (run_dir / "metrics.jsonl").open()]
    assert sorted(logged) == [m["global_step"] for m in jsonl] == [128 * i for i in range(1, 9)]
    for m in jsonl:  # the same numbers TensorBoard gets, under the same names
        row = logged[m["global_step"]]
        assert row["losses/policy_loss"] == pytest.approx(m["policy_loss"])
        assert row["charts/sps"] == pytest.approx(m["sps"])
        assert row["time/time_learn"] == pytest.approx(m["time_learn"])
        if m["return_recent"] is not None:
            assert row["charts/return_recent"] == pytest.approx(m["return_recent"])
    checkpoints = sorted(p.name for p in (run_dir / "checkpoints").glob("ckpt-*.pt"))
    assert sorted(a.metadata and json.loads(a.metadata)["checkpoint"] for a in run["artifacts"]) == checkpoints
    assert all(a.type == "model" for a in run["artifacts"])
    # The file as a reader may find it while wandb-core is still writing: every prefix reads as a
    # prefix of the records, never as a corrupt message.
    (path,) = sorted(offline_wandb.glob("wandb/offline-run-*/run-*.wandb"))
    whole, data = read_offline_run(path), path.read_bytes()
    partial = tmp_path / "partial.wandb"
    for cut in range(7, len(data), max(1, len(data) // 200)):
        partial.write_bytes(data[:cut])
        read = read_offline_run(partial)
        assert read == whole[: len(read)]


def test_without_wandb_nothing_is_tracked(tmp_path, offline_wandb):
    result = train("--run-dir", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    assert not list(offline_wandb.glob("wandb/*")) and not (tmp_path / "run" / "wandb").exists()


def test_init_failure_is_one_warning_and_training_finishes(tmp_path, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("tracker down\nsecond line")

    monkeypatch.setattr(wandb, "init", broken)
    result = train("--run-dir", str(tmp_path / "run"), "--wandb")
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if "W&B" in line]
    assert warnings == ["warning: W&B tracking off: RuntimeError: tracker down"]
    assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == 8


def test_missing_wandb_is_one_warning_naming_the_extra(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "wandb", None)
    result = train("--run-dir", str(tmp_path / "run"), "--wandb")
    assert result.exit_code == 0, result.output
    assert [line for line in result.stderr.splitlines() if "W&B" in line] == [
        "warning: W&B tracking off: RuntimeError: wandb is not installed; pip install 'pufferbox[wandb]'"
    ]


def test_logging_failure_mid_run_is_one_warning(tmp_path, monkeypatch):
    class FlakyRun:
        calls = 0

        def define_metric(self, *args, **kwargs):
            pass

        def log(self, row):
            FlakyRun.calls += 1
            if FlakyRun.calls >= 3:
                raise ConnectionError("lost")

        def finish(self):
            pass

    monkeypatch.setattr(wandb, "init", lambda **kwargs: FlakyRun())
    result = train("--run-dir", str(tmp_path / "run"), "--wandb")
    assert result.exit_code == 0, result.output
    assert [line for line in result.stderr.splitlines() if "W&B" in line] == [
        "warning: W&B tracking off: ConnectionError: lost"
    ]
    assert FlakyRun.calls == 3  # switched off after the failure, not retried every update


@pytest.mark.slow
def test_online_init_failure_falls_back_to_offline(tmp_path, monkeypatch, offline_wandb):
    real_init = wandb.init
    modes = []

    def init(**kwargs):
        modes.append(kwargs["mode"])
        if kwargs["mode"] == "online":
            raise TimeoutError("no network")
        return real_init(**kwargs)

    monkeypatch.delenv("WANDB_MODE")
    monkeypatch.setattr(tracking, "has_api_key", lambda: True)
    monkeypatch.setattr(wandb, "init", init)
    result = train("--run-dir", str(tmp_path / "run"), "--wandb")
    assert result.exit_code == 0, result.output
    assert modes == ["online", "offline"]
    assert "W&B online init failed (TimeoutError); logging offline" in result.stderr
    (run,) = offline_runs(offline_wandb)
    assert len([row for row in run["history"] if "global_step" in row]) == 8


def test_no_api_key_means_offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc
    monkeypatch.delenv("NETRC", raising=False)
    assert not tracking.has_api_key()
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    assert tracking.has_api_key()


@pytest.mark.slow
def test_sweep_trials_are_tracked_in_one_group(tmp_path, offline_wandb):
    pytest.importorskip("optuna", reason="optuna is the pufferbox[sweep] extra")
    load_commands()
    result = CliRunner().invoke(
        cli,
        [
            "sweep",
            "cartpole",
            "--trials",
            "2",
            "--run-dir",
            str(tmp_path / "sw"),
            "--pruner",
            "none",
            "--set",
            "train.total_steps=1024",
            "--set",
            "vec.num_envs=4",
            "--wandb",
        ],
    )
    assert result.exit_code == 0, result.output
    runs = offline_runs(offline_wandb, count=2)
    assert sorted(r["run"].display_name for r in runs) == ["sw-trial-0", "sw-trial-1"]
    assert {r["run"].run_group for r in runs} == {"sw"}
