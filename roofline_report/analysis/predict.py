"""The model (no jax): the predicted time of a kernel and of a program from a set of roofs.

One launch of a kernel is predicted from its counted work and the bytes it touches::

    compute  = matmul flops ÷ the matmul rate of its dtype at the size of one product (a
               batched dot's flops ÷ its batch: it runs at the rate of its small products,
               :func:`product_size`)
             + convolution flops ÷ the convolution rate at its size (the matmul's where no
               convolution was measured), those whose windows tile their input (a patch
               embedding, a 1x1 convolution) among them: the HLO keeps them convolutions,
               run by the convolution library; a grouped (depthwise) convolution's flops ÷
               the grouped convolution's rate at its window and size (the convolution's
               where none was measured)
             (an integer product, int8 x int8 -> int32, at its integer type's matmul roof)
             + conversions ÷ the conversion rate
             + other flops ÷ the elementwise (multiply-add) rate of its dtype (float32's in a
               kernel that converts: it computes in float32)
             + Σ transcendentals of each function ÷ that function's rate
               (flops and transcendentals a loop fusion evaluates again for every output
               element, under a broadcast along the minor axis, and the real arithmetic of
               complex ops, a complex multiply 6 flops where it is counted 1, are priced too:
               :mod:`roofline_report.hlo.uncounted_work`)
               (on a CPU, a kernel XLA leaves on fewer worker threads than the rate's own
               kernel ran on takes the rates measured on that many threads, a loop left on
               one, where they were measured, else that share of the elementwise,
               transcendental and conversion rates: :func:`rate_on_threads`)
    memory   = the largest of: bytes ÷ the bandwidth of the memory level holding them (fresh
               outputs at the write-new roof, donated buffers in place); for a reduction, the
               elements its reduce ops read (at least those it reads; twice for a fusion
               that reduces its input twice) ÷ the row-reduction rate at that size
    pattern  = for a kernel of a pattern that runs below the streaming roofs (a transposing
               copy, alone, fused into other work or fused with a broadcast, a block
               transpose moving whole runs, a reduction along a non-minor axis or keeping an
               axis between two it reduces, a gather, a scatter, a sort, a top-k, a dot
               outside the matmul library, a matrix-vector product, an FFT, a windowed
               maximum outside the library by the arrays it reduces together, a windowed
               sum), its
               size ÷ that pattern's measured rate at its size, on the roof measured on the
               row nearest its own where the pattern was measured by row
               (:mod:`roofline_report.analysis.patterns`)
               (in a program whose arguments and results exceed the last-level cache, the
               bytes a kernel of its entry reads from the program's arguments come from main
               memory: its memory term takes their time at main memory's read roof less
               their time at the level priced, :func:`cold_arguments`; a transposing copy
               takes the share of its elements read from them at the 2-D swap's roof
               measured with its operand in main memory, where one was)
    launch   = the launch floor (what the runtime spends starting a kernel before its work)
    split    = for a kernel XLA:CPU splits across worker threads, the split-launch floor
               (handing its parts to the workers), as programs are timed: calls enqueued,
               the workers awake, on every launch (a loop's trips each hand their parts
               over: on a 2-core CPU a GRU's split accumulator add ran 11 µs a trip above its
               work, a sampling loop's split tanh 10, the enqueued floor read 5.4); where
               only the blocked floor was measured (the workers gone idle), that once per
               call: a loop's later trips find the workers awake
    kernel   = trips × (max(compute, memory, pattern) + launch + split)
               (trips: the loop's known trip count, else the launches per call a trace
               observed, :mod:`roofline_report.analysis.loop_trips`; with neither, once, and
               the prediction is marked a lower bound); an asynchronous copy or slice: its
               launch, plus what of its transfer (its largest term) the kernels issued
               between its start and its done leave unhidden
               (:mod:`roofline_report.analysis.async_exposure`)
    program  = Σ kernels + the dispatch floor of one call (calls enqueued, as programs are timed);
               on an accelerator the longer of the two, and for a call read from a trace
               there Σ kernels alone (the trace times the device's span of the call, which
               the host's dispatch overlaps and is outside of)

A kernel computes in the dtype of the bytes it reads (:func:`kernel_dtype`): a bfloat16 program
on a CPU runs its reductions and matmuls on float32 operands it converted first.

Every part of a prediction is a :class:`Term` with the roof it was priced at and that roof's
kind. A kernel's **binding** is the largest of its work's group (the compute terms add; of the
memory terms the largest counts), its largest term standing for it, and each launch cost; a
program's terms are its kernels' times, each charged to its kernel's binding term, plus the
dispatch floor, so that a program's binding is simply its largest term. The prediction's kind
is always *predicted*; the roofs' kinds say whether they were measured, assumed or read from a
spec sheet.

Programs known only by their totals (runs saved without a kernel inventory) are predicted as one
kernel of their totals, with a launch added for each of their kernels.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from roofline_report.analysis.async_exposure import expose
from roofline_report.analysis.convolution_roofs import convolution_parts
from roofline_report.analysis.inventory_totals import (
    program_buffers,
    program_footprint,
    program_traffic,
)
from roofline_report.analysis.on_chip import (
    ON_CHIP,
    ON_CHIP_DETAIL,
    ON_CHIP_PATTERN,
    ON_CHIP_REDUCTION,
    STREAMED_PATTERNS,
    reads_on_chip,
)
from roofline_report.analysis.past_the_cache import (
    COLD,
    IN_SERIES,
    cold_arguments,
    passes_in_series,
)
from roofline_report.analysis.patterns import FFT, pattern_time
from roofline_report.analysis.prediction_facts import (
    Facts,
    elements_of,
    facts,
    kernel_dtype,
    kernel_facts,
    op_name,
)
from roofline_report.analysis.roofs import (
    PAGE_FAULT,
    SPLIT_LAUNCH,
    SPLIT_LAUNCH_ENQUEUED,
    Floor,
    RateRoof,
    RoofSet,
)
from roofline_report.analysis.terms import Group, Prediction, Term, combine
from roofline_report.kinds import Kind
from roofline_report.results import schema
from roofline_report.text import count as count_of
from roofline_report.text import plural

__all__ = ["COLD", "IN_SERIES", "Facts", "Prediction", "Term", "cold_arguments", "elements_of",
           "facts", "faults_charged", "function_rate", "kernel_dtype", "kernel_facts",
           "passes_in_series", "predict_facts",
           "predict_from_kernels", "predict_kernel", "predict_kernels", "predict_program",
           "program_buffers", "program_footprint", "program_traffic", "reduction_work"]

TRANSCENDENTAL_RATE = {"tanh": "tanh", "exp": "exp", "exponential": "exp", "log": "log",
                       "logistic": "exp", "exponential_minus_one": "expm1",
                       "log_plus_one": "log1p", "rsqrt": "rsqrt", "sqrt": "sqrt",
                       "power": "power", "sine": "sine", "cosine": "sine", "tan": "tan",
                       "erf": "tanh", "atan2": "atan2"}
# Where a function's own rate was not measured (ceilings from before it was), the rate of the
# nearest function that was, and what the note calls it. Each is faster than the function
# (on a 2-core CPU log1p ran at half log's rate, a power at a tenth of it, tan and atan2 at a
# fifteenth to a twentieth of tanh's: :mod:`roofline_report.observe.ceilings.rates`), so a
# kernel so priced is predicted faster than it runs, and its note says so.
STAND_IN_RATE = {"sqrt": ("exp", "square-root"), "rsqrt": ("exp", "square-root"),
                 "sine": ("exp", "sine"), "log1p": ("log", "log1p"),
                 "expm1": ("exp", "expm1"), "power": ("log", "power"),
                 "tan": ("tanh", "tan"), "atan2": ("tanh", "atan2")}

FAULT_TERM = "page faults"  # the term of the pages a kernel faults in, per call


def faults_charged(predictions: Iterable[Prediction]) -> float:
    """What fresh pages cost a call in ``predictions``: their page-fault terms summed, 0
    where none is charged. The kernel section and the miss's reason both read it here."""
    return sum(t.seconds for p in predictions for t in p.terms if t.name == FAULT_TERM)


