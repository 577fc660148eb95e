"""What the model prices a kernel or a program from (no jax): the :class:`Facts` of one launch
of a kernel of the inventory (:func:`kernel_facts`: its work split by the roof each part runs
under, its bytes, the fresh output it writes, its threads and passes) or of a program known by
its totals (:func:`facts`), and the reading of a kernel record they are built from (the dtype
it computes in, the elements in its bytes, the times it reads its input).
:mod:`roofline_report.analysis.predict` prices them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from roofline_report.analysis.convolution_roofs import Convolutions
from roofline_report.analysis.on_chip import reads_on_chip
from roofline_report.analysis.roofs import ALL_THREADS
from roofline_report.hlo.kernels import threads_for
from roofline_report.hlo.shapes import FLOAT_TYPES, dtype_bits
from roofline_report.results import schema

__all__ = ["CONV_OPS", "DOT_OPS", "Facts", "elements_of", "facts", "kernel_dtype",
           "kernel_facts", "op_name", "read_passes"]

DOT_OPS = ("dot_general", "dot", "convolution")
CONV_OPS = ("convolution",)


NO_CONVOLUTIONS = Convolutions(0.0)  # a kernel without convolutions


@dataclass(frozen=True, slots=True)
class Facts:
    """What the model needs of one launch of a kernel (or of a program known by its totals)."""

    dtype: str
    dot_flops: float
    other_flops: float
    transcendentals: Mapping[str, float]  # by function name (tanh, exp, ...)
    bytes: float
    bytes_source: str
    kernels: int = 1
    converts: float = 0.0  # elements converted between dtypes (counted apart from flops)
    written: float | None = None  # bytes written to fresh outputs, where known
    # The part of dot_flops done by sliding-window convolutions, as the roofs price them.
    convolutions: Convolutions = NO_CONVOLUTIONS
    reduced: float = 0.0  # elements a reduction kernel reads (0: not a reduction)
    reduce_flops: float = 0.0  # the part of other_flops that is its reduce ops' own adds
    products: int = 1  # independent matrix products the matmul flops are split over
    matmul_dtype: str | None = None  # the integer type its matrix products multiply
    # Work a loop fusion repeats per output element beyond the count (priced, not counted in
    # ``flops``): flops, and transcendentals by function name.
    recomputed_flops: float = 0.0
    recomputed: Mapping[str, float] = field(default_factory=dict)
    complex_flops: float = 0.0  # complex arithmetic's real flops beyond the count's
    # Its complex magnitudes' square roots, by op (``sqrt``), beyond the count's.
    complex_transcendentals: Mapping[str, float] = field(default_factory=dict)
    # The worker threads the kernel keeps busy (its split on a CPU; ALL_THREADS for a library
    # kernel or a dot run on the thread pool; None: not known, a program known by its totals).
    threads: int | None = None
    passes: int = 1  # times it reads its input (:func:`read_passes`)
    # The precision its products ask for ("highest": full float32, several passes of a TPU's
    # bfloat16 matrix unit, as its FFT's products do; "high"); "default" otherwise.
    precision: str = "default"
    # Bytes it moves to and from a TPU core's own memories (vector memory): no HBM traffic,
    # but not free either (priced at the on-chip rate where one was measured).
    on_chip: float = 0.0
    reads_on_chip: bool = False  # its operands all in those memories (:func:`reads_on_chip`)
    # Bytes it reads from the program's arguments (:func:`cold_arguments` prices them from
    # main memory in a program whose bytes per call exceed the last-level cache).
    arguments: float = 0.0

    @property
    def flops(self) -> float:
        return self.dot_flops + self.other_flops + self.converts

    def evaluated(self) -> dict[str, float]:
        """Its transcendental evaluations by op: the count's, those a loop fusion repeats under
        a broadcast, and its complex magnitudes' square roots. The prediction and the hardware
        roof both read them here."""
        out = dict(self.transcendentals)
        for op, count in (*self.recomputed.items(), *self.complex_transcendentals.items()):
            out[op] = out.get(op, 0.0) + count
        return out

    @property
    def conv_flops(self) -> float:
        """The part of ``dot_flops`` done by sliding-window convolutions."""
        return self.convolutions.flops


def op_name(key: str) -> str:
    """An op's name without its dialect (``stablehlo.dot_general``: ``dot_general``)."""
    return key.rsplit(".", 1)[-1]


def kernel_dtype(kernel: schema.KernelRecord, program_dtype: str) -> str:
    """The dtype a kernel computes in: the floating type of most of the bytes it reads (else
    writes), not the program's. The program's dtype where the kernel moves no float."""
    for by_dtype in (kernel.read_by_dtype, kernel.written_by_dtype):
        floats = {FLOAT_TYPES[t]: float(b) for t, b in by_dtype.items() if t in FLOAT_TYPES}
        if floats:
            return max(sorted(floats), key=lambda t: floats[t])
    return program_dtype


