"""Three-way reconciliation of work and traffic: the analytic model, our HLO count, XLA.

Pure: works from saved JSON (no jax). Each quantity (flops, transcendentals, bytes) becomes a
row with the three values, whether they agree, and flags that name the known cause of each
disagreement (:mod:`~roofline_report.analysis.reconcile_records`). A flag is a cause and its
sentence as parts the report sets (words are strings; every number and op name is a value the
report formats, never baked into the words)::

    "words"                                   # a piece of the sentence
    CountPart(n, k)                           # a count of kind k (a Kind value)
    CountPart(n, k, signed=True)              # a change: "+399,669", "-1"
    RatioPart(r, k)                           # "10x"
    CodePart(text)                            # an op name, a target, XLA's -1: set as code
    RewritesPart(items, u)                    # the compiler's rewrites, see
                                              # roofline_report.hlo.kernel_reconciliation

Reading XLA's cost analysis (JAX documents it as backend- and version-dependent; the known
miscounts below are discussed in jax-ml/jax issues 13956, 16008, 20184 and 22249):

* A negative value (-1 on the GPU for a custom call such as cuBLAS) or a non-finite one is never
  used as a number: the row shows None and a ``negative_or_missing`` flag says why.
* XLA omits zero-valued keys, so a key missing from an otherwise non-empty dict reads as 0.
  A missing or empty dict (``None``/``{}``) means no cost analysis: every XLA value is None.
* Custom calls are costed -1 each and *added into* XLA's flops and bytes totals, so for a
  program with custom calls (or with ``optimal_seconds`` < 0) those totals are not used either
  (``unknown_custom_call``).

Values agree when every available value is within 0.1% of the others (at least two needed).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from roofline_report.analysis.reconcile_records import (
    CodePart,
    CountPart,
    Flag,
    MeasuredRate,
    Part,
    RatioPart,
    ReconciledRow,
    Reconciliation,
    RewritesPart,
)
from roofline_report.errors import InputError
from roofline_report.hlo.kernel_reconciliation import Rewrite, group_rewrites
from roofline_report.kinds import Kind
from roofline_report.results import schema

__all__ = ["AGREE_RTOL", "CAUSES", "KERNELS_XLA_RTOL", "Part", "add_kernel_columns", "reconcile"]

AGREE_RTOL = 1e-3
#: The kernel sum and XLA's count "agree" (XLA counted the compiled program, the program the
#: kernels run) when they are within this share of each other.
KERNELS_XLA_RTOL = 1e-4

_A = Kind.ANALYTIC.value  # our counts: the program's, the kernels', the analytic model's
_C = Kind.COMPILER_ESTIMATE.value  # XLA's cost analysis and jax.experimental.roofline


def _n(value: float, kind: str = _A, *, signed: bool = False) -> CountPart:
    """A count in a sentence (integers stay integers)."""
    number: float = int(value) if float(value).is_integer() else float(value)
    return CountPart(number, kind, signed)


def _literal(value: float) -> str:
    """A value XLA reported as a marker, as it wrote it ("-1", "inf"), not as a count."""
    return str(int(value)) if value.is_integer() else str(value)


def _code(name: str) -> CodePart:
    """An op name, a custom-call target, a dtype, or a value XLA reported as a marker (its
    -1), set as code: a name, never a count."""
    return CodePart(name)


def _listing(values: Sequence[float], kind: str = _A) -> list[Part]:
    """Counts joined with commas: [10, ", ", 5]."""
    parts: list[Part] = []
    for position, value in enumerate(values):
        parts += [", "] if position else []
        parts.append(_n(float(value), kind))
    return parts

CAUSES = (
    "loop_counted_once",
    "unknown_custom_call",
    "unfused_intermediate",
    "dtype_upcast",
    "fusion_beyond_minimum",
    "negative_or_missing",
    "epilogue_not_in_analytic",
    "conversions_not_in_analytic",
    "reduce_window_rewritten",
    "collective_group_size",
    "below_minimum",
    "analytic_scope",
    "unexplained",
    "compiler_rewrites",
    "estimator_loop_counted_once",
    "estimator_scope",
    "estimator_unavailable",
)

_GPU_BACKENDS = frozenset({"gpu", "cuda", "rocm"})
_NARROW_FLOATS = ("bf16", "f16", "f8")
_CONTRACTIONS = ("stablehlo.dot_general", "stablehlo.dot", "stablehlo.convolution")
_XLA_KEYS = {"flops": "flops", "transcendentals": "transcendentals", "bytes": "bytes accessed"}


@dataclass(frozen=True, slots=True)
class _Reading:
    """One XLA value: the number to use (or None) and, when None, why."""

    value: float | None
    raw: float | None = None
    reason: tuple[Part, ...] = ()


@dataclass(slots=True)
class _Row:
    quantity: str
    analytic: float | None
    ours: float | None
    xla: float | None
    flags: list[Flag] = field(default_factory=list)

    def flag(self, cause: str, *parts: Part) -> None:
        if cause not in CAUSES:  # pragma: no cover - a programming error
            raise ValueError(f"unknown cause {cause!r}")
        if all(f.parts != parts for f in self.flags):
            self.flags.append(Flag(cause, parts))

    def values(self) -> list[float]:
        return [v for v in (self.analytic, self.ours, self.xla) if v is not None]

    @property
    def agree(self) -> bool:
        values = self.values()
        return len(values) >= 2 and all(_close(values[0], v) for v in values[1:])

    def record(self) -> ReconciledRow:
        return ReconciledRow(self.quantity, self.analytic, self.ours, self.xla, self.agree,
                             tuple(self.flags))


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= AGREE_RTOL * max(abs(a), abs(b))


def _count(source: str, key: str, value: float | None) -> float | None:
    """A count as a row holds it (None: not counted). The records' counts are numbers and not
    negative; one that is not finite is an InputError."""
    if value is None:
        return None
    if not math.isfinite(value):
        raise InputError(f"{source} {key!r} must be finite and non-negative, got {value!r}")
    return value


def _stated_transcendentals(analytic: schema.Analytic | None) -> float | None:
    """The hand model's transcendentals where it states them; a model that does not counts
    none, which the row shows as no value (not 0), said by ``epilogue_not_in_analytic``."""
    if analytic is None or "transcendentals" not in analytic.model_fields_set:
        return None
    return analytic.transcendentals


def _cost_analysis(xla: schema.XlaCost | None) -> Mapping[str, float] | None:
    """XLA's cost analysis as the backend returned it (its own names, -1 kept), or None."""
    return xla.raw if xla is not None and xla.available else None