# The kernel notes of work left out for want of a rate begin so; a program's notes give them
# once, as :data:`LEFT_OUT`, not once a kernel with each kernel's count.
NO_CONVERT = "no conversion rate:"
NO_FMA = "no multiply-add rate:"
NO_FUNCTION = "no rate for "
NO_ON_CHIP = "no on-chip rate measured:"
UNPRICED_NOTES = (NO_CONVERT, NO_FMA, NO_FUNCTION, NO_ON_CHIP)
LEFT_OUT = "left out for want of a rate: {what}"


@dataclass(frozen=True, slots=True)
class _Launch:
    """One launch priced: its terms (seconds per launch), notes and the level of its bytes."""

    terms: tuple[Term, ...]
    level: str
    notes: tuple[str, ...]
    unpriced: tuple[str, ...] = ()  # work left out for want of a measured rate


def rate_on_threads(f: Facts, roof: RateRoof, roofs: RoofSet) -> tuple[float, RateRoof, bool]:
    """(rate, roof, scaled): the rate a kernel evaluates ``roof``'s operation at on the
    threads it runs on: the rate measured on that many threads where the set has one (a
    CPU's loop left on one worker thread: one thread does more than its share of two), else
    :func:`thread_share` of ``roof``'s (``scaled`` then True where that share is below 1)."""
    share = thread_share(f, roof)
    if share >= 1.0 or f.threads is None:
        return roof.value, roof, False
    own = roofs.alike(roof, threads=f.threads)
    if own is not None and own.value > 0:
        return min(own.value, roof.value), own, False
    return roof.value * share, roof, True


