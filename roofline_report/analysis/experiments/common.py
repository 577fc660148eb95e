"""What the lab's experiments share (no jax): verdicts, the knee fit, budgets, raw input, records.

* :func:`verdict` compares a measurement with its prediction on a linear or a log scale.
* :func:`knee_fit` fits ``t = max(flat, slope · x)`` to a sweep: the knee of the measured times,
  and of the model's over the same points.
* :class:`Budgets` are the single-roof ceilings (measured where the ceilings record has them,
  else hypothetical) that predict when the per-kernel model cannot (see
  :mod:`roofline_report.analysis.experiments.times`).
* :class:`Entry` reads one experiment's raw record and raises InputError naming the field that is
  missing or malformed.
* :func:`record` assembles an experiment's plain-JSON record; the likely reason of a failed
  verdict is computed by the experiment from its evidence, never typed in for a machine.

Per-call times are the fastest sample of each timing record (the ``min`` of its per-call
statistics), as the measured ceilings are: noise from other processes only ever slows a kernel.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roofline_report.analysis import seed_model as model
from roofline_report.analysis.miss import Miss
from roofline_report.analysis.stats import Timing
from roofline_report.errors import InputError
from roofline_report.kinds import Kind, Quantity
from roofline_report.report.format import decimal, percent_text, whole
from roofline_report.units import format_si

# Experiment ids, in the order of the notebook.
EXPERIMENT_IDS = (
    "doubled_traffic",
    "fusion",
    "bf16_memory",
    "bf16_compute",
    "batching",
    "dispatch",
    "scan",
)

TITLES = {
    "doubled_traffic": "Doubled data movement, measured",
    "fusion": "Fusion saves traffic",
    "bf16_memory": "bfloat16 against float32: a memory-bound kernel",
    "bf16_compute": "bfloat16 against float32: a compute-bound matmul",
    "batching": "Batching crosses the ridge",
    "dispatch": "Small workloads are dispatch-bound",
    "scan": "Loops fool the compiler's estimate",
}

# Tolerances of the verdicts: relative errors, or factors for the log-scale ones.
TOLERANCE = {
    "doubled_traffic": 0.25,
    "fusion": 0.25,
    "bf16_memory": 0.25,
    "bf16_compute": 0.25,
    "batching": 2.0,
    "dispatch": 2.0,
    "scan": 0.30,
}
LOG_SCALE = frozenset({"batching", "dispatch"})

# Assumed budgets where no measured ceiling exists (assumptions for teaching, like the seed's).
HYPOTHETICAL_DISPATCH_S = 5e-6
"""An assumed cost of launching one call: the order of a jitted call's dispatch on a CPU (about
5 us measured on a 2-core machine)."""
HYPOTHETICAL_BF16_SPEEDUP = 2.0
"""Assumed bfloat16 : float32 compute-ceiling ratio, as on chips with native bfloat16 units."""

# Evidence thresholds used to pick a likely reason.
LOW_EFFICIENCY = 0.5  # an achieved rate under half its ceiling is "well below" it
NEAR_DISPATCH = 3.0  # a call within this many dispatch floors is mostly overhead

F32, BF16 = 4, 2  # itemsizes

STATISTIC = "min"


# ------------------------------------------------------------------------------------ verdict


def verdict(
    predicted: float | None,
    measured: float | None,
    *,
    tolerance: float,
    log_scale: bool = False,
    reason_if_failed: str = "",
    unit: str = "×",
) -> dict[str, Any]:
    """Compare a measurement with its prediction.

    Linear scale: ``error`` = |measured - predicted| / |predicted|, held when error <= tolerance
    (a fraction: 0.25 is 25%). Log scale: ``error`` = max(measured/predicted, predicted/measured),
    a factor >= 1, held when error <= tolerance (a factor > 1, e.g. 2.0).

    Returns ``{"status": "held"|"failed"|"unavailable", "error", "tolerance", "log_scale",
    "predicted", "measured", "text"}``; a missing, non-finite (or, on a log scale, non-positive)
    input gives ``status: unavailable`` with the reason in ``text``. ``unit`` formats the values
    in the text ("×" for ratios). Raises ValueError for an invalid tolerance.
    """
    if not (isinstance(tolerance, int | float) and math.isfinite(tolerance) and tolerance > 0):
        raise ValueError(f"tolerance must be positive and finite, got {tolerance!r}")
    if log_scale and tolerance <= 1:
        raise ValueError(f"a log-scale tolerance is a factor above 1, got {tolerance!r}")
    out: dict[str, Any] = {
        "status": "unavailable",
        "error": None,
        "tolerance": float(tolerance),
        "log_scale": log_scale,
        "predicted": finite(predicted),
        "measured": finite(measured),
        "text": "",
    }
    p, m = out["predicted"], out["measured"]
    if p is None or m is None:
        which = "prediction" if p is None else "measurement"
        out["text"] = f"unavailable: no finite {which}"
        return out
    if log_scale and (p <= 0 or m <= 0):
        out["text"] = "unavailable: a log-scale verdict needs positive values"
        return out
    if not log_scale and p == 0:
        out["text"] = "unavailable: a relative error needs a non-zero prediction"
        return out
    if log_scale:
        error = Miss(p, m).factor  # both positive, checked above
        held = error <= tolerance
        size = f"a factor of {decimal(error, 3)}"
        out["text"] = f"held within {size}" if held else ""
        off = f"off by {size}"
    else:
        error = abs(m - p) / abs(p)
        held = error <= tolerance
        out["text"] = f"held within {_pct(error)}" if held else ""
        off = f"error {_pct(error)}"
    out["error"] = error
    out["status"] = "held" if held else "failed"
    if not held:
        text = f"failed: measured {_show(m, unit)} against a predicted {_show(p, unit)} ({off})"
        if reason_if_failed:
            text += f"; likely reason: {reason_if_failed}"
        out["text"] = text
    return out


def _pct(fraction: float) -> str:
    return percent_text(fraction)


def _show(value: float, unit: str) -> str:
    if unit == "×":
        return f"{decimal(value, 3)}×"
    return f"{number(value)} {unit}".strip()


def number(value: float) -> str:
    """Three significant digits and every digit of the whole part, positional below 10⁶:
    '12500', '10.2', '0.00123' (beyond, a power of ten)."""
    return whole(value, 3)


def finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


# --------------------------------------------------------------------------------------- knee


def knee_fit(xs: Sequence[float], times: Sequence[float]) -> dict[str, Any] | None:
    """Fit ``t = max(flat, slope * x)`` to a sweep and return where the two lines meet.

    For each split of the points (sorted by x) into a leading and a trailing part, the flat line
    is the geometric mean of the leading times and the proportional line's slope the geometric
    mean of the trailing t/x; the split with the least squared log error wins (the first on a
    tie). Returns ``{"knee": flat / slope, "flat", "slope", "split": points in the flat part,
    "at_edge": whether the knee lies outside (x_first, x_last)}``, or None with fewer than three
    points, mismatched lengths, or a non-positive or non-finite value.
    """
    if len(xs) != len(times) or len(xs) < 3:
        return None
    points = sorted(zip(xs, times, strict=True))
    if not all(
        finite(x) is not None and finite(t) is not None and x > 0 and t > 0 for x, t in points
    ):
        return None
    logs_x = [math.log(x) for x, _ in points]
    logs_t = [math.log(t) for _, t in points]
    best: tuple[float, int, float, float] | None = None
    for split in range(1, len(points)):
        log_flat = _mean(logs_t[:split])
        log_slope = _mean([lt - lx for lx, lt in zip(logs_x[split:], logs_t[split:], strict=True)])
        error = math.fsum(
            (lt - max(log_flat, log_slope + lx)) ** 2 for lx, lt in zip(logs_x, logs_t, strict=True)
        )
        if best is None or error < best[0]:
            best = (error, split, log_flat, log_slope)
    assert best is not None
    _, split, log_flat, log_slope = best
    knee_x = math.exp(log_flat - log_slope)
    return {
        "knee": knee_x,
        "flat": math.exp(log_flat),
        "slope": math.exp(log_slope),
        "split": split,
        "at_edge": not points[0][0] < knee_x < points[-1][0],
    }


def knee(xs: Sequence[float], times: Sequence[float]) -> float | None:
    """The knee of a flat-then-proportional sweep (see :func:`knee_fit`); None if undefined."""
    fit = knee_fit(xs, times)
    return None if fit is None else float(fit["knee"])


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


# ------------------------------------------------------------------------------------ budgets


@dataclass(frozen=True, slots=True)
class Budgets:
    """The ceilings predictions use: measured ones where available, else the hypothetical ones."""

    peak: float
    bandwidth: float
    dispatch: float
    kind: Kind
    dispatch_kind: Kind
    note: str
    dispatch_note: str
    compute: Mapping[str, float]  # measured compute ceilings by dtype (available ones only)

    def to_json(self) -> dict[str, Any]:
        return {
            "peak": Quantity(self.peak, "FLOP/s", self.kind, self.note).to_json(),
            "bandwidth": Quantity(self.bandwidth, "B/s", self.kind, self.note).to_json(),
            "dispatch": Quantity(
                self.dispatch, "s", self.dispatch_kind, self.dispatch_note
            ).to_json(),
            "ridge": model.ridge(self.peak, self.bandwidth),
            "compute_by_dtype": dict(sorted(self.compute.items())),
        }


def budgets(ceilings: Mapping[str, Any] | None, *, peak: float, bandwidth: float) -> Budgets:
    """Resolve the budgets from measured ``ceilings`` (or None) and the hypothetical ones.

    Measured peak and bandwidth are used together or not at all (mixing would give a ridge of
    neither machine). Raises InputError when the hypothetical budgets are not positive numbers.
    """
    for name, value in (("peak", peak), ("bandwidth", bandwidth)):
        if finite(value) is None or value <= 0:
            raise InputError(f"the hypothetical {name} must be a positive number, got {value!r}")
    hypo = f"hypothetical budgets ({format_si(peak, 'FLOP/s')}, {format_si(bandwidth, 'B/s')})"
    c = ceilings if isinstance(ceilings, Mapping) else {}
    m_peak = _ceiling_value(c.get("peak_compute"))
    m_bw = _ceiling_value(c.get("peak_bandwidth"))
    m_dispatch = _ceiling_value(c.get("dispatch"))
    compute: dict[str, float] = {}
    entries = c.get("compute")
    if isinstance(entries, list):
        for e in entries:
            if isinstance(e, Mapping) and e.get("available", True) is not False:
                rate = _ceiling_value(e)
                if rate is not None and isinstance(e.get("dtype"), str):
                    compute[str(e["dtype"])] = max(rate, compute.get(str(e["dtype"]), 0.0))
    if m_peak is not None and m_bw is not None:
        kind, use_peak, use_bw = Kind.MEASURED, m_peak, m_bw
        note = (
            f"from this machine's measured ceilings ({format_si(m_peak, 'FLOP/s')}, "
            f"{format_si(m_bw, 'B/s')})"
        )
    else:
        why = "no measured ceilings" if not c else "the measured peak or bandwidth is missing"
        kind, use_peak, use_bw = Kind.HYPOTHETICAL, float(peak), float(bandwidth)
        note = f"{why}: falls back on the {hypo}"
    if m_dispatch is not None:
        d_kind, dispatch = Kind.MEASURED, m_dispatch
        d_note = f"measured dispatch floor ({format_si(m_dispatch, 's')} per call)"
    else:
        d_kind, dispatch = Kind.HYPOTHETICAL, HYPOTHETICAL_DISPATCH_S
        d_note = f"no measured dispatch floor: assumes {format_si(dispatch, 's')} per call"
    return Budgets(use_peak, use_bw, dispatch, kind, d_kind, note, d_note, compute)


def _ceiling_value(entry: object) -> float | None:
    if not isinstance(entry, Mapping) or entry.get("available", True) is False:
        return None
    value = finite(entry.get("value"))
    return value if value is not None and value > 0 else None


def weaker(*kinds: Kind) -> Kind:
    """The kind of a number derived from several: hypothetical if any input is."""
    if Kind.HYPOTHETICAL in kinds:
        return Kind.HYPOTHETICAL
    if Kind.MEASURED in kinds:
        return Kind.MEASURED
    return Kind.ANALYTIC


# -------------------------------------------------------------------------- reading raw input


class Entry:
    """Typed access to one experiment's raw record; malformed fields raise InputError."""

    def __init__(self, exp_id: str, data: Mapping[str, Any]) -> None:
        self.exp_id = exp_id
        self.data = data

    def _fail(self, key: str, problem: str) -> InputError:
        return InputError(f"lab measurements: experiment {self.exp_id!r} field {key!r} {problem}")

    def count(self, key: str) -> int:
        value = self.data.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self._fail(key, f"must be a positive integer, got {value!r}")
        return value

    def _lookup(self, keys: tuple[str, ...]) -> Any:
        """The value under nested ``keys``, or None when any level is absent."""
        value: Any = self.data
        for key in keys:
            if not isinstance(value, Mapping) or key not in value:
                return None
            value = value[key]
        return value

    def opt_count(self, *keys: str) -> int | None:
        """A non-negative integer under nested ``keys``, or None when absent."""
        value = self._lookup(keys)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self._fail(".".join(keys), f"must be a count, got {value!r}")
        return value

    def opt_number(self, *keys: str) -> float | None:
        value = self._lookup(keys)
        if value is None:
            return None
        number = finite(value)
        if number is None:
            raise self._fail(".".join(keys), f"must be a finite number, got {value!r}")
        return number

    def timing(self, key: str) -> Timing:
        value = self.data.get(key)
        if not isinstance(value, Mapping):
            raise self._fail(key, "must be a timing record")
        return Timing.from_json(value)

    def ints(self, key: str) -> list[int]:
        value = self.data.get(key)
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value
        ):
            raise self._fail(key, "must be a list of positive integers")
        return list(value)

    def timings(self, key: str, count: int) -> list[Timing]:
        value = self.data.get(key)
        if not isinstance(value, list) or len(value) != count:
            raise self._fail(key, f"must be a list of {count} timing records")
        if not all(isinstance(v, Mapping) for v in value):
            raise self._fail(key, "must hold timing records")
        return [Timing.from_json(v) for v in value]

    def programs(self, variants: Sequence[str]) -> dict[str, Mapping[str, Any] | str]:
        """The kernel inventory of each variant, from the object ``programs`` (by variant), or
        the reason it has none (not recorded, or its reading failed)."""
        value = self.data.get("programs")
        if value is None:
            return dict.fromkeys(variants, NOT_RECORDED)
        if not isinstance(value, Mapping):
            raise self._fail("programs", "must be an object of kernel inventories")
        return {v: self._inventory(f"programs.{v}", value.get(v)) for v in variants}

    def sweep_programs(self, labels: Sequence[str]) -> dict[str, Mapping[str, Any] | str]:
        """The kernel inventory of each sweep point (named by ``labels``), from the list
        ``programs`` aligned with the points, or the reason it has none."""
        value = self.data.get("programs")
        if value is None:
            return dict.fromkeys(labels, NOT_RECORDED)
        if not isinstance(value, list) or len(value) != len(labels):
            raise self._fail("programs", f"must be a list of {len(labels)} kernel inventories")
        return {
            label: self._inventory(f"programs[{i}]", v)
            for i, (label, v) in enumerate(zip(labels, value, strict=True))
        }

    def dtypes(self, variants: Sequence[str]) -> dict[str, str]:
        """The dtype of each variant, from the object ``dtypes``; a variant without one is
        named after its dtype (``float32``, ``bfloat16``)."""
        value = self.data.get("dtypes")
        if value is None:
            return {v: v for v in variants}
        if not isinstance(value, Mapping) or not all(
            isinstance(value.get(v, v), str) for v in variants
        ):
            raise self._fail("dtypes", "must be an object of dtype names")
        return {v: str(value.get(v, v)) for v in variants}

    def _inventory(self, key: str, value: object) -> Mapping[str, Any] | str:
        """A kernel inventory whose fields the model reads are numbers; or why there is none."""
        if value is None:
            return NOT_RECORDED
        if not isinstance(value, Mapping):
            raise self._fail(key, "must be a kernel inventory")
        if value.get("available", True) is False:
            why = value.get("reason")
            return f"its kernel inventory failed: {why}" if why else "its kernel inventory failed"
        kernels = value.get("kernels")
        if not isinstance(kernels, list) or not all(isinstance(k, Mapping) for k in kernels):
            raise self._fail(key, "must list its kernels")
        for i, k in enumerate(kernels):
            where = f"{key}.kernels[{i}]"
            for name in ("flops", "bytes_read", "bytes_written"):
                if name in k and not _count_like(k[name]):
                    raise self._fail(where, f"{name} must be a non-negative number")
            trips = k.get("trips", 1)
            if isinstance(trips, bool) or not isinstance(trips, int) or trips < 1:
                raise self._fail(where, f"trips must be a positive integer, got {trips!r}")
            for name in ("flops_by_op", "transcendentals_by_op"):
                by_op = k.get(name) or {}
                if not isinstance(by_op, Mapping) or not all(
                    _count_like(v) for v in by_op.values()
                ):
                    raise self._fail(where, f"{name} must map operations to numbers")
        return value


