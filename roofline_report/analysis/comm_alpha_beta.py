"""The alpha-beta time of one collective: ``T = alpha x steps + bytes / beta`` (alpha the latency
of one step, beta the bandwidth one device sends at), with the steps and bytes of the ring and
tree algorithms (:func:`algorithm_steps`, :func:`algorithm_bytes`, :func:`collective_time`).
Pure and deterministic; the model is described in :mod:`roofline_report.analysis.comm`.
"""

from __future__ import annotations

import math
from typing import Any

from roofline_report.analysis.comm import non_negative, positive
from roofline_report.hlo.collectives import COLLECTIVE_OPS, _ceil_div, _count, collective_bytes

ALGORITHMS: tuple[str, ...] = ("ring", "tree")
"""Collective algorithms the alpha-beta model prices (:func:`algorithm_steps`)."""

ALGORITHM_NOTES: dict[str, str] = {
    "ring": "ring: all-gather, reduce-scatter and all-to-all take N-1 steps and send "
    "(N-1)/N of the full array per device; all-reduce is a reduce-scatter then an all-gather: "
    "2(N-1) steps, 2(N-1)/N of the array",
    "tree": "tree (recursive halving and doubling): all-gather and reduce-scatter take "
    "log2 N steps and send the same (N-1)/N; all-reduce 2 log2 N steps; all-to-all "
    "(Bruck) log2 N steps of half the buffer each",
}


def log2_steps(g: int) -> int:
    return max(0, math.ceil(math.log2(g))) if g > 1 else 0


def algorithm_steps(op: str, group_size: int, algorithm: str = "ring") -> int:
    """Latency steps (messages in sequence) of one collective over ``group_size`` devices.

    ``ring``: all-gather, reduce-scatter and all-to-all ``N-1``; all-reduce ``2(N-1)``
    (reduce-scatter then all-gather). ``tree`` (recursive halving/doubling for all-gather,
    reduce-scatter and all-reduce, Bruck for all-to-all): ``ceil(log2 N)``, all-reduce
    ``2 ceil(log2 N)``. A collective-permute is one step for either. A group of one takes no
    step. Raises ValueError for an unknown op or algorithm or a non-positive group.
    """
    g = _count("group_size", group_size, minimum=1)
    if op not in COLLECTIVE_OPS:
        raise ValueError(f"unknown collective {op!r}; expected one of {', '.join(COLLECTIVE_OPS)}")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; expected {' or '.join(ALGORITHMS)}")
    if op == "collective-permute":
        return 1
    if g == 1:
        return 0
    per_phase = g - 1 if algorithm == "ring" else log2_steps(g)
    return 2 * per_phase if op == "all-reduce" else per_phase


def algorithm_bytes(op: str, result_bytes: int, group_size: int, algorithm: str = "ring") -> int:
    """Bytes one device sends in one collective under ``algorithm``.

    ``ring``: :func:`collective_bytes`. ``tree``: the same for all-gather, reduce-scatter and
    all-reduce (recursive doubling and halving move ``(N-1)/N`` of the array, like the ring, for
    a power-of-two group); all-to-all (Bruck) sends half the per-device buffer at each of its
    ``ceil(log2 N)`` steps, ``S/2 ceil(log2 N)``, more than the ring's ``S (N-1)/N`` from
    N = 4 on: fewer steps, more bytes.
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; expected {' or '.join(ALGORITHMS)}")
    ring = collective_bytes(op, result_bytes, group_size)
    if algorithm == "tree" and op == "all-to-all":
        return _ceil_div(result_bytes * log2_steps(group_size), 2)
    return ring


def collective_time(
    op: str,
    result_bytes: int,
    group_size: int,
    *,
    bandwidth: float,
    latency: float,
    algorithm: str = "ring",
    count: int = 1,
) -> dict[str, Any]:
    """The alpha-beta time of ``count`` executions of one collective.

    ``time = count x (latency x steps + bytes sent / bandwidth)``, with ``steps`` from
    :func:`algorithm_steps` and ``bytes`` from :func:`algorithm_bytes`; ``bandwidth`` is what one
    device sends per second (its egress), ``latency`` the seconds each step costs whatever its
    size (alpha). Returns ``{"op", "group_size", "algorithm", "count", "steps", "bytes",
    "t_latency", "t_bandwidth", "time"}`` (``steps`` and ``bytes`` per execution; times for
    all ``count``).
    """
    link = positive("bandwidth", bandwidth)
    alpha = non_negative("latency", latency)
    times = _count("count", count, minimum=0)
    steps = algorithm_steps(op, group_size, algorithm)
    sent = algorithm_bytes(op, result_bytes, group_size, algorithm)
    t_latency = times * steps * alpha
    t_bandwidth = times * sent / link
    return {
        "op": op,
        "group_size": int(group_size),
        "algorithm": algorithm,
        "count": times,
        "steps": steps,
        "bytes": sent,
        "t_latency": t_latency,
        "t_bandwidth": t_bandwidth,
        "time": t_latency + t_bandwidth,
    }
