"""Calling a compiled program again and again as it was written: donated inputs given anew to
every call (imports jax).

A program compiled with donated arguments (``jax.jit(..., donate_argnums=...)`` or
``donate_argnames``) consumes those buffers: the call writes its result into them and they are
deleted. Calling it twice with the same arrays fails; calling a copy compiled without donation
times another program (a 4M-element float32 SGD update donating its parameters runs in about
0.7 ms on the 2-core CPU, 1.6 ms without donation, where every call must allocate and fault in
its output). :class:`Calls` knows from the executable itself (``jax.stages.Compiled.args_info``,
each leaf's ``donated``) which inputs it consumes, and a timed call never copies anything:

* :func:`chain` runs the program as a loop ``state = step(state, batch)`` does: each donated
  input is the output the previous call wrote in its place (matched as jax matches donated
  inputs to outputs: the first unused output of the same shape and dtype), so the buffers stay
  where a real loop keeps them (a 256 KiB update ran 2 to 5 times slower on fresh copies, each
  cold in the caches, than on the buffer the previous call returned);
* :func:`pool`, where some donated input has no output to take its place: fresh copies of the
  donated arrays for every call, made and made ready before each timed sample.

The example inputs themselves are never donated: every call, the NumPy check's included, starts
from copies, so they stay valid for the whole measurement.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

#: Bytes of fresh donated inputs made ready at once for one timed sample: a sample's inner count
#: is capped so that its copies fit (a 16 MiB donated argument: 32 calls per sample).
POOL_BYTES = 512 * 1024 * 1024


def _donated_mask(compiled: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
    """The (args, kwargs) tree of the executable's donation flags, or None where the executable
    does not say (then nothing is taken as donated)."""
    info = getattr(compiled, "args_info", None)
    if info is None:
        return None
    try:
        flags = jax.tree.map(lambda a: bool(getattr(a, "donated", False)), info)
        jax.tree.map(lambda f, x: None, flags, (tuple(args), dict(kwargs)))  # same structure
    except (TypeError, ValueError):
        return None
    return flags


@dataclass(frozen=True)
class Calls:
    """A compiled program called positionally: ``call(*values)`` where ``values`` are its
    positional arguments followed by its keyword arguments' values (in their order), as
    ``jax.experimental.roofline`` and the timer take them.

    ``donated`` flags each of those values' leaves (the same tree as ``values``); ``inputs()``
    gives a call its arguments: the example values themselves when nothing is donated, else the
    values with every donated leaf a fresh copy.
    """

    compiled: Any
    values: tuple[Any, ...]
    keywords: tuple[str, ...]
    donated: tuple[Any, ...]

    @property
    def positional(self) -> int:
        return len(self.values) - len(self.keywords)

    def call(self, *values: Any) -> Any:
        args, kwargs = self.split(values)
        return self.compiled(*args, **kwargs)

    def split(self, values: Sequence[Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Values in the order of :attr:`values` as (positional, keyword) arguments."""
        n = self.positional
        return tuple(values[:n]), dict(zip(self.keywords, values[n:], strict=True))

    def plain(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        """(function, arguments) that call the program on its example values with nothing
        added per call: the executable itself, its keyword arguments bound (for a program that
        donates nothing)."""
        args, kwargs = self.split(self.values)
        return (functools.partial(self.compiled, **kwargs) if kwargs else self.compiled), args

    def _donated_leaves(self) -> list[Any]:
        leaves: list[Any] = []
        jax.tree.map(lambda flag, x: leaves.append(x) if flag else None, self.donated,
                     self.values)
        return leaves

    @property
    def donated_leaves(self) -> int:
        return len(self._donated_leaves())

    @property
    def donated_bytes(self) -> int:
        return sum(int(np.prod(np.shape(x), dtype=np.int64)) * np.dtype(x.dtype).itemsize
                   for x in self._donated_leaves())

    @property
    def donates(self) -> bool:
        return self.donated_leaves > 0

    def fresh(self) -> tuple[Any, ...]:
        """The values with each donated leaf replaced by a new copy on the device (not waited
        for: :func:`ready` waits)."""
        return tuple(jax.tree.map(lambda flag, x: _copy(x) if flag else x, self.donated,
                                  self.values))

    def inputs(self) -> tuple[Any, ...]:
        """Arguments for one call: fresh copies of the donated leaves, if any, made ready."""
        return ready(self.fresh()) if self.donates else self.values

    def pool_limit(self) -> int:
        """The most calls whose donated inputs :data:`POOL_BYTES` holds (at least one)."""
        size = self.donated_bytes
        return max(1, POOL_BYTES // size) if size else 1 << 30


def _copy(x: Any) -> Any:
    return jax.numpy.array(x, copy=True)


def ready(tree: Any) -> Any:
    return jax.block_until_ready(tree)  # type: ignore[no-untyped-call]


def calls_of(compiled: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Calls:
    """The calls of ``compiled`` at ``args`` and ``kwargs`` (see :class:`Calls`)."""
    values = (*args, *kwargs.values())
    mask = _donated_mask(compiled, args, kwargs)
    if mask is None:
        donated: tuple[Any, ...] = tuple(jax.tree.map(lambda _x: False, values))
    else:
        mask_args, mask_kwargs = mask
        donated = (*mask_args, *(mask_kwargs[k] for k in kwargs))
    return Calls(compiled, values, tuple(kwargs), donated)


CHAINED = ("jax: n enqueued calls, each donating the buffers the previous call returned in "
           "place of its donated inputs (as a loop x = f(x) runs), block_until_ready on the "
           "last once per sample")
POOLED = ("jax: n enqueued calls, each on fresh copies of its donated inputs made before the "
          "sample, block_until_ready on the last once per sample")


def chain(calls: Calls) -> Callable[[], Any] | None:
    """A call that runs the program on its own previous outputs in place of its donated inputs
    (the first call on fresh copies), or None where some donated input has no output of its
    shape and dtype (or the executable does not describe its outputs)."""
    out_info = getattr(calls.compiled, "out_info", None)
    if out_info is None or not calls.donates:
        return None
    leaves, treedef = jax.tree.flatten(calls.values)
    flags = jax.tree.leaves(calls.donated)
    outs = jax.tree.leaves(out_info)
    if len(flags) != len(leaves):
        return None
    free: dict[tuple[tuple[int, ...], np.dtype[Any]], list[int]] = {}
    for j, o in enumerate(outs):
        free.setdefault((tuple(o.shape), np.dtype(o.dtype)), []).append(j)
    pairs: list[tuple[int, int]] = []
    for i, (flag, x) in enumerate(zip(flags, leaves, strict=True)):
        if flag:
            slots = free.get((tuple(np.shape(x)), np.dtype(x.dtype)))
            if not slots:
                return None
            pairs.append((i, slots.pop(0)))
    state: list[Any] = []
    compiled = calls.compiled

    def call() -> Any:
        if not state:
            state.extend(jax.tree.leaves(ready(calls.fresh())))
        args, kwargs = calls.split(jax.tree.unflatten(treedef, state))
        out = compiled(*args, **kwargs)
        got = jax.tree.leaves(out)
        for i, j in pairs:
            state[i] = got[j]
        return out

    return call


def timed_calls(calls: Calls) -> tuple[tuple[Callable[[int], object], Callable[[], Any]], int,
                                       str]:
    """((prepare, call), the most calls per sample, the method's words) for the timer and the
    trace of a program that donates: :func:`chain` where it can, else :func:`pool`."""
    chained = chain(calls)
    if chained is not None:
        return (lambda _n: None, chained), 1 << 30, CHAINED
    return pool(calls), calls.pool_limit(), POOLED


def pool(calls: Calls) -> tuple[Callable[[int], None], Callable[[], Any]]:
    """(prepare, call) for a timer: ``prepare(n)`` makes n calls' fresh inputs ready (outside
    the timed region); each ``call()`` then runs the program on the next of them, so no timed
    call copies anything and no two calls share a donated buffer."""
    waiting: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    compiled = calls.compiled

    def prepare(n: int) -> None:
        waiting.clear()
        waiting.extend(calls.split(values) for values in ready([calls.fresh() for _ in range(n)]))
        waiting.reverse()

    def call() -> Any:
        args, kwargs = waiting.pop()
        return compiled(*args, **kwargs)

    return prepare, call