def thread_share(f: Facts, roof: RateRoof) -> float:
    """The share of a measured rate a kernel gets: the threads it runs on over those the
    rate's kernel ran on, at most 1. On a CPU, XLA splits a large loop fusion across the
    worker threads and leaves a small one (a recurrent cell's step inside a loop) on one;
    the rates are measured on a split kernel (on a 2-core CPU an exp ran at 2.98 G/s split in
    two and 1.70 G/s pinned to one core, a sigmoid of 2,048 elements at 1.46 unsplit), so a
    kernel left on one thread evaluates at one thread's share of them. 1 where either count
    is not known."""
    if roof.threads is None or f.threads is None or f.threads >= roof.threads:
        return 1.0
    return f.threads / roof.threads


def function_rate(op: str, roofs: RoofSet, dtype: str) -> tuple[RateRoof | None, str]:
    """(rate, note): the measured rate a transcendental function ``op`` (as the count names
    it: ``exponential``, ``log_plus_one``, ...) is evaluated at in ``dtype``, and where that
    is a stand-in for a rate not measured (:data:`STAND_IN_RATE`), the note that says so
    ("" otherwise); None where neither was measured. The prediction and the hardware roof
    (:mod:`~roofline_report.analysis.headroom`) both take it from here."""
    own = TRANSCENDENTAL_RATE.get(op, "tanh")
    rate = roofs.rate_for(own, dtype)
    if rate is not None or own not in STAND_IN_RATE:
        return rate, ""
    stand_in, what = STAND_IN_RATE[own]
    rate = roofs.rate_for(stand_in, dtype)
    if rate is None:
        return None, ""
    return rate, f"no {what} rate measured: {op} priced at {rate.name}'s rate"


def product_size(f: Facts) -> float:
    """The flops of one of a kernel's matrix products, the size its rate is read at on the
    matmul roof's by-size curve (measured on square products).

    A product's rate is read at its own flops, whatever its shape. On XLA:CPU's matmul library
    (2-core CPU, float32) tall and skinny products ran at the rate of square products of
    their flops: [8192, 256] @ [256, 64] at 404 GFLOP/s beside 418 for a 512-cubed one of the
    same 268 MFLOP, and [512, 128] @ [128, 512] at 350 beside 330 for a 406-cubed one. Reading
    them instead as the square product that reuses each operand element as often (a 153-cubed
    one for the first, 122 GFLOP/s) priced the products of a graph network 1.8x too slow.
    Where a product is too skinny to reuse its operands, the kernel's memory term binds."""
    return (f.dot_flops - f.conv_flops) / f.products


def reduction_work(f: Facts, roofs: RoofSet) -> tuple[RateRoof | None, float, float]:
    """(roof, adds, conversions): the row reduction's roof a launch's reduction runs at (None
    for no reduction, one on operands that stay on chip, or no roof measured), and the work it
    does inside that roof: its reduce ops' own adds and, where the roof was measured in the
    kernel's own 16-bit type, the conversions that widen the elements it reads. That work is
    the reduction's, not arithmetic or conversions priced again: the prediction and the
    hardware roof (:mod:`~roofline_report.analysis.headroom`) both take it from here."""
    reduce = roofs.rate_for("reduce", f.dtype) if f.reduced and not f.reads_on_chip else None
    if reduce is None:
        return None, 0.0, 0.0
    widened = min(f.converts, f.reduced) if reduce.dtype == f.dtype != "float32" else 0.0
    return reduce, f.reduce_flops, widened


