"""Predicted run time of a compiled program from its facts and a set of roofs (no jax).

The model, stated as the report states it::

    t_alu  = dot flops ÷ the matmul rate of the dtype at the product's size
           + convolution flops ÷ the convolution rate at its size (the matmul rate where no
             convolution was measured)
           + conversions ÷ the conversion rate
           + other flops ÷ the elementwise (multiply-add) rate of the dtype (float32's in a
             kernel that converts: it computes in float32)
           + Σ transcendentals of each function ÷ that function's rate in the dtype
    t_mem  = bytes moved ÷ the bandwidth of the memory level that holds them; for a reduction
             kernel, at least its elements read ÷ the row-reduction rate at that size
    t      = max(t_alu, t_mem) + (kernels − 1) × launch + dispatch (enqueued, as timed)

for a program known only by its totals; with a kernel inventory, each kernel is predicted
alone, trips × max(t_alu, t_mem, launch), and the program is their sum + dispatch. A kernel's
terms are in the dtype of the bytes it reads (:func:`kernel_dtype`), and a kernel writing a
donated argument's buffer writes in place: it is not charged the fresh-output roof.

* *dot flops* are those of matrix products, *convolution flops* those of convolutions (they run
  through other library code, at a rate measured apart); everything else is elementwise or a
  reduction, which no backend runs at its matmul peak.
* *bytes moved* are, in order of preference: the sum over the program's kernels of the bytes at
  their boundaries (times the trip count of their loops) when the kernel inventory is known;
  else XLA's bytes accessed, when it is positive and the program has no loop (XLA costs a loop
  body once); else the minimum traffic.
* Rates measured in float32 stand in for a dtype that has none; a roof that is missing drops its
  term and the prediction says so in ``notes``.

A dtype's rates already include what the backend does to run it (bfloat16 through float32
conversions on CPU, TF32 on NVIDIA GPUs), since they are measured in that dtype.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from roofline_report.analysis.roofs import RoofSet
from roofline_report.hlo.ir import dtype_bits

DOT_OPS = ("dot_general", "dot", "convolution")
CONV_OPS = ("convolution",)
TRANSCENDENTAL_RATE = {"tanh": "tanh", "exp": "exp", "exponential": "exp", "log": "log",
                       "logistic": "exp", "exponential_minus_one": "exp", "log_plus_one": "log",
                       "rsqrt": "exp", "sqrt": "exp", "power": "log", "sine": "exp",
                       "cosine": "exp", "tan": "tanh", "erf": "tanh", "atan2": "tanh"}


@dataclass(frozen=True, slots=True)
class Facts:
    """What the model needs of one program (a workload or a sweep point)."""

    dtype: str
    dot_flops: float
    other_flops: float
    transcendentals: Mapping[str, float]  # by function name (tanh, exp, ...)
    bytes: float
    bytes_source: str
    kernels: int
    converts: float = 0.0  # elements converted between dtypes (counted apart from flops)
    written: float | None = None  # bytes written to fresh outputs, where known
    conv_flops: float = 0.0  # the part of dot_flops done by convolutions
    reduced: float = 0.0  # elements a reduction kernel reads (0: not a reduction)


@dataclass(frozen=True, slots=True)
class Prediction:
    """A predicted time, its terms in seconds, the term that binds and the roofs used."""

    seconds: float
    terms: Mapping[str, float]  # alu, memory, overhead
    binding: str
    bytes: float
    bytes_source: str
    level: str
    roofs: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())


def _op_name(key: str) -> str:
    return key.rsplit(".", 1)[-1]


def facts(record: Mapping[str, Any], dtype: str) -> Facts | None:
    """The facts of a workload record or sweep point (keys ``hlo_count``, ``compiled``, ``xla``,
    ``analytic``, optionally ``kernels``); None without our count or a minimum traffic."""
    ours = record.get("hlo_count") or {}
    if not ours or ours.get("available") is False or "flops" not in ours:
        return None
    by_op = {_op_name(k): float(v) for k, v in (ours.get("flops_by_op") or {}).items()}
    dot = sum(v for k, v in by_op.items() if k in DOT_OPS)
    conv = sum(v for k, v in by_op.items() if k in CONV_OPS)
    other = max(0.0, float(ours["flops"]) - dot)
    trans = {_op_name(k): float(v)
             for k, v in (ours.get("transcendentals_by_op") or {}).items() if v}
    compiled = record.get("compiled") or {}
    kernels = int(compiled.get("kernels") or 1)
    moved, source = _bytes(record, compiled)
    if moved is None:
        return None
    written = ours.get("result_bytes")
    return Facts(dtype, dot, other, trans, moved, source, max(1, kernels),
                 written=float(written) if isinstance(written, int | float) else None,
                 conv_flops=conv)


def _bytes(record: Mapping[str, Any], compiled: Mapping[str, Any]) -> tuple[float | None, str]:
    inventory = record.get("kernels") or {}
    if isinstance(inventory, Mapping) and inventory.get("available", True) \
            and "bytes_read" in inventory:
        total = float(inventory["bytes_read"]) + float(inventory["bytes_written"])
        if total > 0:
            return total, "the kernels' boundary bytes"
    xla = record.get("xla") or {}
    accessed = (xla.get("raw") or {}).get("bytes accessed") if xla.get("available") else None
    if isinstance(accessed, int | float) and accessed > 0 and not compiled.get("while_loops"):
        return float(accessed), "XLA's bytes accessed"
    ours = record.get("hlo_count") or {}
    analytic = record.get("analytic") or {}
    minimum = analytic.get("minimum_bytes") or ours.get("minimum_bytes")
    if isinstance(minimum, int | float) and minimum > 0:
        return float(minimum), "the minimum traffic"
    return None, ""


def predict(f: Facts, roofs: RoofSet) -> Prediction | None:
    """The model's time for ``f`` under ``roofs``; None when the set has no compute or no
    bandwidth roof."""
    compute = roofs.compute_for(f.dtype)
    memory = roofs.bandwidth_for(f.bytes, f.written, program=True)
    if compute is None or memory is None:
        return None
    notes: list[str] = []
    used = [compute.name, f"{memory.level} ({memory.name})"]
    matmul = f.dot_flops - f.conv_flops
    alu = matmul / compute.rate_at(matmul) if matmul else 0.0
    if f.conv_flops:
        conv = roofs.compute_for(f.dtype, op="convolution")
        alu += f.conv_flops / (conv or compute).rate_at(f.conv_flops)
        if conv is not None:
            used.append(conv.name)
    # A kernel that converts computes in the wider type: its arithmetic runs at float32's
    # rate, each conversion at the measured conversion rate.
    arithmetic = "float32" if f.converts else f.dtype
    if f.converts:
        convert = roofs.rate_for("convert", "float32")
        if convert is not None:
            alu += f.converts / convert.value
            used.append(convert.name)
        else:
            notes.append("no conversion rate: conversions not charged")
    if f.other_flops:
        fma = roofs.rate_for("multiply-add", arithmetic)
        if fma is not None:
            alu += f.other_flops / fma.value
            used.append(fma.name)
        else:
            alu += f.other_flops / compute.value
            notes.append("no elementwise rate: elementwise flops at the matmul roof")
    for op, count in sorted(f.transcendentals.items()):
        rate = roofs.rate_for(TRANSCENDENTAL_RATE.get(op, "tanh"), arithmetic)
        if rate is None:
            notes.append(f"no rate for {op}: its {count:.0f} evaluations not charged")
            continue
        alu += count / rate.value
        used.append(rate.name)
    mem = f.bytes / memory.value
    if f.reduced:
        reduce = roofs.rate_for("reduce", f.dtype)
        if reduce is not None:
            mem = max(mem, f.reduced / reduce.rate_at(f.reduced))
            used.append(reduce.name)
    launch = roofs.launch or 0.0
    dispatch = roofs.dispatch_enqueued or 0.0  # workloads are timed with calls enqueued
    overhead = (f.kernels - 1) * launch + dispatch
    if not roofs.launch and f.kernels > 1:
        notes.append("no launch cost measured: kernels after the first not charged")
    terms = {"alu": alu, "memory": mem, "overhead": overhead}
    binding = max(terms, key=lambda k: terms[k])
    return Prediction(max(alu, mem) + overhead, terms, binding, f.bytes, f.bytes_source,
                      memory.level, tuple(dict.fromkeys(used)), tuple(notes))


FLOAT_TYPES = {"f64": "float64", "f32": "float32", "bf16": "bfloat16", "f16": "float16"}


def kernel_dtype(k: Mapping[str, Any], program_dtype: str) -> str:
    """The dtype a kernel computes in: the floating type of most of the bytes it reads (else
    writes), not the program's: a bfloat16 program on a CPU runs its reductions and matmuls on
    float32 operands it converted first. The program's dtype where the kernel moves no float."""
    for by_dtype in (k.get("read_by_dtype") or {}, k.get("written_by_dtype") or {}):
        floats = {FLOAT_TYPES[t]: float(b) for t, b in by_dtype.items() if t in FLOAT_TYPES}
        if floats:
            return max(sorted(floats), key=lambda t: floats[t])
    return program_dtype


