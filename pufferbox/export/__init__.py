"""``pufferbox export``: a trained run as ONNX or TorchScript graphs, or as a Hugging Face Hub model folder.

* ``onnx`` / ``torchscript``: one graph per policy (per agent group in grouped runs), each with a
  sidecar JSON (:mod:`pufferbox.export.layout`) and the recorded rows it was checked on
  (``NAME-samples.npz``: inputs and the PyTorch policy's outputs).
* ``hub``: :mod:`pufferbox.export.hub`.

The folder is written under a temporary name beside ``DIR`` and renamed when complete: a failed
export leaves no partial folder. An existing empty ``DIR`` (a container volume's mount point) is kept:
the files are written in a temporary folder inside it and moved up under an ``flock`` on ``DIR``. A
storage fault (read-only, full, no permission) is one line naming the path; of two exports into one
``DIR`` at once the second is one line; the folder and its files get the modes the umask allows.

Example:
    >>> export_run("runs/cartpole-20250101-000000", "onnx", "exported/cartpole")  # doctest: +SKIP
    {'to': 'onnx', 'dir': 'exported/cartpole', 'graphs': [...]}
"""

from __future__ import annotations

import errno
import fcntl
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
    inside = out.is_dir()  # an empty DIR (perhaps a mount point) is kept: staged inside it, moved up
    staging: Path | None = None
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out if inside else out.parent))
        if to == "hub":
            from pufferbox.export.hub import write_hub

            summary = write_hub(run, Path(run_dir), staging, episodes)
        else:
            summary = {"graphs": write_graphs(run, to, staging)}
        public(staging)
        move_into(staging, out) if inside else rename_onto(staging, out)
    except OSError as exc:
        raise storage_error(exc, out) from None
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    return {"to": to, "dir": str(out), "env": run.spec.name, **summary}


def taken(out: Path) -> ExportError:
    return ExportError(f"{out}: another export filled it first; export into a new or empty DIR")


def rename_onto(staging: Path, out: Path) -> None:
    """``staging`` becomes ``out`` in one rename; an ``out`` that appeared meanwhile (another export) is refused."""
    try:
        os.rename(staging, out)
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
            raise taken(out) from None
        raise


def move_into(staging: Path, out: Path) -> None:
    """``staging``'s files moved into the existing folder ``out`` (kept: it may be a mount point), under an
    ``flock`` on ``out``; refused when another export filled it first."""
    fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if any(not p.name.startswith(".") for p in out.iterdir()):
            raise taken(out)
        for path in sorted(staging.iterdir()):
            os.rename(path, out / path.name)
        out.chmod(0o777 & ~current_umask())
    finally:
        os.close(fd)  # releases the lock


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def public(folder: Path) -> None:
    """The modes a plain ``mkdir``/``open`` would give under the umask (``mkdtemp`` and some writers make
    them private): folders 0777, files 0666, less the umask."""
    mask = current_umask()
    folder.chmod(0o777 & ~mask)
    for path in folder.rglob("*"):
        path.chmod((0o777 if path.is_dir() else 0o666) & ~mask)


def storage_error(exc: OSError, out: Path) -> ExportError:
    """One line for a storage fault while exporting into ``out`` (nothing is left of the export)."""
    name = errno.errorcode.get(exc.errno or 0, "")
    where = exc.filename or out
    return ExportError(
        f"{where}: {exc.strerror or exc} ({name}) while exporting into {out}; nothing was written there: "
        "free some space or pick a DIR you can write to"
    )


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
