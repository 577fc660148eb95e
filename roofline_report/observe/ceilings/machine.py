"""Measured ceilings of the active jax device, in the manner of the Empirical Roofline Toolkit.

* Compute: square matmuls per dtype (float32 always, bfloat16 where the backend runs it). The size
  is swept upwards from a small one until a call is long enough or a cap is reached; the size with
  the best rough rate is then timed in full. Work per call is 2 n^3 FLOP. Convolutions likewise
  (3x3 NHWC, by image side): they run through other library code, at a rate of their own.
* Bandwidth: streaming kernels (``reduce``: sum x; ``scale``: x <- c x; ``triad``: x <- y + s x)
  on float32 arrays beyond the last-level cache, with donated buffers so that no call allocates
  its output, and many calls enqueued per sample. Bytes per call count reads plus writes.
* Dispatch floor: one tiny jitted call (a scalar add), blocking after each call.

A ceiling's ``value`` comes from the fastest sample (work / min per-call time), as the Empirical
Roofline Toolkit reports the best rate: noise from other processes only ever slows a kernel. The
median, quartiles and the ``unstable`` flag stay in each entry's ``timing`` record. The compute and
streaming ceilings take their samples in two rounds, one before and one after the other ceilings
(``rounds`` keeps each round's rate): on a shared machine a burst of load spoils every sample of
one window of a few seconds, rarely of two a minute apart.

Beside them: the working-set sweep (:mod:`.working_set`), operation rates (:mod:`.rates`) and the
rates of the kernel patterns that run below the streaming roofs (:mod:`.patterns`).

Every figure is ``kind: measured``. A measurement that fails (out of memory, a missing dtype)
becomes an entry with ``available: False`` and the reason; :func:`measure_ceilings` does not raise
for a measurement failure.
"""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline_report.analysis.stats import Timing
from roofline_report.errors import reason
from roofline_report.kinds import Kind
from roofline_report.observe import timer as timing
from roofline_report.observe.ceilings import patterns as pattern_ceilings
from roofline_report.observe.ceilings import rates as rate_ceilings
from roofline_report.observe.ceilings import working_set as cache_sweep

Progress = Callable[[str], None]

MiB = 1 << 20
GiB = 1 << 30
# Bandwidth arrays should be at least this many times the last-level cache.
CACHE_MULTIPLE = 4
STREAM_KERNELS = ("reduce", "scale", "triad")
STREAM_ITEMSIZE = 4  # float32
CPU_SYSFS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")
_REASON_CHARS = 200


@dataclass(frozen=True, slots=True)
class Plan:
    """Sizes and sampling settings of one :func:`measure_ceilings` run.

    ``matmul_sizes`` ascend; the sweep stops after the first size whose call lasts at least
    ``matmul_max_call_s`` (a single size is timed without a sweep). ``budget_s`` caps the
    sampling time of each final measurement. ``huge_pages`` asks (on Linux) for transparent huge
    pages under the streaming arrays.
    """

    matmul_sizes: tuple[int, ...]
    matmul_max_call_s: float
    matmul_dtypes: tuple[str, ...]
    array_bytes: int
    samples: int
    min_sample_s: float
    sweep_samples: int
    sweep_min_sample_s: float
    budget_s: float
    huge_pages: bool = False
    # The working-set sweep (memory levels) and the transcendental/conversion rates; off in
    # hand-made plans unless asked for, on in plan_for's.
    levels: cache_sweep.SweepPlan | None = None
    rates: rate_ceilings.RatePlan | None = None
    # The rates of the kernel patterns that run below the streaming roofs (transposes, strided
    # reductions, gathers, scatters, loop dots), by size; recorded among the rates.
    patterns: pattern_ceilings.PatternPlan | None = None
    launch: bool = False  # the cost of one more kernel inside a program
    conv_sizes: tuple[int, ...] = ()  # image sides of the convolution roof; () measures none