def _read_xla(xla: Mapping[str, float] | None, key: str, backend: str,
              contaminated: tuple[Part, ...]) -> _Reading:
    if not xla:
        return _Reading(None, None, (f"XLA gave no cost analysis on {backend}",))
    raw = xla.get(key, 0.0)  # XLA omits zero-valued keys
    value = float(raw)
    if not math.isfinite(value):
        return _Reading(None, raw, ("XLA reported ", _code(_literal(value)),
                                    f" {key}, which is not a count"))
    if value < 0:
        why: tuple[Part, ...]
        if backend in _GPU_BACKENDS:
            why = ("XLA reported ", _code(_literal(value)), f" {key}: on the GPU that marks a "
                   "custom call (such as a cuBLAS gemm) that XLA cannot cost, so the value is "
                   "unknown")
        else:
            why = ("XLA reported ", _code(_literal(value)), f" {key}, which is not a count, "
                   "so it is unknown")
        return _Reading(None, raw, why)
    if contaminated:
        return _Reading(None, raw, contaminated)
    return _Reading(value, raw)


def _custom_call_targets(compiled: schema.Compiled | None) -> list[str]:
    if compiled is None:
        return []
    targets: list[str] = []
    for call in compiled.custom_calls:
        if call.target not in targets:
            targets.append(call.target)
    return targets


def _contamination(xla: Mapping[str, float] | None, compiled: schema.Compiled | None
                   ) -> tuple[Part, ...]:
    """Why XLA's totals cannot be used (custom calls costed -1 and summed in), or ()."""
    targets = _custom_call_targets(compiled)
    optimal = (xla or {}).get("optimal_seconds")
    negative_time = optimal is not None and optimal < 0
    what: list[Part]
    if targets:
        count = len(compiled.custom_calls) if compiled is not None else 0
        what = [_n(count), f" custom call{'s' if count != 1 else ''} ("]
        for position, target in enumerate(targets):
            what += [", "] if position else []
            what.append(_code(target))
        what.append(")")
    elif negative_time:
        what = ["custom calls (its ", _code("optimal_seconds"), " is negative)"]
    else:
        return ()
    return ("XLA costs each of the program's ", *what, " at ", _code("-1"),
            " and adds that into its totals")


