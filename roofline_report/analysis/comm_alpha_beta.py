"""The alpha-beta time of one collective on one switched level: ``T = alpha x steps + bytes /
beta`` (alpha the latency of one step, beta the bandwidth one device sends at), with the steps
and bytes of the algorithms NCCL runs (:func:`algorithm_steps`, :func:`algorithm_bytes`,
:func:`collective_time`). Pure and deterministic; the model is described in
:mod:`roofline_report.analysis.comm`.

The algorithms, per collective (NVIDIA NCCL: the ring since its first release, the double
binary tree for all-reduce since NCCL 2.4; all-to-all as grouped point-to-point sends):

* ``ring``: all-gather and reduce-scatter take ``N-1`` steps and send ``(N-1)/N`` of the full
  array per device; an all-reduce is a reduce-scatter then an all-gather, ``2(N-1)`` steps and
  ``2(N-1)/N`` of the array (nccl-tests' bus-bandwidth factors, doc/PERFORMANCE.md).
* ``tree`` (all-reduce only): NCCL's double binary tree. The array is halved over two binary
  trees in which each device is an inner node of one and a leaf of the other; a reduction up
  and a broadcast down take ``2 ceil(log2 N)`` steps, and the busiest device sends the whole
  array twice, ``2 V`` against the ring's ``2 V (N-1)/N``: about the ring's bandwidth, with
  logarithmic latency. ``ceil`` prices a group that is not a power of two at the depth of the
  next one.
* ``direct`` (all-to-all only): every device sends each peer its ``1/N`` of the buffer at
  once, ``(N-1)/N`` of the buffer in one step ("How to Scale Your Model", 'How to Think About
  GPUs': within a node each GPU sends directly to each destination).
* A collective-permute is one step of the whole buffer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from roofline_report.analysis.comm import non_negative, positive
from roofline_report.hlo.collectives import COLLECTIVE_OPS, _count, collective_bytes

ALGORITHMS: tuple[str, ...] = ("ring", "tree", "direct")
"""Algorithms the alpha-beta model prices on a switch (:func:`algorithm_steps`)."""

SWITCH_ALGORITHMS: dict[str, tuple[str, ...]] = {
    "all-reduce": ("ring", "tree"),
    "all-gather": ("ring",),
    "reduce-scatter": ("ring",),
    "all-to-all": ("direct",),
    "collective-permute": ("direct",),
}
"""The algorithms NCCL may run for each collective on a switch; the faster one is priced."""

ALGORITHM_NOTES: dict[str, str] = {
    "ring": "ring (all-gather, reduce-scatter, all-reduce on a switch): N-1 steps and (N-1)/N "
    "of the full array per device; all-reduce 2(N-1) steps and 2(N-1)/N of the array",
    "tree": "double binary tree (all-reduce on a switch, as NCCL runs it): 2 ceil(log2 N) "
    "steps, the whole array sent twice by the busiest device (2 V against the ring's "
    "2 V (N-1)/N)",
    "direct": "direct (all-to-all on a switch): every peer at once, one step, (N-1)/N of the "
    "buffer",
    "torus ring": "rings along the torus axes a group spans: per axis ceil(a/2) hops both "
    "ways where the axis wraps around, a-1 hops one way where it does not; the axes' links "
    "send at once",
    "bisection": "all-to-all on a torus: bound by the links across the slice's narrowest "
    "cut: n1 n2 / N of a buffer cross it one way, n1 and n2 the devices on either side",
}


def log2_steps(g: int) -> int:
    return max(0, math.ceil(math.log2(g))) if g > 1 else 0


def _check(op: str, algorithm: str | None) -> str:
    """``algorithm``, or the first NCCL runs for ``op`` when None; ValueError for one it does
    not run."""
    if op not in COLLECTIVE_OPS:
        raise ValueError(f"unknown collective {op!r}; expected one of {', '.join(COLLECTIVE_OPS)}")
    if algorithm is None:
        return SWITCH_ALGORITHMS[op][0]
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; expected {', '.join(ALGORITHMS)}")
    if algorithm not in SWITCH_ALGORITHMS[op]:
        raise ValueError(f"NCCL runs no {algorithm} algorithm for {op}; it runs "
                         f"{' or '.join(SWITCH_ALGORITHMS[op])}")
    return algorithm


def algorithm_steps(op: str, group_size: int, algorithm: str | None = None) -> int:
    """Latency steps (messages in sequence) of one collective over ``group_size`` devices
    (module docstring). A group of one takes no step; a permute one. Raises ValueError for an
    unknown op or algorithm, an algorithm NCCL does not run for the op, or a bad group."""
    g = _count("group_size", group_size, minimum=1)
    algorithm = _check(op, algorithm)
    if op == "collective-permute":
        return 1
    if g == 1:
        return 0
    if algorithm == "direct":
        return 1
    if algorithm == "tree":
        return 2 * log2_steps(g)
    return 2 * (g - 1) if op == "all-reduce" else g - 1


def algorithm_bytes(op: str, result_bytes: int, group_size: int,
                    algorithm: str | None = None) -> int:
    """Bytes one device (the busiest) sends in one collective under ``algorithm``: the ring's
    and the direct all-to-all's are :func:`collective_bytes` (nccl-tests' factors); the double
    binary tree's all-reduce sends the whole array twice, ``2 V``."""
    g = _count("group_size", group_size, minimum=1)
    algorithm = _check(op, algorithm)
    if algorithm == "tree" and g > 1:
        return 2 * int(result_bytes)
    return collective_bytes(op, result_bytes, g)


@dataclass(frozen=True, slots=True)
class CollectiveTime:
    """The alpha-beta time of ``count`` runs of one collective on one link
    (:func:`collective_time`): ``steps`` and ``bytes`` per run, the times over all runs."""

    op: str
    group_size: int
    algorithm: str
    count: int
    steps: int
    bytes: int
    t_latency: float
    t_bandwidth: float
    time: float


def collective_time(
    op: str,
    result_bytes: int,
    group_size: int,
    *,
    bandwidth: float,
    latency: float,
    algorithm: str | None = None,
    count: int = 1,
) -> CollectiveTime:
    """The alpha-beta time of ``count`` executions of one collective.

    ``time = count x (latency x steps + bytes sent / bandwidth)``, with ``steps`` from
    :func:`algorithm_steps` and ``bytes`` from :func:`algorithm_bytes`; ``bandwidth`` is what one
    device sends per second (its egress), ``latency`` the seconds each step costs whatever its
    size (alpha).
    """
    link = positive("bandwidth", bandwidth)
    alpha = non_negative("latency", latency)
    times = _count("count", count, minimum=0)
    algorithm = _check(op, algorithm)
    steps = algorithm_steps(op, group_size, algorithm)
    sent = algorithm_bytes(op, result_bytes, group_size, algorithm)
    t_latency = times * steps * alpha
    t_bandwidth = times * sent / link
    return CollectiveTime(
        op=op,
        group_size=int(group_size),
        algorithm=algorithm,
        count=times,
        steps=steps,
        bytes=sent,
        t_latency=t_latency,
        t_bandwidth=t_bandwidth,
        time=t_latency + t_bandwidth,
    )
