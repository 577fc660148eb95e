"""The timing harness used by every measurement, and the statistics of its samples.

Concepts:

* A *workload runner* ``run(n)`` executes the workload ``n`` times back to back and blocks once at
  the end. On asynchronous backends (GPUs, and jax's CPU client) this matters: blocking after every
  call adds the round trip to each call and under-reports a GPU by 20-35%.
* A *sample* is one timed ``run(n)``; its duration divided by ``n`` is one per-call time. The inner
  count ``n`` is calibrated by doubling until one sample lasts at least ``min_sample_seconds`` and
  :data:`RESOLUTION_MULTIPLE` ticks of the timer.
* The per-call times and how they were taken are a :class:`~roofline_report.analysis.stats.Timing`
  (its statistics, derived from the samples, live in :mod:`roofline_report.analysis.stats`); the
  record results.json keeps is the samples, not the statistics.

The clock is injectable (``timer=``) so the harness can be tested on a synthetic clock. The
module imports jax only when :func:`block` (and so :func:`time_jitted`) is called.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from roofline_report.analysis.stats import Stats, Timing
from roofline_report.errors import InputError

Timer = Callable[[], float]
Runner = Callable[[int], object]

# Full mode: enough samples for quartiles that mean something, each well above timer noise.
DEFAULT_SAMPLES = 15
DEFAULT_MIN_SAMPLE_SECONDS = 0.03
# Quick mode: a rough figure in a fraction of the time.
QUICK_SAMPLES = 5
QUICK_MIN_SAMPLE_SECONDS = 0.005
# Time a freshly compiled program runs untimed before its samples: on the 2-core CPU a new
# 256^3 matmul executable ran its first ~80 ms of calls at 350 us and then at 200 us.
PROGRAM_WARMUP_SECONDS = 0.1
QUICK_PROGRAM_WARMUP_SECONDS = 0.02
# On an accelerator a sample's first call waits a blocking round trip to the device (about
# 0.5 ms on a TPU v5e host) before the device starts: samples of a few calls read 10 % slow
# there (a v5e's 4096^3 bfloat16 product, 0.72 ms on the device, read 0.8 ms in 5 ms samples).
# Samples on an accelerator last at least this long, whatever the plan asks.
ACCELERATOR_MIN_SAMPLE_SECONDS = 0.05
# Upper bound on the calibrated inner count (a 1 us call reaches 0.03 s at 32768).
DEFAULT_MAX_INNER = 1 << 16
# The most bytes of outputs a runner that holds its calls' outputs keeps alive at once
# (:func:`enqueue`): a TPU v5e's rate kernel of 16 MiB, 512 calls a sample, held 8 GiB of its
# 16 and failed to allocate beside the arrays other measurements had left.
HELD_OUTPUT_BYTES = 1 << 30
# A sample must also last this many timer ticks, whatever min_sample_seconds says.
RESOLUTION_MULTIPLE = 1000
# With a time budget, at least this many samples are taken.
MIN_BUDGET_SAMPLES = 3


def timer_resolution(timer: Timer = time.perf_counter, reads: int = 10_000) -> float:
    """Smallest positive difference between successive reads of ``timer``.

    Falls back to the resolution perf_counter declares if no two reads differ.
    """
    best = math.inf
    previous = timer()
    for _ in range(reads):
        now = timer()
        if previous < now < previous + best:
            best = now - previous
        previous = now
    if math.isfinite(best):
        return best
    return float(time.get_clock_info("perf_counter").resolution)


def measure(
    run: Runner,
    *,
    samples: int,
    min_sample_seconds: float,
    max_inner: int = DEFAULT_MAX_INNER,
    timer: Timer = time.perf_counter,
    warmup: int = 1,
    budget_seconds: float | None = None,
    method: str = "enqueued calls, one block per sample",
    warmup_seconds: float = 0.0,
    prepare: Callable[[int], object] | None = None,
    count_faults: bool = False,
) -> Timing:
    """Time ``run`` and return per-call statistics.

    ``run(n)`` must execute the workload n times and block once at the end. Steps: ``warmup``
    untimed ``run(1)`` calls; calibration of n by doubling from 1 until one ``run(n)`` lasts at
    least max(min_sample_seconds, RESOLUTION_MULTIPLE timer ticks) or n reaches ``max_inner``;
    untimed ``run(n)`` until ``warmup_seconds`` have passed since the calibration began; then
    ``samples`` timed ``run(n)``, each divided by n. With ``budget_seconds``, sampling stops
    once that much time has been spent on samples (but after at least MIN_BUDGET_SAMPLES).
    A sample shorter than one timer tick is recorded as one tick. ``prepare(n)``, when given, is
    called before every ``run(n)``, outside the timed region (fresh donated inputs for n calls).
    With ``count_faults``, the process's minor page faults during the timed ``run(n)`` calls
    are counted (:func:`minor_faults`) and kept per call (None where the system does not say).

    Raises InputError for invalid settings; exceptions from ``run`` propagate.
    """
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise InputError(f"samples must be a positive integer, got {samples!r}")
    if not (math.isfinite(min_sample_seconds) and min_sample_seconds > 0):
        raise InputError(f"min_sample_seconds must be positive, got {min_sample_seconds!r}")
    if isinstance(max_inner, bool) or not isinstance(max_inner, int) or max_inner < 1:
        raise InputError(f"max_inner must be a positive integer, got {max_inner!r}")
    if warmup < 0:
        raise InputError(f"warmup must be zero or more, got {warmup!r}")

    resolution = timer_resolution(timer)
    target = max(min_sample_seconds, RESOLUTION_MULTIPLE * resolution)

    def ready(n: int) -> None:
        if prepare is not None:
            prepare(n)

    for _ in range(warmup):
        ready(1)
        run(1)

    inner = 1
    calibration_started = timer()
    while True:
        ready(inner)
        start = timer()
        run(inner)
        elapsed = timer() - start
        if elapsed >= target or inner >= max_inner:
            break
        inner = min(2 * inner, max_inner)
    while timer() - calibration_started < warmup_seconds:
        ready(inner)
        run(inner)

    per_call: list[float] = []
    faults: int | None = 0 if count_faults else None
    sampling_started = timer()
    for _ in range(samples):
        ready(inner)
        before = minor_faults() if faults is not None else None
        start = timer()
        run(inner)
        elapsed = timer() - start
        if faults is not None:
            after = minor_faults()
            faults = None if before is None or after is None else faults + after - before
        per_call.append(max(elapsed, resolution) / inner)
        if (
            budget_seconds is not None
            and len(per_call) >= MIN_BUDGET_SAMPLES
            and timer() - sampling_started > budget_seconds
        ):
            break
    return Timing(Stats(per_call), inner, resolution, target, method,
                  None if faults is None else faults / (inner * len(per_call)))


def minor_faults() -> int | None:
    """The minor page faults this process has taken (``getrusage``), None where the system
    does not count them (no ``resource`` module: Windows)."""
    try:
        import resource
    except ImportError:
        return None
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)


def accelerator_backend() -> bool:
    """Whether jax's default backend is an accelerator (a GPU or TPU)."""
    import jax

    from roofline_report.backends import describe

    return describe(jax.default_backend()).accelerator