def _xla_flag(row: _Row, reading: _Reading) -> None:
    """Say why the XLA value is not shown: a -1/non-finite/absent value, or a tainted total."""
    if reading.value is not None or not reading.reason:
        return
    raw = reading.raw
    tainted = raw is not None and math.isfinite(raw) and raw >= 0
    row.flag("unknown_custom_call" if tainted else "negative_or_missing", *reading.reason, ".")


def _loops(ours: schema.HloCount | None) -> list[schema.CountedLoop]:
    return list(ours.loops) if ours is not None else []


def _repeated(ours: schema.HloCount | None) -> list[schema.CountedLoop]:
    """The loops that run their body more than once (a known trip count above 1)."""
    return [loop for loop in _loops(ours) if (loop.trip_count or 0) > 1]


def _trip_counts(loops: Sequence[schema.CountedLoop]) -> list[int]:
    """The known trip counts of ``loops``, in order."""
    return [loop.trip_count for loop in loops if loop.trip_count is not None]


def _loop_flags(row: _Row, ours: schema.HloCount | None, unit: str) -> None:
    loops = _loops(ours)
    unknown = [loop for loop in loops if loop.trip_count is None]
    if unknown:
        row.flag(
            "loop_counted_once",
            _n(len(unknown)), f" loop{'s have' if len(unknown) != 1 else ' has'} no known trip "
            "count, so our count takes the body once and is a lower bound.",
        )
    multi = _repeated(ours)
    if multi and row.ours is not None and row.xla is not None and row.ours > row.xla:
        as_much: list[Part] = ([RatioPart(row.ours / row.xla, _A), " as much"]
                               if row.xla > 0 else ["more"])
        row.flag(
            "loop_counted_once",
            "XLA costs each loop as one iteration (", _n(row.xla, _C), f" {unit}); our count "
            "runs the body its trip count (", *_listing(_trip_counts(multi)),
            ") times, ", _n(row.ours), f" {unit}, ", *as_much, ".",
        )


def _bytes_loop_flag(row: _Row, ours: schema.HloCount | None, minimum: float | None) -> bool:
    """XLA's bytes accessed cost a while loop's body once, whatever its trip count: say so
    where the program loops (and XLA gave a count). Returns whether it did."""
    multi = _repeated(ours)
    unknown = [loop for loop in _loops(ours) if loop.trip_count is None]
    if row.xla is None or not (multi or unknown):
        return False
    runs: list[Part] = (["the body runs ", *_listing(_trip_counts(multi)),
                         " times"] if multi else ["its trip count is not known"])
    below: list[Part] = (["; that is why they are under the minimum of ", _n(minimum),
                          " bytes"] if minimum is not None and row.xla < minimum
                         and not _close(row.xla, minimum) else [])
    row.flag(
        "loop_counted_once",
        "XLA's ", _n(row.xla, _C), " bytes accessed count each loop body once (", *runs,
        "), so the other iterations' traffic is left out", *below, ".",
    )
    return True


def _ops_list(names: list[str], sep: str = ", ") -> list[Part]:
    parts: list[Part] = []
    for i, name in enumerate(names):
        parts += [sep] if i else []
        parts.append(_code(name))
    return parts


def _upcast(
    row: _Row, ours: schema.HloCount | None, compiled: schema.Compiled | None, backend: str
) -> bool:
    if backend != "cpu" or compiled is None or not compiled.converts:
        return False
    by_dtype = ours.bytes_by_dtype if ours is not None else {}
    dtypes = [dtype for dtype in by_dtype if dtype.startswith(_NARROW_FLOATS)]
    if not dtypes or row.xla is None:
        return False
    reference = row.ours if row.quantity != "bytes" else None
    extra: list[Part] = []
    if reference is not None and row.xla > reference:
        extra = [", ", _n(row.xla - reference, _C), " more than ours"]
    row.flag(
        "dtype_upcast",
        "On CPU XLA converts the ", *_ops_list(sorted(dtypes), "/"), " values to ",
        _code("f32"), " (", _n(compiled.converts), " converts), so its ", _n(row.xla, _C),
        f" {row.quantity} include the conversions", *extra, ".",
    )
    return True