def _touched(f: Facts, roofs: RoofSet) -> float:
    """The bytes a launch's memory term moves: its bytes, and where it reads its input in
    several passes over a working set of at least the last-level cache's capacity that this
    run's sweep found still largely cached (:meth:`~roofline_report.analysis.roofs.RoofSet.
    spilled` false), its input again for each later pass, at that level's rate: the passes
    overlap their arithmetic but each reads its input. Spilled, the passes run in series
    instead (:func:`passes_in_series`). On a 2-core CPU with a 32 MiB cache, a layer norm over
    16 MiB (three passes and its output: 64 MiB) ran in 0.55 to 0.71 ms, a softmax over it in
    0.86 to 0.99 ms, its exponentials' 0.86 ms hiding the same bytes."""
    if f.passes <= 1 or not roofs.past_the_cache(f.bytes) or roofs.spilled(f.bytes):
        return f.bytes
    return f.bytes + (f.passes - 1) * max(0.0, f.bytes - (f.written or 0.0))


def _launch(f: Facts, roofs: RoofSet, traffic: float | None = None) -> _Launch | None:
    """The compute and memory terms of one launch of ``f`` in a program that moves
    ``traffic`` bytes per call (None: not known); None without a compute or a bandwidth
    roof."""
    compute = roofs.compute_for(f.dtype)
    memory = roofs.bandwidth_for(f.bytes, f.written, program=True, passes=f.passes,
                                 traffic=traffic)
    if compute is None or memory is None:
        return None
    notes: list[str] = []
    unpriced: list[str] = []
    terms: list[Term] = []
    matmul = f.dot_flops - f.conv_flops
    if matmul:
        # A batched dot runs at the rate of one of its products, not of its summed flops; an
        # integer product at its integer type's roof where one was measured.
        products = compute
        if f.matmul_dtype is not None:
            integer = roofs.compute_for(f.matmul_dtype)
            if integer is not None and integer.dtype == f.matmul_dtype:
                products = integer
            else:
                notes.append(f"no {f.matmul_dtype} matmul roof measured: {f.matmul_dtype} "
                             f"products at the {compute.name} roof")
        elif f.precision == "highest" and products.precision != "highest":
            exact = roofs.compute_at_precision(f.dtype, "highest")
            if exact is not None:
                products = exact
            else:
                notes.append(f"no roof measured at the highest precision: its products at "
                             f"the {compute.name} roof")
        per_product = products.rate_at(product_size(f))
        terms.append(Term("matmul", "compute", matmul / per_product, products.name,
                          products.kind, f"{f.matmul_dtype} matmul" if f.matmul_dtype else ""))
    if f.conv_flops:
        convs, said = convolution_parts(roofs, f.dtype, compute, f.convolutions)
        notes += said
        terms += [Term("convolution", "compute", c.seconds, c.roof.name, c.roof.kind,
                       c.detail) for c in convs]
    reduce, reducing, widened = reduction_work(f, roofs)
    if widened:
        notes.append(WIDENED_IN_REDUCTION.format(dtype=f.dtype))
    converts = f.converts - widened
    # A kernel that converts computes in the wider type: its arithmetic runs at float32's
    # rate, each conversion at the measured conversion rate.
    # Each rate its arithmetic was priced at, and whether at a share of its threads.
    shares: list[tuple[bool, RateRoof]] = []
    arithmetic = "float32" if f.converts else f.dtype
    if converts:
        convert = roofs.rate_for("convert", "float32")
        if convert is not None:
            value, convert, scaled = rate_on_threads(f, convert, roofs)
            shares.append((scaled, convert))
            terms.append(Term("conversion", "compute", converts / value,
                              convert.name, convert.kind))
        else:
            notes.append(f"{NO_CONVERT} conversions not charged")
            unpriced.append("conversions (no conversion rate)")
    # A loop fusion computes an operand under a broadcast along its minor axis once per
    # output element, and a complex op does the real arithmetic of its formula: that work is
    # priced as well as the count's.
    other = f.other_flops - reducing + f.recomputed_flops + f.complex_flops
    if other:
        fma = roofs.rate_for("multiply-add", arithmetic)
        # Named for what most of it is where that is complex arithmetic.
        what = "complex arithmetic" if 2 * f.complex_flops > other else ""
        if fma is not None:
            value, fma, scaled = rate_on_threads(f, fma, roofs)
            shares.append((scaled, fma))
            terms.append(Term("elementwise", "compute", other / value,
                              fma.name, fma.kind, what))
        else:
            # No stand-in: a matrix unit's roof prices a vector unit's flops far too fast
            # (on a TPU v5e about 80 times).
            notes.append(f"{NO_FMA} its {count_of(other, Kind.ANALYTIC).text} "
                         "elementwise flops not charged")
            unpriced.append("elementwise flops (no multiply-add rate)")
    if f.complex_flops:
        roots = sum(f.complex_transcendentals.values())
        notes.append("complex arithmetic: "
                     f"{count_of(f.complex_flops, Kind.ANALYTIC).text} real flops beyond the "
                     "one a complex op is counted (a complex multiply is six)"
                     + (f", and {count_of(roots, Kind.ANALYTIC).text} square roots of complex "
                        "magnitudes (|z| as a hypotenuse)" if roots else ""))
    evaluated = f.evaluated()
    if f.recomputed:
        counted = sum(f.transcendentals.get(op, 0.0) for op in f.recomputed)
        notes.append(f"a loop fusion evaluates {', '.join(sorted(f.recomputed))} under a "
                     "broadcast along its minor axis once per output element: "
                     f"{count_of(counted + sum(f.recomputed.values()), Kind.ANALYTIC).text} "
                     f"evaluations, not the {count_of(counted, Kind.ANALYTIC).text} counted")
    for op, count in sorted(evaluated.items()):
        rate, stood_in = function_rate(op, roofs, arithmetic)
        if stood_in:
            notes.append(stood_in)
        if rate is None:
            notes.append(f"{NO_FUNCTION}{op}: its {count_of(count, Kind.ANALYTIC).text} "
                         "evaluations not charged")
            unpriced.append(f"{op} (no {op} rate)")
            continue
        # Named for its repeated evaluations where they are most of it.
        repeated = 2 * f.recomputed.get(op, 0.0) > count
        value, rate, scaled = rate_on_threads(f, rate, roofs)
        shares.append((scaled, rate))
        terms.append(Term("transcendental", "compute", count / value,
                          rate.name, rate.kind,
                          f"{op}, once per output element" if repeated else op))
    fewer = [r for scaled, r in shares if scaled]
    if fewer:
        notes.append(f"a kernel XLA leaves on {plural(f.threads or 1, 'thread', 'threads')} "
                     f"of the {fewer[0].threads} its rates were measured on: its elementwise, "
                     "transcendental and conversion work at that share of the rates")
    terms.append(Term("memory", "memory", _touched(f, roofs) / memory.value if f.bytes else 0.0,
                      memory.name, memory.kind, memory.level))
    if f.reduced and f.reads_on_chip:
        # A TPU kernel reducing what stays in vector memory: the row reduction's roof was
        # measured on arrays streamed from HBM; its on-chip bytes price it (below).
        notes.append(ON_CHIP_REDUCTION)
    elif reduce is not None:
        terms.append(Term("reduction", "memory", f.reduced / reduce.rate_at(f.reduced),
                          reduce.name, reduce.kind, "row reduction"))
    if f.on_chip:
        chip = roofs.rate_for(ON_CHIP, "float32")
        if chip is not None:
            terms.append(Term("memory", "memory", f.on_chip / chip.rate_at(f.on_chip),
                              chip.name, chip.kind, ON_CHIP_DETAIL))
        else:
            notes.append(f"{NO_ON_CHIP} its bytes in the core's own memory are not charged")
            unpriced.append("on-chip bytes (no on-chip rate)")
    return _Launch(tuple(terms), memory.level, tuple(notes), tuple(unpriced))


