"""The plan of one ceilings measurement (pure): the sizes, the sampling and which parts are
measured on a backend (:func:`plan_for`), and the :class:`Plan` every part takes.
:mod:`.machine` runs it.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline_report.observe import timer as timing
from roofline_report.observe.ceilings import pattern_plans
from roofline_report.observe.ceilings import rates as rate_ceilings
from roofline_report.observe.ceilings import working_set as cache_sweep
from roofline_report.observe.ceilings.sampling import GiB, MiB

# Bandwidth arrays should be at least this many times the last-level cache.
CACHE_MULTIPLE = 4


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
    # Features (in and out) of the 1-D convolution roof (window 3 over a sequence); () for none.
    conv_1d_features: tuple[int, ...] = ()
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
    line: tuple[int, ...]
    if backend == "cpu":
        # Small sizes too: a matmul's rate grows with its size, and the prediction of a small
        # product uses the rate measured near its size.
        sizes = (128, 1024) if quick else (128, 256, 512, 1024, 2048)
        conv = (16, 64) if quick else (8, 16, 32, 64, 128)
        # A sequence's convolutions (audio encoders) run near the matmul roof once their
        # filters are large, unlike an image's: measured apart, by their features. Measured
        # on the CPU only so far: an accelerator's are priced at its convolution roof.
        line = (16, 64, 256) if quick else (8, 16, 32, 64, 128, 256)
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
        line = ()
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
        conv_1d_features=line,
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


__all__ = ["CACHE_MULTIPLE", "LOAD_REPEAT_S", "Plan", "plan_for"]
