"""Checkpoint files: atomic writes, the last K kept, loads that cannot run pickled code.

A checkpoint is a dict of plain tensors, numbers and strings (state dicts, RNG states as
uint8 tensors), saved with ``torch.save`` to a uniquely named ``.ckpt-<update>.pt.*.tmp`` in the same
folder, fsynced, then renamed over ``ckpt-<update>.pt`` with ``os.replace``: a crash
mid-write leaves only a stray ``.tmp`` and every earlier checkpoint intact.
Loading uses ``torch.load(weights_only=True)``.

Example:
    >>> import tempfile, torch
    >>> d = tempfile.mkdtemp()
    >>> path = save_checkpoint({"step": 3, "w": torch.ones(2)}, d, update=3)
    >>> load_checkpoint(path)["step"], latest_checkpoint(d) == path
    (3, True)
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

from pufferbox.train.config import ConfigError

__all__ = [
    "save_checkpoint",
    "load_checkpoint",
    "checkpoint_from_bytes",
    "latest_checkpoint",
    "latest_finite_checkpoint",
    "no_usable_checkpoint",
    "list_checkpoints",
    "weights_finite",
    "CheckpointError",
    "check_encoder_is_trusted",
    "check_scripted_opponent_is_trusted",
    "HUB_FORMAT",
    "HUB_WEIGHTS",
    "load_hub_folder",
]

NAME = re.compile(r"^ckpt-(\d+)\.pt$")


class CheckpointError(ConfigError):
    """No usable checkpoint where one was asked for (a user error: one line, exit 2)."""


def list_checkpoints(directory: str | Path) -> list[Path]:
    """Checkpoints in ``directory``, oldest first (by update number)."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := NAME.match(p.name))]
    return [p for _, p in sorted(found)]


def latest_checkpoint(directory: str | Path) -> Path | None:
    found = list_checkpoints(directory)
    return found[-1] if found else None


def weights_finite(state: dict[str, Any]) -> bool:
    """Whether every floating-point tensor of ``state["model"]`` is finite (True when there is no model)."""
    model = state.get("model")
    if not isinstance(model, dict):
        return True
    return all(
        bool(torch.isfinite(t).all()) for t in model.values() if isinstance(t, torch.Tensor) and t.is_floating_point()
    )


def latest_finite_checkpoint(directory: str | Path, warn: bool = True) -> Path | None:
    """The newest checkpoint in ``directory`` that loads and whose weights are finite (what a resume takes).
    Each newer one skipped is named in a warning on stderr (``warn``), with why: unreadable or NaN/inf."""
    found, skipped = usable_checkpoint(directory)
    if warn and found is not None:
        for path, why in skipped:
            print(f"warning: {path}: skipped ({why}); using {found.name}", file=sys.stderr, flush=True)
    return found


def usable_checkpoint(directory: str | Path) -> tuple[Path | None, list[tuple[Path, str]]]:
    """``(newest usable checkpoint or None, [(newer checkpoint, why it is not usable)])``."""
    skipped = []
    for path in reversed(list_checkpoints(directory)):
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except Exception:  # a truncated or foreign file: an older checkpoint may still be good
            skipped.append((path, "unreadable: truncated or corrupt"))
            continue
        if weights_finite(state):
            return path, skipped
        skipped.append((path, "its weights are NaN/inf"))
    return None, skipped


def no_usable_checkpoint(directory: str | Path) -> CheckpointError:
    """Why none of ``directory``'s checkpoints can be used, counted by reason."""
    _, skipped = usable_checkpoint(directory)
    unreadable = sum(why.startswith("unreadable") for _, why in skipped)
    parts = [f"{unreadable} unreadable: truncated or corrupt"] if unreadable else []
    parts += [f"{len(skipped) - unreadable} with NaN/inf weights"] if len(skipped) > unreadable else []
    return CheckpointError(f"{directory}: no usable checkpoint ({'; '.join(parts)}); start a new run")


def fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # some filesystems do not open directories
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_checkpoint(
    state: dict[str, Any], directory: str | os.PathLike, update: int, keep: int = 3, parents: bool = True
) -> Path:
    """Write ``state`` atomically as ``directory/ckpt-<update>.pt``; delete all but the newest ``keep``.
    ``parents=False``: ``directory`` is created only inside an existing folder (a run dir deleted
    under the run stays deleted: ``FileNotFoundError``).

    The checkpoint just written is never deleted, whatever numbers other files in ``directory`` carry.
    The state is serialized in memory first, so a full disk surfaces as ``OSError(ENOSPC)`` from the
    write (torch's own writer reports it as ``unexpected pos``).
    """
    directory = Path(directory)
    final = directory / f"ckpt-{update:08d}.pt"
    if not weights_finite(state):
        raise CheckpointError(
            f"{final}: not written: the model's weights are not finite (NaN/inf); earlier checkpoints are kept"
        )
    directory.mkdir(parents=parents, exist_ok=True)
    buffer = io.BytesIO()
    torch.save(state, buffer)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=directory)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(buffer.getbuffer())
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; checkpoints are shared like any output file
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(directory)
    if keep > 0:
        for old in list_checkpoints(directory)[:-keep]:
            if old != final:
                old.unlink(missing_ok=True)
    return final