NOT_RECORDED = "no kernel inventory recorded (results saved before the lab recorded them)"


def _count_like(value: object) -> bool:
    number = finite(value)
    return number is not None and number >= 0


def dtype_of(itemsize: int) -> str:
    """The floating dtype of an itemsize the lab uses (float32 unless 2 or 8 bytes)."""
    return {2: "bfloat16", 8: "float64"}.get(itemsize, "float32")


def seconds_of(t: Timing) -> float:
    return t.per_call.min


def time_json(t: Timing) -> dict[str, Any]:
    s = t.per_call
    return {"min": s.min, "median": s.median, "spread": s.spread, "unstable": s.unstable}


def noise(named: Mapping[str, Timing]) -> str:
    """A noise explanation when some timing was flagged unstable, else ''."""
    for name, t in named.items():
        if t.per_call.unstable:
            return (
                f"timing noise: the {name} samples spread {_pct(t.per_call.spread)} "
                f"(flagged unstable); rerun on an idle machine"
            )
    return ""


_UNEXPLAINED = "no recorded evidence explains the gap; rerun on an idle machine to rule out noise"


def first_reason(*reasons: str) -> str:
    return next((r for r in reasons if r), _UNEXPLAINED)


def cache_note(data_bytes: int, cache_bytes: int | None) -> str:
    if cache_bytes and data_bytes <= cache_bytes:
        return (
            f"the data ({format_si(data_bytes, 'B')}) fit in the last-level cache "
            f"({format_si(cache_bytes, 'B')}), so repeated calls are served by the cache"
        )
    return ""