def _new_row(quantity: str, key: str, analytic: float | None, ours: float | None,
             xla_reading: _Reading) -> _Row:
    """A row of ``quantity`` with the analytic model's and our count's ``key`` and XLA's
    value."""
    return _Row(quantity, _count("analytic", key, analytic), _count("our count", key, ours),
                xla_reading.value)


def _flops_row(
    analytic: schema.Analytic | None,
    ours: schema.HloCount | None,
    xla_reading: _Reading,
    compiled: schema.Compiled | None,
    backend: str,
) -> _Row:
    row = _new_row("flops", "flops", analytic.flops if analytic is not None else None,
                   ours.flops if ours is not None else None, xla_reading)
    _common_flags(row, ours, xla_reading, compiled, backend, "flops")
    by_op = _flops_by_op(ours)
    if row.analytic is not None and row.ours is not None and row.ours > row.analytic:
        contraction = sum(float(by_op.get(op, 0)) for op in _CONTRACTIONS)
        other = row.ours - contraction
        diff = row.ours - row.analytic
        if by_op and diff <= other * (1 + AGREE_RTOL) and _close(row.analytic, contraction):
            row.flag(
                "epilogue_not_in_analytic",
                "The analytic ", _n(row.analytic), " flops cover the contraction only; the "
                "program adds ", _n(diff), " elementwise or reduction flops around it.",
            )
        converts = float(by_op.get("stablehlo.convert", 0))
        if converts and _close(row.analytic, row.ours - converts):
            # JAX itself converts: a bfloat16 sum accumulates in float32, so the program
            # converts its inputs (and the result back), which our count takes as flops.
            row.flag(
                "conversions_not_in_analytic",
                "Our count takes the program's ", _n(converts), " element conversions between "
                "dtypes as flops (JAX accumulates a narrow float in float32); the analytic ",
                _n(row.analytic), " flops count none: ", _n(row.analytic), " + ",
                _n(converts), " = ", _n(row.ours), ".",
            )
    if (
        row.ours is not None
        and row.xla is not None
        and row.ours > row.xla
        and not _close(row.ours, row.xla)
    ):
        windowed = float(by_op.get("stablehlo.reduce_window", 0))
        if windowed and row.ours - row.xla <= windowed:
            row.flag(
                "reduce_window_rewritten",
                "Our count takes the windowed reduction as written (", _n(windowed), " flops); "
                "XLA rewrites it (e.g. a cumsum into a scan) and counts ", _n(row.xla, _C),
                " in all.",
            )
        collective = sum(
            float(by_op.get(op, 0)) for op in ("stablehlo.all_reduce", "stablehlo.reduce_scatter")
        )
        if collective and row.ours - row.xla <= collective:
            row.flag(
                "collective_group_size",
                "Our count gives the cross-device reductions ", _n(collective), " flops, from "
                "their group size; XLA costs an all-reduce as if two devices took part.",
            )
    return row


def _transcendentals_row(
    analytic: schema.Analytic | None,
    ours: schema.HloCount | None,
    xla_reading: _Reading,
    compiled: schema.Compiled | None,
    backend: str,
) -> _Row:
    row = _new_row("transcendentals", "transcendentals", _stated_transcendentals(analytic),
                   ours.transcendentals if ours is not None else None, xla_reading)
    _common_flags(row, ours, xla_reading, compiled, backend, "transcendentals")
    if analytic is not None and row.analytic is None and row.ours and ours is not None:
        names = sorted(op.split(".", 1)[-1] for op in ours.transcendentals_by_op)
        ops: list[Part] = _ops_list(names) if names else ["the program"]
        row.flag(
            "epilogue_not_in_analytic",
            "The analytic model counts no transcendentals; the program has ", _n(row.ours),
            " (", *ops, ").",
        )
    return row