def remove_stale_temp_files(directory: str | Path) -> list[Path]:
    """Delete ``.ckpt-*.tmp`` files a killed writer left (call only while holding the run dir's lock).

    Example:
        >>> import tempfile; d = Path(tempfile.mkdtemp()); _ = (d / ".ckpt-00000002.pt.x1.tmp").write_bytes(b"")
        >>> [p.name for p in remove_stale_temp_files(d)]
        ['.ckpt-00000002.pt.x1.tmp']
    """
    stale = sorted(Path(directory).glob(".ckpt-*.pt.*.tmp"))
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load a checkpoint file, or the newest one of a run dir / checkpoint dir."""
    path = Path(path)
    if path.is_dir() and (path / HUB_WEIGHTS).is_file():
        return load_hub_folder(path)
    if path.is_dir():
        folder = path / "checkpoints" if list_checkpoints(path / "checkpoints") else path
        if not list_checkpoints(folder):
            raise CheckpointError(f"{path}: no checkpoint (ckpt-*.pt) in it or in its checkpoints/ folder")
        found = latest_finite_checkpoint(folder)
        if found is None:
            raise no_usable_checkpoint(folder)
        path = found
    if not path.is_file():
        raise CheckpointError(f"{path}: checkpoint not found")
    return torch_load(path, str(path), map_location)


HUB_WEIGHTS = "model.safetensors"
HUB_FORMAT = "pufferbox-hub/1"


def load_hub_folder(folder: Path) -> dict[str, Any]:
    """A model folder of ``pufferbox export --to hub`` as the checkpoint dict that playing needs
    (weights, normalizer statistics, group slots, config, env); it has no optimizer, so it cannot be resumed."""
    try:
        from safetensors import SafetensorError, safe_open
        from safetensors.torch import load_file
    except ImportError:
        raise CheckpointError(
            f"{folder}: reading a hub model folder needs safetensors: pip install 'pufferbox[export]'"
        ) from None
    config = folder / "config.toml"
    if not config.is_file():
        raise CheckpointError(f"{folder}: a hub model folder needs its config.toml beside {HUB_WEIGHTS}")
    try:
        with safe_open(str(folder / HUB_WEIGHTS), framework="pt") as fh:
            meta = fh.metadata() or {}
        tensors = load_file(str(folder / HUB_WEIGHTS))
    except (SafetensorError, OSError) as exc:
        raise CheckpointError(f"{folder / HUB_WEIGHTS}: not a readable safetensors file ({exc})") from None
    if meta.get("format") != HUB_FORMAT:
        raise CheckpointError(
            f"{folder / HUB_WEIGHTS}: not written by `pufferbox export --to hub` (format {meta.get('format')!r})"
        )
    state: dict[str, Any] = {"env": meta.get("env"), "distribution": meta.get("distribution") or None}
    state["config"] = read_hub_config(config)
    state["model"] = {k[len("model.") :]: v for k, v in tensors.items() if k.startswith("model.")}
    if not weights_finite(state):
        raise CheckpointError(f"{folder / HUB_WEIGHTS}: its weights hold NaN/inf; export a finite checkpoint again")
    normalizer = {k[len("normalizer.") :]: v for k, v in tensors.items() if k.startswith("normalizer.")}
    if normalizer:
        state["normalizer"] = normalizer
    order = hub_groups(folder / HUB_WEIGHTS, meta.get("groups") or "[]")  # the run's group order
    missing = [name for name in order if f"groups.{name}.slots" not in tensors]
    if missing:
        raise CheckpointError(f"{folder / HUB_WEIGHTS}: group {missing[0]!r} has no slots; export the run again")
    if order:
        state["groups"] = {name: {"slots": tensors[f"groups.{name}.slots"]} for name in order}
    return state


def read_hub_config(path: Path) -> str:
    """A hub folder's config.toml, checked to be TOML (a damaged one is one line naming it)."""
    import tomllib

    try:
        text = path.read_text()
        tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CheckpointError(f"{path}: not a readable config ({type(exc).__name__}: {exc}); export the run again") from None
    return text