# -------------------------------------------------------------------------------- experiments

UNITS = {
    "doubled_traffic": "×",
    "fusion": "×",
    "bf16_memory": "×",
    "bf16_compute": "×",
    "batching": "columns",
    "dispatch": "elements",
    "scan": "×",
}


def unavailable(exp_id: str, reason: str) -> dict[str, Any]:
    unit = UNITS[exp_id]
    v = verdict(None, None, tolerance=TOLERANCE[exp_id], log_scale=exp_id in LOG_SCALE)
    v["text"] = f"unavailable: {reason}"
    return {
        "id": exp_id,
        "title": TITLES[exp_id],
        "hypothesis": HYPOTHESES[exp_id],
        "prediction": Quantity(None, unit, Kind.ANALYTIC, f"not computed: {reason}").to_json(),
        "measurement": Quantity(None, unit, Kind.MEASURED, reason).to_json(),
        "verdict": v,
        "details": {},
        "likely_reason": "",
    }


HYPOTHESES = {
    "doubled_traffic": (
        "Reading twice the bytes for the same work doubles a memory-bound kernel's time: "
        "sum(w·x) reads two float32 arrays of n elements, sum(2·x) one, and both do 2n flops."
    ),
    "fusion": (
        "Fusing the tanh into the matmul saves the product's round trip through memory: forcing "
        "the m×n product to memory (an optimization barrier) multiplies the minimum traffic, "
        "hence a memory-bound shape's time, by the traffic ratio."
    ),
    "bf16_memory": (
        "Halving the bytes per element halves a memory-bound kernel's time: x ← −x in place "
        "on n elements, bfloat16 against float32."
    ),
    "bf16_compute": (
        "A compute-bound matmul speeds up by the ratio of the bfloat16 and float32 compute "
        "ceilings."
    ),
    "batching": (
        "W[d,d] @ X[d,b] has intensity 2d²b / (s(d² + 2db)): its time stays flat (W's traffic) "
        "until the intensity reaches the ridge at b*, then grows in proportion to b."
    ),
    "dispatch": (
        "A call costs at least one dispatch: y = 2·x stays flat until its traffic outlasts a "
        "dispatch, at n* = dispatch × bandwidth ÷ bytes per element read and written."
    ),
    "scan": (
        "A loop of k steps costs k body calls, as our count says, not one, as XLA's cost "
        "analysis says: a scan of tanh(c@x) takes k times one body call."
    ),
}


