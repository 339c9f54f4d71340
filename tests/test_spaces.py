"""Flattening spec: round trips over random nested spaces (hypothesis), torch views, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st

from pufferbox.spaces import ActionSpec, ObservationSpec, SpaceError

DTYPES = [np.float32, np.float64, np.uint8, np.int32, np.int64]


def box(dtype, shape):
    if np.issubdtype(dtype, np.integer):
        return spaces.Box(0, 9, shape, dtype=dtype)
    return spaces.Box(-2.0, 2.0, shape, dtype=dtype)


shapes = st.lists(st.integers(1, 3), min_size=1, max_size=2).map(tuple)
leaves = st.one_of(
    st.builds(box, st.sampled_from(DTYPES), shapes),
    st.builds(spaces.Discrete, st.integers(1, 6), start=st.integers(-2, 2)),
    st.builds(lambda n: spaces.MultiDiscrete(n), st.lists(st.integers(1, 5), min_size=1, max_size=3)),
    st.builds(spaces.MultiBinary, st.integers(1, 4)),
)
trees = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.dictionaries(st.sampled_from("abcdef"), children, min_size=1, max_size=3).map(spaces.Dict),
        st.lists(children, min_size=1, max_size=3).map(lambda xs: spaces.Tuple(tuple(xs))),
    ),
    max_leaves=6,
)


def assert_same(space, a, b, cast=None):
    if isinstance(space, spaces.Dict):
        for k in space.spaces:
            assert_same(space[k], a[k], b[k], cast)
    elif isinstance(space, spaces.Tuple):
        for i, sub in enumerate(space.spaces):
            assert_same(sub, a[i], b[i], cast)
    else:
        dtype = cast or np.asarray(b).dtype
        np.testing.assert_array_equal(np.asarray(b, dtype=dtype), np.asarray(a, dtype=dtype))


@settings(max_examples=150, deadline=None)
@given(trees, st.integers(0, 2**31 - 1))
def test_observation_round_trip_numpy_and_torch(space, seed):
    space.seed(seed)
    spec = ObservationSpec(space)
    samples = [space.sample() for _ in range(3)]
    flat = spec.zeros(3)
    views = spec.leaf_views(flat)
    for row, sample in enumerate(samples):
        spec.write(flat, row, sample, views)
    tree = spec.unflatten(flat)
    as_torch = spec.unflatten_torch(torch.from_numpy(flat))
    for row, sample in enumerate(samples):
        assert_same(space, sample, pick(tree, row))
        assert_same(space, sample, to_numpy(pick(as_torch, row)))
    assert flat.shape == (3, spec.flat_size) and flat.dtype == spec.flat_dtype


def pick(tree, row):
    if isinstance(tree, dict):
        return {k: pick(v, row) for k, v in tree.items()}
    if isinstance(tree, tuple):
        return tuple(pick(v, row) for v in tree)
    return tree[row]


def to_numpy(tree):
    if isinstance(tree, dict):
        return {k: to_numpy(v) for k, v in tree.items()}
    if isinstance(tree, tuple):
        return tuple(to_numpy(v) for v in tree)
    return tree.numpy()


discrete_leaves = st.one_of(
    st.builds(spaces.Discrete, st.integers(1, 6), start=st.integers(-2, 2)),
    st.builds(
        lambda n, s: spaces.MultiDiscrete(n, start=[s] * len(n)),
        st.lists(st.integers(1, 5), min_size=1, max_size=3),
        st.integers(-1, 1),
    ),
    st.builds(spaces.MultiBinary, st.integers(1, 4)),
)
continuous_leaves = st.builds(box, st.sampled_from([np.float32, np.float64]), shapes)


def nest(leaf_strategy):
    return st.recursive(
        leaf_strategy,
        lambda c: st.one_of(
            st.dictionaries(st.sampled_from("xyz"), c, min_size=1, max_size=3).map(spaces.Dict),
            st.lists(c, min_size=1, max_size=3).map(lambda xs: spaces.Tuple(tuple(xs))),
        ),
        max_leaves=5,
    )


@settings(max_examples=100, deadline=None)
@given(st.one_of(nest(discrete_leaves), nest(continuous_leaves)), st.integers(0, 2**31 - 1))
def test_action_round_trip(space, seed):
    space.seed(seed)
    spec = ActionSpec(space)
    for _ in range(3):
        action = space.sample()
        flat = spec.flatten(action)
        assert spec.flat_space.contains(flat.astype(spec.flat_space.dtype))
        back = spec.unflatten(flat)
        # Continuous leaves pass through the float32 flat Box: compare at float32.
        assert_same(space, action, back, cast=None if spec.discrete else np.float32)
    if isinstance(space, spaces.Discrete):
        assert spec.flat_space == spaces.Discrete(space.n)
    elif spec.discrete:
        assert isinstance(spec.flat_space, spaces.MultiDiscrete) and spec.flat_space.shape == (spec.size,)
    else:
        assert isinstance(spec.flat_space, spaces.Box) and spec.flat_space.dtype == np.float32


def mixed_tree(first, second, rest, as_dict):
    """A Dict or Tuple holding a discrete subtree, a continuous one and one of either, in a drawn order."""
    children = [first, second, *rest]
    if as_dict:
        return spaces.Dict({f"k{i}": child for i, child in enumerate(children)})
    return spaces.Tuple(tuple(children))


hybrid_trees = st.builds(
    lambda d, c, rest, as_dict, swap: mixed_tree(*((c, d) if swap else (d, c)), rest, as_dict),
    nest(discrete_leaves),
    nest(continuous_leaves),
    st.lists(nest(st.one_of(discrete_leaves, continuous_leaves)), max_size=2),
    st.booleans(),
    st.booleans(),
)


@settings(max_examples=100, deadline=None)
@given(hybrid_trees, st.integers(0, 2**31 - 1))
def test_hybrid_action_round_trip_and_its_two_rows(space, seed):
    """A tree mixing discrete and Box leaves: one float32 row, its discrete leaves' slots (MultiDiscrete) first,
    then its Box leaves' values; flatten → unflatten gives the action back, with each leaf's own dtype."""
    from gymnasium.vector.utils import batch_space

    from pufferbox.spaces import HybridRow

    space.seed(seed)
    spec = ActionSpec(space)
    row = spec.flat_space
    assert spec.hybrid and not spec.discrete and isinstance(row, HybridRow) and spec.dtype == np.float32
    assert row.discrete.shape == (spec.discrete_size,) and row.continuous.shape == (spec.continuous_size,)
    for path, leaf, start, size in spec.leaves:  # the discrete row holds exactly the discrete leaves' slots
        inside = (0, spec.discrete_size) if not isinstance(leaf, spaces.Box) else (spec.discrete_size, spec.size)
        assert inside[0] <= start and start + size <= inside[1], path
    for _ in range(3):
        action = space.sample()
        flat = spec.flatten(action)
        assert flat.dtype == np.float32 and row.contains(flat)
        choices, values = spec.split(flat)
        assert row.discrete.contains(choices.astype(np.int64)) and row.continuous.contains(values)
        back = spec.unflatten(flat)
        assert space.contains(back)
        assert_same(space, action, back, cast=np.float32)
    batch = batch_space(row, 4)  # what a vector env's action_space.sample() draws
    assert isinstance(batch.discrete, spaces.MultiDiscrete) and batch.high.shape == (4, spec.size)
    for flat in batch.sample():
        assert row.contains(flat) and space.contains(spec.unflatten(flat))
    tensors = spec.split(torch.from_numpy(batch.sample()))
    assert tensors[0].shape == (4, spec.discrete_size) and tensors[1].shape == (4, spec.continuous_size)


def test_hybrid_row_refuses_non_whole_choices_and_too_many_of_them():
    from pufferbox.spaces import HybridRow

    row = ActionSpec(spaces.Tuple((spaces.Discrete(3), spaces.Box(-1, 1, (1,))))).flat_space
    assert isinstance(row, HybridRow) and row.low.tolist() == [0, -1] and row.high.tolist() == [2, 1]
    for bad in ([1.5, 0.0], [3.0, 0.0], [0.0, 2.0], [np.nan, 0.0], [1.0]):
        assert not row.contains(np.array(bad, np.float32)), bad
    huge = spaces.Dict({"item": spaces.Discrete(2**24 + 1), "amount": spaces.Box(0, 1, (1,))})
    with pytest.raises(SpaceError, match=r"action\['item'\]: more than 16777216 choices do not fit"):
        ActionSpec(huge)


def test_check_names_the_offending_field():
    space = spaces.Dict({"a": spaces.Tuple((spaces.Discrete(3), spaces.Box(0, 1, (2,), dtype=np.float32)))})
    spec = ObservationSpec(space)
    with pytest.raises(SpaceError, match=r"observation\['a'\]\[1\] has shape \(3,\)"):
        spec.check({"a": (1, np.zeros(3, np.float32))})
    with pytest.raises(SpaceError, match=r"observation\['a'\]\[0\] = 7 is outside Discrete\(3\)"):
        spec.check({"a": (7, np.zeros(2, np.float32))})
    with pytest.raises(SpaceError, match=r"observation\['a'\]\[0\] is missing"):
        spec.check({"b": 1})
    with pytest.raises(SpaceError, match="unsupported space Text"):
        ObservationSpec(spaces.Dict({"t": spaces.Text(5)}))


def nested_spec() -> ObservationSpec:
    return ObservationSpec(
        spaces.Dict(
            {
                "image": spaces.Box(0, 1, (5, 5), dtype=np.float32),
                "meta": spaces.Tuple((spaces.Discrete(4), spaces.Dict({"bits": spaces.MultiBinary(3)}))),
            }
        )
    )


def test_torch_unflatten_returns_views_not_copies():
    spec = nested_spec()
    flat = torch.from_numpy(spec.zeros(8))
    tree = spec.unflatten_torch(flat)
    base = flat.untyped_storage().data_ptr()
    leaves = [tree["image"], tree["meta"][0], tree["meta"][1]["bits"]]
    for leaf in leaves:
        assert leaf.untyped_storage().data_ptr() == base  # same storage: a view
    assert [tuple(x.shape) for x in leaves] == [(8, 5, 5), (8,), (8, 3)]
    tree["meta"][1]["bits"][2, 1] = 1  # writes through to the flat buffer
    assert spec.unflatten(flat.numpy())["meta"][1]["bits"][2, 1] == 1


def test_torch_unflatten_has_no_graph_breaks():
    spec = nested_spec()
    spec.torch_layout()

    def model(flat):
        tree = spec.unflatten_torch(flat)
        return tree["image"].sum(dim=(1, 2)) + tree["meta"][0].float() + tree["meta"][1]["bits"].float().sum(-1)

    torch._dynamo.reset()
    explanation = torch._dynamo.explain(model)(torch.from_numpy(spec.zeros(4)))
    assert explanation.graph_break_count == 0 and not explanation.break_reasons
    assert explanation.graph_count == 1


# -- agents with their own spaces in rows of one width (issue 16) ------------------------------
def test_records_of_other_dtypes_share_a_byte_row_and_read_back_exactly():
    import torch

    from pufferbox.spaces import InRow, row_observation_spec

    image = spaces.Box(0, 255, (3, 2), np.uint8)
    mixed = spaces.Dict({"pos": spaces.Box(-1, 1, (3,), np.float32), "hp": spaces.Discrete(7)})
    row = row_observation_spec([ObservationSpec(image), ObservationSpec(mixed)])
    assert row.flat_dtype == np.uint8 and row.flat_size % 8 == 0
    assert row.flat_size >= max(ObservationSpec(image).dtype.itemsize, ObservationSpec(mixed).dtype.itemsize)
    rows = row.zeros(2)
    own_image, own_mixed = InRow(image, row), InRow(mixed, row)
    frame = np.arange(6, dtype=np.uint8).reshape(3, 2)
    sample = {"pos": np.array([0.5, -0.25, 1.0], np.float32), "hp": 5}
    own_image.write(rows, 0, frame)
    own_mixed.write(rows, 1, sample)
    np.testing.assert_array_equal(own_image.unflatten(rows[:1])[0], frame)
    back = own_mixed.unflatten(rows[1:])
    np.testing.assert_array_equal(back["pos"][0], sample["pos"])
    assert int(back["hp"][0]) == 5
    tree = own_mixed.unflatten_torch(torch.from_numpy(rows))  # what a group's encoder reads: views of the row
    torch.testing.assert_close(tree["pos"][1], torch.from_numpy(sample["pos"]))
    assert int(tree["hp"][1]) == 5
    assert not rows[0, own_image.dtype.itemsize :].any(), "the row past the record stays zero"


def test_rows_of_one_dtype_keep_it_and_a_record_wider_than_its_row_is_refused():
    from pufferbox.spaces import InRow, row_observation_spec

    short, long = spaces.Box(-1, 1, (3,), np.float32), spaces.Box(-1, 1, (11,), np.float32)
    row = row_observation_spec([ObservationSpec(short), ObservationSpec(long)])
    assert (row.flat_dtype, row.flat_size) == (np.float32, 11)
    assert row_observation_spec([ObservationSpec(short)] * 2).space == short
    with pytest.raises(SpaceError, match="does not fit a row"):
        InRow(spaces.Box(-1, 1, (12,), np.float32), row)


def test_action_rows_of_agents_with_their_own_action_spaces():
    from pufferbox.spaces import row_action_spec

    def row_of(*s):
        return row_action_spec([ActionSpec(x) for x in s]).flat_space

    assert row_of(spaces.Discrete(3), spaces.Discrete(5)) == spaces.Discrete(5)
    assert row_of(spaces.MultiDiscrete([2, 7]), spaces.MultiDiscrete([4, 3])) == spaces.MultiDiscrete([4, 7])
    box = row_of(spaces.Box(-1, 1, (2,), np.float32), spaces.Box(-2, 0.5, (2,), np.float32))
    assert box.low.tolist() == [-2, -2] and box.high.tolist() == [1, 1]
    with pytest.raises(SpaceError, match="share no row"):
        row_of(spaces.Box(-1, 1, (3,), np.float32), spaces.Box(-1, 1, (5,), np.float32))
    with pytest.raises(SpaceError, match="share no row"):
        row_of(spaces.Discrete(3), spaces.Box(-1, 1, (1,), np.float32))
