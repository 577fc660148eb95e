"""Large host arrays in blocks on every core (roofline_report.observe.host_arrays): the same
values as in one piece, whatever the number of cores."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from roofline_report.observe import host_arrays


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Arrays of 4,096 elements and more in blocks of about 512 (whole rows)."""
    monkeypatch.setattr(host_arrays, "PARALLEL_ELEMENTS", 4096)
    monkeypatch.setattr(host_arrays, "BLOCK_ELEMENTS", 512)


def test_a_small_array_is_drawn_as_numpy_draws_it() -> None:
    assert np.array_equal(host_arrays.standard_normal(3, (64, 32)),
                          np.random.default_rng(3).standard_normal((64, 32)))


@pytest.mark.usefixtures("small_blocks")
def test_a_large_array_is_the_same_whatever_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host_arrays, "workers", lambda: 1)
    one = host_arrays.standard_normal(8, (96, 100))
    monkeypatch.setattr(host_arrays, "workers", lambda: 3)
    three = host_arrays.standard_normal(8, (96, 100))
    assert np.array_equal(one, three)
    # Its blocks come from streams of their own: no two rows alike, the moments a normal's.
    assert len({float(v) for v in one[:, 0]}) == 96
    assert abs(one.mean()) < 0.05 and abs(one.std() - 1) < 0.05
    assert not np.array_equal(one, host_arrays.standard_normal(9, (96, 100)))
    vector = host_arrays.standard_normal(8, (5000,))  # a vector's blocks are runs of it
    assert vector.shape == (5000,) and len(np.unique(vector)) == 5000


@pytest.mark.usefixtures("small_blocks")
def test_conversions_and_row_functions_give_what_the_whole_gives() -> None:
    x = np.random.default_rng(0).standard_normal((97, 61))
    assert np.array_equal(host_arrays.astype(x, np.float32), x.astype(np.float32))

    def softmax(a: Any) -> Any:
        e = np.exp(a - a.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    assert np.array_equal(host_arrays.by_rows(softmax)(x), softmax(x))
    assert np.array_equal(host_arrays.by_rows(lambda a: a.sum(axis=-1))(x), x.sum(axis=-1))
    y = x[::-1].copy()
    assert np.array_equal(host_arrays.by_rows(lambda a, b: 3.0 * a + b)(x, y), 3.0 * x + y)
    # Not row for row (a whole-array reduction): computed whole.
    assert host_arrays.by_rows(lambda a: a.sum())(x) == pytest.approx(x.sum())


@pytest.mark.usefixtures("small_blocks")
def test_a_failure_in_a_block_is_raised() -> None:
    def fails(a: Any) -> Any:
        if (a == 50).any():
            raise ValueError("bad block")
        return a

    x = np.arange(100 * 64, dtype=np.float64).reshape(100, 64) // 64
    with pytest.raises(ValueError, match="bad block"):
        host_arrays.by_rows(fails)(x)


@pytest.mark.usefixtures("small_blocks")
def test_only_the_leading_arguments_split_are_cut_into_rows() -> None:
    """A convolution's images in blocks, its filter whole to each."""
    x = np.random.default_rng(1).standard_normal((40, 8, 8, 3))
    w = np.random.default_rng(2).standard_normal((3, 3, 3, 4))

    def conv(a: Any, f: Any) -> Any:
        out = np.zeros((a.shape[0], 6, 6, 4))
        for i in range(3):
            for j in range(3):
                out += a[:, i:i + 6, j:j + 6, :] @ f[i, j]
        return out

    assert np.array_equal(host_arrays.by_rows(conv, split=1)(x, w), conv(x, w))