# The note of a reduction whose widening conversions its measured roof holds.
WIDENED_IN_REDUCTION = ("a {dtype} reduction: it widens each element as it loads it, as the "
                        "{dtype} row reduction it is priced at does; its conversions are not "
                        "charged apart")


def predict_kernel(kernel: schema.KernelRecord, dtype: str, roofs: RoofSet,
                   fresh_pages: float = 0.0, traffic: float | None = None,
                   footprint: float | None = None, *, trips_observed: bool = False
                   ) -> Prediction | None:
    """A kernel's time per call of its program: trips × (max(compute, memory, pattern) +
    launch + split launch) and ``fresh_pages`` page faults (once per call, not per trip;
    :mod:`~roofline_report.analysis.fresh_pages`), each term per call; None when the roofs
    lack a compute or a bandwidth roof. ``traffic``: the bytes its program moves per call
    (:func:`program_traffic`), where known, which decides whether a working set between the
    last cache and main memory is still in the cache from the last call
    (:meth:`~roofline_report.analysis.roofs.RoofSet.bandwidth_for`); ``footprint``: the
    bytes a call holds (:func:`program_footprint`), where known, which decides whether its
    arguments come from main memory (:func:`cold_arguments`); ``trips_observed``: its
    ``trips`` are the launches a trace observed (:func:`~roofline_report.analysis.loop_trips
    .observed_kernel`), not a lower bound where its loop has no known trip count."""
    f = kernel_facts(kernel, dtype)
    slow = pattern_time(kernel, f.dtype, roofs)
    if slow is not None and slow.pattern == FFT:
        # An FFT's flops are what its pattern's rate prices (a library transform): not
        # elementwise arithmetic as well.
        fft = sum(float(v) for op, v in kernel.flops_by_op.items()
                  if op_name(op) == FFT)
        f = replace(f, other_flops=max(0.0, f.other_flops - fft))
    one = _launch(f, roofs, traffic)
    if one is None:
        return None
    trips = max(1, kernel.trips)
    terms = list(one.terms)
    cold = cold_arguments(f, roofs, traffic, one.level, footprint)
    if cold is not None:
        # Its arguments come from main memory: its memory term takes that much longer, and
        # a pattern measured with its operand there too (a transposing copy: 1.3 to 3 times
        # its time with its operand in the cache) takes that roof for the share of its reads
        # that are arguments. Other patterns keep their term (a block transpose took as
        # long as a copy from main memory).
        if slow is not None and kernel.bytes_read > 0:
            slow = pattern_time(kernel, f.dtype, roofs,
                                from_memory=kernel.argument_bytes_read / kernel.bytes_read)
        extra, read = cold
        memory = next((t for t in terms if t.name == "memory" and t.group == "memory"), None)
        if memory is not None:
            terms.append(Term("memory", "memory", memory.seconds + extra, read.name, read.kind,
                              COLD))
    notes = one.notes
    if slow is not None and reads_on_chip(kernel) and slow.pattern in STREAMED_PATTERNS:
        # Its operands stay in the core's vector memory: a roof measured on arrays streamed
        # from HBM does not bound it; its on-chip bytes price it.
        notes = (*notes, ON_CHIP_PATTERN.format(pattern=slow.pattern, roof=slow.roof))
        slow = None
    if slow is not None:
        terms.append(Term("pattern", "pattern", slow.seconds, slow.roof, slow.kind,
                          slow.pattern))
    launch = roofs.floor("launch")
    if launch is not None:
        terms.append(Term("launch", "overhead", launch.seconds, "launch", launch.kind))
    split = _split_launch(roofs) if kernel.partitions > 1 else None
    if split is not None:
        floor, per_launch = split
        # Per launch here, scaled by trips below.
        terms.append(Term(SPLIT_LAUNCH, "overhead",
                          floor.seconds if per_launch else floor.seconds / trips, floor.name,
                          floor.kind))
    fault = roofs.floor(PAGE_FAULT) if fresh_pages > 0 else None
    if fault is not None:
        terms.append(Term(FAULT_TERM, "overhead", fresh_pages * fault.seconds / trips,
                          fault.name, fault.kind))
    transfer = None
    if kernel.asynchronous:
        # Its transfer runs while the kernels issued between its start and its done do: only
        # its issue is the call's time here; what of the transfer they do not hide is added
        # across the program's kernels (async_exposure.expose).
        work = tuple(t for t in terms if t.group != "overhead")
        if work:
            busy, top = combine(work, roofs.units_overlap)
            transfer = Term(top.name, top.group, busy * trips, top.roof, top.kind, top.detail)
        terms = [t for t in terms if t.group == "overhead"] or [
            Term(OVERLAPPED, "overhead", 0.0, OVERLAPPED, Kind.PREDICTED)]
        notes = (*notes, ASYNCHRONOUS)
    serial = passes_in_series(f, roofs)
    if serial:
        notes = (*notes, IN_SERIES.format(passes=f.passes))
    seconds, binding = combine(tuple(terms), roofs.units_overlap, in_series=serial)
    scaled = tuple(Term(t.name, t.group, t.seconds * trips, t.roof, t.kind, t.detail)
                   for t in terms)
    binding = scaled[terms.index(binding)]
    unknown = not kernel.trips_known and not trips_observed
    return Prediction(seconds * trips, scaled, binding, f.flops * trips, f.bytes * trips,
                      f.bytes_source, one.level, notes, lower_bound=unknown, transfer=transfer,
                      unpriced=one.unpriced)


