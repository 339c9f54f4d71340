"""The episode channel's one form: :class:`pufferbox.episodes.Episodes`."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from pufferbox.episodes import Episodes


def test_arrays_are_canonical_and_aligned():
    eps = Episodes.from_arrays([1, 2], [1.5, 2], [3, 4], {"score": [7, 8]})
    assert eps.env_ids.dtype == np.int64 and eps.returns.dtype == np.float64 and eps.lengths.dtype == np.int64
    assert eps.metrics["score"].tolist() == [7.0, 8.0]
    with pytest.raises(ValueError, match="lengths"):
        Episodes.from_arrays([1, 2], [1.0, 2.0], [3])


def test_concat_relabel_select_and_missing_metrics():
    a = Episodes.from_arrays([0], [1.0], [10], {"score": [5]})
    b = Episodes.from_arrays([1, 2], [2.0, 3.0], [20, 30]).relabel(4)
    both = Episodes.concat([a, Episodes.empty(), b])
    assert both.env_ids.tolist() == [0, 5, 6]
    assert np.isnan(both.metrics["score"][1:]).all() and both.metrics["score"][0] == 5
    assert both.select(both.returns > 1.5).lengths.tolist() == [20, 30]
    assert len(Episodes.concat([])) == 0


def test_pickles_and_gymnasium_info_layout():
    eps = pickle.loads(pickle.dumps(Episodes.from_arrays([2], [3.0], [4])))
    info = eps.info_dict(num_envs=3)
    assert info["episode_return"].tolist() == [0.0, 0.0, 3.0]
    assert info["_episode_length"].tolist() == [False, False, True]


def test_gather_relabels_and_concatenates_like_concat_of_relabels() -> None:
    a = Episodes.one(0, 1.5, 3, {"won": 1.0})
    b = Episodes.from_arrays([0, 2], [2.0, 4.0], [5, 6])
    got = Episodes.gather([(10, a), (20, b)])
    want = Episodes.concat([a.relabel(10), b.relabel(20)])
    for name in ("env_ids", "returns", "lengths"):
        assert getattr(got, name).tolist() == getattr(want, name).tolist()
        assert getattr(got, name).dtype == getattr(want, name).dtype
    np.testing.assert_array_equal(got.metrics["won"], [1.0, np.nan, np.nan])
    assert Episodes.gather([(7, b)]).env_ids.tolist() == [7, 9]
