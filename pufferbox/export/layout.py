"""The sidecar JSON of an exported graph: how to build its input row and read its outputs without pufferbox.

Per observation field: its name, dtype, shape and byte offset in the row (and element offset when the
row has one dtype); the row's own dtype and width; the action-mask field, if any; the action layout
(one logits block per discrete choice, or the Box bounds); the graph's inputs and outputs.

Example:
    >>> from gymnasium import spaces
    >>> from pufferbox.spaces import ObservationSpec
    >>> observation_layout(ObservationSpec(spaces.Box(-1, 1, (4,))), ObservationSpec(spaces.Box(-1, 1, (4,))))["fields"]
    [{'name': 'observation', 'dtype': 'float32', 'shape': [4], 'byte_offset': 0, 'offset': 0}]
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
from gymnasium import spaces

from pufferbox.spaces import ActionSpec, ObservationSpec

__all__ = ["observation_layout", "action_layout", "field_label"]


def field_label(path: tuple[Any, ...], root: str = "observation") -> str:
    """``glyphs``, ``meta/1/bits``; ``root`` for a space that is one leaf."""
    return "/".join(str(p) for p in path) or root


def observation_layout(own: ObservationSpec, row: ObservationSpec) -> dict[str, Any]:
    """How ``own``'s leaves sit in the ``row`` a backend writes (``own``'s record starts at byte 0 of it)."""
    single = row.flat_dtype != np.uint8 or all(leaf.dtype == np.uint8 for leaf in own.leaves)
    fields = []
    for leaf in own.leaves:
        entry = {
            "name": field_label(leaf.path),
            "dtype": str(leaf.dtype),
            "shape": list(leaf.shape),
            "byte_offset": leaf.offset,
        }
        if single:
            entry["offset"] = leaf.offset // row.flat_dtype.itemsize
        if isinstance(leaf.space, spaces.Discrete) and int(leaf.space.start):
            entry["start"] = int(leaf.space.start)
        fields.append(entry)
    return {
        "row_dtype": str(row.flat_dtype),
        "row_size": int(row.flat_size),
        "row_bytes": int(row.dtype.itemsize),
        "layout": "fields at their offset in one row of row_dtype"
        if single
        else "raw bytes: write each field little-endian at its byte_offset (numpy: a structured dtype with these offsets)",
        "fields": fields,
        "action_mask": None if own.mask is None else field_label(own.mask.leaf.path),
    }


def action_layout(act: ActionSpec) -> dict[str, Any]:
    """Which logits choose which discrete slot of the env's action, which outputs are its ``Box`` values."""
    flat = act.flat_space
    hybrid = hasattr(flat, "discrete") and hasattr(flat, "continuous")  # a HybridRow: choices, then values
    if isinstance(flat, spaces.Discrete):
        nvec = [int(flat.n)]
    elif isinstance(flat, spaces.MultiDiscrete) or hybrid:
        nvec = [int(n) for n in np.asarray(cast(Any, flat).discrete.nvec if hybrid else cast(Any, flat).nvec).ravel()]
    else:
        nvec = []
    kind = (
        "hybrid" if hybrid else "box" if not nvec else "discrete" if isinstance(flat, spaces.Discrete) else "multidiscrete"
    )
    out: dict[str, Any] = {"kind": kind, "row_size": int(act.size), "row_dtype": str(act.dtype)}
    if nvec:
        out |= {"logits": sum(nvec), "blocks": logit_blocks(act, nvec)}
        out["sample"] = "per block: argmax (greedy) or a softmax sample of its logits, plus 'add', is that slot's action"
    if kind in ("box", "hybrid"):
        box = cast(spaces.Box, cast(Any, flat).continuous if hybrid else flat)
        values = [(path, leaf, start, size) for path, leaf, start, size in act.leaves if isinstance(leaf, spaces.Box)]
        out["values"] = [
            {"name": field_label(path, "action"), "shape": list(leaf.shape or ()), "start": start, "size": size}
            for path, leaf, start, size in values
        ]
        out |= {"low": np.asarray(box.low).tolist(), "high": np.asarray(box.high).tolist()}
        out["sample_values"] = "mean + std * normal noise, clipped to [low, high] (greedy: the mean)"
    return out


def logit_blocks(act: ActionSpec, nvec: list[int]) -> list[dict[str, Any]]:
    """One block per discrete slot: the leaf it belongs to, its slot in the action row, its logits."""
    offsets = np.cumsum([0, *nvec]).tolist()
    blocks = []
    for path, leaf, start, size in act.leaves:
        if isinstance(leaf, spaces.Box):
            continue
        base = (
            np.zeros(size, np.int64) if isinstance(leaf, spaces.MultiBinary) else np.asarray(cast(Any, leaf).start).ravel()
        )
        for k, slot in enumerate(range(start, start + size)):
            add = int(base[k] if base.size == size else base[0])
            blocks.append(
                {
                    "leaf": field_label(path, "action"),
                    "slot": slot,
                    "logits_start": offsets[slot],
                    "size": nvec[slot],
                    "add": add,
                }
            )
    return blocks