OVERLAPPED = "overlapped"  # the term of an asynchronous kernel's transfer: off the call's path
ASYNCHRONOUS = ("asynchronous: its transfer overlaps the kernels issued between its start and "
                "its done, and is not charged to the call")


def _split_launch(roofs: RoofSet) -> tuple[Floor, bool] | None:
    """The split launch as programs are timed (their calls enqueued, the workers awake), paid
    on every launch (True); the blocked one where that was not measured (the workers gone
    idle), paid once per call (False: a loop's later trips find the workers awake). None
    where neither is measured or the one found is 0."""
    awake = roofs.floor(SPLIT_LAUNCH_ENQUEUED)
    floor = awake or roofs.floor(SPLIT_LAUNCH)
    if floor is None or floor.seconds <= 0:
        return None
    return floor, awake is not None


HOST_DISPATCH = "host dispatch of its arguments"  # the roof of a program's own measured dispatch


def _dispatch(roofs: RoofSet, buffers: int | None = None, host: float | None = None
              ) -> Term | None:
    """One call's dispatch: ``host``, the program's own host cost where it was measured (on
    an accelerator: the same arguments passed to a program that computes nothing), else the
    enqueued floor (the blocking one where that was not measured) at the ``buffers`` the call
    passes, where the floor was measured by buffers."""
    if host is not None and host > 0:
        return Term("dispatch", "overhead", host, HOST_DISPATCH, Kind.MEASURED,
                    plural(buffers, "buffer", "buffers") if buffers is not None else "")
    floor = roofs.floor("dispatch enqueued") or roofs.floor("dispatch")
    if floor is None:
        return None
    detail = plural(buffers, "buffer", "buffers") if buffers is not None \
        and floor.per_buffer > 0 else ""
    return Term("dispatch", "overhead", floor.at_buffers(buffers), floor.name, floor.kind,
                detail)


