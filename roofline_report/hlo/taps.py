"""Convolution taps that land on the input, counted in closed form (no jax).

A convolution's flops are 2 x (input features per group) x (output features) x (batch per batch
group) x the kernel taps that land on an input element, summed over the outputs: taps that fall
on padding or between the elements of a base-dilated (``lhs_dilation``) input do no work, as
XLA's ``HloCostAnalysis`` counts them. Along one spatial dimension that count is

    #{(o, k) : 0 <= o < outputs, 0 <= k < window, t = stride*o + dilation*k - pad_low,
               0 <= t <= (inputs - 1)*base, t divisible by base}

:func:`valid_taps` computes it without looping over outputs or taps: for the taps ``k`` whose
positions can meet the base-dilated grid at all (one arithmetic progression of ``k``), the
outputs that do form an arithmetic progression inside an interval whose ends are floors of
linear functions of ``k``; their count summed over ``k`` is a sum of floors of linear functions,
which :func:`floor_sum` evaluates with Euclid's algorithm. A convolution with ``lhs_dilation``
524,288 (as in JAX's own roofline tests) is counted in microseconds where a loop over its taps
would not end.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence

__all__ = ["DIM_LABELS", "convolution_flops", "floor_sum", "valid_taps", "window_dims"]

#: A convolution's ``dim_labels`` (``b01f_01io->b01f``): its input's, filter's and output's.
DIM_LABELS = re.compile(r"^(?P<lhs>\w+)_(?P<rhs>\w+)->(?P<out>\w+)$")


def floor_sum(n: int, m: int, a: int, b: int) -> int:
    """``sum(floor((a*i + b) / m) for i in range(n))`` in O(log) steps, for any integers
    ``a`` and ``b``, ``m >= 1`` and ``n >= 0``.

    Each step first takes the whole multiples of ``m`` out of ``a`` and ``b`` (their part of the
    sum is an arithmetic series), then, with ``0 <= a, b < m``, counts the lattice points under
    the line the other way round: the sum equals the same kind of sum with ``m`` and ``a``
    exchanged, over ``floor((a*n + b) / m)`` terms.
    """
    if m < 1:
        raise ValueError(f"floor_sum needs m >= 1, got {m}")
    total = 0
    while n > 0:
        whole_a, a = divmod(a, m)
        whole_b, b = divmod(b, m)
        total += whole_a * (n * (n - 1) // 2) + whole_b * n
        top = a * n + b
        if top < m:
            break
        n, b = divmod(top, m)
        m, a = a, m
    return total


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _sum_floors(lo: int, hi: int, m: int, a: int, b: int) -> int:
    """``sum(floor((a*j + b) / m) for j in range(lo, hi + 1))``."""
    if hi < lo:
        return 0
    return floor_sum(hi - lo + 1, m, a, a * lo + b)


def valid_taps(
    in_size: int, out_size: int, window: int, stride: int, pad_lo: int, base: int, dilation: int
) -> int:
    """Kernel taps that land on the input (not on padding nor between base-dilated elements),
    summed over the outputs along one spatial dimension: XLA's count of valid convolution
    positions, in closed form (module docstring).

    ``stride``, ``base`` (lhs dilation) and ``dilation`` (rhs dilation) below 1 count as 1;
    ``pad_lo`` may be negative (a cropped input).
    """
    inputs, outputs, taps = int(in_size), int(out_size), int(window)
    if inputs <= 0 or outputs <= 0 or taps <= 0:
        return 0
    s, b, d = max(1, int(stride)), max(1, int(base)), max(1, int(dilation))
    pad = int(pad_lo)
    last = (inputs - 1) * b  # the last input element's position in the base-dilated input
    # Output o and tap k meet position t = s*o + d*k - pad; t must lie in [0, last] and be a
    # multiple of b. For a fixed k, with c = pad - d*k: s*o in [c, c + last], s*o = c (mod b).
    g = math.gcd(s, b)
    # s*o = c (mod b) is solvable only when g divides c = pad - d*k: d*k = pad (mod g).
    g2 = math.gcd(d, g)
    if pad % g2:
        return 0
    step = g // g2  # the taps that can land on the grid: k = k0 + step*j
    k0 = 0 if step == 1 else (pad // g2) * pow(d // g2, -1, step) % step
    m = b // g  # then o = r (mod m) with r = (c/g) * inverse(s/g) mod m
    u = 0 if m == 1 else pow(s // g, -1, m)
    # The taps with some output on the input: lo(k) <= outputs - 1 and hi(k) >= 0, where
    # lo(k) = max(0, ceil(c/s)) and hi(k) = min(outputs - 1, floor((c + last)/s)).
    k_min = max(0, _ceil_div(pad - s * (outputs - 1), d))
    k_max = min(taps - 1, (pad + last) // d)
    if k_max < k_min:
        return 0
    k_low_free = _ceil_div(pad, d)  # from here on c <= 0: lo(k) = 0
    k_high_capped = (pad + last - s * (outputs - 1)) // d  # up to here hi(k) = outputs - 1
    cuts = sorted({k_min, k_max + 1, *(k for k in (k_low_free, k_high_capped + 1)
                                       if k_min < k <= k_max)})
    # In terms of j (k = k0 + step*j): c_j = c0 - big_d*j, and r_j = u*c_j/g serves as the
    # residue (any representative does: the two floors below shift together).
    c0 = pad - d * k0
    big_d = d * step
    r0, r_step = u * (c0 // g), u * (big_d // g)  # r_j = r0 - r_step*j
    total = 0
    for first, end in itertools.pairwise(cuts):
        j_lo = _ceil_div(first - k0, step)
        j_hi = (end - 1 - k0) // step
        if j_hi < j_lo:
            continue
        # count_j = floor((hi_j - r_j)/m) - floor((lo_j - 1 - r_j)/m)
        if first <= k_high_capped:  # hi_j = outputs - 1
            total += _sum_floors(j_lo, j_hi, m, r_step, outputs - 1 - r0)
        else:  # hi_j = floor((c_j + last)/s)
            total += _sum_floors(j_lo, j_hi, s * m, s * r_step - big_d, c0 + last - s * r0)
        if first >= k_low_free:  # lo_j = 0
            total -= _sum_floors(j_lo, j_hi, m, r_step, -1 - r0)
        else:  # lo_j - 1 = ceil(c_j/s) - 1 = floor((c_j - 1)/s)
            total -= _sum_floors(j_lo, j_hi, s * m, s * r_step - big_d, c0 - 1 - s * r0)
    return total


def window_dims(text: str, rank: int) -> list[tuple[int, int, int, int, int]]:
    """(size, stride, low padding, lhs dilation, rhs dilation) per spatial dimension of a
    ``window={size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=.. rhs_dilate=..}`` attribute."""
    items = dict(re.findall(r"(\w+)=([\w_]+)", text))

    def per_dim(key: str, default: int) -> list[int]:
        value = items.get(key)
        if value is None:
            return [default] * rank
        return [int(v.split("_")[0]) for v in value.split("x")]

    size = per_dim("size", 0)
    stride = per_dim("stride", 1)
    pad = per_dim("pad", 0)
    lhs = per_dim("lhs_dilate", 1)
    rhs = per_dim("rhs_dilate", 1)
    return [(size[i], stride[i], pad[i], lhs[i], rhs[i]) for i in range(rank)]


def convolution_flops(lhs: Sequence[int], rhs: Sequence[int], out: Sequence[int],
                      attributes: Mapping[str, str]) -> int | None:
    """XLA's convolution count: 2 x input features per group x output features x batch per
    batch group x kernel taps that land on the input (padding and dilation respected), from
    the input (``lhs``), filter (``rhs``) and output dimensions and the ``dim_labels`` and
    ``window`` attributes; None where the labels do not fit the shapes."""
    labels = DIM_LABELS.match(attributes.get("dim_labels", ""))
    if labels is None:
        return None
    lhs_l, rhs_l, out_l = labels["lhs"], labels["rhs"], labels["out"]
    if len(lhs_l) != len(lhs) or len(rhs_l) != len(rhs) or len(out_l) != len(out):
        return None
    spatial = [c for c in lhs_l if c.isdigit()]
    window = window_dims(attributes.get("window", ""), len(spatial))
    if len(window) != len(spatial):
        return None
    taps = 1
    for i, digit in enumerate(sorted(spatial)):
        size, stride, pad_lo, lhs_dil, rhs_dil = window[i]
        taps *= valid_taps(
            lhs[lhs_l.index(digit)],
            out[out_l.index(digit)],
            rhs[rhs_l.index(digit)] if size == 0 else size,
            stride,
            pad_lo,
            lhs_dil,
            rhs_dil,
        )
    groups = int(attributes.get("feature_group_count", "1"))
    batch_groups = int(attributes.get("batch_group_count", "1"))
    fma = (
        (lhs[lhs_l.index("f")] // groups)
        * out[out_l.index("f")]
        * (lhs[lhs_l.index("b")] // batch_groups)
        * taps
    )
    return 2 * fma
