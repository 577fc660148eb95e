"""Bytes one device sends for one collective of the compiled HLO (no jax).

The ring (bandwidth-optimal) formulas, as NVIDIA's nccl-tests derive them (NVIDIA/nccl-tests,
doc/PERFORMANCE.md, "bus bandwidth"): for a group of ``g`` devices and a full array of ``S``
bytes, all-gather ``S (g-1)/g``, reduce-scatter ``S (g-1)/g`` of its operand, all-reduce
``2 S (g-1)/g``, all-to-all ``S (g-1)/g``, collective-permute ``S``.
"""

from __future__ import annotations

import numbers

COLLECTIVE_OPS: tuple[str, ...] = (
    "all-gather",
    "reduce-scatter",
    "all-reduce",
    "all-to-all",
    "collective-permute",
)

def _count(name: str, value: object, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    as_int = int(value)
    if as_int < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {as_int}")
    return as_int


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


def collective_bytes(op: str, result_bytes: int, group_size: int) -> int:
    """Bytes one device sends over the interconnect for one collective (ring algorithms).

    ``result_bytes`` is the size of the instruction's result on one device, as the compiled HLO
    declares it; ``group_size`` the number of devices in each replica group. Conventions (module
    docstring; NVIDIA/nccl-tests doc/PERFORMANCE.md):

    * ``all-gather``: ``result * (g-1)/g`` -- the result is the gathered array;
    * ``reduce-scatter``: the operand is ``result * g``, so ``result * (g-1)``;
    * ``all-reduce``: ``2 * result * (g-1)/g``;
    * ``all-to-all``: ``result * (g-1)/g``;
    * ``collective-permute``: ``result`` (``group_size`` is ignored, but must be positive).

    A group of one sends nothing (except a permute). Fractions are rounded up to whole bytes.
    Raises ValueError for an unknown op, a negative size or a non-positive group.
    """
    size = _count("result_bytes", result_bytes, minimum=0)
    g = _count("group_size", group_size, minimum=1)
    if op == "all-gather" or op == "all-to-all":
        return _ceil_div(size * (g - 1), g)
    if op == "reduce-scatter":
        return size * (g - 1)
    if op == "all-reduce":
        return _ceil_div(2 * size * (g - 1), g)
    if op == "collective-permute":
        return size
    raise ValueError(f"unknown collective {op!r}; expected one of {', '.join(COLLECTIVE_OPS)}")
