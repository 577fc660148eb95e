"""Convolution taps in closed form (roofline_report.hlo.taps) against the definition, counted
one output and one tap at a time on small cases."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from roofline_report.hlo.taps import floor_sum, valid_taps


def _by_definition(inputs: int, outputs: int, window: int, stride: int, pad: int, base: int,
                   dilation: int) -> int:
    last = (inputs - 1) * base
    return sum(
        1
        for o in range(outputs)
        for k in range(window)
        if 0 <= stride * o + dilation * k - pad <= last
        and (stride * o + dilation * k - pad) % base == 0
    )


@settings(max_examples=400, deadline=None)
@given(
    st.integers(0, 40), st.integers(1, 15), st.integers(-40, 40), st.integers(-60, 60)
)
def test_floor_sum(n: int, m: int, a: int, b: int) -> None:
    assert floor_sum(n, m, a, b) == sum((a * i + b) // m for i in range(n))


@settings(max_examples=1500, deadline=None)
@given(
    st.integers(1, 12), st.integers(1, 14), st.integers(1, 9), st.integers(1, 5),
    st.integers(-8, 12), st.integers(1, 6), st.integers(1, 6),
)
def test_valid_taps_is_the_definition(inputs: int, outputs: int, window: int, stride: int,
                                      pad: int, base: int, dilation: int) -> None:
    args = (inputs, outputs, window, stride, pad, base, dilation)
    assert valid_taps(*args) == _by_definition(*args)


def test_valid_taps_by_hand() -> None:
    # SAME padding, 3 taps over 10 outputs: the first and last output lose one tap each.
    assert valid_taps(10, 10, 3, 1, 1, 1, 1) == 10 * 3 - 2
    # Base dilation 2 (transposed convolution): taps alternate between elements and holes.
    # Elements at 0, 2, 4; output o's two taps sit at o and o + 1: each meets one element.
    assert valid_taps(3, 5, 2, 1, 0, 2, 1) == 5
    assert valid_taps(0, 5, 3, 1, 0, 1, 1) == 0 and valid_taps(4, 4, 0, 1, 0, 1, 1) == 0
    # No solution: positions 2o + 2k - 1 are odd, every element sits at an even position.
    assert valid_taps(8, 8, 3, 2, 1, 2, 2) == 0


def test_huge_sizes_take_microseconds() -> None:
    n = 512 * 1024
    start = time.perf_counter()
    assert valid_taps(2, n + 1, 1, 1, 0, n, 1) == 2
    assert valid_taps(1, n, n, 1, n - 1, 1, 1) == n
    assert valid_taps(n, n, n, n - 1, 0, n, 1) == n
    assert valid_taps(10**9, 10**9, 10**6, 3, 10**5, 7, 11) > 0
    assert time.perf_counter() - start < 0.1
