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
runs a run planned by :mod:`.plan` (:func:`measure_ceilings`).

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
from typing import Any

from roofline_report.observe.ceilings import compute as compute_ceilings
from roofline_report.observe.ceilings import dispatch as dispatch_ceilings
from roofline_report.observe.ceilings import host, load
from roofline_report.observe.ceilings import page_faults as page_fault_ceilings
from roofline_report.observe.ceilings import patterns as pattern_ceilings
from roofline_report.observe.ceilings import rates as rate_ceilings
from roofline_report.observe.ceilings import special_compute as special_ceilings
from roofline_report.observe.ceilings import streams as stream_ceilings
from roofline_report.observe.ceilings import working_set as cache_sweep
from roofline_report.observe.ceilings.plan import Plan, plan_for
from roofline_report.observe.ceilings.sampling import (
    ROUNDS,
    Again,
    Progress,
    failure_reason,
    round_samples,
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
        compute += [compute_ceilings.conv_entry("float32", backend, plan, say, again=again,
                                                budget=budget, form=form)
                    for form, _, _ in compute_ceilings.CONV_FORMS]
        if backend == "cpu":  # XLA:CPU's own code for the convolutions no library takes
            compute.append(special_ceilings.generic_conv_entry("float32", backend, plan, say,
                                                               again=again))
    if plan.conv_1d_features:
        compute.append(compute_ceilings.line_conv_entry("float32", backend, plan, say,
                                                        again=again, budget=budget))
    if plan.integer_sizes:
        compute += [special_ceilings.integer_matmul_entry(dtype, plan, say, again=again)
                    for dtype in plan.integer_dtypes]
    if plan.grouped_conv_sizes:
        compute += [special_ceilings.grouped_conv_entry("float32", backend, plan, say,
                                                        again=again, window=window,
                                                        group=group)
                    for window, group in special_ceilings.GROUPED_ROOFS]
        # A sequence's depthwise convolution (Mamba's 4 taps): on a TPU 25 times below the
        # 3x3 roof; on XLA:CPU 0.39 GFLOP/s, below the line the 2-D roofs draw through 4 taps.
        compute.append(special_ceilings.causal_conv_entry("float32", backend, plan, say,
                                                          again=again))
    kept: dict[str, Any] = {}
    streams = [stream_ceilings.bandwidth_entries(plan, cache_bytes, say, kept,
                                                 round_samples(plan.samples), budget)]
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
                                                         round_samples(plan.samples), budget))
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
        # at jax's default precision, as the roofs take it (a TPU's highest-precision float32
        # matmul is its own entry: several bfloat16 passes, beside the default's one)
        "peak_compute": _best(e for e in compute if e["dtype"] == "float32"
                              and e["op"] == "matmul" and e["precision"] == "default"),
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
