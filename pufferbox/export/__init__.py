"""``pufferbox export``: a trained run as ONNX or TorchScript graphs, or as a Hugging Face Hub model folder.

* ``onnx`` / ``torchscript``: one graph per policy (per agent group in grouped runs), each with a
  sidecar JSON (:mod:`pufferbox.export.layout`) and the recorded rows it was checked on
  (``NAME-samples.npz``: inputs and the PyTorch policy's outputs).
* ``hub``: :mod:`pufferbox.export.hub`.

The folder is written under a temporary name beside ``DIR`` and renamed when complete: a failed
export leaves no partial folder.

Example:
    >>> export_run("runs/cartpole-20250101-000000", "onnx", "exported/cartpole")  # doctest: +SKIP
    {'to': 'onnx', 'dir': 'exported/cartpole', 'graphs': [...]}
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from pufferbox.export.policy import ExportError, LoadedRun, RunPolicy, acting_policy, load_run, normalization

__all__ = ["TARGETS", "ExportError", "export_run"]

TARGETS = ("onnx", "torchscript", "hub")
SUFFIX = {"onnx": ".onnx", "torchscript": ".pt"}


def check_target(to: str, out_dir: str | Path) -> None:
    """One line for an unknown target or an output folder that already holds something."""
    if to not in TARGETS:
        raise ExportError(f"--to {to!r}: unknown export target; choose one of {', '.join(TARGETS)}")
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportError(f"{out}: exists and is not an empty folder; export into a new or empty DIR")


def export_run(
    run_dir: str | Path, to: str, out_dir: str | Path, episodes: int = 5, encoder: str | None = None
) -> dict[str, Any]:
    """Export ``run_dir``'s newest usable checkpoint (or a ``ckpt-*.pt``, or a hub folder) to ``out_dir``
    (``episodes``: the hub model card's evaluation)."""
    check_target(to, out_dir)
    run = load_run(run_dir, encoder)
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        if to == "hub":
            from pufferbox.export.hub import write_hub

            summary = write_hub(run, Path(run_dir), staging, episodes)
        else:
            summary = {"graphs": write_graphs(run, to, staging)}
        if out.exists():
            out.rmdir()  # checked empty above
        os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return {"to": to, "dir": str(out), "env": run.spec.name, **summary}


def write_graphs(run: LoadedRun, to: str, folder: Path) -> list[dict[str, Any]]:
    """One checked graph, sidecar and samples file per policy of ``run``."""
    from pufferbox.export.graphs import check_graph, record, write_onnx, write_torchscript

    recordings = record(run)
    written = []
    for policy in run.policies:
        module = acting_policy(run, policy)
        graph = folder / f"{policy.name}{SUFFIX[to]}"
        (write_onnx if to == "onnx" else write_torchscript)(module, policy, recordings[policy.name], graph)
        worst = check_graph(graph, policy, recordings[policy.name])
        samples = folder / f"{policy.name}-samples.npz"
        save_samples(samples, policy, recordings[policy.name])
        sidecar = sidecar_for(run, policy, graph, samples, len(recordings[policy.name].expected()[0]), worst)
        (folder / f"{policy.name}.json").write_text(json.dumps(sidecar, indent=2) + "\n")
        written.append(
            {"policy": policy.name, "graph": graph.name, "rows_checked": sidecar["check"]["rows"], "max_abs_diff": worst}
        )
    return written


def save_samples(path: Path, policy: RunPolicy, recording: Any) -> None:
    from pufferbox.export.graphs import input_names, output_names

    arrays = dict(zip(input_names(policy), recording.inputs()))
    arrays |= {f"expected_{name}": value for name, value in zip(output_names(policy), recording.expected())}
    np.savez_compressed(path, **arrays)


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("pufferbox", "torch", "onnx", "onnxruntime"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            pass
    return out


def sidecar_for(run: LoadedRun, policy: RunPolicy, graph: Path, samples: Path, rows: int, worst: float) -> dict[str, Any]:
    """The JSON beside a graph: inputs, outputs, the row layout, the action layout, how it was checked."""
    from pufferbox.export.graphs import ATOL, RTOL, input_names, output_names
    from pufferbox.export.layout import action_layout, observation_layout

    lstm = int(policy.agent.lstm_size)
    shapes = {"observation": ["batch", run.row_spec.flat_size], "lstm_h": ["batch", lstm], "lstm_c": ["batch", lstm]}
    inputs = [
        {"name": n, "dtype": str(run.row_spec.flat_dtype) if n == "observation" else "float32", "shape": shapes[n]}
        for n in input_names(policy)
    ]
    row_norm, byte_norm = normalization(run)
    normalized = row_norm is not None or bool(byte_norm)
    return {
        "format": "pufferbox-export/1",
        "env": run.spec.name,
        "policy": policy.name,
        "graph": graph.name,
        "slots": policy.slots,
        "agents_per_env": run.agents_per_env,
        "rows": "an env's agent slots are rows env * agents_per_env + slot; this graph acts for its slots (null: all)",
        "inputs": inputs,
        "outputs": output_names(policy),
        "observation": observation_layout(policy.obs_spec, run.row_spec),
        "normalization": "inside the graph (the run's frozen statistics): feed raw observations" if normalized else None,
        "action": action_layout(policy.act_spec),
        "recurrent": None
        if not lstm
        else {"size": lstm, "reset": "zero lstm_h and lstm_c at each episode start; feed lstm_h_out/lstm_c_out back"},
        "check": {"rows": rows, "max_abs_diff": worst, "rtol": RTOL, "atol": ATOL, "samples": samples.name},
        "versions": versions(),
    }
