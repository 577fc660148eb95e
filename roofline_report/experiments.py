"""The lab notebook (no jax): experiments that state a prediction, test it, and say why it failed.

Each experiment states a hypothesis, the model's prediction (a :class:`~roofline_report.model.
Quantity` with its kind), the measurement on this machine (``kind: measured``), and a verdict
computed by :func:`verdict`. When a prediction fails, the likely reason is chosen by code from the
recorded evidence (kernel counts, converts in the HLO, cache size, achieved rates, timing spread),
never typed in for a given machine.

Predictions use this machine's measured ceilings when :func:`analyse` gets them (``kind:
measured``) and fall back on the hypothetical budgets otherwise (``kind: hypothetical``); the
prediction's note says which. Pure counting gives ``kind: analytic``.

Per-call times are the fastest sample of each timing record (the ``min`` of its per-call
statistics), as the measured ceilings are: noise from other processes only ever slows a kernel.
The medians stay in each experiment's ``details``.

:func:`exercises` poses one exercise after each group of experiments; every number in it comes
from :mod:`roofline_report.model`. Everything returned is plain, deterministic JSON.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roofline_report import model
from roofline_report.analysis import words
from roofline_report.errors import InputError
from roofline_report.model import Kind, Quantity
from roofline_report.timing import Timing
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

# The exercises' inputs (sizes and the budgets they assume); every answer is computed.
EX_STREAM_ELEMENTS = 1 << 24
EX_FUSION_SHAPE = (2048, 4, 2048)
EX_SEED_SHAPE = (48, 24, 12)
EX_BATCH_D = 1024
EX_SCAN_SIZE, EX_SCAN_STEPS = 256, 10
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
        "predicted": _finite(predicted),
        "measured": _finite(measured),
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
        error = max(m / p, p / m)
        held = error <= tolerance
        size = f"a factor of {error:.2f}"
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
    percent = 100 * fraction
    return f"{percent:.0f}%" if percent >= 1 else f"{percent:.1g}%"


def _show(value: float, unit: str) -> str:
    if unit == "×":
        return f"{value:.2f}×"
    return f"{_number(value)} {unit}".strip()


def _number(value: float) -> str:
    """Three significant digits, positional below 1e7: '12500', '10.2', '0.00123'."""
    if abs(value) >= 100 and abs(value) < 1e7:
        return f"{value:.0f}"
    return f"{value:.3g}"


def _finite(value: object) -> float | None:
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
        _finite(x) is not None and _finite(t) is not None and x > 0 and t > 0 for x, t in points
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
            "ridge": self.peak / self.bandwidth,
            "compute_by_dtype": dict(sorted(self.compute.items())),
        }


def budgets(ceilings: Mapping[str, Any] | None, *, peak: float, bandwidth: float) -> Budgets:
    """Resolve the budgets from measured ``ceilings`` (or None) and the hypothetical ones.

    Measured peak and bandwidth are used together or not at all (mixing would give a ridge of
    neither machine). Raises InputError when the hypothetical budgets are not positive numbers.
    """
    for name, value in (("peak", peak), ("bandwidth", bandwidth)):
        if _finite(value) is None or value <= 0:
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
    value = _finite(entry.get("value"))
    return value if value is not None and value > 0 else None


def _weaker(*kinds: Kind) -> Kind:
    """The kind of a number derived from several: hypothetical if any input is."""
    if Kind.HYPOTHETICAL in kinds:
        return Kind.HYPOTHETICAL
    if Kind.MEASURED in kinds:
        return Kind.MEASURED
    return Kind.ANALYTIC


# -------------------------------------------------------------------------- reading raw input


class _Entry:
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
        number = _finite(value)
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


def _seconds(t: Timing) -> float:
    return t.per_call.min


def _time_json(t: Timing) -> dict[str, Any]:
    s = t.per_call
    return {"min": s.min, "median": s.median, "spread": s.spread, "unstable": s.unstable}


def _noise(named: Mapping[str, Timing]) -> str:
    """A noise explanation when some timing was flagged unstable, else ''."""
    for name, t in named.items():
        if t.per_call.unstable:
            return (
                f"timing noise: the {name} samples spread {_pct(t.per_call.spread)} "
                f"(flagged unstable); rerun on an idle machine"
            )
    return ""


_UNEXPLAINED = "no recorded evidence explains the gap; rerun on an idle machine to rule out noise"


def _first(*reasons: str) -> str:
    return next((r for r in reasons if r), _UNEXPLAINED)


def _cache_note(data_bytes: int, cache_bytes: int | None) -> str:
    if cache_bytes and data_bytes <= cache_bytes:
        return (
            f"the data ({format_si(data_bytes, 'B')}) fit in the last-level cache "
            f"({format_si(cache_bytes, 'B')}), so repeated calls are served by the cache"
        )
    return ""


# -------------------------------------------------------------------------------- experiments


def analyse(
    raw: Mapping[str, Any],
    *,
    ceilings: Mapping[str, Any] | None,
    peak: float,
    bandwidth: float,
) -> list[dict[str, Any]]:
    """Turn the lab's raw measurements (see :func:`roofline_report.lab.run_lab`) into the notebook.

    Returns one record per experiment in :data:`EXPERIMENT_IDS` order::

        {"id", "title", "hypothesis", "prediction": Quantity json, "measurement": Quantity json
         (kind measured), "verdict": verdict(...), "details": {...}, "likely_reason": str}

    ``likely_reason`` is '' unless the verdict failed. An experiment that is missing from
    ``raw`` or recorded ``available: False`` gets ``verdict.status == "unavailable"``.
    Raises InputError when ``raw`` (or a present experiment's record) is malformed.
    """
    if not isinstance(raw, Mapping) or not isinstance(raw.get("experiments"), Mapping):
        raise InputError("lab measurements: expected an object with an 'experiments' object")
    b = budgets(ceilings, peak=peak, bandwidth=bandwidth)
    cache = raw.get("cache_bytes")
    cache_bytes = cache if isinstance(cache, int) and not isinstance(cache, bool) else None
    records = []
    for exp_id in EXPERIMENT_IDS:
        data = raw["experiments"].get(exp_id)
        if data is None:
            records.append(_unavailable(exp_id, "not in the recorded measurements"))
            continue
        if not isinstance(data, Mapping):
            raise InputError(f"lab measurements: experiment {exp_id!r} must be an object")
        if data.get("available") is not True:
            reason = data.get("reason")
            records.append(_unavailable(exp_id, str(reason) if reason else "not measured"))
            continue
        records.append(_BUILDERS[exp_id](_Entry(exp_id, data), b, cache_bytes))
    return records


_UNITS = {
    "doubled_traffic": "×",
    "fusion": "×",
    "bf16_memory": "×",
    "bf16_compute": "×",
    "batching": "columns",
    "dispatch": "elements",
    "scan": "×",
}


def _unavailable(exp_id: str, reason: str) -> dict[str, Any]:
    unit = _UNITS[exp_id]
    v = verdict(None, None, tolerance=TOLERANCE[exp_id], log_scale=exp_id in LOG_SCALE)
    v["text"] = f"unavailable: {reason}"
    return {
        "id": exp_id,
        "title": TITLES[exp_id],
        "hypothesis": _HYPOTHESES[exp_id],
        "prediction": Quantity(None, unit, Kind.ANALYTIC, f"not computed: {reason}").to_json(),
        "measurement": Quantity(None, unit, Kind.MEASURED, reason).to_json(),
        "verdict": v,
        "details": {},
        "likely_reason": "",
    }


_HYPOTHESES = {
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


def _record(
    exp_id: str,
    prediction: Quantity,
    measured: float | None,
    measured_note: str,
    reason: Callable[[float], str],
    details: dict[str, Any],
) -> dict[str, Any]:
    """Assemble an experiment; ``reason(measured)`` is consulted only when the verdict fails."""
    unit = _UNITS[exp_id]
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
        "hypothesis": _HYPOTHESES[exp_id],
        "prediction": prediction.to_json(),
        "measurement": Quantity(measured, unit, Kind.MEASURED, measured_note).to_json(),
        "verdict": v,
        "details": details,
        "likely_reason": likely,
    }


def _ratio_note(top: str, bottom: str) -> str:
    return f"per-call time of {top} ÷ per-call time of {bottom} (fastest samples)"


def _doubled_traffic(e: _Entry, b: Budgets, cache_bytes: int | None) -> dict[str, Any]:
    n, s = e.count("elements"), e.count("itemsize")
    one, two = e.timing("one_array"), e.timing("two_arrays")
    flops = 2 * n
    bytes_one, bytes_two = s * n, 2 * s * n
    t_one = model.predicted_seconds(flops, bytes_one, b.peak, b.bandwidth, b.dispatch)
    t_two = model.predicted_seconds(flops, bytes_two, b.peak, b.bandwidth, b.dispatch)
    bounds = [model.bound_by(flops / x, b.peak, b.bandwidth) for x in (bytes_one, bytes_two)]
    predicted = t_two / t_one
    prediction = Quantity(
        predicted,
        "×",
        b.kind,
        f"predicted_seconds(two arrays) ÷ predicted_seconds(one array), {bounds[0]}-bound and "
        f"{bounds[1]}-bound; {b.note}",
    )
    measured = _seconds(two) / _seconds(one)
    achieved = [bytes_one / _seconds(one), bytes_two / _seconds(two)]

    def reason(m: float) -> str:
        low = ""
        if m < predicted and achieved[0] < LOW_EFFICIENCY * b.bandwidth:
            low = (
                f"the one-array kernel reaches only {format_si(achieved[0], 'B/s')} of the "
                f"{format_si(b.bandwidth, 'B/s')} bandwidth ceiling: something other than memory "
                f"bounds it, so more bytes cost less than proportionally more time"
            )
        elif m > predicted and achieved[1] < LOW_EFFICIENCY * achieved[0]:
            low = (
                f"the two-array kernel streams only {format_si(achieved[1], 'B/s')} against "
                f"{format_si(achieved[0], 'B/s')} for one array"
            )
        return _first(
            _cache_note(bytes_two, cache_bytes) if m < predicted else "",
            low,
            _noise({"one-array": one, "two-array": two}),
        )

    details = {
        "elements": n,
        "itemsize": s,
        "flops": flops,
        "bytes": {"one_array": bytes_one, "two_arrays": bytes_two},
        "intensity": {"one_array": flops / bytes_one, "two_arrays": flops / bytes_two},
        "bound": {"one_array": bounds[0], "two_arrays": bounds[1]},
        "predicted_seconds": {"one_array": t_one, "two_arrays": t_two},
        "seconds": {"one_array": _time_json(one), "two_arrays": _time_json(two)},
        "achieved_bandwidth": {"one_array": achieved[0], "two_arrays": achieved[1]},
        "median_ratio": two.per_call.median / one.per_call.median,
        "cache_bytes": cache_bytes,
        "budgets": b.to_json(),
    }
    return _record(
        "doubled_traffic",
        prediction,
        measured,
        _ratio_note("sum(w·x)", "sum(2·x)"),
        reason,
        details,
    )


def fusion_traffic(m: int, k: int, n: int, itemsize: int) -> dict[str, int]:
    """Minimum traffic of tanh(a@b) fused (the contract's) and with the m×n product in memory
    (written once and read back once more)."""
    c = model.contract(m, k, n, itemsize)
    intermediate = itemsize * m * n
    return {
        "flops": c.flops,
        "fused": c.minimum_bytes,
        "unfused": c.minimum_bytes + 2 * intermediate,
        "intermediate": intermediate,
    }


def _fusion(e: _Entry, b: Budgets, cache_bytes: int | None) -> dict[str, Any]:
    m, k, n, s = e.count("m"), e.count("k"), e.count("n"), e.count("itemsize")
    fused, unfused = e.timing("fused"), e.timing("unfused")
    traffic = fusion_traffic(m, k, n, s)
    t_f = model.predicted_seconds(
        traffic["flops"], traffic["fused"], b.peak, b.bandwidth, b.dispatch
    )
    t_u = model.predicted_seconds(
        traffic["flops"], traffic["unfused"], b.peak, b.bandwidth, b.dispatch
    )
    bound = model.bound_by(traffic["flops"] / traffic["fused"], b.peak, b.bandwidth)
    prediction = Quantity(
        t_u / t_f,
        "×",
        b.kind,
        f"traffic ratio {traffic['unfused'] / traffic['fused']:.3g} (unfused ÷ fused minimum "
        f"bytes) through predicted_seconds; the fused shape is {bound}-bound; {b.note}",
    )
    measured = _seconds(unfused) / _seconds(fused)
    kernels = {
        "fused": e.opt_count("kernels", "fused"),
        "unfused": e.opt_count("kernels", "unfused"),
    }

    def reason(ratio: float) -> str:
        not_fused = ""
        if kernels["fused"] is not None and kernels["fused"] > 1:
            same = kernels["fused"] == kernels["unfused"]
            not_fused = (
                f"XLA did not fuse the dot and the tanh on this backend: the 'fused' variant "
                f"runs {kernels['fused']} kernels (the forced one {kernels['unfused']}), so both "
                f"write and re-read the {format_si(traffic['intermediate'], 'B')} product and "
                f"fusion has nothing to save"
                + ("; any gap between the two is noise" if same and abs(ratio - 1) > 0.1 else "")
            )
        return _first(
            not_fused,
            _cache_note(traffic["intermediate"], cache_bytes),
            _noise({"fused": fused, "unfused": unfused}),
            f"the fused kernel is {bound}-bound under these ceilings" if bound != "memory" else "",
        )

    details = {
        "m": m,
        "k": k,
        "n": n,
        "itemsize": s,
        "flops": traffic["flops"],
        "transcendentals": m * n,
        "bytes": {"fused": traffic["fused"], "unfused": traffic["unfused"]},
        "intermediate_bytes": traffic["intermediate"],
        "traffic_ratio": traffic["unfused"] / traffic["fused"],
        "bound": bound,
        "kernels": kernels,
        "predicted_seconds": {"fused": t_f, "unfused": t_u},
        "seconds": {"fused": _time_json(fused), "unfused": _time_json(unfused)},
        "median_ratio": unfused.per_call.median / fused.per_call.median,
        "cache_bytes": cache_bytes,
        "budgets": b.to_json(),
    }
    return _record(
        "fusion",
        prediction,
        measured,
        _ratio_note("the forced-to-memory variant", "tanh(a@b)"),
        reason,
        details,
    )


def _bf16_memory(e: _Entry, b: Budgets, cache_bytes: int | None) -> dict[str, Any]:
    n = e.count("elements")
    f32, bf16 = e.timing("float32"), e.timing("bfloat16")
    bytes_ = {"float32": 2 * F32 * n, "bfloat16": 2 * BF16 * n}
    t32 = model.predicted_seconds(n, bytes_["float32"], b.peak, b.bandwidth, b.dispatch)
    t16 = model.predicted_seconds(n, bytes_["bfloat16"], b.peak, b.bandwidth, b.dispatch)
    prediction = Quantity(
        t32 / t16,
        "×",
        b.kind,
        f"predicted_seconds of n flops over 2·itemsize·n bytes (read + write), float32 ÷ "
        f"bfloat16; {b.note}",
    )
    measured = _seconds(f32) / _seconds(bf16)
    converts = {
        "float32": e.opt_count("converts", "float32"),
        "bfloat16": e.opt_count("converts", "bfloat16"),
    }
    achieved = {k: bytes_[k] / _seconds(t) for k, t in (("float32", f32), ("bfloat16", bf16))}

    def reason(ratio: float) -> str:
        upcast = ""
        c16, c32 = converts["bfloat16"], converts["float32"] or 0
        if c16 is not None and c16 > c32:
            upcast = (
                f"this backend computes bfloat16 arithmetic in float32: the bfloat16 kernel "
                f"holds {c16} converts, so conversion work, not memory, bounds it (it streams "
                f"{format_si(achieved['bfloat16'], 'B/s')} against "
                f"{format_si(achieved['float32'], 'B/s')} for float32)"
            )
        return _first(
            upcast,
            _cache_note(bytes_["float32"] // 2, cache_bytes) if ratio < 2 else "",
            _noise({"float32": f32, "bfloat16": bf16}),
        )

    details = {
        "elements": n,
        "bytes": bytes_,
        "predicted_seconds": {"float32": t32, "bfloat16": t16},
        "seconds": {"float32": _time_json(f32), "bfloat16": _time_json(bf16)},
        "achieved_bandwidth": achieved,
        "converts": converts,
        "median_ratio": f32.per_call.median / bf16.per_call.median,
        "cache_bytes": cache_bytes,
        "budgets": b.to_json(),
    }
    return _record(
        "bf16_memory", prediction, measured, _ratio_note("float32", "bfloat16"), reason, details
    )


def _bf16_compute(e: _Entry, b: Budgets, cache_bytes: int | None) -> dict[str, Any]:
    size = e.count("size")
    f32, bf16 = e.timing("float32"), e.timing("bfloat16")
    c32, c16 = model.contract(size, size, size, F32), model.contract(size, size, size, BF16)
    m32, m16 = b.compute.get("float32"), b.compute.get("bfloat16")
    if m32 is not None and m16 is not None:
        kind, p32, p16 = Kind.MEASURED, m32, m16
        note = (
            f"measured compute ceilings: bfloat16 {format_si(m16, 'FLOP/s')}, float32 "
            f"{format_si(m32, 'FLOP/s')}"
        )
    else:
        kind, p32 = Kind.HYPOTHETICAL, b.peak
        p16 = HYPOTHETICAL_BF16_SPEEDUP * p32
        note = (
            f"no measured bfloat16 and float32 compute ceilings: assumes bfloat16 runs at "
            f"{HYPOTHETICAL_BF16_SPEEDUP:g}× the float32 peak ({format_si(p32, 'FLOP/s')})"
        )
    t32 = model.predicted_seconds(c32.flops, c32.minimum_bytes, p32, b.bandwidth, b.dispatch)
    t16 = model.predicted_seconds(c16.flops, c16.minimum_bytes, p16, b.bandwidth, b.dispatch)
    prediction = Quantity(
        t32 / t16, "×", _weaker(kind, b.kind), f"predicted_seconds float32 ÷ bfloat16; {note}"
    )
    measured = _seconds(f32) / _seconds(bf16)
    converts = {
        "float32": e.opt_count("converts", "float32"),
        "bfloat16": e.opt_count("converts", "bfloat16"),
    }

    def reason(ratio: float) -> str:
        upcast = ""
        slower = ratio < t32 / t16  # an upcast explains a slow bfloat16, not a fast one
        if not slower:
            upcast = ""
        elif m16 is not None and m32 is not None and m16 <= m32:
            upcast = (
                f"this backend upcasts bfloat16 matmuls to float32: its measured bfloat16 "
                f"ceiling ({format_si(m16, 'FLOP/s')}) is no higher than float32's "
                f"({format_si(m32, 'FLOP/s')}), so bfloat16 gains nothing"
            )
        elif converts["bfloat16"]:
            upcast = (
                f"this backend upcasts bfloat16 matmuls to float32 ({converts['bfloat16']} "
                f"converts in the compiled bfloat16 matmul), so bfloat16 gains nothing"
            )
        return _first(upcast, _noise({"float32": f32, "bfloat16": bf16}))

    details = {
        "size": size,
        "flops": c32.flops,
        "bytes": {"float32": c32.minimum_bytes, "bfloat16": c16.minimum_bytes},
        "intensity": {"float32": c32.intensity, "bfloat16": c16.intensity},
        "ceilings": {"float32": p32, "bfloat16": p16},
        "predicted_seconds": {"float32": t32, "bfloat16": t16},
        "seconds": {"float32": _time_json(f32), "bfloat16": _time_json(bf16)},
        "achieved": {"float32": c32.flops / _seconds(f32), "bfloat16": c16.flops / _seconds(bf16)},
        "converts": converts,
        "median_ratio": f32.per_call.median / bf16.per_call.median,
        "budgets": b.to_json(),
    }
    return _record(
        "bf16_compute", prediction, measured, _ratio_note("float32", "bfloat16"), reason, details
    )


def batch_ridge(d: int, ridge: float, itemsize: int = F32) -> float | None:
    """Batch b* where W[d,d] @ X[d,b] reaches intensity ``ridge``: solving
    2d²b / (s(d² + 2db)) = R gives b* = s·R·d / (2(d − s·R)). None when d <= s·R: the intensity
    tends to d/s as b grows and never reaches the ridge."""
    if d <= itemsize * ridge:
        return None
    return itemsize * ridge * d / (2 * (d - itemsize * ridge))


def _sweep_figure(
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


_KNEE_NOTE = (
    "knee of the measured times: where the flat line through the small sizes meets the "
    "proportional line through the large ones (knee_fit)"
)
_NO_KNEE = "no knee: the sweep needs at least three points with positive times"


def _knee_reason(
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


def _batching(e: _Entry, b: Budgets, cache_bytes: int | None) -> dict[str, Any]:
    d, s = e.count("d"), e.count("itemsize")
    batches = e.ints("batches")
    times_t = e.timings("times", len(batches))
    times = [_seconds(t) for t in times_t]
    ridge = model.ridge(b.peak, b.bandwidth)
    b_star = batch_ridge(d, ridge, s)
    contracts = [model.contract(d, d, x, s) for x in batches]
    model_times = [
        model.predicted_seconds(c.flops, c.minimum_bytes, b.peak, b.bandwidth, b.dispatch)
        for c in contracts
    ]
    note = (
        f"b* = s·R·d / (2(d − s·R)) at the ridge R = {ridge:.3g} FLOP/B; {b.note}"
        if b_star is not None
        else f"never reached: the intensity tends to d/s = {d / s:.3g} FLOP/B, under the ridge "
        f"{ridge:.3g} FLOP/B; {b.note}"
    )
    prediction = Quantity(b_star, "columns", b.kind, note)
    fit = knee_fit(batches, times)
    measured = None if fit is None else float(fit["knee"])
    how = _KNEE_NOTE if fit is not None else _NO_KNEE
    w_bytes = s * d * d
    flat_bw = contracts[0].minimum_bytes / times[0]
    top_rate = contracts[-1].flops / times[-1]

    def reason(m: float) -> str:
        if fit is not None and fit["at_edge"]:
            return (
                f"the fitted knee ({_number(m)}) lies outside the sweep "
                f"({batches[0]}..{batches[-1]}): widen it"
            )
        assert fit is not None and b_star is not None
        model_flat = contracts[0].minimum_bytes / b.bandwidth
        model_slope = 2 * d * d / b.peak

        def flat_text(up: bool) -> str:
            if up:
                return (
                    f"the small batches read W at only {format_si(flat_bw, 'B/s')} of the "
                    f"{format_si(b.bandwidth, 'B/s')} bandwidth ceiling: the flat part is "
                    f"higher than the model's, which moves the knee to larger batches"
                )
            cached = _cache_note(w_bytes, cache_bytes)
            return (
                f"the small batches read W at {format_si(flat_bw, 'B/s')}, above the "
                f"{format_si(b.bandwidth, 'B/s')} ceiling"
                + (f" ({cached})" if cached else "")
                + ": the flat part is lower, which lowers the effective ridge and the knee"
            )

        def slope_text(up: bool) -> str:
            if up:
                return (
                    f"the large batches run at {format_si(top_rate, 'FLOP/s')}, above the "
                    f"{format_si(b.peak, 'FLOP/s')} compute ceiling, which moves the knee right"
                )
            return (
                f"the large batches reach only {format_si(top_rate, 'FLOP/s')} of the "
                f"{format_si(b.peak, 'FLOP/s')} compute ceiling: the proportional part is "
                f"steeper, which moves the knee to smaller batches"
            )

        return _first(
            _knee_reason(
                m,
                b_star,
                fit["flat"] / model_flat,
                fit["slope"] / model_slope,
                flat_text,
                slope_text,
            ),
            _noise({f"b={x}": t for x, t in zip(batches, times_t, strict=True)}),
        )

    details = {
        "d": d,
        "itemsize": s,
        "batches": batches,
        "intensity": [c.intensity for c in contracts],
        "ridge": ridge,
        "seconds": times,
        "median_seconds": [t.per_call.median for t in times_t],
        "model_seconds": model_times,
        "fit": fit,
        "w_bytes": w_bytes,
        "small_batch_bandwidth": flat_bw,
        "large_batch_rate": top_rate,
        "cache_bytes": cache_bytes,
        "figure": _sweep_figure(batches, times, fit, model_times, b.kind, "batch columns b"),
        "budgets": b.to_json(),
    }
    return _record("batching", prediction, measured, how, reason, details)


def dispatch_size(dispatch_s: float, bandwidth: float, bytes_per_element: int) -> float:
    """n* where an elementwise kernel's traffic time equals the dispatch floor:
    n* · bytes_per_element / bandwidth = dispatch."""
    return dispatch_s * bandwidth / bytes_per_element


def _dispatch(e: _Entry, b: Budgets, cache_bytes: int | None) -> dict[str, Any]:
    s = e.count("itemsize")
    sizes = e.ints("sizes")
    times_t = e.timings("times", len(sizes))
    times = [_seconds(t) for t in times_t]
    per_element = 2 * s
    n_star = dispatch_size(b.dispatch, b.bandwidth, per_element)
    prediction = Quantity(
        n_star,
        "elements",
        _weaker(b.kind, b.dispatch_kind),
        f"dispatch × bandwidth ÷ {per_element} B per element; {b.dispatch_note}; {b.note}",
    )
    model_times = [
        model.predicted_seconds(n, per_element * n, b.peak, b.bandwidth, b.dispatch) for n in sizes
    ]
    fit = knee_fit(sizes, times)
    measured = None if fit is None else float(fit["knee"])
    how = _KNEE_NOTE if fit is not None else _NO_KNEE

    def reason(m: float) -> str:
        if fit is not None and fit["at_edge"]:
            return (
                f"the fitted knee ({_number(m)}) lies outside the sweep ({sizes[0]}..{sizes[-1]}): "
                f"widen it"
            )
        assert fit is not None
        stream_bw = per_element / fit["slope"]

        def flat_text(up: bool) -> str:
            relation = "above" if up else "below"
            return (
                f"enqueued calls cost {format_si(fit['flat'], 's')} each, {relation} the "
                f"{format_si(b.dispatch, 's')} dispatch floor (measured blocking after every "
                f"call), which moves the knee"
            )

        def slope_text(up: bool) -> str:
            if up:
                return (
                    f"the large calls stream {format_si(stream_bw, 'B/s')}, above the "
                    f"{format_si(b.bandwidth, 'B/s')} ceiling (the data stay in cache), which "
                    f"moves the knee right"
                )
            return (
                f"the large calls stream only {format_si(stream_bw, 'B/s')} of the "
                f"{format_si(b.bandwidth, 'B/s')} ceiling: y = 2·x writes a freshly allocated "
                f"output on every call, whereas the ceiling is measured in place"
            )

        return _first(
            _knee_reason(
                m,
                n_star,
                fit["flat"] / b.dispatch,
                fit["slope"] / (per_element / b.bandwidth),
                flat_text,
                slope_text,
            ),
            _noise({f"n={x}": t for x, t in zip(sizes, times_t, strict=True)}),
        )

    details = {
        "itemsize": s,
        "bytes_per_element": per_element,
        "sizes": sizes,
        "seconds": times,
        "median_seconds": [t.per_call.median for t in times_t],
        "model_seconds": model_times,
        "fit": fit,
        "cache_bytes": cache_bytes,
        "figure": _sweep_figure(sizes, times, fit, model_times, prediction.kind, "elements n"),
        "budgets": b.to_json(),
    }
    return _record("dispatch", prediction, measured, how, reason, details)


def _scan(e: _Entry, b: Budgets, cache_bytes: int | None) -> dict[str, Any]:
    size, steps = e.count("size"), e.count("steps")
    scan, body = e.timing("scan"), e.timing("body")
    c = model.contract(size, size, size, F32)
    t_body = model.predicted_seconds(c.flops, c.minimum_bytes, b.peak, b.bandwidth, b.dispatch)
    # The carry stays on the device between steps: the scan's minimum traffic is one contract.
    t_scan = model.predicted_seconds(
        steps * c.flops, c.minimum_bytes, b.peak, b.bandwidth, b.dispatch
    )
    prediction = Quantity(
        t_scan / t_body,
        "×",
        _weaker(b.kind, b.dispatch_kind),
        f"predicted_seconds of {steps} bodies ÷ one body, our count ({steps} × "
        f"{c.flops} flops); {b.note}",
    )
    measured = _seconds(scan) / _seconds(body)
    xla = {"scan": e.opt_number("xla_flops", "scan"), "body": e.opt_number("xla_flops", "body")}
    ours = {"scan": e.opt_number("our_flops", "scan"), "body": e.opt_number("our_flops", "body")}
    kernels = {"scan": e.opt_count("kernels", "scan"), "body": e.opt_count("kernels", "body")}
    xla_ratio = xla["scan"] / xla["body"] if xla["scan"] is not None and xla["body"] else None

    def reason(m: float) -> str:
        p = t_scan / t_body
        closer_to_xla = ""
        if (
            xla_ratio is not None
            and xla_ratio > 0
            and abs(math.log(m / xla_ratio)) < abs(math.log(m / p))
        ):
            closer_to_xla = (
                f"the scan ran about as fast as {m:.2g} body calls, nearer XLA's implied "
                f"{xla_ratio:.2g}×: the body may have been hoisted or simplified by the compiler"
            )
        overhead = ""
        if m < p and _seconds(body) < NEAR_DISPATCH * b.dispatch:
            overhead = (
                f"one body call ({format_si(_seconds(body), 's')}) is within "
                f"{NEAR_DISPATCH:g}× of the dispatch floor ({format_si(b.dispatch, 's')}): its "
                f"time is mostly overhead, so the ratio comes out low"
            )
        per_step = ""
        if m > p and kernels["scan"] is not None and kernels["body"]:
            per_step = (
                f"the scan runs {kernels['scan']} kernels ({kernels['scan'] / steps:.2g} per "
                f"step) against {kernels['body']} for one body call: the loop's bookkeeping "
                f"(carry copies, the counter) adds work each step"
            )
        return _first(closer_to_xla, overhead, per_step, _noise({"scan": scan, "body": body}))

    details = {
        "size": size,
        "steps": steps,
        "body_flops": c.flops,
        "scan_flops": steps * c.flops,
        "xla_flops": xla,
        "our_flops": ours,
        "xla_ratio": xla_ratio,
        "kernels": kernels,
        "predicted_seconds": {"scan": t_scan, "body": t_body},
        "seconds": {"scan": _time_json(scan), "body": _time_json(body)},
        "median_ratio": scan.per_call.median / body.per_call.median,
        "budgets": b.to_json(),
    }
    return _record(
        "scan",
        prediction,
        measured,
        _ratio_note(f"the {steps}-step scan", "one body call"),
        reason,
        details,
    )


_BUILDERS: dict[str, Callable[[_Entry, Budgets, int | None], dict[str, Any]]] = {
    "doubled_traffic": _doubled_traffic,
    "fusion": _fusion,
    "bf16_memory": _bf16_memory,
    "bf16_compute": _bf16_compute,
    "batching": _batching,
    "dispatch": _dispatch,
    "scan": _scan,
}


# ---------------------------------------------------------------------------------- exercises


def exercises(
    *, peak: float, bandwidth: float, ceilings: Mapping[str, Any] | None
) -> list[dict[str, Any]]:
    """One exercise after each group of experiments, every number computed by the model.

    ``peak``/``bandwidth`` are the hypothetical budgets the questions assume; when ``ceilings``
    holds measured ones, answers that depend on the machine also give this machine's figure.
    Returns ``[{"id", "after": experiment id, "question", "solution": [str], "answer": {...}}]``.
    Raises InputError for non-positive budgets.
    """
    b = budgets(None, peak=peak, bandwidth=bandwidth)
    measured = budgets(ceilings, peak=peak, bandwidth=bandwidth)
    has_measured = measured.kind is Kind.MEASURED
    return [
        _ex_doubled(b),
        _ex_fusion(b),
        _ex_bf16(b),
        _ex_batching(b, measured if has_measured else None),
        _ex_dispatch(b, measured if measured.dispatch_kind is Kind.MEASURED else None),
        _ex_scan(b),
    ]


def _gflops(x: float) -> str:
    return format_si(x, "FLOP/s")


def _ex_doubled(b: Budgets) -> dict[str, Any]:
    n = EX_STREAM_ELEMENTS
    flops = 2 * n
    rows = []
    for arrays in (1, 2):
        traffic = arrays * F32 * n
        intensity = flops / traffic
        rows.append(
            {
                "bytes": traffic,
                "intensity": intensity,
                "attainable": model.attainable(intensity, b.peak, b.bandwidth),
                "seconds": model.predicted_seconds(flops, traffic, b.peak, b.bandwidth),
            }
        )
    ratio = rows[1]["seconds"] / rows[0]["seconds"]
    xs = [rows[0]["intensity"], rows[1]["intensity"]]
    ridge = model.ridge(b.peak, b.bandwidth)
    return {
        "id": "ex_doubled_traffic",
        "after": "doubled_traffic",
        "question": (
            f"sum(2·x) and sum(w·x) on n = {n} float32 elements both do 2n flops; the first reads "
            f"one array, the second two. Under {_gflops(b.peak)} and "
            f"{format_si(b.bandwidth, 'B/s')}, what are their intensities, attainable rates and "
            f"times, and the time ratio?"
        ),
        "solution": [
            f"work: 2n = {flops} flops for both",
            f"traffic: {rows[0]['bytes']} B for one array, {rows[1]['bytes']} B for two",
            f"intensity: {rows[0]['intensity']:.3g} and {rows[1]['intensity']:.3g} FLOP/B, "
            f"{words.sides(xs, ridge)} {ridge:.3g} FLOP/B: {words.bounds_text(xs, ridge)}",
            f"attainable: {_gflops(rows[0]['attainable'])} and {_gflops(rows[1]['attainable'])}",
            f"times: {format_si(rows[0]['seconds'], 's')} and "
            f"{format_si(rows[1]['seconds'], 's')}, ratio {ratio:.3g}",
        ],
        "answer": {
            "flops": flops,
            "one_array": rows[0],
            "two_arrays": rows[1],
            "time_ratio": ratio,
        },
    }


def _ex_fusion(b: Budgets) -> dict[str, Any]:
    m, k, n = EX_FUSION_SHAPE
    t = fusion_traffic(m, k, n, F32)
    seconds = {
        key: model.predicted_seconds(t["flops"], t[key], b.peak, b.bandwidth)
        for key in ("fused", "unfused")
    }
    ratio = seconds["unfused"] / seconds["fused"]
    fused_x = t["flops"] / t["fused"]
    unfused_x = t["flops"] / t["unfused"]
    ridge = model.ridge(b.peak, b.bandwidth)
    return {
        "id": "ex_fusion",
        "after": "fusion",
        "question": (
            f"tanh(a@b) with a ({m},{k}) and b ({k},{n}) in float32: what is the minimum traffic "
            f"when the tanh is fused into the matmul, and when the ({m},{n}) product goes "
            f"through memory? What time ratio do {_gflops(b.peak)} and "
            f"{format_si(b.bandwidth, 'B/s')} predict?"
        ),
        "solution": [
            f"work: 2mkn = {t['flops']} flops (the tanh is counted apart)",
            f"fused: 4(mk + kn + mn) = {t['fused']} B",
            f"unfused: add the product written and read back, 2 × 4mn = "
            f"{2 * t['intermediate']} B, for {t['unfused']} B",
            f"intensity: {fused_x:.3g} FLOP/B fused and {unfused_x:.3g} FLOP/B unfused, "
            f"{words.sides([fused_x, unfused_x], ridge)} {ridge:.3g} FLOP/B: "
            f"{words.bounds_text([fused_x, unfused_x], ridge)}"
            + (", so time follows traffic"
               if words.bound(unfused_x, ridge) == words.bound(fused_x, ridge) == "memory"
               else ""),
            f"times: {format_si(seconds['fused'], 's')} and {format_si(seconds['unfused'], 's')}"
            f", ratio {ratio:.3g}",
        ],
        "answer": {
            "flops": t["flops"],
            "fused_bytes": t["fused"],
            "unfused_bytes": t["unfused"],
            "intensity_fused": t["flops"] / t["fused"],
            "seconds": seconds,
            "time_ratio": ratio,
        },
    }


def _ex_bf16(b: Budgets) -> dict[str, Any]:
    m, k, n = EX_SEED_SHAPE
    rows: dict[str, dict[str, Any]] = {}
    for name, s in (("float32", F32), ("bfloat16", BF16)):
        c = model.contract(m, k, n, s)
        rows[name] = {
            "flops": c.flops,
            "minimum_bytes": c.minimum_bytes,
            "intensity": c.intensity,
            "attainable": model.attainable(c.intensity, b.peak, b.bandwidth),
            "bound": model.bound_by(c.intensity, b.peak, b.bandwidth),
        }
    f, h = rows["float32"], rows["bfloat16"]
    return {
        "id": "ex_bf16",
        "after": "bf16_compute",
        "question": (
            f"The seed's exercise, ({m},{k})×({k},{n}), in bfloat16: what are its minimum "
            f"traffic, intensity and attainable rate under {_gflops(b.peak)} and "
            f"{format_si(b.bandwidth, 'B/s')}, against float32?"
        ),
        "solution": [
            f"work is unchanged: 2mkn = {h['flops']} flops",
            f"traffic halves: 2(mk + kn + mn) = {h['minimum_bytes']} B (float32: "
            f"{f['minimum_bytes']} B)",
            f"intensity doubles: {h['intensity']:.4g} FLOP/B (float32: {f['intensity']:.4g})",
            f"against the ridge {model.ridge(b.peak, b.bandwidth):.3g} FLOP/B: bfloat16 is "
            f"{h['bound']}-bound at {_gflops(h['attainable'])}; float32 is {f['bound']}-bound at "
            f"{_gflops(f['attainable'])}",
        ],
        "answer": rows,
    }


def _ex_batching(b: Budgets, measured: Budgets | None) -> dict[str, Any]:
    d = EX_BATCH_D
    ridge = model.ridge(b.peak, b.bandwidth)
    b_star = batch_ridge(d, ridge, F32)
    first = None if b_star is None else math.ceil(b_star)
    below = None if first is None or first <= 1 else model.contract(d, d, first - 1, F32)
    at = None if first is None else model.contract(d, d, first, F32)
    answer: dict[str, Any] = {
        "d": d,
        "ridge": ridge,
        "b_star": b_star,
        "first_batch_at_ridge": first,
        "intensity_at_first": None if at is None else at.intensity,
        "intensity_below_first": None if below is None else below.intensity,
        "measured_ridge": None,
        "measured_b_star": None,
    }
    steps = [
        f"intensity of W[{d},{d}] @ X[{d},b]: 2d²b / (4(d² + 2db)) (the contract with m = k = "
        f"{d}, n = b)",
        f"ridge: {_gflops(b.peak)} ÷ {format_si(b.bandwidth, 'B/s')} = {ridge:.3g} FLOP/B",
        "solve 2d²b = 4R(d² + 2db): b* = 4Rd / (2(d − 4R)) = 2Rd / (d − 4R)",
    ]
    if b_star is not None and at is not None:
        steps.append(f"b* = {b_star:.4g}: the first whole batch at the ridge is b = {at.n}")
        steps.append(
            f"check: intensity {at.intensity:.4g} FLOP/B at b = {at.n}"
            + ("" if below is None else f", {below.intensity:.4g} at b = {below.n}")
        )
    else:
        steps.append(f"d/4 = {d / 4:g} FLOP/B is under the ridge: no batch reaches it")
    if measured is not None:
        m_ridge = model.ridge(measured.peak, measured.bandwidth)
        answer["measured_ridge"] = m_ridge
        answer["measured_b_star"] = batch_ridge(d, m_ridge, F32)
        steps.append(
            f"on this machine (measured ridge {m_ridge:.3g} FLOP/B): b* = "
            + (
                "never reached"
                if answer["measured_b_star"] is None
                else _number(answer["measured_b_star"])
            )
        )
    return {
        "id": "ex_batching",
        "after": "batching",
        "question": (
            f"At what batch b does W[{d},{d}] @ X[{d},b] in float32 reach the ridge of "
            f"{_gflops(b.peak)} and {format_si(b.bandwidth, 'B/s')}?"
        ),
        "solution": steps,
        "answer": answer,
    }


def _ex_dispatch(b: Budgets, measured: Budgets | None) -> dict[str, Any]:
    per_element = 2 * F32
    n_star = dispatch_size(HYPOTHETICAL_DISPATCH_S, b.bandwidth, per_element)
    check = model.predicted_seconds(n_star, per_element * n_star, b.peak, b.bandwidth)
    answer: dict[str, Any] = {
        "dispatch_s": HYPOTHETICAL_DISPATCH_S,
        "bandwidth": b.bandwidth,
        "bytes_per_element": per_element,
        "n_star": n_star,
        "traffic_seconds_at_n_star": check,
        "measured_n_star": None,
    }
    steps = [
        f"y = 2·x in float32 reads 4 B and writes 4 B per element: {per_element} B",
        f"traffic time n · {per_element} B ÷ {format_si(b.bandwidth, 'B/s')} equals the "
        f"{format_si(HYPOTHETICAL_DISPATCH_S, 's')} dispatch at n* = dispatch × bandwidth ÷ "
        f"{per_element}",
        f"n* = {_number(n_star)} elements ({format_si(per_element * n_star, 'B')} moved)",
        f"check: predicted_seconds at n* = {format_si(check, 's')}",
    ]
    if measured is not None:
        answer["measured_n_star"] = dispatch_size(
            measured.dispatch, measured.bandwidth, per_element
        )
        steps.append(
            f"on this machine ({format_si(measured.dispatch, 's')}, "
            f"{format_si(measured.bandwidth, 'B/s')}): n* = {_number(answer['measured_n_star'])}"
        )
    return {
        "id": "ex_dispatch",
        "after": "dispatch",
        "question": (
            f"A call costs {format_si(HYPOTHETICAL_DISPATCH_S, 's')} to dispatch and memory "
            f"streams {format_si(b.bandwidth, 'B/s')}: below what size n is y = 2·x in float32 "
            f"dispatch-bound?"
        ),
        "solution": steps,
        "answer": answer,
    }


def _ex_scan(b: Budgets) -> dict[str, Any]:
    n, steps = EX_SCAN_SIZE, EX_SCAN_STEPS
    body = model.contract(n, n, n, F32)
    ours = steps * body.flops
    xla = body.flops  # XLA costs a loop as one iteration of its body
    t_ours = model.predicted_seconds(ours, body.minimum_bytes, b.peak, b.bandwidth)
    t_xla = model.predicted_seconds(xla, body.minimum_bytes, b.peak, b.bandwidth)
    return {
        "id": "ex_scan",
        "after": "scan",
        "question": (
            f"A {steps}-step lax.scan applies tanh(c@x) with c and x ({n},{n}) float32. How many "
            f"flops does it do, how many does XLA's cost analysis report (it costs a loop as one "
            f"iteration), and what times do they predict under {_gflops(b.peak)}?"
        ),
        "solution": [
            f"one body: 2n³ = {body.flops} flops (the tanh is counted apart)",
            f"our count: {steps} × {body.flops} = {ours} flops",
            f"XLA's: one iteration, {xla} flops (plus a few for the loop counter)",
            f"predicted times: {format_si(t_ours, 's')} by our count, {format_si(t_xla, 's')} "
            f"by XLA's, a factor {ours / xla:.3g} apart",
        ],
        "answer": {
            "body_flops": body.flops,
            "our_flops": ours,
            "xla_flops": xla,
            "ratio": ours / xla,
            "predicted_seconds": {"ours": t_ours, "xla": t_xla},
        },
    }