def record(
    exp_id: str,
    prediction: Quantity,
    measured: float | None,
    measured_note: str,
    reason: Callable[[float], str],
    details: dict[str, Any],
) -> dict[str, Any]:
    """Assemble an experiment; ``reason(measured)`` is consulted only when the verdict fails."""
    unit = UNITS[exp_id]
    kw: dict[str, Any] = {"tolerance": TOLERANCE[exp_id], "log_scale": exp_id in LOG_SCALE}
    v = verdict(prediction.value, measured, unit=unit, **kw)
    likely = ""
    if v["status"] == "unavailable":
        why = prediction.note if prediction.value is None else measured_note
        v["text"] = f"unavailable: {why}"
    if v["status"] == "failed" and measured is not None:
        likely = reason(measured)
        v = verdict(prediction.value, measured, unit=unit, reason_if_failed=likely, **kw)
    details["statistic"] = STATISTIC
    return {
        "id": exp_id,
        "title": TITLES[exp_id],
        "hypothesis": HYPOTHESES[exp_id],
        "prediction": prediction.to_json(),
        "measurement": Quantity(measured, unit, Kind.MEASURED, measured_note).to_json(),
        "verdict": v,
        "details": details,
        "likely_reason": likely,
    }


def ratio_note(top: str, bottom: str) -> str:
    return f"per-call time of {top} ÷ per-call time of {bottom} (fastest samples)"