def hub_groups(path: Path, text: str) -> list[str]:
    """The group order a hub folder's metadata records (safetensors sorts its names): a JSON list of names."""
    try:
        order = json.loads(text)
    except ValueError as exc:
        raise CheckpointError(f"{path}: its groups metadata is not JSON ({exc}); export the run again") from None
    if not isinstance(order, list) or not all(isinstance(name, str) for name in order):
        raise CheckpointError(f"{path}: its groups metadata is not a list of group names; export the run again")
    return order


def checkpoint_from_bytes(blob: bytes, name: str, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """A checkpoint sent as bytes (e.g. a leaderboard entry shipped to a pod); ``name`` labels errors."""
    return torch_load(io.BytesIO(blob), name, map_location)


def torch_load(source: Any, name: str, map_location: str | torch.device) -> dict[str, Any]:
    try:
        return torch.load(source, map_location=map_location, weights_only=True)
    except Exception as exc:
        # Never quote torch's message: it advises ``weights_only=False``, i.e. running the file's code.
        why = (
            "it holds pickled Python objects, which pufferbox never loads (only tensors, numbers, strings)"
            if "Unsupported global" in str(exc)
            else "not written by torch.save, or truncated or corrupt"
        )
        raise CheckpointError(
            f"{name}: not a loadable pufferbox checkpoint ({why}); point --checkpoint at a ckpt-*.pt that pufferbox wrote"
        ) from None


BUILTIN_ENCODERS = ("auto", "mlp", "cnn")


def registered_encoders() -> set[str]:
    """``module:attr`` names of the default policies that installed plugins register."""
    from pufferbox.registry import get_registry

    names = set()
    for spec in get_registry().all_envs():
        if isinstance(spec.training.policy, str):
            names.add(spec.training.policy)
        elif spec.training.policy is not None:
            names.add(f"{spec.training.policy.__module__}:{spec.training.policy.__qualname__}")
    return names


def check_encoder_is_trusted(choice: str, source: str, explicit: str | None = None) -> None:
    """Refuse a ``policy.encoder`` (``choice``) that only ``source`` (a checkpoint, a run dir) names.

    A checkpoint is data: resolving its ``encoder = "module:attr"`` would import that module and
    call the attribute. Allowed: the built-in encoders, encoders that installed plugins register,
    and ``explicit``, the one the user passed on the command line (or in their own config).

    Example:
        >>> check_encoder_is_trusted("mlp", "ckpt-1.pt")
        >>> check_encoder_is_trusted("os:system", "ckpt-1.pt")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        pufferbox.train.checkpoint.CheckpointError: ckpt-1.pt names policy.encoder 'os:system', ...
    """
    if choice in BUILTIN_ENCODERS or choice == explicit or choice in registered_encoders():
        return
    raise CheckpointError(
        f"{source} names policy.encoder {choice!r}, which no installed plugin registers; "
        f"a checkpoint cannot make pufferbox import code: if you trust it, pass it yourself "
        f"(eval: --encoder {choice}; train --resume: --set policy.encoder={choice})"
    )


def registered_scripted_opponents() -> set[str]:
    """``module:function`` names of the scripted opponents that installed plugins' defaults name."""
    from pufferbox.registry import get_registry
    from pufferbox.train.config import resolve_run_config

    names = set()
    for spec in get_registry().all_envs():
        for config in (spec.training.config, getattr(spec.training, "gpu_config", None) or {}):
            try:
                names.add(resolve_run_config(config).league.scripted_opponent)
            except ConfigError:  # a plugin's broken defaults trust nothing
                continue
    return names - {""}


def check_scripted_opponent_is_trusted(choice: str, source: str, explicit: str | None = None) -> None:
    """Refuse a ``league.scripted_opponent`` (``choice``) that only ``source`` (a run dir's config.toml, a
    checkpoint) names: like :func:`check_encoder_is_trusted`, resolving it would import and call code.
    Allowed: none (""), one an installed plugin's defaults name, and ``explicit`` (the user's own ``--set``).

    Example:
        >>> check_scripted_opponent_is_trusted("", "config.toml")
        >>> check_scripted_opponent_is_trusted("os:system", "config.toml")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        pufferbox.train.checkpoint.CheckpointError: config.toml names league.scripted_opponent 'os:system', ...
    """
    if not choice or choice == explicit or choice in registered_scripted_opponents():
        return
    raise CheckpointError(
        f"{source} names league.scripted_opponent {choice!r}, which no installed plugin registers; a run dir "
        f"cannot make pufferbox import code: if you trust it, pass it yourself "
        f"(--set league.scripted_opponent={choice})"
    )
