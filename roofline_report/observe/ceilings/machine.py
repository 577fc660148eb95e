"""Measured ceilings of the active jax device, in the manner of the Empirical Roofline Toolkit.

* Compute: square matmuls per dtype (float32 always, bfloat16 where the backend runs it). The size
  is swept upwards from a small one until a call is long enough or a cap is reached; the size with
  the best rough rate is then timed in full. Work per call is 2 n^3 FLOP. Sides below the sweep's
  (``batch_sides``) are timed as a batch of products in one call, rough rates only.
  Convolutions likewise (3x3 NHWC, by image side): they run through other library code, at a
  rate of their own. Integer products (int8, int4 where the backend has it, summed in int32)
  and a 7x7 depthwise convolution, rough rates by size only (:mod:`.special_compute`).
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

The parts: :mod:`.compute` (matmuls and convolutions), :mod:`.streams` (the streaming kernels,
on huge pages), :mod:`.dispatch` (the dispatch and launch floors), :mod:`.page_faults` (a first
write to a fresh page), :mod:`.host` (the CPU's caches
and the free memory) and :mod:`.sampling` (the fastest-sample rate and the rounds); this module
plans a run (:func:`plan_for`) and runs it (:func:`measure_ceilings`).

Beside them: the working-set sweep (:mod:`.working_set`), operation rates (:mod:`.rates`) and the
rates of the kernel patterns that run below the streaming roofs (:mod:`.patterns`).

The machine's load is read around each compute and streaming round and over the whole
measurement (:mod:`.load`): a round taken while other work held the cores is taken again within
``Plan.load_repeat_s``, and each entry keeps its rounds' loads (``round_loads``), the record its
whole measurement's (``conditions``).

Every figure is ``kind: measured``. A measurement that fails (out of memory, a missing dtype)
becomes an entry with ``available: False`` and the reason; :func:`measure_ceilings` does not raise
for a measurement failure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from roofline_report.observe import timer as timing
from roofline_report.observe.ceilings import compute as compute_ceilings
from roofline_report.observe.ceilings import dispatch as dispatch_ceilings
from roofline_report.observe.ceilings import host, load, pattern_plans
from roofline_report.observe.ceilings import page_faults as page_fault_ceilings
from roofline_report.observe.ceilings import patterns as pattern_ceilings
from roofline_report.observe.ceilings import rates as rate_ceilings
from roofline_report.observe.ceilings import special_compute as special_ceilings
from roofline_report.observe.ceilings import streams as stream_ceilings
from roofline_report.observe.ceilings import working_set as cache_sweep
from roofline_report.observe.ceilings.sampling import (
    ROUNDS,
    Again,
    GiB,
    MiB,
    Progress,
    failure_reason,
    round_samples,
)
from roofline_report.observe.ceilings.streams import CACHE_MULTIPLE


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
    patterns: pattern_plans.PatternPlan | None = None
    launch: bool = False  # the cost of one more kernel inside a program
    # What splitting a kernel across worker threads adds (XLA:CPU splits loop kernels).
    split_launch: bool = False
    conv_sizes: tuple[int, ...] = ()  # image sides of the convolution roof; () measures none
    # The cost of a first write to a fresh page (CPU: see :mod:`.page_faults`).
    page_faults: bool = False
    # Sides of the small square products timed as a batch in one call (a product too small to
    # time alone is mostly dispatch), ``batch_flops`` a call; () measures none.
    batch_sides: tuple[int, ...] = ()
    batch_flops: int = 0
    # Seconds a measurement may spend taking again the compute and streaming rounds that ran
    # while other work held the cores (see :mod:`.load`); 0 takes none again.
    load_repeat_s: float = 0.0
    # Integer matmul roofs (int32 sums) of these types at these sides, and the grouped
    # (depthwise) convolution roof at these image sides (:mod:`.special_compute`); () for none.
    integer_dtypes: tuple[str, ...] = ()
    integer_sizes: tuple[int, ...] = ()
    grouped_conv_sizes: tuple[int, ...] = ()


#: Seconds of rounds taken again for load, by ``quick``: about a fifth of a measurement's time.
LOAD_REPEAT_S = {True: 5.0, False: 20.0}


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
        # Attention's per-head products and small experts: sides below the smallest size.
        batch_sides: tuple[int, ...] = (32,) if quick else (16, 32, 64)
        batch_flops = 2 * 256**3
        integer: tuple[int, ...] = (512,) if quick else (256, 1024)
        grouped: tuple[int, ...] = (24,) if quick else (16, 32)
        max_call = 0.01 if quick else 0.05
        wanted = CACHE_MULTIPLE * cache_bytes if cache_bytes else 0
        array = min(max(wanted, 256 * MiB), 256 * MiB if quick else 512 * MiB)
        if free_bytes:
            array = min(array, free_bytes // 8)
    else:
        sizes = (2048, 4096, 8192) if quick else (1024, 2048, 4096, 8192)
        conv = (64, 256) if quick else (32, 64, 128, 256)
        batch_sides = (128,) if quick else (64, 128, 256, 512)
        batch_flops = 2 * 1024**3
        integer = (4096,) if quick else (2048, 8192)
        grouped = (128,) if quick else (64, 256)
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
        min_sample_s=timing.min_sample_for(backend != "cpu", min_sample),
        sweep_samples=3,
        sweep_min_sample_s=timing.min_sample_for(backend != "cpu", 0.002 if quick else 0.005),
        budget_s=0.3 if quick else 2.0,
        huge_pages=backend == "cpu",
        levels=levels,
        rates=rate_ceilings.rate_plan(backend, quick=quick),
        patterns=pattern_plans.pattern_plan(backend, quick=quick),
        launch=True,
        split_launch=backend == "cpu",
        page_faults=backend == "cpu",
        conv_sizes=conv,
        batch_sides=batch_sides,
        batch_flops=batch_flops,
        load_repeat_s=LOAD_REPEAT_S[quick],
        # XLA's CPU and GPU backends refuse an int4 product ("does not support custom element
        # sizes on non-sub-byte types"): measured where the backend has one, not attempted and
        # listed as missing on every CPU build.
        integer_dtypes=("int8", "int4") if backend == "tpu" else ("int8",),
        integer_sizes=integer,
        grouped_conv_sizes=grouped,
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
    start = load.PROBE()
    backend = jax.default_backend()
    device = jax.devices()[0]
    cache_bytes = host.read_cache_bytes() if backend == "cpu" else None
    if plan is None:
        plan = plan_for(
            backend, quick=quick, cache_bytes=cache_bytes, free_bytes=host.free_memory_bytes(device)
        )

    # The compute and stream ceilings are timed in two rounds a whole pass over the other
    # ceilings apart (see compute._sized_rates and streams.best_streams); ``again`` holds the
    # second rounds.
    again: Again = []
    # Rounds under load are taken again while this lasts (each records its load).
    budget = load.Budget(plan.load_repeat_s)
    compute = [compute_ceilings.matmul_entry(dtype, backend, plan, say, again=again,
                                             budget=budget)
               for dtype in plan.matmul_dtypes]
    if backend in ("gpu", "cuda", "tpu") and "float32" in plan.matmul_dtypes:
        # float32 matmuls run as TF32 by default on NVIDIA GPUs, in one bfloat16 pass on TPUs
        # (several at the highest precision, as a TPU's FFT asks for): measure true float32.
        compute.append(compute_ceilings.matmul_entry("float32", backend, plan, say,
                                                     highest=True, again=again,
                                                     budget=budget))
    if plan.conv_sizes:
        compute.append(compute_ceilings.conv_entry("float32", backend, plan, say, again=again,
                                                   budget=budget))
    if plan.integer_sizes:
        compute += [special_ceilings.integer_matmul_entry(dtype, plan, say, again=again)
                    for dtype in plan.integer_dtypes]
    if plan.grouped_conv_sizes:
        compute += [special_ceilings.grouped_conv_entry("float32", backend, plan, say,
                                                        again=again, window=window,
                                                        group=group)
                    for window, group in special_ceilings.GROUPED_ROOFS]
    kept: dict[str, Any] = {}
    streams = [stream_ceilings.bandwidth_entries(plan, cache_bytes, say, kept,
                                                 round_samples(plan), budget)]
    dispatch = dispatch_ceilings.dispatch_entry(plan, say)
    extra: dict[str, Any] = {"caches": host.read_cache_hierarchy() if backend == "cpu" else []}
    if plan.levels is not None:
        try:
            extra["working_set"] = cache_sweep.measure_sweep(
                plan.levels, say, dispatch=dispatch["value"] if dispatch["available"] else None)
        except Exception as exc:  # a failure of the sweep as a whole
            extra["working_set"] = {"available": False, "reason": failure_reason(exc)}
    if plan.rates is not None or plan.patterns is not None:
        extra["rates"] = (rate_ceilings.measure_rates(plan.rates, say) if plan.rates else [])
        if plan.patterns is not None:
            extra["rates"] += pattern_ceilings.measure_patterns(plan.patterns, say)
    if plan.launch:
        extra["launch"] = dispatch_ceilings.launch_entry(plan, say)
    if plan.split_launch:
        extra["split_launch"] = dispatch_ceilings.split_launch_entry(plan, say)
    if plan.page_faults:
        extra["page_fault"] = page_fault_ceilings.page_fault_entry(plan, say)
    for _ in range(1, ROUNDS):
        for timed_again in again:
            timed_again()
        streams.append(stream_ceilings.bandwidth_entries(plan, cache_bytes, say, kept,
                                                         round_samples(plan), budget))
    kept.clear()
    bandwidth = stream_ceilings.best_streams(streams)
    conditions = load.load_between(start, load.PROBE())
    if budget.repeated:
        say(f"{budget.repeated} rounds taken again: other work held the cores")
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
        "conditions": conditions,
    }


def _best(entries: Iterable[dict[str, Any]]) -> dict[str, Any]:
    usable = [e for e in entries if e["available"] and e["value"] is not None]
    if not usable:
        return {"value": None, "name": None}
    top = max(usable, key=lambda e: float(e["value"]))
    return {"value": top["value"], "name": top["name"]}