def sweep_figure(
    xs: Sequence[int],
    times: Sequence[float],
    fit: Mapping[str, Any] | None,
    model_times: Sequence[float],
    model_kind: Kind,
    xlabel: str,
) -> dict[str, Any]:
    series: list[dict[str, Any]] = [
        {"label": "measured", "kind": Kind.MEASURED.value, "y": list(times)},
        {"label": "model", "kind": model_kind.value, "y": list(model_times)},
    ]
    if fit is not None:
        series.append(
            {
                "label": "flat-then-proportional fit",
                "kind": Kind.MEASURED.value,
                "y": [max(fit["flat"], fit["slope"] * x) for x in xs],
            }
        )
    return {"x": list(xs), "xlabel": xlabel, "ylabel": "time per call (s)", "series": series}


KNEE_NOTE = (
    "knee of the measured times: where the flat line through the small sizes meets the "
    "proportional line through the large ones (knee_fit)"
)
NO_KNEE = "no knee: the sweep needs at least three points with positive times"
MODEL_KNEE_NOTE = (
    "knee of the per-kernel model's predicted times over the same sweep points, by the fit that "
    "gives the measured knee (knee_fit)"
)
NO_MODEL_KNEE = "no knee: the model's times need at least three points with positive times"


def model_knee_note(fit: Mapping[str, Any] | None) -> str:
    """How the predicted knee was found from the model's times, or why there is none."""
    if fit is None:
        return NO_MODEL_KNEE
    return MODEL_KNEE_NOTE + (" (outside the sweep's range)" if fit["at_edge"] else "")