def _bytes_row(
    analytic: schema.Analytic | None,
    ours: schema.HloCount | None,
    xla_reading: _Reading,
    compiled: schema.Compiled | None,
    backend: str,
) -> _Row:
    row = _new_row("bytes", "minimum_bytes",
                   analytic.minimum_bytes if analytic is not None else None,
                   ours.minimum_bytes if ours is not None else None, xla_reading)
    _xla_flag(row, xla_reading)
    minimum = row.analytic if row.analytic is not None else row.ours
    if row.analytic is not None and row.ours is not None and not _close(row.analytic, row.ours):
        row.flag(
            "analytic_scope",
            "The analytic minimum (", _n(row.analytic), " bytes) and the program's arguments "
            "plus results (", _n(row.ours), " bytes) differ: the model leaves some out or adds "
            "some in.",
        )
    # XLA costs a while body once whatever its trip count: said wherever the program loops
    looped = _bytes_loop_flag(row, ours, minimum)
    if minimum is not None and row.xla is not None and not _close(row.xla, minimum):
        _upcast(row, ours, compiled, backend)
        kernels = compiled.kernels if compiled is not None else None
        if row.xla > minimum:
            above: list[Part] = ["XLA counts ", _n(row.xla, _C), " bytes, ",
                                 _n(row.xla - minimum, _C), " above the minimum of ",
                                 _n(minimum)]
            if kernels is not None and kernels > 1:
                row.flag(
                    "unfused_intermediate",
                    *above, ": the program runs as ", _n(kernels), " kernels, so "
                    "intermediates are written to memory and read back.",
                )
            else:
                where = "one fused kernel" if kernels == 1 else "the compiled program"
                row.flag(
                    "fusion_beyond_minimum",
                    *above, f", in {where}: some operand is read more than once.",
                )
        elif row.xla < minimum and not looped:
            row.flag(
                "below_minimum",
                "XLA counts ", _n(row.xla, _C), " bytes, under the minimum of ", _n(minimum),
                " bytes of arguments plus results (an output aliased to an input, or an "
                "unused argument).",
            )
    return row


def _flops_by_op(ours: schema.HloCount | None) -> Mapping[str, float]:
    return ours.flops_by_op if ours is not None else {}


def _common_flags(
    row: _Row,
    ours: schema.HloCount | None,
    xla_reading: _Reading,
    compiled: schema.Compiled | None,
    backend: str,
    unit: str,
) -> None:
    _xla_flag(row, xla_reading)
    custom = list(ours.custom_calls) if ours is not None else []
    if custom and row.ours is not None:
        row.flag(
            "unknown_custom_call",
            f"Our count has no cost for the custom call{'s' if len(custom) != 1 else ''} ",
            *_ops_list(custom), ", so its ", _n(row.ours),
            f" {unit} are a lower bound.",
        )
    _loop_flags(row, ours, unit)
    if row.xla is not None and row.ours is not None and row.xla > row.ours and unit == "flops":
        _upcast(row, ours, compiled, backend)


def _unexplained(row: _Row) -> None:
    if not row.agree and not row.flags and len(row.values()) >= 2:
        shown: list[Part] = []
        for name, value, kind in (("analytic", row.analytic, _A), ("ours", row.ours, _A),
                                  ("XLA", row.xla, _C)):
            if value is not None:
                shown += [", " if shown else "", f"{name} ", _n(value, kind)]
        row.flag(
            "unexplained", f"The {row.quantity} counts differ (", *shown,
            "); no known cause matched.",
        )


