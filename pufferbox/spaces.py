"""The flattening spec: a tree of Gymnasium spaces ⇄ one contiguous buffer per agent.

Observations of any tree of spaces (Box, Discrete, MultiDiscrete, MultiBinary, Dict,
Tuple, nested) map to a numpy *structured dtype*. One agent's observation is one
record of that dtype, and a batch of records is also a plain 2-D array (``flat``) of a
single dtype: the leaves' common dtype when they share one, raw bytes otherwise. The
environment writes each leaf straight into its field of the record (no intermediate
copy), the vector backends move flat rows, and the model turns a flat batch back into
the tree with :meth:`ObservationSpec.unflatten_torch` (views only).

Actions map the other way: all-discrete trees become ``MultiDiscrete`` (a lone
``Discrete`` stays ``Discrete``), all-continuous trees become one ``Box``, and trees that mix
both become a :class:`HybridRow`: a discrete row (``MultiDiscrete``) followed by a continuous
row (``Box``) in one float32 row, so every backend moves it as it moves a ``Box`` action.

Example:
    >>> from gymnasium import spaces
    >>> spec = ObservationSpec(spaces.Dict({"pos": spaces.Box(-1, 1, (2,)), "hp": spaces.Discrete(5)}))
    >>> spec.flat_dtype, spec.flat_size   # float32 + int64 leaves: bytes
    (dtype('uint8'), 16)
    >>> buf = spec.zeros(1)
    >>> spec.write(buf, 0, {"pos": np.array([0.5, -0.5], np.float32), "hp": 3})
    >>> int(spec.unflatten(buf)["hp"][0])
    3
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import batch_space

from pufferbox.errors import PufferboxError

if TYPE_CHECKING:
    import torch

__all__ = [
    "ACTION_MASK_KEY",
    "ActionMask",
    "ActionSpec",
    "HybridRow",
    "InRow",
    "Leaf",
    "ObservationSpec",
    "SpaceError",
    "leaf_paths",
    "mask_logits",
    "row_action_spec",
    "sample_legal",
    "row_observation_spec",
]

Path = tuple[Any, ...]


class SpaceError(PufferboxError, ValueError):
    """A space or a sample does not fit the flattening spec; the message names the field."""


LEAF_TYPES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


def format_path(prefix: str, path: Path) -> str:
    """``observation['agent'][0]`` style name of a field, for error messages."""
    return prefix + "".join(f"[{p!r}]" for p in path)


def leaf_paths(space: spaces.Space, path: Path = ()) -> Iterator[tuple[Path, spaces.Space]]:
    """Yield ``(path, leaf_space)`` in a fixed depth-first order (Dict keys in the space's order)."""
    if isinstance(space, spaces.Dict):
        for key, sub in space.spaces.items():
            yield from leaf_paths(sub, path + (key,))
    elif isinstance(space, spaces.Tuple):
        for i, sub in enumerate(space.spaces):
            yield from leaf_paths(sub, path + (i,))
    elif isinstance(space, LEAF_TYPES):
        yield path, space
    else:
        raise SpaceError(
            f"unsupported space {type(space).__name__} at {format_path('space', path)}: "
            "use Box, Discrete, MultiDiscrete, MultiBinary, Dict or Tuple"
        )


def get_path(sample: Any, path: Path) -> Any:
    for key in path:
        sample = sample[key]
    return sample


def leaf_storage(space: spaces.Space) -> tuple[np.dtype, tuple[int, ...]]:
    if isinstance(space, spaces.Discrete):
        return np.dtype(space.dtype), ()
    return np.dtype(space.dtype), tuple(space.shape or ())


def field_name(key: Any) -> str:
    return str(key)


def struct_dtype(space: spaces.Space) -> np.dtype:
    """Aligned structured dtype mirroring the space tree (leaf root: one field ``value``)."""

    def build(sub: spaces.Space) -> list:
        if isinstance(sub, spaces.Dict):
            return [(field_name(k), node_dtype(v)) for k, v in sub.spaces.items()]
        assert isinstance(sub, spaces.Tuple)
        return [(field_name(i), node_dtype(v)) for i, v in enumerate(sub.spaces)]

    def node_dtype(sub: spaces.Space) -> Any:
        if isinstance(sub, (spaces.Dict, spaces.Tuple)):
            if len(sub.spaces) == 0:
                raise SpaceError(f"empty {type(sub).__name__} space has nothing to flatten")
            return np.dtype(build(sub), align=True)
        dtype, shape = leaf_storage(sub)
        return (dtype, shape) if shape else dtype

    if isinstance(space, (spaces.Dict, spaces.Tuple)):
        return node_dtype(space)
    return np.dtype([("value", node_dtype(space))], align=True)


@dataclass(frozen=True)
class Leaf:
    """One leaf of the space tree and where it lives in a record."""

    path: Path  # keys/indices into the sample
    fields: tuple[str, ...]  # field names into the structured record
    space: spaces.Space
    dtype: np.dtype
    shape: tuple[int, ...]
    offset: int  # byte offset inside the record

    @property
    def nbytes(self) -> int:
        return int(self.dtype.itemsize * int(np.prod(self.shape, dtype=np.int64)))


def record_field(dtype: np.dtype, fields: tuple[str, ...]) -> tuple[np.dtype, int]:
    offset = 0
    for name in fields:
        assert dtype.fields is not None, f"{name}: not a field of a structured dtype"
        sub, off = dtype.fields[name][:2]
        offset += off
        dtype = sub
    return dtype, offset


ACTION_MASK_KEY = "action_mask"  # PettingZoo's classic games put their legal moves under this Dict key


class ObservationSpec:
    """Maps an observation space tree to one flat buffer row per agent and back.

    A Dict observation with an ``action_mask`` key (:data:`ACTION_MASK_KEY`, or the key named by
    ``action_mask``; None: no mask) carries the env's legal actions in that field of the record:
    ``mask`` (an :class:`ActionMask`) reads them back, and policies mask their logits with it.
    """

    def __init__(self, space: spaces.Space, name: str = "observation", action_mask: str | None = ACTION_MASK_KEY):
        self.space = space
        self.name = name
        paths = list(leaf_paths(space))  # first: raises SpaceError naming an unsupported subspace
        self.dtype = struct_dtype(space)
        root_is_leaf = not isinstance(space, (spaces.Dict, spaces.Tuple))
        leaves = []
        for path, sub in paths:
            fields = ("value",) if root_is_leaf else tuple(field_name(p) for p in path)
            dtype, shape = leaf_storage(sub)
            _, offset = record_field(self.dtype, fields)
            leaves.append(Leaf(path, fields, sub, dtype, shape, offset))
        self.leaves: tuple[Leaf, ...] = tuple(leaves)
        leaf_dtypes = {leaf.dtype for leaf in self.leaves}
        self.flat_dtype = leaf_dtypes.pop() if len(leaf_dtypes) == 1 else np.dtype(np.uint8)
        if self.dtype.itemsize % self.flat_dtype.itemsize:
            raise SpaceError(f"{name}: record of {self.dtype.itemsize} bytes is not a whole number of {self.flat_dtype}")
        self.flat_size = self.dtype.itemsize // self.flat_dtype.itemsize
        self.is_leaf = root_is_leaf
        self._torch_layout: tuple | None = None
        self.mask: ActionMask | None = None
        if action_mask is not None and isinstance(space, spaces.Dict) and action_mask in space.spaces:
            self.mask = ActionMask(self, action_mask)

    def __repr__(self) -> str:
        return f"ObservationSpec({self.space}, flat={self.flat_dtype}[{self.flat_size}])"

    @property
    def flat_space(self) -> spaces.Box:
        """The 1-D ``Box`` a vector backend and a model see."""
        if self.is_leaf and isinstance(self.space, spaces.Box):
            return spaces.Box(self.space.low.ravel(), self.space.high.ravel(), dtype=self.flat_dtype.type)
        info = np.iinfo(self.flat_dtype) if np.issubdtype(self.flat_dtype, np.integer) else None
        low, high = (info.min, info.max) if info is not None else (-np.inf, np.inf)
        return spaces.Box(low, high, (self.flat_size,), dtype=self.flat_dtype.type)

    # -- numpy side -------------------------------------------------------------------
    def zeros(self, rows: int) -> np.ndarray:
        """A fresh ``(rows, flat_size)`` buffer."""
        return np.zeros((rows, self.flat_size), dtype=self.flat_dtype)

    def records(self, flat: np.ndarray) -> np.ndarray:
        """View a ``(..., flat_size)`` buffer as records (no copy)."""
        if flat.shape[-1] != self.flat_size or flat.dtype != self.flat_dtype:
            raise SpaceError(
                f"{self.name}: buffer {flat.dtype}{list(flat.shape)} does not match flat layout "
                f"{self.flat_dtype}[..., {self.flat_size}]"
            )
        return flat.view(self.dtype)[..., 0]

    def leaf_views(self, flat: np.ndarray) -> list[np.ndarray]:
        """One writable view per leaf, shaped ``(rows, *leaf.shape)``, into ``flat``."""
        rec = self.records(flat)
        views = []
        for leaf in self.leaves:
            view = rec
            for name in leaf.fields:
                view = view[name]
            views.append(view)
        return views

    def write(self, flat: np.ndarray, row: int, sample: Any, views: list[np.ndarray] | None = None) -> None:
        """Write one agent's structured sample into ``flat[row]`` in place."""
        views = self.leaf_views(flat) if views is None else views
        for leaf, view in zip(self.leaves, views):
            view[row] = get_path(sample, leaf.path)

    def flatten(self, sample: Any) -> np.ndarray:
        """A new flat row holding ``sample`` (for tests and one-off use)."""
        out = self.zeros(1)
        self.write(out, 0, sample)
        return out[0]

    def unflatten(self, flat: np.ndarray) -> Any:
        """The tree of numpy views (leading dims kept) over a ``(..., flat_size)`` buffer."""
        views = self.leaf_views(flat)
        return self.assemble(views)

    def assemble(self, leaf_values: list[Any]) -> Any:
        if self.is_leaf:
            return leaf_values[0]
        return build_tree(self.space, iter(leaf_values))

    def check(self, sample: Any) -> None:
        """Raise :class:`SpaceError` naming the first field of ``sample`` outside the space."""
        for leaf in self.leaves:
            where = format_path(self.name, leaf.path)
            try:
                value = get_path(sample, leaf.path)
            except (KeyError, IndexError, TypeError) as exc:
                raise SpaceError(f"{where} is missing from the sample ({exc!r})") from None
            arr = np.asarray(value)
            if arr.shape != leaf.shape:
                raise SpaceError(f"{where} has shape {arr.shape}, the space says {leaf.shape} ({leaf.space})")
            if not leaf.space.contains(value if not isinstance(leaf.space, spaces.Discrete) else np.int64(value)):
                raise SpaceError(f"{where} = {summarize(arr)} is outside {leaf.space}")

    # -- torch side -------------------------------------------------------------------
    def torch_layout(self) -> tuple[tuple[int, int, Any, tuple[int, ...]], ...]:
        """Per leaf ``(start, length, torch dtype or None, shape)`` in flat elements; cached.

        Policies call this in ``__init__`` so that :meth:`unflatten_torch` only reads
        a tuple of ints while being traced by torch.compile.
        """
        if self._torch_layout is None:
            import torch

            as_bytes = self.flat_dtype == np.uint8 and any(leaf.dtype != np.uint8 for leaf in self.leaves)
            layout: list[tuple[int, int, Any, tuple[int, ...]]] = []
            for leaf in self.leaves:
                count = int(np.prod(leaf.shape, dtype=np.int64))
                if as_bytes:
                    layout.append((leaf.offset, leaf.nbytes, torch.from_numpy(np.zeros(0, leaf.dtype)).dtype, leaf.shape))
                else:
                    layout.append((leaf.offset // self.flat_dtype.itemsize, count, None, leaf.shape))
            self._torch_layout = tuple(layout)
        return self._torch_layout

    def unflatten_torch(self, flat: torch.Tensor) -> Any:
        """Views of a ``(..., flat_size)`` tensor as the space tree; no copies, no graph breaks.

        Byte-layout buffers are reinterpreted per leaf with ``Tensor.view(dtype)``, which
        is valid because records are aligned to their widest leaf.
        """
        lead = flat.shape[:-1]
        values = []
        for start, length, dtype, shape in self.torch_layout():
            part = flat.narrow(-1, start, length)
            if dtype is not None:
                part = part.view(dtype)
            values.append(part.view(*lead, *shape))
        return self.assemble(values)


class ActionMask:
    """The legal actions an observation declares: a 0/1 leaf (top-level Dict key) with one entry per
    logit of the flat action (``Discrete(n)``: n; ``MultiDiscrete``: the per-slot masks concatenated,
    ``sum(nvec)``). Nonzero means legal. A slot with no legal action counts as all legal (PettingZoo
    gives a waiting agent an all-zero mask; its action is ignored, and a policy must not divide by zero).

    Example:
        >>> obs = ObservationSpec(spaces.Dict({"board": spaces.Box(0, 1, (3,), np.int8),
        ...                                    "action_mask": spaces.Box(0, 1, (3,), np.int8)}))
        >>> obs.mask.legal(obs.flatten({"board": np.zeros(3, np.int8), "action_mask": np.array([0, 1, 1], np.int8)})[None])
        array([[False,  True,  True]])
    """

    def __init__(self, spec: ObservationSpec, key: str):
        leaf = next(leaf for leaf in spec.leaves if leaf.path == (key,))
        if not isinstance(leaf.space, (spaces.Box, spaces.MultiBinary)):
            where = format_path(spec.name, leaf.path)
            raise SpaceError(f"{where}: an action mask must be a 0/1 Box or MultiBinary, got {leaf.space}")
        self.spec, self.key, self.leaf = spec, key, leaf
        self.index = spec.leaves.index(leaf)
        self.size = int(np.prod(leaf.shape, dtype=np.int64))
        self.sizes: tuple[int, ...] = (self.size,)  # logits per action slot: set by fit()

    def fit(self, act_spec: ActionSpec) -> ActionMask:
        """Check the mask has one entry per logit of ``act_spec`` and learn its slots; returns self."""
        flat = act_spec.flat_space
        sizes: tuple[int, ...]
        if isinstance(flat, spaces.Discrete):
            sizes = (int(flat.n),)
        elif isinstance(flat, (spaces.MultiDiscrete, HybridRow)):  # a hybrid action: its discrete row
            sizes = tuple(int(n) for n in np.asarray(cast(Any, getattr(flat, "discrete", flat)).nvec).ravel())
        else:
            where = format_path(self.spec.name, self.leaf.path)
            raise SpaceError(f"{where}: action masks apply to discrete actions, not {flat}")
        if sum(sizes) != self.size:
            raise SpaceError(
                f"{format_path(self.spec.name, self.leaf.path)} has {self.size} entries, the action {act_spec.space} has "
                f"{sum(sizes)} choices: give one 0/1 entry per choice (MultiDiscrete: the slots' masks concatenated)"
            )
        self.sizes = sizes
        return self

    def legal(self, flat: np.ndarray) -> np.ndarray:
        """``(rows, size)`` bool: the legal choices in each of ``flat``'s rows."""
        return np.asarray(self.spec.unflatten(flat)[self.key]).reshape(len(flat), self.size) != 0

    def legal_torch(self, flat: torch.Tensor) -> torch.Tensor:
        """The same for a ``(rows, flat_size)`` tensor (views, then one compare)."""
        return self.spec.unflatten_torch(flat)[self.key].reshape(flat.shape[0], self.size) != 0


def mask_logits(logits: torch.Tensor, legal: torch.Tensor, sizes: tuple[int, ...]) -> torch.Tensor:
    """``logits`` with illegal choices at -inf: zero probability, so sampling and argmax never pick them;
    torch's Categorical gives them zero entropy and log-probability terms. A slot with no legal choice
    keeps all its logits."""
    import torch

    if len(sizes) == 1:
        legal = legal | ~legal.any(-1, keepdim=True)
    else:
        parts = torch.split(legal, list(sizes), dim=-1)
        legal = torch.cat([part | ~part.any(-1, keepdim=True) for part in parts], dim=-1)
    return logits.masked_fill(~legal, float("-inf"))


def sample_legal(legal: np.ndarray, sizes: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Uniform legal actions, ``(rows,)`` for one slot or ``(rows, len(sizes))``; a slot with no legal
    choice draws from all of them."""
    out = np.zeros((len(legal), len(sizes)), dtype=np.int64)
    start = 0
    for j, n in enumerate(sizes):
        part = legal[:, start : start + n]
        keys = rng.random(part.shape)  # the largest key among the legal choices: uniform over them
        keys[~(part | ~part.any(1, keepdims=True))] = -1.0
        out[:, j] = keys.argmax(1)
        start += n
    return out[:, 0] if len(sizes) == 1 else out


def leaf_slots(leaf: spaces.Space) -> int:
    """Entries of a flat action row one action leaf takes (a ``Discrete``: one slot)."""
    return 1 if isinstance(leaf, spaces.Discrete) else int(np.prod(leaf.shape or (), dtype=np.int64))


def build_tree(space: spaces.Space, values: Iterator[Any]) -> Any:
    if isinstance(space, spaces.Dict):
        return {k: build_tree(v, values) for k, v in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(build_tree(v, values) for v in space.spaces)
    return next(values)


def summarize(arr: np.ndarray) -> str:
    if arr.size <= 6:
        return np.array2string(arr, precision=4)
    return f"array{list(arr.shape)} in [{arr.min()}, {arr.max()}]"


MAX_EXACT_CHOICE = 2**24  # float32 holds every whole number up to this exactly: a hybrid row's discrete choices


class HybridRow(spaces.Space):
    """The flat action of a tree that mixes discrete and ``Box`` leaves: ``discrete`` (a ``MultiDiscrete``
    row, its choices as whole numbers) then ``continuous`` (a ``Box`` row), in one float32 row. Batched
    (``gymnasium.vector.utils.batch_space``) it keeps the two parts, with the rows as leading dims.

    Example:
        >>> row = HybridRow(spaces.MultiDiscrete([3]), spaces.Box(-1, 1, (2,)), seed=0)
        >>> row.shape, row.contains(np.array([2, 0.5, -0.5], np.float32)), row.contains(np.array([1.5, 0, 0], np.float32))
        ((3,), True, False)
    """

    def __init__(self, discrete: spaces.MultiDiscrete, continuous: spaces.Box, seed: Any = None):
        if discrete.shape[:-1] != continuous.shape[:-1] or len(continuous.shape) != len(discrete.shape):
            raise SpaceError(f"hybrid row: {discrete} and {continuous} have different leading dims")
        self.discrete, self.continuous = discrete, continuous
        self.discrete_size = int(discrete.shape[-1])
        super().__init__(discrete.shape[:-1] + (self.discrete_size + continuous.shape[-1],), np.float32, seed)

    @property
    def is_np_flattenable(self) -> bool:
        return True

    @property
    def low(self) -> np.ndarray:
        """Bounds to clip a sampled row to: 0 and ``nvec - 1`` for the choices, the ``Box`` bounds for the rest."""
        return np.concatenate([np.zeros(self.discrete.shape), self.continuous.low], -1).astype(np.float32)

    @property
    def high(self) -> np.ndarray:
        return np.concatenate([np.asarray(self.discrete.nvec) - 1, self.continuous.high], -1).astype(np.float32)

    def seed(self, seed: Any = None) -> list[int]:
        """Seeds this space and, from it, both parts; returns the seeds used."""
        first = super().seed(seed)
        draws = self.np_random.integers(2**31, size=2).tolist()
        self.discrete.seed(draws[0])
        self.continuous.seed(draws[1])
        seeds = list(first.values()) if isinstance(first, dict) else first if isinstance(first, list) else [first]
        return [*seeds, *draws]

    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        """A random row; ``mask`` (a ``MultiDiscrete`` mask: one 0/1 array per slot) limits the choices."""
        choices = self.discrete.sample(mask=mask).astype(np.float32)
        return np.concatenate([choices, self.continuous.sample().astype(np.float32)], -1)

    def contains(self, x: Any) -> bool:
        x = np.asarray(x)
        if x.shape != self.shape or not np.issubdtype(x.dtype, np.number):
            return False
        choices = x[..., : self.discrete_size]
        return (
            bool(np.all(choices == np.round(choices)))
            and self.discrete.contains(choices.astype(np.int64))
            and self.continuous.contains(x[..., self.discrete_size :].astype(self.continuous.dtype))
        )

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, HybridRow) and other.discrete == self.discrete and other.continuous == self.continuous

    def __repr__(self) -> str:
        return f"HybridRow({self.discrete}, {self.continuous})"


@batch_space.register(HybridRow)
def batch_hybrid_row(space: HybridRow, n: int = 1) -> HybridRow:
    choices = spaces.MultiDiscrete(np.tile(space.discrete.nvec, (n,) + (1,) * space.discrete.nvec.ndim))  # not a Box
    values = cast(spaces.Box, batch_space(space.continuous, n))
    return HybridRow(choices, values, seed=copy.deepcopy(space.np_random))


def box_row(boxes: list[spaces.Box]) -> spaces.Box:
    """One float32 ``Box`` over ``boxes``' values, raveled and concatenated."""
    low = np.concatenate([np.broadcast_to(box.low, box.shape).ravel() for box in boxes])
    high = np.concatenate([np.broadcast_to(box.high, box.shape).ravel() for box in boxes])
    return spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)


class ActionSpec:
    """Maps an action space tree to the flat action a policy emits, and back.

    * ``Discrete`` stays ``Discrete`` (WYSIWYG); ``MultiDiscrete`` stays ``MultiDiscrete``.
    * A tree whose leaves are all discrete (``Discrete``, ``MultiDiscrete``, ``MultiBinary``)
      becomes one ``MultiDiscrete`` with a slot per discrete choice, ``start`` offsets removed.
    * A tree whose leaves are all ``Box`` becomes one float32 ``Box``.
    * A tree with both (*hybrid*) becomes a float32 :class:`HybridRow`: the ``discrete_size`` slots of its
      discrete leaves (as above), then the ``continuous_size`` values of its ``Box`` leaves; :meth:`split`
      cuts a row into the two.

    Example:
        >>> spec = ActionSpec(spaces.Dict({"unit": spaces.Discrete(4), "move": spaces.Box(-1, 1, (2,))}))
        >>> spec.flat_space
        HybridRow(MultiDiscrete([4]), Box(-1.0, 1.0, (2,), float32))
        >>> action = spec.unflatten(np.array([3, 0.5, -0.5], np.float32))
        >>> int(action["unit"]), action["move"].tolist()
        (3, [0.5, -0.5])
    """

    def __init__(self, space: spaces.Space, name: str = "action"):
        self.space = space
        self.name = name
        found = [(path, leaf, leaf_slots(leaf)) for path, leaf in leaf_paths(space)]
        discrete = [leaf for leaf in found if not isinstance(leaf[1], spaces.Box)]
        continuous = [leaf for leaf in found if isinstance(leaf[1], spaces.Box)]
        starts = np.cumsum([0] + [size for *_, size in discrete + continuous]).tolist()
        slot_of = {path: start for (path, _, _), start in zip(discrete + continuous, starts)}
        # path, space, start slot, slots: in tree order, the discrete leaves' slots first in the row
        self.leaves: list[tuple[Path, spaces.Space, int, int]] = [(p, leaf, slot_of[p], n) for p, leaf, n in found]
        self.discrete_size = sum(size for *_, size in discrete)
        self.continuous_size = sum(size for *_, size in continuous)
        self.size = self.discrete_size + self.continuous_size
        self.discrete = not continuous  # all-discrete: int64 rows
        self.hybrid = bool(discrete and continuous)
        self.shape: tuple[int, ...] = () if isinstance(space, spaces.Discrete) else (self.size,)
        nvec = np.concatenate([self.leaf_nvec(leaf) for _, leaf, _ in discrete] or [np.zeros(0)]).astype(np.int64)
        boxes = [cast(spaces.Box, leaf) for _, leaf, _ in continuous]
        if isinstance(space, spaces.Discrete):
            self.flat_space: spaces.Space = spaces.Discrete(int(space.n))
        elif self.discrete:
            self.flat_space = spaces.MultiDiscrete(nvec)
        elif not self.hybrid:
            self.flat_space = box_row(boxes)
        else:
            too_many = [format_path(name, p) for p, leaf, _ in discrete if self.leaf_nvec(leaf).max() > MAX_EXACT_CHOICE]
            if too_many:
                raise SpaceError(
                    f"{', '.join(too_many)}: more than {MAX_EXACT_CHOICE} choices do not fit a hybrid action's float32 row"
                )
            self.flat_space = HybridRow(spaces.MultiDiscrete(nvec), box_row(boxes))
        self.dtype = np.dtype(np.int64) if self.discrete else np.dtype(np.float32)
        self.is_leaf = not isinstance(space, (spaces.Dict, spaces.Tuple))

    def __repr__(self) -> str:
        return f"ActionSpec({self.space} -> {self.flat_space})"

    def split(self, flat: Any) -> tuple[Any, Any]:
        """``(discrete row, continuous row)`` of ``(..., size)`` flat actions (views; numpy or torch)."""
        return flat[..., : self.discrete_size], flat[..., self.discrete_size :]

    @staticmethod
    def leaf_nvec(leaf: spaces.Space) -> np.ndarray:
        if isinstance(leaf, spaces.Discrete):
            return np.array([leaf.n])
        if isinstance(leaf, spaces.MultiDiscrete):
            return np.asarray(leaf.nvec).ravel()
        return np.full(int(np.prod(leaf.shape or ())), 2)  # MultiBinary

    def zeros(self, rows: int) -> np.ndarray:
        return np.zeros((rows, *self.shape), dtype=self.dtype)

    def unflatten(self, flat: np.ndarray) -> Any:
        """One agent's flat action → the env's structured action."""
        if isinstance(self.space, spaces.Discrete):
            return int(flat) + int(self.space.start)
        values: list[Any] = []
        flat = np.asarray(flat).reshape(-1)
        for _, leaf, start, size in self.leaves:
            part = flat[start : start + size]
            if isinstance(leaf, spaces.Discrete):
                values.append(np.int64(part[0] + leaf.start))
            elif isinstance(leaf, spaces.MultiDiscrete):
                values.append((part.reshape(leaf.shape) + leaf.start).astype(leaf.dtype))
            elif isinstance(leaf, spaces.MultiBinary):
                values.append(part.reshape(leaf.shape).astype(leaf.dtype))
            else:
                values.append(part.reshape(leaf.shape or ()).astype(leaf.dtype))
        if self.is_leaf:
            return values[0]
        return build_tree(self.space, iter(values))

    def flatten(self, sample: Any) -> np.ndarray:
        """The env's structured action → one flat action row."""
        if isinstance(self.space, spaces.Discrete):
            return np.asarray(int(sample) - int(self.space.start), dtype=self.dtype)
        out = np.zeros(self.shape, dtype=self.dtype)
        for path, leaf, start, size in self.leaves:
            value = np.asarray(sample if self.is_leaf else get_path(sample, path))
            if isinstance(leaf, (spaces.Discrete, spaces.MultiDiscrete)):
                value = value - leaf.start
            out[start : start + size] = value.reshape(-1)
        return out


# -- agents with their own spaces in rows of one width ---------------------------------------
ROW_ALIGN = 8  # bytes: a row of mixed-dtype records keeps every record's widest leaf aligned


class InRow(ObservationSpec):
    """An agent's own :class:`ObservationSpec` whose record sits at the start of a wider shared ``row``.

    Multi-agent envs whose roles observe different spaces (MPE's speaker and listener) keep one row per
    agent of one width (:func:`row_observation_spec`); each agent writes its own record at the start
    of its row and its group's policy reads it back with :meth:`unflatten_torch` (views only).

    Example:
        >>> speaker, listener = spaces.Box(0, 1, (3,)), spaces.Box(-1, 1, (11,))
        >>> row = row_observation_spec([ObservationSpec(speaker), ObservationSpec(listener)])
        >>> row.flat_dtype, row.flat_size
        (dtype('float32'), 11)
        >>> InRow(speaker, row).unflatten(row.zeros(2)).shape
        (2, 3)
    """

    def __init__(
        self, space: spaces.Space, row: ObservationSpec, name: str = "observation", action_mask: str | None = ACTION_MASK_KEY
    ):
        super().__init__(space, name, action_mask)
        if self.dtype.itemsize > row.dtype.itemsize:
            raise SpaceError(f"{name}: a record of {self.dtype.itemsize} bytes does not fit a row of {row.dtype.itemsize}")
        self.row = row
        self.same_dtype = row.flat_dtype == self.flat_dtype

    def own_flat(self, rows: np.ndarray) -> np.ndarray:
        """The ``(..., flat_size)`` view of this agent's record inside ``(..., row.flat_size)`` rows."""
        if self.same_dtype:
            return rows[..., : self.flat_size]
        return rows.view(np.uint8)[..., : self.dtype.itemsize].view(self.flat_dtype)

    def leaf_views(self, flat: np.ndarray) -> list[np.ndarray]:
        return super().leaf_views(self.own_flat(flat) if flat.shape[-1] == self.row.flat_size else flat)

    def unflatten_torch(self, flat: torch.Tensor) -> Any:
        if flat.shape[-1] == self.row.flat_size and flat.shape[-1] != self.flat_size:
            if self.same_dtype:
                flat = flat.narrow(-1, 0, self.flat_size)
            else:
                import torch

                as_bytes = flat.view(torch.uint8) if flat.dtype != torch.uint8 else flat
                flat = as_bytes.narrow(-1, 0, self.dtype.itemsize).view(torch_dtype_of(self.flat_dtype))
        return super().unflatten_torch(flat)


def torch_dtype_of(dtype: np.dtype) -> Any:
    import torch

    return torch.from_numpy(np.zeros(0, dtype)).dtype


def row_observation_spec(specs: list[ObservationSpec], name: str = "observation") -> ObservationSpec:
    """One flat row wide enough for each spec's record: their common flat dtype, else bytes."""
    if all(s.space == specs[0].space for s in specs):
        return specs[0]
    dtypes = {s.flat_dtype for s in specs}
    if len(dtypes) == 1:
        dtype = dtypes.pop()
        width = max(s.flat_size for s in specs)
        if np.issubdtype(dtype, np.floating):
            return ObservationSpec(spaces.Box(-np.inf, np.inf, (width,), dtype.type), name)
        info = np.iinfo(dtype)
        return ObservationSpec(spaces.Box(info.min, info.max, (width,), dtype.type), name)
    nbytes = max(s.dtype.itemsize for s in specs)
    width = -(-nbytes // ROW_ALIGN) * ROW_ALIGN
    return ObservationSpec(spaces.Box(0, 255, (width,), np.uint8), name)


def row_action_spec(specs: list[ActionSpec], name: str = "action") -> ActionSpec:
    """The action row of agents with their own action specs: the shared one, the largest ``Discrete``,
    elementwise largest ``MultiDiscrete`` of one length, or the union of ``Box`` bounds of one shape."""
    flats: list[Any] = [s.flat_space for s in specs]
    if all(s.space == specs[0].space for s in specs):
        return specs[0]
    if all(isinstance(f, spaces.Discrete) for f in flats):
        return ActionSpec(spaces.Discrete(max(int(f.n) for f in flats)), name)
    shapes = {f.shape for f in flats}
    if len(shapes) == 1 and all(isinstance(f, spaces.MultiDiscrete) for f in flats):
        return ActionSpec(spaces.MultiDiscrete(np.max([np.asarray(f.nvec) for f in flats], axis=0)), name)
    if len(shapes) == 1 and all(isinstance(f, spaces.Box) for f in flats):
        low = np.min([np.asarray(f.low) for f in flats], axis=0)
        high = np.max([np.asarray(f.high) for f in flats], axis=0)
        return ActionSpec(spaces.Box(low, high, dtype=np.float32), name)
    raise SpaceError(
        f"{name}: the agents' flat action spaces ({', '.join(sorted({str(f) for f in flats}))}) share no row; "
        "give agents Discrete actions, or MultiDiscrete/Box actions of one shape"
    )