def knee_failure(
    measured: float,
    predicted: float,
    fit: Mapping[str, Any],
    model_flat: float,
    model_slope: float,
    flat_text: Callable[[bool], str],
    slope_text: Callable[[bool], str],
    timings: Mapping[str, Timing],
) -> str:
    """Why a knee missed: the side of the fit (flat part or slope, against the model's) that
    moved it the way it moved, else noise in the sweep's ``timings``, else unexplained."""
    return first_reason(
        knee_reason(measured, predicted, fit["flat"] / model_flat, fit["slope"] / model_slope,
                    flat_text, slope_text),
        noise(timings),
    )


def knee_reason(
    measured: float,
    predicted: float,
    flat_eff: float,
    slope_eff: float,
    flat_text: Callable[[bool], str],
    slope_text: Callable[[bool], str],
) -> str:
    """Pick the side that moved the knee. knee ∝ flat / slope, so the knee's shift is
    (flat / model flat) ÷ (slope / model slope): flat_eff and slope_eff are those two ratios."""
    wants_up = measured > predicted
    # Which factor moved the knee the way it moved, and by how much (in log terms)?
    flat_push = math.log(flat_eff) if flat_eff > 0 else 0.0
    slope_push = -math.log(slope_eff) if slope_eff > 0 else 0.0
    candidates = []
    if (flat_push > 0) == wants_up and flat_push != 0:
        candidates.append((abs(flat_push), flat_text(wants_up)))
    if (slope_push > 0) == wants_up and slope_push != 0:
        candidates.append((abs(slope_push), slope_text(wants_up)))
    candidates.sort(key=lambda c: -c[0])
    return candidates[0][1] if candidates else ""