def kernel_facts(k: Mapping[str, Any], dtype: str) -> Facts:
    """The facts of one launch of a kernel of the inventory (its loop's trips apart), in the
    dtype it computes in (:func:`kernel_dtype`; ``dtype``, the program's, where it moves no
    float)."""
    dtype = kernel_dtype(k, dtype)
    by_op = {_op_name(str(op)): float(v) for op, v in (k.get("flops_by_op") or {}).items()}
    dot = sum(v for op, v in by_op.items() if op in DOT_OPS)
    conv = sum(v for op, v in by_op.items() if op in CONV_OPS)
    converts = by_op.get("convert", 0.0)
    other = max(0.0, float(k.get("flops", 0)) - dot - converts)
    trans = {_op_name(str(op)): float(v)
             for op, v in (k.get("transcendentals_by_op") or {}).items() if v}
    moved = float(k.get("bytes_read", 0)) + float(k.get("bytes_written", 0))
    reduced = _elements(k.get("read_by_dtype") or {}, float(k.get("bytes_read", 0))) \
        if k.get("category") == "reduction" else 0.0
    # A kernel writing a donated argument's buffer writes in place: no fresh output.
    fresh = 0.0 if k.get("in_place") else float(k.get("bytes_written", 0))
    return Facts(dtype, dot, other, trans, moved, "the kernel's boundary bytes", 1, converts,
                 written=fresh, conv_flops=conv, reduced=reduced)