def reconcile(
    *,
    analytic: schema.Analytic | None,
    ours: schema.HloCount | None,
    xla: schema.XlaCost | None,
    compiled: schema.Compiled | None,
    measured_seconds: float | None,
    backend: str,
) -> Reconciliation:
    """Reconcile the analytic model, our StableHLO count and XLA's cost analysis.

    ``analytic``: the workload's hand model (its transcendentals where it states them), or
    None. ``ours``: our count of the StableHLO (:func:`roofline_report.hlo.count_stablehlo`),
    or None. ``xla``: XLA's cost analysis as recorded (an unavailable one or None: every XLA
    value is None). ``compiled``: the facts of the optimized HLO
    (:func:`roofline_report.hlo.inspect_compiled`), or None. ``measured_seconds``: the
    measured time of one call, or None. ``backend``: ``jax.default_backend()`` ("cpu", "gpu",
    "cuda", "rocm", "tpu").

    Returns the rows (flops, transcendentals, bytes), XLA's bytes ÷ the minimum bytes (None:
    either unknown) and the measured rate (None: not measured). Raises InputError for a count
    that is not finite, a measured time that is not positive and finite, or no backend (the
    records' own types and signs are checked where the document is read).
    """
    if not isinstance(backend, str) or not backend.strip():
        raise InputError(f"backend must be a name such as 'cpu' or 'gpu', got {backend!r}")
    backend = backend.strip().lower()
    cost = _cost_analysis(xla)
    tainted = _contamination(cost, compiled)
    readings = {
        quantity: _read_xla(
            cost,
            key,
            backend,
            # custom calls are costed -1 in flops and bytes, not in transcendentals
            (*tainted, f", so its {key} total is not used")
            if tainted and quantity != "transcendentals"
            else (),
        )
        for quantity, key in _XLA_KEYS.items()
    }
    rows = [
        _flops_row(analytic, ours, readings["flops"], compiled, backend),
        _transcendentals_row(analytic, ours, readings["transcendentals"], compiled, backend),
        _bytes_row(analytic, ours, readings["bytes"], compiled, backend),
    ]
    for row in rows:
        _unexplained(row)
    bytes_row = rows[2]
    minimum = bytes_row.analytic if bytes_row.analytic is not None else bytes_row.ours
    efficiency = (
        bytes_row.xla / minimum
        if bytes_row.xla is not None and minimum is not None and minimum > 0
        else None
    )
    return Reconciliation(rows=tuple(row.record() for row in rows),
                          traffic_efficiency=efficiency,
                          measured=_measured(measured_seconds, rows[0]))


def _measured(seconds: float | None, flops_row: _Row) -> MeasuredRate | None:
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, numbers.Real):
        raise InputError(f"measured seconds must be a number, got {seconds!r}")
    if not math.isfinite(float(seconds)) or seconds <= 0:
        raise InputError(f"measured seconds must be positive and finite, got {seconds!r}")
    basis, flops = (
        ("analytic", flops_row.analytic)
        if flops_row.analytic is not None
        else ("ours", flops_row.ours)
    )
    return MeasuredRate(seconds=float(seconds),
                        achieved_flops_per_s=None if flops is None else flops / float(seconds),
                        flops_basis=basis if flops is not None else None)


# --------------------------------------------------------------------------------------------
# Two more columns: the sum over the compiled kernels, and JAX's own estimator
# --------------------------------------------------------------------------------------------

def _kernel_value(kernels: schema.KernelInventory, quantity: str) -> float | None:
    """The kernels' sum of ``quantity``; the bytes are every kernel's bytes read and written."""
    if quantity == "bytes":
        return float(kernels.bytes_read) + float(kernels.bytes_written)
    if quantity == "flops":
        return float(kernels.flops)
    if quantity == "transcendentals":
        return float(kernels.transcendentals)
    return None


def _estimator_value(estimate: schema.JaxRoofline, quantity: str) -> float | None:
    """JAX's estimate of ``quantity``: its flops and HBM bytes; it has no transcendentals."""
    if quantity == "flops":
        return float(estimate.flops)
    if quantity == "bytes":
        return float(estimate.hbm_bytes)
    return None


def _program_value(ours: schema.HloCount | None, quantity: str) -> float | None:
    """Our program count's flops or transcendentals (None for the bytes: the row's minimum is
    not a count of the program's traffic)."""
    if ours is None:
        return None
    if quantity == "flops":
        return ours.flops
    if quantity == "transcendentals":
        return ours.transcendentals
    return None