DISPATCH_BOUND = "the host's dispatch of a call takes longer than the device's work"


def predict_program(kernels: list[Prediction], roofs: RoofSet, buffers: int | None = None,
                    host: float | None = None, device_span: bool = False
                    ) -> Prediction | None:
    """A program's time as the sum of its kernels' and one call's dispatch floor (the kernels
    taken to run one after another): each kernel's time charged to its binding term.

    Where a call's dispatch overlaps the device's work (``roofs.dispatch_overlaps``: an
    accelerator, its calls enqueued), a call takes the longer of the two: its kernels' sum,
    or the dispatch of a call passing ``buffers`` arguments and results (then the dispatch is
    its one term, and the kernels wait on the host). ``host``: the program's own dispatch,
    where it was measured (:func:`_dispatch`). ``device_span``: the call is timed by its
    device's span, from its first kernel to its last (a call read from a profiler trace):
    where the dispatch overlaps the device's work it is outside that span, and the kernels'
    sum is the prediction (a host slower than its device shows as the device idle between
    calls, which the trace's steps time, not as a longer call)."""
    if not kernels:
        return None
    dispatch = _dispatch(roofs, buffers, host)
    if roofs.dispatch_overlaps and device_span:
        dispatch = None
    if roofs.dispatch_overlaps and dispatch is not None:
        device = sum(p.seconds for p in kernels)
        if dispatch.seconds > device:
            levels = sorted({p.level for p in kernels})
            return Prediction(dispatch.seconds, (dispatch,), dispatch,
                              sum(p.flops for p in kernels), sum(p.bytes for p in kernels),
                              "the kernels' touched bytes", ", ".join(levels),
                              (DISPATCH_BOUND,),
                              lower_bound=any(p.lower_bound for p in kernels),
                              unpriced=_unpriced(kernels))
        dispatch = None  # hidden behind the device's work
    charged: dict[tuple[str, Group, str, Kind], float] = {}
    details: dict[tuple[str, Group, str, Kind], set[str]] = {}
    for p in kernels:
        b = p.binding
        key = (b.name, b.group, b.roof, b.kind)
        charged[key] = charged.get(key, 0.0) + p.seconds
        details.setdefault(key, set()).add(b.detail)
    terms = []
    for key, seconds in charged.items():
        name, group, roof, kind = key
        # A detail (a pattern's) stays only where every kernel of the term shares it.
        shared = next(iter(details[key])) if len(details[key]) == 1 else ""
        terms.append(Term(name, group, seconds, roof, kind, shared))
    if dispatch is not None:
        terms.append(dispatch)
    ordered = tuple(sorted(terms, key=lambda t: (-t.seconds, t.name, t.roof)))
    levels = sorted({p.level for p in kernels})
    unpriced = _unpriced(kernels)
    notes = tuple(dict.fromkeys(n for p in kernels for n in p.notes
                                if not n.startswith(UNPRICED_NOTES)))
    if unpriced:
        notes = (*notes, LEFT_OUT.format(what=", ".join(unpriced)))
    return Prediction(sum(t.seconds for t in ordered), ordered, ordered[0],
                      sum(p.flops for p in kernels), sum(p.bytes for p in kernels),
                      "the kernels' touched bytes", ", ".join(levels), notes,
                      lower_bound=any(p.lower_bound for p in kernels), unpriced=unpriced)