def plan_for(backend: str, *, quick: bool, cache_bytes: int | None, free_bytes: int | None) -> Plan:
    """The plan for a backend. Pure: depends only on its arguments.

    CPU arrays: CACHE_MULTIPLE x the last-level cache, clamped to [256 MiB, 512 MiB] (256 MiB in
    quick mode: fresh memory costs seconds to fault in on a VM) and to an eighth of the free
    memory (two arrays are held), on huge pages where the kernel allows. Accelerators: a
    sixteenth of the free device memory, capped at 4 GiB (1 GiB quick); a quarter of the cap
    when free memory is unknown.
    """
    samples = timing.QUICK_SAMPLES if quick else timing.DEFAULT_SAMPLES
    min_sample = timing.QUICK_MIN_SAMPLE_SECONDS if quick else timing.DEFAULT_MIN_SAMPLE_SECONDS
    sizes: tuple[int, ...]
    conv: tuple[int, ...]
    if backend == "cpu":
        # Small sizes too: a matmul's rate grows with its size, and the prediction of a small
        # product uses the rate measured near its size.
        sizes = (128, 1024) if quick else (128, 256, 512, 1024, 2048)
        conv = (16, 64) if quick else (8, 16, 32, 64, 128)
        max_call = 0.01 if quick else 0.05
        wanted = CACHE_MULTIPLE * cache_bytes if cache_bytes else 0
        array = min(max(wanted, 256 * MiB), 256 * MiB if quick else 512 * MiB)
        if free_bytes:
            array = min(array, free_bytes // 8)
    else:
        sizes = (2048, 4096, 8192) if quick else (1024, 2048, 4096, 8192)
        conv = (64, 256) if quick else (32, 64, 128, 256)
        max_call = 0.05
        cap = 1 * GiB if quick else 4 * GiB
        array = min(cap, free_bytes // 16) if free_bytes else cap // 4
    array = max(MiB, array // MiB * MiB)
    levels = cache_sweep.sweep_plan(backend, quick=quick, cache_bytes=cache_bytes,
                                    free_bytes=free_bytes)
    return Plan(
        matmul_sizes=sizes,
        matmul_max_call_s=max_call,
        matmul_dtypes=("float32", "bfloat16"),
        array_bytes=array,
        samples=samples,
        min_sample_s=min_sample,
        sweep_samples=3,
        sweep_min_sample_s=0.002 if quick else 0.005,
        budget_s=0.3 if quick else 2.0,
        huge_pages=backend == "cpu",
        levels=levels,
        rates=rate_ceilings.rate_plan(backend, quick=quick),
        patterns=pattern_ceilings.pattern_plan(backend, quick=quick),
        launch=True,
        conv_sizes=conv,
    )


def measure_ceilings(
    *, quick: bool, progress: Progress | None = None, plan: Plan | None = None
) -> dict[str, Any]:
    """Measure the ceilings of jax's default device; plain JSON (see the module docstring).

    ``plan`` overrides the sizes of :func:`plan_for` (tests use a tiny one). Never raises for a
    measurement failure: such entries have ``available: False`` and a ``reason``.
    """
    import jax

    say = progress or (lambda _message: None)
    backend = jax.default_backend()
    device = jax.devices()[0]
    cache_bytes = read_cache_bytes() if backend == "cpu" else None
    if plan is None:
        plan = plan_for(
            backend, quick=quick, cache_bytes=cache_bytes, free_bytes=free_memory_bytes(device)
        )

    # The compute and stream ceilings are timed in two rounds a whole pass over the other
    # ceilings apart (see _sized_rates and _best_streams); ``again`` holds the second rounds.
    again: Again = []
    compute = [_matmul_entry(dtype, backend, plan, say, again=again)
               for dtype in plan.matmul_dtypes]
    if backend in ("gpu", "cuda") and "float32" in plan.matmul_dtypes:
        # float32 matmuls run as TF32 by default on NVIDIA GPUs: measure true float32 too.
        compute.append(_matmul_entry("float32", backend, plan, say, highest=True, again=again))
    if plan.conv_sizes:
        compute.append(_conv_entry("float32", backend, plan, say, again=again))
    kept: dict[str, Any] = {}
    streams = [_bandwidth_entries(plan, cache_bytes, say, kept, _round_samples(plan))]
    dispatch = _dispatch_entry(plan, say)
    extra: dict[str, Any] = {"caches": read_cache_hierarchy() if backend == "cpu" else []}
    if plan.levels is not None:
        try:
            extra["working_set"] = cache_sweep.measure_sweep(
                plan.levels, say, dispatch=dispatch["value"] if dispatch["available"] else None)
        except Exception as exc:  # a failure of the sweep as a whole
            extra["working_set"] = {"available": False, "reason": _why(exc)}
    if plan.rates is not None or plan.patterns is not None:
        extra["rates"] = (rate_ceilings.measure_rates(plan.rates, say) if plan.rates else [])
        if plan.patterns is not None:
            extra["rates"] += pattern_ceilings.measure_patterns(plan.patterns, say)
    if plan.launch:
        extra["launch"] = _launch_entry(plan, say)
    for _ in range(1, ROUNDS):
        for timed_again in again:
            timed_again()
        streams.append(_bandwidth_entries(plan, cache_bytes, say, kept, _round_samples(plan)))
    kept.clear()
    bandwidth = _best_streams(streams)
    return {
        **extra,
        "backend": backend,
        "device_kind": str(device.device_kind),
        "compute": compute,
        "bandwidth": bandwidth,
        "dispatch": dispatch,
        "peak_compute": _best(e for e in compute
                              if e["dtype"] == "float32" and e["op"] == "matmul"),
        "peak_bandwidth": _best(bandwidth),
        "cache_bytes": cache_bytes,
        "quick": quick,
    }


# ---------------------------------------------------------------------------------- compute


def _matmul(a: Any, b: Any) -> Any:
    return a @ b


def _matmul_highest(a: Any, b: Any) -> Any:
    import jax

    return jax.numpy.matmul(a, b, precision=jax.lax.Precision.HIGHEST)


def _matmul_operands(n: int, dtype: str) -> tuple[Any, Any]:
    """Two n x n operands, uniform in [-1, 1), made by NumPy (quicker than compiling jax.random
    for each shape) and put on the default device."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(0)
    kind = jnp.dtype(dtype)

    def operand() -> Any:
        return jax.device_put((2 * rng.random((n, n), dtype=np.float32) - 1).astype(kind))

    return operand(), operand()


def _matmul_caveat(backend: str, dtype: str) -> str:
    if backend == "cpu" and dtype == "bfloat16":
        return "the CPU backend upcasts bfloat16 matmuls to float32: not a native bfloat16 rate"
    if backend in ("gpu", "cuda") and dtype == "float32":
        return "jax's default matmul precision (TF32 on NVIDIA GPUs)"
    return ""


Again = list[Callable[[], None]]  # timings to take once more, after the other ceilings


def _matmul_entry(dtype: str, backend: str, plan: Plan, say: Progress, *,
                  highest: bool = False, again: Again | None = None) -> dict[str, Any]:
    """Sweep the sizes with rough timings, then time the best size in full (and, with
    ``again``, once more later: see :func:`_sized_rates`). ``highest``: at
    ``Precision.HIGHEST`` instead of jax's default precision."""
    entry = _compute_entry(f"matmul {dtype}" + (" (highest precision)" if highest else ""),
                           "matmul", dtype, "highest" if highest else "default")
    caveat = "" if highest else _matmul_caveat(backend, dtype)
    return _sized_rates(entry, _matmul_highest if highest else _matmul, plan.matmul_sizes,
                        lambda n: _matmul_operands(n, dtype), lambda n: 2 * n**3, plan, say,
                        caveat, again)


def _compute_entry(name: str, op: str, dtype: str, precision: str) -> dict[str, Any]:
    return {"name": name, "op": op, "precision": precision, "dtype": dtype, "value": None,
            "unit": "FLOP/s", "kind": Kind.MEASURED.value, "available": False, "reason": "",
            "size": None, "flops_per_call": None, "timing": None, "by_size": [], "rounds": []}


def _sized_rates(entry: dict[str, Any], fn: Callable[..., Any], sizes: tuple[int, ...],
                 operands: Callable[[int], tuple[Any, ...]], flops_of: Callable[[int], int],
                 plan: Plan, say: Progress, caveat: str = "",
                 again: Again | None = None) -> dict[str, Any]:
    """Fill ``entry`` with the rate of ``fn`` by size: each size of ``sizes`` timed roughly
    (stopping after the first whose call lasts ``plan.matmul_max_call_s``), then the best
    size timed in full; the rough rates stay in ``by_size`` (a rate grows with the size, and
    a prediction uses the rate measured near a product's size).

    With ``again``, the full timing is split in two rounds: half the samples now, half when
    the caller runs the closure this appends (after the other ceilings), the entry keeping
    the faster round and both rates in ``rounds``; a burst of load spoils one window of
    samples, rarely two a minute apart."""
    import jax

    name = entry["name"]
    best: tuple[float, int, Any, tuple[Any, ...]] | None = None
    stopped = ""
    for n in sizes:
        try:
            args = operands(n)
            _, compiled, _, _ = timing.measure_compile(jax.jit(fn), args)
            if len(sizes) == 1:  # nothing to choose between
                best = (0.0, n, compiled, args)
                break
            rough = timing.time_jitted(
                compiled,
                args,
                quick=True,
                samples=plan.sweep_samples,
                min_sample_seconds=plan.sweep_min_sample_s,
            )
        except Exception as exc:
            stopped = f"n={n} failed ({_why(exc)})"
            break
        rate = _rate(flops_of(n), rough)
        entry["by_size"].append({"n": n, "flops": flops_of(n), "value": rate})
        say(f"{name} n={n}: about {rate / 1e9:.3g} GFLOP/s")
        if best is None or rate > best[0]:
            best = (rate, n, compiled, args)
        if rough.per_call.min >= plan.matmul_max_call_s:
            break
    if best is None:
        entry["reason"] = _join(f"{name} unavailable: {stopped}", caveat)
        return entry
    _, n, compiled, args = best
    samples = plan.samples if again is None else _round_samples(plan)

    def final() -> Timing:
        return timing.time_jitted(compiled, args, quick=False, samples=samples,
                                  min_sample_seconds=plan.min_sample_s,
                                  budget_seconds=plan.budget_s)

    try:
        first = final()
    except Exception as exc:
        entry["reason"] = _join(f"{name} n={n} failed ({_why(exc)})", caveat)
        return entry
    flops = flops_of(n)
    entry.update(
        value=_rate(flops, first),
        available=True,
        reason=_join(caveat, f"sweep stopped: {stopped}" if stopped else ""),
        size=n,
        flops_per_call=flops,
        timing=first.to_json(),
        rounds=[_rate(flops, first)],
    )
    say(f"{name} n={n}: {entry['value'] / 1e9:.3g} GFLOP/s")
    if again is not None:
        def second() -> None:
            try:
                later = final()
            except Exception:  # the first round stands alone
                entry["rounds"].append(None)
                return
            rate = _rate(flops, later)
            entry["rounds"].append(rate)
            if rate > entry["value"]:
                entry.update(value=rate, timing=later.to_json())

        again.append(second)
    return entry


# A convolution runs through other library code than a matmul of the same flops, at a rate of
# its own: 3x3 NHWC convolutions (HWIO filters, "valid" padding) of CONV_CHANNELS channels in
# and out, a batch of CONV_BATCH images of n x n pixels, by n. Its rate depends on the channel
# counts too; the prediction of another convolution uses this family's rate at its flops.
CONV_WINDOW = 3


def conv_shape(backend: str) -> tuple[int, int]:
    """(batch, channels) of the convolution ceiling's kernels on ``backend``."""
    return (4, 32) if backend == "cpu" else (8, 128)


def conv_flops(n: int, batch: int, channels: int) -> int:
    """2 · batch · (n - 2)² · channels² · 3 · 3: the multiply-adds of a valid 3x3 convolution."""
    side = n - CONV_WINDOW + 1
    return 2 * batch * side * side * channels * channels * CONV_WINDOW * CONV_WINDOW


def _convolution(x: Any, w: Any) -> Any:
    import jax

    return jax.lax.conv_general_dilated(x, w, window_strides=(1, 1), padding="VALID",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _conv_entry(dtype: str, backend: str, plan: Plan, say: Progress,
                again: Again | None = None) -> dict[str, Any]:
    """The convolution roof of ``dtype`` by size (see :data:`CONV_WINDOW`)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    batch, channels = conv_shape(backend)
    kind = jnp.dtype(dtype)

    def operands(n: int) -> tuple[Any, Any]:
        rng = np.random.default_rng(1)
        x = rng.standard_normal((batch, n, n, channels), dtype=np.float32)
        w = rng.standard_normal((CONV_WINDOW, CONV_WINDOW, channels, channels),
                                dtype=np.float32) / (3 * channels**0.5)
        return jax.device_put(x.astype(kind)), jax.device_put(w.astype(kind))

    entry = _compute_entry(f"convolution {dtype}", "convolution", dtype, "default")
    return _sized_rates(entry, _convolution, plan.conv_sizes, operands,
                        lambda n: conv_flops(n, batch, channels), plan, say,
                        _matmul_caveat(backend, dtype), again)


# -------------------------------------------------------------------------------- bandwidth


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
                timing.block([total(self.x) for _ in range(n)])

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


ROUNDS = 2  # rounds of the compute and stream ceilings' final timings


def _round_samples(plan: Plan) -> int:
    """Samples of one round of a final timing: the plan's samples split between rounds."""
    return max(timing.MIN_BUDGET_SAMPLES, -(-plan.samples // ROUNDS))


def _best_streams(rounds: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
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
        best = dict(max(usable, key=lambda e: float(e["value"])) if usable else first)
        best["rounds"] = [e["value"] if e["available"] else None for e in tries]
        out.append(best)
    return out


def _bandwidth_entries(plan: Plan, cache_bytes: int | None, say: Progress,
                       kept: dict[str, Any] | None = None,
                       samples: int | None = None) -> list[dict[str, Any]]:
    """One entry per streaming kernel, one round: ``samples`` per kernel (the plan's when
    None); ``huge_pages`` says whether the arrays sat on huge pages (asked for and, where
    /proc tells, obtained). ``kept`` holds the arrays for the next round, which reuses them if
    they sit on huge pages and allocates afresh (a new chance at huge pages) otherwise."""
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
            entry["reason"] = f"allocating two {size} arrays failed: {_why(exc)}"
        return entries
    kept["streams"] = streams
    on_huge = streams.on_huge_pages()
    for entry in entries:
        try:
            measured = timing.measure(
                streams.runner(entry["name"]),
                samples=samples or plan.samples,
                min_sample_seconds=plan.min_sample_s,
                budget_seconds=plan.budget_s,
                method="jax: n enqueued calls on a donated buffer, block once per sample",
            )
        except Exception as exc:
            entry["reason"] = f"{entry['name']} on {size} failed: {_why(exc)}"
            continue
        value = _rate(entry["bytes_per_call"], measured)
        entry.update(
            value=value,
            available=True,
            reason=caveat,
            huge_pages=on_huge,
            timing=measured.to_json(),
        )
        say(f"{entry['name']} on {size}: {value / 1e9:.3g} GB/s")
    return entries


# --------------------------------------------------------------------------------- dispatch


def _dispatch_runner(*, enqueued: bool = False) -> timing.Runner:
    """run(n): n jitted scalar adds, blocking after each (the latency one call pays) or, with
    ``enqueued``, blocking once after all n (the cost per call when calls are pipelined, as
    the workloads are timed)."""
    import jax
    import jax.numpy as jnp

    add = jax.jit(lambda a, b: a + b)
    a, b = jax.device_put(jnp.float32(1.0)), jax.device_put(jnp.float32(2.0))

    def run(n: int) -> None:
        for _ in range(n):
            timing.block(add(a, b))

    def run_enqueued(n: int) -> None:
        timing.block([add(a, b) for _ in range(n)])

    return run_enqueued if enqueued else run


def _dispatch_entry(plan: Plan, say: Progress) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "value": None,
        "unit": "s",
        "kind": Kind.MEASURED.value,
        "available": False,
        "reason": "",
        "timing": None,
    }
    try:
        measured = timing.measure(
            _dispatch_runner(),
            samples=plan.samples,
            min_sample_seconds=plan.min_sample_s,
            budget_seconds=plan.budget_s,
            method="jax: scalar add, block after every call",
        )
    except Exception as exc:
        entry["reason"] = f"dispatch timing failed: {_why(exc)}"
        return entry
    floor = measured.per_call.min
    entry.update(value=floor, available=True, timing=measured.to_json())
    try:
        pipelined = timing.measure(
            _dispatch_runner(enqueued=True), samples=plan.samples,
            min_sample_seconds=plan.min_sample_s, budget_seconds=plan.budget_s,
            method="jax: scalar add, n calls enqueued, block once")
        entry.update(enqueued=pipelined.per_call.min, timing_enqueued=pipelined.to_json())
    except Exception as exc:  # the blocking floor stands alone
        entry["enqueued_reason"] = f"enqueued dispatch timing failed: {_why(exc)}"
    say(f"dispatch: {floor * 1e6:.3g} us per call"
        + (f", {entry['enqueued'] * 1e6:.3g} us enqueued" if entry.get("enqueued") else ""))
    return entry


# ----------------------------------------------------------------------------------- launch

LAUNCH_CHAIN = 33  # steps of the long program; the short one has one


def _launch_program(steps: int) -> Callable[[Any], Any]:
    """``steps`` row-wise max-subtractions of a tiny array: each a reduction feeding an
    elementwise op, which the compiler keeps as separate kernels in sequence."""
    import jax.numpy as jnp

    def program(x: Any) -> Any:
        for _ in range(steps):
            x = x - 0.5 * jnp.max(x, axis=-1, keepdims=True)
        return x

    return program


def _launch_entry(plan: Plan, say: Progress) -> dict[str, Any]:
    """The time one more kernel adds inside one compiled program, apart from the per-call
    dispatch: (t(long) - t(short)) / (kernels(long) - kernels(short)), both programs on an 8x8
    float32 array (nothing to stream), kernel counts read from their optimized HLO."""
    import jax
    import jax.numpy as jnp

    from roofline_report.hlo import inspect_compiled

    entry: dict[str, Any] = {"value": None, "unit": "s", "kind": Kind.MEASURED.value,
                             "available": False, "reason": "", "kernels": [],
                             "timing": None, "timing_short": None}
    try:
        x = jax.device_put(jnp.full((8, 8), 0.1, dtype=jnp.float32))
        runs = []
        for steps in (1, LAUNCH_CHAIN):
            compiled = jax.jit(_launch_program(steps)).lower(x).compile()
            kernels = int(inspect_compiled(str(compiled.as_text()))["kernels"])
            measured = timing.time_jitted(compiled, (x,), quick=False, samples=plan.samples,
                                          min_sample_seconds=plan.min_sample_s)
            runs.append((kernels, measured))
    except Exception as exc:
        entry["reason"] = f"launch timing failed: {_why(exc)}"
        return entry
    (k_short, short), (k_long, long) = runs
    entry["kernels"] = [k_short, k_long]
    entry["timing_short"] = short.to_json()
    entry["timing"] = long.to_json()
    if k_long <= k_short:
        entry["reason"] = (f"the compiler fused the chain ({k_long} kernels against "
                           f"{k_short}): no launch cost to measure")
        return entry
    value = (long.per_call.min - short.per_call.min) / (k_long - k_short)
    if value <= 0:
        entry["reason"] = "the longer program was not slower: launch cost below the noise"
        return entry
    entry.update(value=value, available=True)
    say(f"launch: {value * 1e6:.3g} us per kernel ({k_long} against {k_short} kernels)")
    return entry


# ---------------------------------------------------------------------- machine information


def read_cache_bytes(root: Path = CPU_SYSFS_CACHE) -> int | None:
    """Size in bytes of one instance of the CPU's last-level data cache, or None if unknown.

    Reads sysfs (``index*/level``, ``type``, ``size``) and falls back to ``lscpu``.
    """
    found = _sysfs_cache_bytes(root)
    return found if found is not None else _lscpu_cache_bytes()


def read_cache_hierarchy(root: Path = CPU_SYSFS_CACHE) -> list[dict[str, Any]]:
    """The data and unified caches of CPU 0 from sysfs: ``[{"level", "type", "size"}]`` by
    level, one entry per level (the largest where several share one); [] when unknown."""
    by_level: dict[int, dict[str, Any]] = {}
    try:
        for index in sorted(root.glob("index*")):
            kind = (index / "type").read_text().strip()
            if kind == "Instruction":
                continue
            level = int((index / "level").read_text().strip())
            size = parse_size((index / "size").read_text())
            if size is None:
                continue
            if level not in by_level or size > by_level[level]["size"]:
                by_level[level] = {"level": level, "type": kind, "size": size}
    except (OSError, ValueError):
        return []
    return [by_level[k] for k in sorted(by_level)]


def _sysfs_cache_bytes(root: Path) -> int | None:
    best: tuple[int, int] | None = None
    try:
        for index in sorted(root.glob("index*")):
            if (index / "type").read_text().strip() == "Instruction":
                continue
            level = int((index / "level").read_text().strip())
            size = parse_size((index / "size").read_text())
            if size is not None and (best is None or level > best[0]):
                best = (level, size)
    except (OSError, ValueError):
        return None
    return best[1] if best else None


_UNITS = {
    "": 1,
    "B": 1,
    "K": 1 << 10,
    "KB": 1 << 10,
    "KIB": 1 << 10,
    "M": MiB,
    "MB": MiB,
    "MIB": MiB,
    "G": GiB,
    "GB": GiB,
    "GIB": GiB,
}


def parse_size(text: str) -> int | None:
    """Parse a cache size such as '491520K', '32 MiB' or '2048 KB' (binary units); None if not."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", text)
    if not match or match.group(2).upper() not in _UNITS:
        return None
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def parse_lscpu(text: str) -> int | None:
    """Last-level cache per instance from ``lscpu`` output (``L3 cache: 32 MiB (2 instances)``)."""
    best: tuple[int, int] | None = None
    for line in text.splitlines():
        match = re.match(
            r"\s*L(\d)\w?\s+cache:\s*([\d.]+\s*[A-Za-z]*)\s*(?:\((\d+) instances?\))?", line
        )
        if not match or "L1i" in line:
            continue
        size = parse_size(match.group(2))
        if size is None:
            continue
        per_instance = size // int(match.group(3) or 1)
        level = int(match.group(1))
        if best is None or level > best[0]:
            best = (level, per_instance)
    return best[1] if best else None


def _lscpu_cache_bytes() -> int | None:
    try:
        done = subprocess.run(
            ["lscpu"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
            env={**os.environ, "LC_ALL": "C"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_lscpu(done.stdout)


def free_memory_bytes(device: Any) -> int | None:
    """Free memory of ``device``: the allocator's limit minus use on accelerators, MemAvailable
    from /proc/meminfo on CPU; None if unknown."""
    try:
        stats = device.memory_stats()
    except Exception:
        stats = None
    if stats and "bytes_limit" in stats:
        return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
    if getattr(device, "platform", "") != "cpu":
        return None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


# ------------------------------------------------------------------------------------ helpers


def _rate(work: float, measured: Timing) -> float:
    """Work per second of the fastest sample: a ceiling is what the device reaches, and noise
    from other processes only ever slows it. The median and spread stay in the timing record."""
    return work / measured.per_call.min


def _best(entries: Iterable[dict[str, Any]]) -> dict[str, Any]:
    usable = [e for e in entries if e["available"] and e["value"] is not None]
    if not usable:
        return {"value": None, "name": None}
    top = max(usable, key=lambda e: float(e["value"]))
    return {"value": top["value"], "name": top["name"]}


def _why(exc: BaseException) -> str:
    return reason(exc, _REASON_CHARS)


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)