def _elements(by_dtype: Mapping[str, Any], total: float) -> float:
    """Elements in bytes given by HLO element type (a sub-byte type stored a byte each); a
    type of unknown width counts 4 bytes."""
    if not by_dtype:
        return total / 4
    return sum(float(b) / max(1, (dtype_bits(str(t)) or 32) // 8)
               for t, b in by_dtype.items())


def predict_kernel(k: Mapping[str, Any], dtype: str, roofs: RoofSet) -> Prediction | None:
    """A kernel's time per call of its program: trips × max(its roofline time per launch, the
    launch cost), since no launch finishes faster than the runtime launches it."""
    f = kernel_facts(k, dtype)
    alone = RoofSet(roofs.label, roofs.kind, roofs.compute, roofs.bandwidth, (), roofs.rates)
    p = predict(f, alone)
    if p is None:
        return None
    trips = int(k.get("trips", 1))
    roof = max(p.terms["alu"], p.terms["memory"])
    launch = roofs.launch or 0.0
    terms = {"alu": p.terms["alu"] * trips, "memory": p.terms["memory"] * trips,
             "overhead": launch * trips}
    binding = "overhead" if launch > roof else p.binding
    return Prediction(max(roof, launch) * trips, terms, binding, p.bytes * trips, p.bytes_source,
                      p.level, p.roofs, p.notes)


def predict_from_kernels(inventory: Mapping[str, Any], dtype: str, roofs: RoofSet
                         ) -> Prediction | None:
    """A program's time as the sum of its kernels' (loops × trip count) and the dispatch
    floor: the kernels are taken to run one after another."""
    parts = [predict_kernel(k, dtype, roofs) for k in inventory.get("kernels", [])]
    if not parts or any(p is None for p in parts):
        return None
    known = [p for p in parts if p is not None]
    dispatch = roofs.dispatch_enqueued or 0.0  # workloads are timed with calls enqueued
    terms = {key: sum(p.terms[key] for p in known) for key in ("alu", "memory", "overhead")}
    terms["overhead"] += dispatch
    seconds = sum(p.seconds for p in known) + dispatch
    binding = max(terms, key=lambda key: terms[key])
    levels = sorted({p.level for p in known})
    notes = tuple(dict.fromkeys(n for p in known for n in p.notes))
    return Prediction(seconds, terms, binding, sum(p.bytes for p in known),
                      "the kernels' boundary bytes", ", ".join(levels),
                      tuple(dict.fromkeys(r for p in known for r in p.roofs)), notes)


def error(predicted: float, measured: float) -> float:
    """|predicted − measured| ÷ measured."""
    return abs(predicted - measured) / measured


def error_summary(errors: Sequence[float]) -> tuple[float | None, float | None]:
    """(median, 90th percentile) of relative errors, quantiles interpolated linearly between
    order statistics (numpy's default); (None, None) for none."""
    if not errors:
        return None, None
    if len(errors) == 1:
        return errors[0], errors[0]
    return (statistics.median(errors),
            statistics.quantiles(errors, n=10, method="inclusive")[-1])