def min_sample_for(accelerator: bool, seconds: float) -> float:
    """A sample's least length: ``seconds``, at least :data:`ACCELERATOR_MIN_SAMPLE_SECONDS`
    on an accelerator."""
    return max(seconds, ACCELERATOR_MIN_SAMPLE_SECONDS) if accelerator else seconds


def time_jitted(
    compiled: Any,
    args: Sequence[Any],
    *,
    quick: bool,
    timer: Timer = time.perf_counter,
    samples: int | None = None,
    min_sample_seconds: float | None = None,
    budget_seconds: float | None = None,
    keep_outputs: bool = False,
    warmup_seconds: float = 0.0,
    pool: tuple[Callable[[int], object], Callable[[], Any]] | None = None,
    max_inner: int = DEFAULT_MAX_INNER,
    pool_method: str = "jax: n enqueued calls, each on its own donated inputs",
) -> Timing:
    """Time a compiled jax executable (``jax.stages.Compiled``) called with ``args``.

    Each sample enqueues n calls and blocks once with ``jax.block_until_ready`` on the last
    output: a device runs its calls in order, so that waits for all of them. Earlier outputs are
    dropped as the loop goes on, so the allocator can reuse their memory as a real loop would;
    holding all n (``keep_outputs=True``, which waits on every one) makes each call take fresh
    pages, about 20% slower for a 1024^2 matmul on the 2-core CPU. Defaults: QUICK_* constants
    when ``quick``, DEFAULT_* otherwise; ``budget_seconds`` as in :func:`measure`. Exceptions
    from the executable propagate.

    ``pool``: (prepare, call) for a program that donates inputs
    (:func:`roofline_report.observe.donation.pool`): ``prepare(n)`` makes n calls' fresh
    inputs ready before each sample, outside the timed region, and each ``call()`` consumes one
    of them, so ``compiled`` and ``args`` are not used; ``max_inner`` then caps the calls per
    sample to the copies that fit, and ``pool_method`` says how the calls got their inputs.
    """
    n_samples = samples if samples is not None else (QUICK_SAMPLES if quick else DEFAULT_SAMPLES)
    min_seconds = min_sample_seconds
    if min_seconds is None:
        min_seconds = QUICK_MIN_SAMPLE_SECONDS if quick else DEFAULT_MIN_SAMPLE_SECONDS
    min_seconds = min_sample_for(accelerator_backend(), min_seconds)
    if pool is not None:
        return _time_pool(pool, n_samples, min_seconds, timer, budget_seconds, warmup_seconds,
                          max_inner, pool_method)
    block(compiled(*args))  # a first call before the harness's own warm-up

    def run(n: int) -> None:
        (enqueue_held if keep_outputs else enqueue_dropped)(lambda: compiled(*args), n)

    return measure(
        run,
        samples=n_samples,
        min_sample_seconds=min_seconds,
        timer=timer,
        budget_seconds=budget_seconds,
        warmup_seconds=warmup_seconds,
        count_faults=True,
        method="jax: n enqueued calls, block_until_ready "
        + ("on all outputs" if keep_outputs else "on the last")
        + " once per sample",
    )