def elements_of(by_dtype: Mapping[str, float], total: float) -> float:
    """Elements in bytes given by HLO element type (a sub-byte type stored a byte each); a
    type of unknown width counts 4 bytes."""
    if not by_dtype:
        return total / 4
    return sum(float(b) / max(1, (dtype_bits(str(t)) or 32) // 8)
               for t, b in by_dtype.items())


def read_passes(kernel: schema.KernelRecord) -> int:
    """How many times a kernel of the inventory reads its input
    (:mod:`roofline_report.analysis.read_passes`): 1
    for anything but a reduction that reduces its input more than once or reduces it and then
    writes an output as large from it."""
    if kernel.category != "reduction":
        return 1
    read = float(kernel.bytes_read)
    elements = elements_of(kernel.read_by_dtype, read)
    reduced = float(kernel.reduced_elements or 0)
    if elements <= 0 or reduced <= 0:
        return 1
    passes = int(reduced / elements + 0.5)
    if passes >= 1 and float(kernel.bytes_written) >= read:
        passes += 1  # the output, as large as the input, is made from it: one more read
    return max(1, passes)


def _nonzero_by_op(counts: Mapping[str, float]) -> dict[str, float]:
    """A kernel record's counts by op, keyed by op name, those that are not 0."""
    return {op_name(op): float(v) for op, v in counts.items() if v}


def kernel_facts(kernel: schema.KernelRecord, dtype: str) -> Facts:
    """The facts of one launch of a kernel of the inventory, in the dtype it computes in
    (:func:`kernel_dtype`; ``dtype``, the program's, where it moves no float)."""
    dtype = kernel_dtype(kernel, dtype)
    by_op = {op_name(op): float(v) for op, v in kernel.flops_by_op.items()}
    dot = sum(v for op, v in by_op.items() if op in DOT_OPS)
    # Every convolution the HLO keeps, those whose windows tile their input (patch
    # embeddings, 1x1 convolutions) among them, runs through the convolution library.
    conv = sum(v for op, v in by_op.items() if op in CONV_OPS)
    converts = by_op.get("convert", 0.0)
    other = max(0.0, float(kernel.flops) - dot - converts)
    trans = _nonzero_by_op(kernel.transcendentals_by_op)
    moved = float(kernel.bytes_read) + float(kernel.bytes_written)
    # A reduction reads its elements at least once; a fusion of several reduce ops over the
    # same input (a layer norm's mean and variance in one library kernel) reduces each again.
    reduced = max(elements_of(kernel.read_by_dtype, float(kernel.bytes_read)),
                  float(kernel.reduced_elements or 0)) \
        if kernel.category == "reduction" else 0.0
    reducing = min(other, by_op.get("reduce", 0.0)) if reduced else 0.0
    # A kernel writing a donated argument's buffer writes in place: no fresh output.
    fresh = 0.0 if kernel.in_place else float(kernel.bytes_written)
    products = max(1, kernel.matmul_products)
    grouped = min(conv, float(kernel.grouped_conv_flops))
    line = min(conv - grouped, float(kernel.line_conv_flops))
    generic = min(conv - grouped - line, float(kernel.generic_conv_flops))
    integer = kernel.matmul_dtype
    again = _nonzero_by_op(kernel.recomputed_transcendentals_by_op)
    return Facts(dtype, dot, other, trans, moved, "the bytes the kernel touches", 1, converts,
                 written=fresh, reduced=reduced, reduce_flops=reducing, products=products,
                 convolutions=Convolutions(
                     conv, grouped=grouped, taps=kernel.grouped_conv_taps,
                     grouped_taps_flops=float(kernel.grouped_conv_tap_flops),
                     line=line, line_filter=kernel.line_conv_filter,
                     generic=generic, generic_window=kernel.generic_conv_window,
                     patch=kernel.image_conv_patch, padded=kernel.image_conv_padded,
                     weight_gradient=kernel.image_conv_weight_gradient),
                 matmul_dtype=integer or None,
                 recomputed_flops=float(kernel.recomputed_flops), recomputed=again,
                 complex_flops=float(kernel.complex_flops),
                 complex_transcendentals=_nonzero_by_op(kernel.complex_transcendentals_by_op),
                 threads=threads_for(kernel.partitions, kernel.kind, kernel.opcode, ALL_THREADS),
                 passes=read_passes(kernel),
                 precision=kernel.matmul_precision or "default",
                 on_chip=float(kernel.on_chip_bytes_read) + float(kernel.on_chip_bytes_written),
                 reads_on_chip=reads_on_chip(kernel),
                 arguments=float(kernel.argument_bytes_read))


def facts(record: schema.Workload | schema.SweepPoint, dtype: str) -> Facts | None:
    """The facts of a program known by its totals (its ``hlo_count``, ``compiled``, ``xla``
    and ``analytic``): our count's work, and XLA's bytes accessed where it has no loop (XLA
    costs a loop body once), else the minimum traffic; None without our count or any
    traffic."""
    ours = record.hlo_count
    if not isinstance(ours, schema.HloCount):
        return None
    by_op = {op_name(k): float(v) for k, v in ours.flops_by_op.items()}
    dot = sum(v for k, v in by_op.items() if k in DOT_OPS)
    conv = sum(v for k, v in by_op.items() if k in CONV_OPS)
    other = max(0.0, float(ours.flops) - dot)
    trans = {op_name(k): float(v) for k, v in ours.transcendentals_by_op.items() if v}
    compiled = record.compiled
    kernels = (compiled.kernels if compiled is not None else 0) or 1
    moved, source = _total_bytes(record, ours, compiled)
    if moved is None:
        return None
    return Facts(dtype, dot, other, trans, moved, source, max(1, kernels),
                 written=float(ours.result_bytes), convolutions=Convolutions(conv))


def _total_bytes(record: schema.Workload | schema.SweepPoint, ours: schema.HloCount,
                 compiled: schema.Compiled | None) -> tuple[float | None, str]:
    xla = record.xla
    accessed = xla.raw.get("bytes accessed") if xla is not None and xla.available else None
    loops = compiled is not None and bool(compiled.while_loops)
    if accessed is not None and accessed > 0 and not loops:
        return float(accessed), "XLA's bytes accessed"
    analytic = record.analytic
    minimum = (analytic.minimum_bytes if isinstance(analytic, schema.Analytic) else None) \
        or ours.minimum_bytes
    if minimum > 0:
        return float(minimum), "the minimum traffic"
    return None, ""