def add_kernel_columns(
    result: Reconciliation,
    *,
    kernels: schema.KernelInventory | schema.Unavailable | None,
    jax_estimate: schema.JaxRoofline | schema.Unavailable | None,
    ours: schema.HloCount | None,
    rewrites: Sequence[Rewrite] | None = None,
) -> Reconciliation:
    """A :func:`reconcile` result with, on each row, the kernel sum (``kernels``: the kernel
    inventory; bytes are every kernel's boundary bytes) and JAX's estimate (``jax_estimate``:
    ``jax.experimental.roofline``'s flops and HBM bytes; it has no transcendentals), with
    flags: the compiler's rewrites that set the kernel sum apart from our program count
    (``rewrites`` from :func:`roofline_report.hlo.kernel_reconciliation.reconcile_kernels`),
    and the estimator's miscounts (a loop body counted once; ops it does not cost).

    Where the kernel sum and XLA's count agree (within KERNELS_XLA_RTOL) and the rewrites
    account for the kernel sum against our count, XLA counted the compiled program, so the
    rewrites are why our count and XLA's differ: the row's ``unexplained`` flag is dropped and
    the rewrites' flag says so, first.
    The rows' ``agree`` stays the three-way agreement."""
    inventory = kernels if isinstance(kernels, schema.KernelInventory) else None
    missing = jax_estimate.reason if isinstance(jax_estimate, schema.Unavailable) else None
    estimate = jax_estimate if isinstance(jax_estimate, schema.JaxRoofline) else None
    rows = []
    for row in result.rows:
        quantity = row.quantity
        kernel_sum = _kernel_value(inventory, quantity) if inventory is not None else None
        jax = _estimator_value(estimate, quantity) if estimate is not None else None
        flags = list(row.flags)
        program = _program_value(ours, quantity)
        if kernel_sum is not None and program is not None and not _close(kernel_sum, program):
            _rewrites_flag(row, flags, kernel_sum, program, rewrites)
        if jax is not None and quantity == "flops":
            _estimator_flags(flags, jax, ours)
        if missing and quantity == "flops":  # the JAX column is empty: say why
            flags.append(Flag("estimator_unavailable",
                              (f"jax.experimental.roofline not available: {missing}",)))
        rows.append(replace(row, kernels=kernel_sum, jax=jax, flags=tuple(flags)))
    return replace(result, rows=tuple(rows), kernel_columns=True)


def _rewrites_flag(row: ReconciledRow, flags: list[Flag], kernel_sum: float,
                   program: float, rewrites: Sequence[Rewrite] | None) -> None:
    quantity = row.quantity
    items = group_rewrites(rewrites, quantity, program)
    listed: list[Part] = [RewritesPart(items, quantity)] if items else []
    net = sum(item.amount for item in items)
    accounted = bool(items) and abs(net - (kernel_sum - program)) <= KERNELS_XLA_RTOL * max(
        abs(kernel_sum), abs(program))
    xla = row.xla
    if accounted and xla is not None and abs(kernel_sum - xla) <= KERNELS_XLA_RTOL * max(
            abs(kernel_sum), abs(xla)):
        gap: list[Part] = (["equal to the compiled kernels' sum"] if kernel_sum == xla else
                           ["within ", _n(abs(kernel_sum - xla), _C), " of the compiled kernels' "
                            "sum, ", _n(kernel_sum)])
        flags[:] = [f for f in flags if f.cause != "unexplained"]
        flags.insert(0, Flag("compiler_rewrites", (
            "XLA counts the compiled program: its ", _n(xla, _C), f" {quantity} are ", *gap,
            ". Our count, ", _n(program), ", is of the program before the compiler's "
            "rewrites, which make up the difference: ", *listed, ".")))
        return
    flags.append(Flag("compiler_rewrites", (
        "The compiled kernels sum to ", _n(kernel_sum), f" {quantity}, our program count ",
        _n(program), *([" (", *listed, ")"] if listed else []), ".")))


def _estimator_flags(flags: list[Flag], estimate: float, ours: schema.HloCount | None) -> None:
    if ours is None or _close(estimate, float(ours.flops)):
        return
    program = float(ours.flops)
    loops = _repeated(ours)
    once = sum(float(loop.body_flops) * (trips - 1)
               for loop, trips in zip(loops, _trip_counts(loops), strict=True))
    if loops and _close(estimate, program - once):
        flags.append(Flag("estimator_loop_counted_once", (
            "jax.experimental.roofline counts each loop body once (", _n(estimate, _C),
            " flops); the body runs ", *_listing(_trip_counts(loops)),
            " times, ", _n(program), " flops.")))
        return
    contraction = sum(float(ours.flops_by_op.get(op, 0)) for op in _CONTRACTIONS)
    if estimate < program:
        scope = ("only the contractions" if _close(estimate, contraction) and contraction
                 else "only some operations")
        flags.append(Flag("estimator_scope", (
            f"jax.experimental.roofline costs {scope}: ", _n(estimate, _C), " flops of our ",
            _n(program), ", and counts each loop body once." if loops else ".")))
