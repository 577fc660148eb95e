"""Large host arrays drawn, converted and reduced on every core (NumPy only; no jax).

An accelerator's catalog runs at sizes as large as its memory allows (a softmax over
16384 × 16384 float32: 268 M elements), and NumPy draws its inputs, converts them and computes
their float64 references on one core. On a TPU v5e's 13-core host such a workload spent about
5 s drawing its inputs, 2 s converting them and 8 s on its reference, where the chip took
well under a second; the catalog's 21 workloads took 280 s, most of a ten-minute build.

Arrays of at least :data:`PARALLEL_ELEMENTS` are split into blocks of whole rows along their
first axis (about :data:`BLOCK_ELEMENTS` each), each block handled by a thread: NumPy releases
the GIL inside its loops and its random generators. The blocks depend on the shape alone, so
the values do not depend on the number of cores; smaller arrays are handled as before, in
one piece, and keep their values.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

__all__ = ["BLOCK_ELEMENTS", "PARALLEL_ELEMENTS", "astype", "by_rows", "each",
           "standard_normal", "workers"]

PARALLEL_ELEMENTS = 1 << 23  # arrays from this many elements are split into blocks
BLOCK_ELEMENTS = 1 << 21  # the elements of one block (whole rows: at least one row)

Array = np.ndarray[Any, Any]
T = TypeVar("T")


def workers() -> int:
    """The cores this process may run on."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)


def _blocks(shape: Sequence[int]) -> list[slice]:
    """Slices of whole rows along the first axis, about BLOCK_ELEMENTS each."""
    rows = shape[0]
    per_row = math.prod(shape[1:])
    step = max(1, BLOCK_ELEMENTS // max(1, per_row))
    return [slice(start, min(start + step, rows)) for start in range(0, rows, step)]


def _large(shape: Sequence[int]) -> bool:
    return len(shape) > 0 and math.prod(shape) >= PARALLEL_ELEMENTS and shape[0] > 1


def each(task: Callable[[int], T], count: int, elements: int | None = None) -> list[T]:
    """``[task(i) for i in range(count)]``, on up to :func:`workers` threads, in that order;
    the first failure raised. In this thread where ``count`` is 1, or where ``elements`` (the
    array the tasks share out, where given) is under :data:`PARALLEL_ELEMENTS`."""
    if count <= 1 or (elements is not None and elements < PARALLEL_ELEMENTS):
        return [task(i) for i in range(count)]
    with ThreadPoolExecutor(max(1, min(workers(), count))) as pool:
        return [done.result() for done in [pool.submit(task, i) for i in range(count)]]


def standard_normal(seed: int, shape: Sequence[int]) -> Array:
    """Float64 standard normal values of ``shape``: ``default_rng(seed)``'s below
    :data:`PARALLEL_ELEMENTS`, else each block from a stream of its own spawned from ``seed``
    (:class:`numpy.random.SeedSequence`), the same whatever the cores."""
    shape = tuple(shape)
    if not _large(shape):
        return np.random.default_rng(seed).standard_normal(shape)
    out = np.empty(shape)
    blocks = _blocks(shape)
    streams = np.random.SeedSequence(seed).spawn(len(blocks))

    def fill(i: int) -> None:
        np.random.default_rng(streams[i]).standard_normal(out=out[blocks[i]])

    each(fill, len(blocks))
    return out


def astype(x: Array, dtype: Any) -> Array:
    """``x.astype(dtype)``, a large array's blocks converted at once."""
    x = np.asarray(x)
    if not _large(x.shape):
        return x.astype(dtype)
    out = np.empty(x.shape, dtype=dtype)
    blocks = _blocks(x.shape)

    def convert(i: int) -> None:
        out[blocks[i]] = x[blocks[i]]

    each(convert, len(blocks))
    return out


def by_rows(fn: Callable[..., Array], split: int | None = None) -> Callable[..., Array]:
    """``fn``, a function of arrays of one first axis that treats each of their rows (each
    index of that axis) apart (an elementwise function, a softmax or a sum over the last
    axis, a convolution of a batch of images), applied to blocks of rows at once where its
    first argument is large; the result is the same, row for row, as ``fn`` of the whole.
    ``split``: how many leading arguments are split into rows (None: all of them); the others
    (a convolution's filter) are passed whole to every block."""

    def blocked(*arrays: Array) -> Array:
        first = np.asarray(arrays[0])
        cut = len(arrays) if split is None else split
        if not _large(first.shape) or any(np.shape(a)[:1] != first.shape[:1]
                                          for a in arrays[:cut]):
            return fn(*arrays)
        blocks = _blocks(first.shape)

        def part(b: slice) -> Array:
            return np.asarray(fn(*(a[b] for a in arrays[:cut]), *arrays[cut:]))

        head = part(blocks[0])
        if head.shape[:1] != (blocks[0].stop - blocks[0].start,):
            return fn(*arrays)  # not row for row after all
        out = np.empty((first.shape[0], *head.shape[1:]), dtype=head.dtype)
        out[blocks[0]] = head

        def compute(i: int) -> None:
            out[blocks[i + 1]] = part(blocks[i + 1])

        each(compute, len(blocks) - 1)
        return out

    blocked.__name__ = getattr(fn, "__name__", "blocked")
    blocked.__doc__ = fn.__doc__
    return blocked