def _time_pool(pool: tuple[Callable[[int], object], Callable[[], Any]], samples: int,
               min_seconds: float, timer: Timer, budget_seconds: float | None,
               warmup_seconds: float, max_inner: int, method: str) -> Timing:
    prepare, call = pool
    prepare(1)
    block(call())  # a first call before the harness's own warm-up

    def run(n: int) -> None:
        out = None
        for _ in range(n):
            out = call()
        block(out)

    return measure(
        run,
        samples=samples,
        min_sample_seconds=min_seconds,
        max_inner=max_inner,
        timer=timer,
        budget_seconds=budget_seconds,
        warmup_seconds=warmup_seconds,
        prepare=prepare,
        method=method,
        count_faults=True,
    )


def geometric(first: int, last: int, factor: int) -> tuple[int, ...]:
    """first, first·factor, first·factor², ... up to ``last`` (inclusive): the sizes of a
    measurement sweep."""
    out = []
    value = first
    while value <= last:
        out.append(value)
        value *= factor
    return tuple(out)


def enqueue(call: Callable[[], Any], n: int, output_bytes: int,
            held_bytes: int = HELD_OUTPUT_BYTES) -> None:
    """``n`` calls of ``call`` enqueued, then waited on. Their outputs are all held, as each
    call's own fresh memory, while ``n · output_bytes`` fits in ``held_bytes``; past that each
    output is dropped as the next call is made and only the last is waited on (a device runs
    its calls in order, so that waits for all of them), so that n calls never need n outputs'
    memory at once."""
    if n * output_bytes <= held_bytes:
        enqueue_held(call, n)
    else:
        enqueue_dropped(call, n)


def enqueue_held(call: Callable[[], Any], n: int) -> None:
    """``n`` calls of ``call`` enqueued, every output held, then waited on all."""
    block([call() for _ in range(n)])


def enqueue_dropped(call: Callable[[], Any], n: int) -> None:
    """``n`` calls of ``call`` enqueued, each output dropped as the next call is made (as in
    a loop), then the last waited on: a device runs its calls in order."""
    out = None
    for _ in range(n):
        out = call()  # the previous output is dropped here
    block(out)


def block(tree: Any) -> Any:
    """``jax.block_until_ready`` on every array in ``tree``; returns ``tree``."""
    import jax

    return jax.block_until_ready(tree)  # type: ignore[no-untyped-call]


def measure_compile(jitted_fn: Any, args: Sequence[Any]) -> tuple[Any, Any, float, float]:
    """Lower and compile ``jitted_fn`` for ``args``, timing each step apart.

    Returns (lowered, compiled, lower_seconds, compile_seconds). Exceptions propagate.
    """
    start = time.perf_counter()
    lowered = jitted_fn.lower(*args)
    lowered_at = time.perf_counter()
    compiled = lowered.compile()
    done = time.perf_counter()
    return lowered, compiled, lowered_at - start, done - lowered_at


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if text else type(exc).__name__
