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
    """Which logits choose which part of the env's action (or the Box the mean and std describe)."""
    flat = act.flat_space
    if not act.discrete:
        assert isinstance(flat, spaces.Box)
        return {
            "kind": "box",
            "size": act.size,
            "low": np.asarray(flat.low).tolist(),
            "high": np.asarray(flat.high).tolist(),
            "leaves": [
                {"name": field_label(path, "action"), "shape": list(leaf.shape or ()), "start": start, "size": size}
                for path, leaf, start, size in act.leaves
            ],
            "sample": "mean + std * normal noise, clipped to [low, high] (greedy: the mean)",
        }
    blocks, logit = [], 0
    nvec = (
        [int(flat.n)]
        if isinstance(flat, spaces.Discrete)
        else [int(n) for n in np.asarray(cast(spaces.MultiDiscrete, flat).nvec).ravel()]
    )
    for path, leaf, start, size in act.leaves:
        offsets = (
            np.zeros(size, np.int64)
            if isinstance(leaf, spaces.MultiBinary)
            else np.asarray(cast(spaces.MultiDiscrete, leaf).start).ravel()
        )
        for k, slot in enumerate(range(start, start + size)):
            add = int(offsets[k] if offsets.size == size else offsets[0])
            blocks.append(
                {"leaf": field_label(path, "action"), "slot": slot, "logits_start": logit, "size": nvec[slot], "add": add}
            )
            logit += nvec[slot]
    return {
        "kind": "discrete" if isinstance(flat, spaces.Discrete) else "multidiscrete",
        "logits": logit,
        "blocks": blocks,
        "sample": "per block: argmax (greedy) or a softmax sample of its logits, plus 'add', is that slot's action",
    }
