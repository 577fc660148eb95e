"""The streaming bandwidth ceilings: ``reduce``, ``scale`` and ``triad`` on float32 arrays beyond
the last-level cache, on donated buffers and (on Linux, where the kernel allows) transparent
huge pages, in rounds (:func:`bandwidth_entries`, :func:`best_streams`).
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from roofline_report.analysis.stats import Timing
from roofline_report.kinds import Kind
from roofline_report.observe import timer as timing
from roofline_report.observe.ceilings import load
from roofline_report.observe.ceilings.plan import CACHE_MULTIPLE, Plan
from roofline_report.observe.ceilings.sampling import (
    MiB,
    Progress,
    failure_reason,
    fastest_rate,
)

STREAM_KERNELS = ("reduce", "scale", "triad")
STREAM_ITEMSIZE = 4  # float32

# Arrays of the kernel's size read plus written per call.
STREAM_TRAFFIC = {"reduce": 1, "scale": 2, "triad": 3}


class _Streams:
    """Two float32 arrays shared by the streaming kernels, allocated (and first touched) once.

    ``scale`` (x <- c x) and ``triad`` (x <- y + s x: the STREAM triad with its output on one
    input) donate x, so each call writes into the buffer the previous call produced and nothing
    is allocated while timing. The factors are runtime values (nothing to fold) equal to -1, so
    the data stay exact and bounded however many calls run.
    """

    def __init__(self, elements: int, huge_pages: bool = False) -> None:
        import jax.numpy as jnp

        self.x, x_huge = _filled(elements, 1.0, huge_pages)
        self.y, y_huge = _filled(elements, 2.0, huge_pages)
        self.huge_pages = x_huge and y_huge
        self.minus_one = jnp.float32(-1.0)

    def on_huge_pages(self) -> bool:
        """Whether both arrays sit on huge pages now: asked for, and (where the kernel tells)
        at least :data:`HUGE_PAGE_SHARE` of each backed by them."""
        if not self.huge_pages:
            return False
        for array in (self.x, self.y):
            share = huge_page_share(int(array.unsafe_buffer_pointer()), int(array.nbytes))
            if share is not None and share < HUGE_PAGE_SHARE:
                return False
        return True

    def runner(self, name: str) -> timing.Runner:
        """run(n) for one kernel: n enqueued calls, one block at the end."""
        import jax
        import jax.numpy as jnp

        if name == "reduce":
            total = jax.jit(jnp.sum)

            def run_reduce(n: int) -> None:
                timing.enqueue_held(lambda: total(self.x), n)

            return run_reduce
        if name == "scale":
            scale = jax.jit(lambda x, c: c * x, donate_argnums=0)
            return self._chained(lambda x: scale(x, self.minus_one))
        if name == "triad":
            triad = jax.jit(lambda x, y, s: y + s * x, donate_argnums=0)
            return self._chained(lambda x: triad(x, self.y, self.minus_one))
        raise ValueError(f"unknown streaming kernel {name!r}")

    def _chained(self, step: Callable[[Any], Any]) -> timing.Runner:
        def run(n: int) -> None:
            value = self.x
            for _ in range(n):
                value = step(value)
            self.x = value
            timing.block(value)

        return run


def _filled(elements: int, value: float, huge_pages: bool) -> tuple[Any, bool]:
    """A float32 array of ``elements`` copies of ``value``, and whether it sits on huge pages.

    With ``huge_pages``, the array's memory is advised for transparent huge pages and dropped,
    then rewritten in place by a donated fill, so the rewrite faults huge pages in.
    """
    import jax
    import jax.numpy as jnp

    array = timing.block(jnp.full((elements,), value, dtype=jnp.float32))
    if not huge_pages:
        return array, False
    pointer = int(array.unsafe_buffer_pointer())
    if not request_huge_pages(pointer, int(array.nbytes)):
        return array, False
    fill = jax.jit(
        lambda v, fill_value: jnp.full_like(v, fill_value), donate_argnums=0, keep_unused=True
    )
    array = timing.block(fill(array, jnp.float32(value)))
    return array, int(array.unsafe_buffer_pointer()) == pointer


HUGE_PAGE_BYTES = 2 * MiB
_THP_ENABLED = Path("/sys/kernel/mm/transparent_hugepage/enabled")
_MADV_DONTNEED = 4
_MADV_HUGEPAGE = 14


def request_huge_pages(address: int, length: int) -> bool:
    """Best effort, Linux only: back the whole 2 MiB pages inside [address, address + length)
    with transparent huge pages, as NumPy does for its large arrays, so that TLB misses do not
    lower a bandwidth figure (here about 37 against 51 GB/s for an in-place scale).

    Calls madvise(MADV_HUGEPAGE) then madvise(MADV_DONTNEED) on that range. Returns True when
    both succeeded: the range then reads as zeros and the caller must rewrite it; the next writes
    fault huge pages in. Returns False, with the memory unchanged, where this is unsupported.
    The range must belong to one buffer the caller owns.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        if "[never]" in _THP_ENABLED.read_text():
            return False
        madvise = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return False
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    start = -(-address // HUGE_PAGE_BYTES) * HUGE_PAGE_BYTES
    end = (address + length) // HUGE_PAGE_BYTES * HUGE_PAGE_BYTES
    if end <= start or madvise(start, end - start, _MADV_HUGEPAGE) != 0:
        return False
    return bool(madvise(start, end - start, _MADV_DONTNEED) == 0)


HUGE_PAGE_SHARE = 0.9  # arrays "on huge pages" have at least this share of their bytes on them
_SMAPS = Path("/proc/self/smaps")


def huge_page_share(address: int, length: int, smaps: Path = _SMAPS) -> float | None:
    """Best effort, Linux only: the share of [address, address + length) that the kernel backs
    with transparent huge pages (``AnonHugePages`` of the mappings overlapping the range, at
    most the range), or None where that cannot be read. madvise only asks for huge pages; a
    fault finds none when memory is fragmented, and the stream then runs on small pages."""
    if length <= 0:
        return None
    try:
        text = smaps.read_text()
    except OSError:
        return None
    huge = 0
    inside = False
    for line in text.splitlines():
        head, _, rest = line.partition(" ")
        if "-" in head and not head.endswith(":"):
            try:
                low, high = (int(v, 16) for v in head.split("-"))
            except ValueError:
                inside = False
                continue
            inside = low < address + length and high > address
        elif inside and head == "AnonHugePages:":
            huge += int(rest.split()[0]) * 1024
    return min(1.0, huge / length)



def best_streams(rounds: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each streaming kernel's fastest round, with every round's rate in ``rounds``.

    The streams are measured in :data:`ROUNDS` rounds, one before the other ceilings
    and one after them. A burst of load on a shared machine (a test suite, a build) lasts
    seconds and spoils every sample of a kernel measured in one window of a few seconds, but
    rarely two windows a minute apart; measured in one window, the streams once read 0.60 of
    NumPy's bandwidth in a run where others read 0.89 and 0.95, while the kernels themselves
    match NumPy's (both in place on huge pages, both on every core: interleaved on the 2-core
    CPU, their ratio scattered around 1 with the load). A round reuses the arrays of the one
    before when they sit on huge pages and allocates afresh otherwise: madvise only asks for
    huge pages, and a stream on small pages runs about a quarter slower."""
    if not rounds or not rounds[0]:
        return rounds[0] if rounds else []
    out = []
    for i, first in enumerate(rounds[0]):
        tries = [r[i] for r in rounds if i < len(r)]
        usable = [e for e in tries if e["available"] and e["value"] is not None]
        # The fastest round, of those not under load where there are any.
        best = dict(usable[load.preferred(
            [float(e["value"]) for e in usable],
            [(e.get("round_loads") or [None])[0] for e in usable])] if usable else first)
        best["rounds"] = [e["value"] if e["available"] else None for e in tries]
        best["round_loads"] = [(e.get("round_loads") or [None])[0] if e["available"] else None
                               for e in tries]
        best["repeated"] = sum(int(e.get("repeated", 0)) for e in tries)
        out.append(best)
    return out


def bandwidth_entries(plan: Plan, cache_bytes: int | None, say: Progress,
                       kept: dict[str, Any] | None = None,
                       samples: int | None = None,
                       budget: load.Budget | None = None) -> list[dict[str, Any]]:
    """One entry per streaming kernel, one round: ``samples`` per kernel (the plan's when
    None); ``huge_pages`` says whether the arrays sat on huge pages (asked for and, where
    /proc tells, obtained). ``kept`` holds the arrays for the next round, which reuses them if
    they sit on huge pages and allocates afresh (a new chance at huge pages) otherwise. Each
    kernel's round records the machine's load (``round_loads``) and is taken again under load
    while ``budget`` has time (:func:`.load.quiet_round`; ``repeated`` counts them)."""
    elements = plan.array_bytes // STREAM_ITEMSIZE
    size = f"{plan.array_bytes // MiB} MiB"
    caveat = ""
    if cache_bytes and plan.array_bytes < CACHE_MULTIPLE * cache_bytes:
        caveat = (
            f"array is {plan.array_bytes / cache_bytes:.2g}x the last-level cache "
            f"(under {CACHE_MULTIPLE}x): caches may raise the figure"
        )
    entries: list[dict[str, Any]] = [
        {
            "name": name,
            "value": None,
            "unit": "B/s",
            "kind": Kind.MEASURED.value,
            "available": False,
            "reason": "",
            "array_bytes": plan.array_bytes,
            "bytes_per_call": STREAM_TRAFFIC[name] * elements * STREAM_ITEMSIZE,
            "huge_pages": False,
            "timing": None,
            "round_loads": [],
            "repeated": 0,
        }
        for name in STREAM_KERNELS
    ]
    kept = {} if kept is None else kept
    streams = kept.pop("streams", None)
    if streams is not None and plan.huge_pages and not streams.on_huge_pages():
        streams = None  # the last round's arrays missed huge pages: try fresh memory
    try:
        if streams is None:
            streams = _Streams(elements, plan.huge_pages)
            say(f"two {size} arrays ready"
                + (" on huge pages" if streams.on_huge_pages() else ""))
    except Exception as exc:
        for entry in entries:
            entry["reason"] = f"allocating two {size} arrays failed: {failure_reason(exc)}"
        return entries
    kept["streams"] = streams
    on_huge = streams.on_huge_pages()
    for entry in entries:
        run = streams.runner(entry["name"])
        work = entry["bytes_per_call"]

        def measure(run: timing.Runner = run) -> Timing:
            return timing.measure(
                run,
                samples=samples or plan.samples,
                min_sample_seconds=plan.min_sample_s,
                budget_seconds=plan.budget_s,
                method="jax: n enqueued calls on a donated buffer, block once per sample",
            )

        def rate(t: Timing, work: int = work) -> float:
            return fastest_rate(work, t)

        try:
            measured, reading, repeats = load.quiet_round(measure, rate, budget)
        except Exception as exc:
            entry["reason"] = f"{entry['name']} on {size} failed: {failure_reason(exc)}"
            continue
        value = fastest_rate(entry["bytes_per_call"], measured)
        entry.update(
            value=value,
            available=True,
            reason=caveat,
            huge_pages=on_huge,
            timing=measured.to_json(),
            round_loads=[reading],
            repeated=repeats,
        )
        say(f"{entry['name']} on {size}: {value / 1e9:.3g} GB/s")
    return entries