def _unpriced(kernels: list[Prediction]) -> tuple[str, ...]:
    """The work some kernel's prediction left out, once each, in the kernels' order."""
    return tuple(dict.fromkeys(w for p in kernels for w in p.unpriced))


def predict_from_kernels(kernels: Iterable[schema.KernelRecord], dtype: str, roofs: RoofSet,
                         traffic: float | None = None, buffers: int | None = None,
                         footprint: float | None = None) -> Prediction | None:
    """A program's time from its kernel inventory's ``kernels`` (:func:`predict_program` of
    each one's :func:`predict_kernel`, in a program moving ``traffic`` bytes per call,
    holding ``footprint`` and passing ``buffers`` arguments and results), leaving out a
    conditional's branches the program does not charge (``charged: false``); None when it
    lists none or one cannot be priced."""
    parts = predict_kernels(kernels, dtype, roofs, traffic, footprint)
    return predict_program(parts, roofs, buffers) if parts is not None else None


def predict_kernels(kernels: Iterable[schema.KernelRecord], dtype: str, roofs: RoofSet,
                    traffic: float | None = None, footprint: float | None = None
                    ) -> list[Prediction] | None:
    """Each kernel's :func:`predict_kernel` in a program moving ``traffic`` bytes per call and
    holding ``footprint``, in order, leaving out a conditional's branches the program does not
    charge; None when one cannot be priced."""
    charged = [kernel for kernel in kernels if kernel.charged]
    parts = expose(charged, [predict_kernel(kernel, dtype, roofs, traffic=traffic,
                                            footprint=footprint) for kernel in charged])
    if not all(p is not None for p in parts):
        return None
    return [p for p in parts if p is not None]


def predict_facts(f: Facts, roofs: RoofSet) -> Prediction | None:
    """A program known only by its totals: max(compute, memory) of its totals, plus a launch
    for each of its kernels and the dispatch floor (combined as a kernel's terms are:
    :func:`~roofline_report.analysis.terms.combine`)."""
    one = _launch(f, roofs)
    if one is None:
        return None
    terms = list(one.terms)
    launch = roofs.floor("launch")
    notes = list(one.notes)
    if launch is not None:
        terms.append(Term("launch", "overhead", f.kernels * launch.seconds, "launch",
                          launch.kind, plural(f.kernels, "launch", "launches")))
    else:
        notes.append("no launch cost measured: launches not charged")
    dispatch = _dispatch(roofs)
    if dispatch is not None:
        terms.append(dispatch)
    total, binding = combine(tuple(terms), roofs.units_overlap)
    return Prediction(total, tuple(terms), binding, f.flops, f.bytes, f.bytes_source,
                      one.level, tuple(notes), unpriced=one.unpriced)
