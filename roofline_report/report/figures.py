"""Figures from results.json (no jax): byte-deterministic, accessible SVG plus a table each.

Determinism: the Agg backend, a fixed ``svg.hashsalt`` per figure (so ids stay unique when several
SVGs are inlined in one page), text kept as text (``svg.fonttype = "none"``), no date or creator in
the metadata. Accessibility: every SVG gets a <title> and <desc> and ``role="img"``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath
from matplotlib.ticker import FuncFormatter, LogLocator

from roofline_report.analysis.records import Sweep, SweepFigure
from roofline_report.analysis.roofs import BandwidthRoof, ComputeRoof, RoofSet
from roofline_report.analysis.seed_records import DoubledTraffic, SeedModel
from roofline_report.kinds import Kind
from roofline_report.report.figure_svg import titled, to_svg
from roofline_report.report.format import decimal, percent_text, whole
from roofline_report.report.roof_words import sweep_uses
from roofline_report.roofline import ridge
from roofline_report.units import format_binary, format_si

# One line style per kind, used by every figure and explained in the report's legend.
KIND_STYLE: dict[str, dict[str, Any]] = {
    Kind.MEASURED.value: {"linestyle": "-", "linewidth": 2.2},
    Kind.HYPOTHETICAL.value: {"linestyle": "--", "linewidth": 1.6},
    Kind.SPEC_SHEET.value: {"linestyle": ":", "linewidth": 1.8},
    Kind.COMPILER_ESTIMATE.value: {"linestyle": "-.", "linewidth": 1.4},
    Kind.ANALYTIC.value: {"linestyle": "-", "linewidth": 1.0},
}
PALETTE = ("#1f5fbf", "#c2410c", "#15803d", "#7e22ce", "#b91c1c", "#0e7490", "#a16207",
           "#be185d", "#4d7c0f", "#475569")


@dataclass(frozen=True)
class Table:
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class FigureOut:
    """A rendered figure: file name stem, caption, description, SVG text and its numbers."""

    name: str
    title: str
    description: str
    svg: str
    table: Table
    kinds: tuple[str, ...] = field(default_factory=tuple)


def _new_figure() -> tuple[Figure, Axes]:
    # A Figure of its own, not pyplot's: no global backend or figure registry to touch or leak.
    fig = Figure(figsize=(7.2, 4.4), dpi=100)
    fig.subplots_adjust(left=0.18, right=0.97, bottom=0.12, top=0.92)
    ax = fig.subplots()
    ax.grid(True, which="major", alpha=0.35)
    ax.grid(True, which="minor", alpha=0.12)
    return fig, ax


def _tick(v: float) -> str:
    """A plain tick label: 0.0156, 0.5, 2, 2048 (never 2.05e+03; beyond 10⁶ or below 10⁻³ a
    power of ten)."""
    return whole(v, 3)


def _log_axes(ax: Axes, xlabel: str, ylabel: str, *, y_unit: str | None = None) -> None:
    """Log axes with plain tick labels (2, 4, 8 ... and 100, 1 G, ...), not powers."""
    ax.set_xscale("log", base=2)
    _log10(ax, "y")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: _tick(v)))
    if y_unit:
        ax.yaxis.set_major_formatter(
            FuncFormatter(lambda v, _pos: format_si(v, y_unit, 2).replace(f" {y_unit}", "")
                          or "0"))
    else:  # a narrow range (the seed's figures): label 1, 2 and 5 of every decade
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: whole(v, 3)))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda _v, _pos: ""))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


# A base-10 log axis's minor ticks (unlabelled: their faint gridlines only) at 2 and 5 of each
# decade, not at every digit: matplotlib draws each tick as objects of its own, and 64 of them
# took 0.13 to 0.25 s of a figure's 0.30 to 0.40 s to write (eight a decade over eight decades).
_MINOR_SUBS = (2.0, 5.0)


def _log10(ax: Axes, which: str) -> None:
    """Axis ``which`` ("x" or "y") of ``ax`` on a base-10 log scale, minor ticks at 2 and 5."""
    if which == "x":
        ax.set_xscale("log", base=10)
        ax.xaxis.set_minor_locator(LogLocator(base=10, subs=_MINOR_SUBS))
    else:
        ax.set_yscale("log", base=10)
        ax.yaxis.set_minor_locator(LogLocator(base=10, subs=_MINOR_SUBS))


def _seconds_axis(axis: Any) -> None:
    """Log-scale seconds labelled 1 ms, 100 µs ..., minor ticks unlabelled."""
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: format_si(v, "s", 2)))
    axis.set_minor_formatter(FuncFormatter(lambda _v, _pos: ""))


def _finish(draw: Callable[[], Figure], name: str, title: str, desc: str, table: Table,
            kinds: tuple[str, ...], tips: Sequence[tuple[str, str]] = ()) -> FigureOut:
    """The figure ``draw()`` builds, as SVG with its caption and table. It is built only where
    its SVG is written: a process sharing the writing (:mod:`.svg_sharing`) builds only its
    own half, the figure's words and numbers coming from the data, not from the drawing."""
    return FigureOut(name, title, desc, titled(to_svg(draw, name, title, desc), name, tips),
                     table, kinds)


HoverPoint = tuple[float, float, str]  # (x, y, tooltip)


def _tips(points: Sequence[HoverPoint], prefix: str = "tip") -> list[tuple[str, str]]:
    """(id, tooltip) of each hover target :func:`_hover` draws over ``points``, for
    :func:`.figure_svg.titled`."""
    return [(f"{prefix}-{j}", tip) for j, (_x, _y, tip) in enumerate(points, 1)]


def _hover(ax: Axes, points: Sequence[HoverPoint], prefix: str = "tip") -> None:
    """A transparent hover target over each (x, y, tooltip) point, drawn as a marker of its
    own (an SVG group with the id :func:`_tips` gives it)."""
    for (gid, _tip), (x, y, _t) in zip(_tips(points, prefix), points, strict=True):
        # A marker of a line of its own: the same target as a one-point scatter, at a tenth
        # of its cost to draw.
        ax.plot([x], [y], marker="o", markersize=8.0, linestyle="none", alpha=0.0, gid=gid,
                zorder=5)


_LEGEND_POINTS = 8.0  # the legend's font size
_FIGURE_WIDTH_IN = 7.2


def _label_width_pt(label: str) -> float:
    """The width of a legend label in points at the legend's font size, measured on
    matplotlib's own font (no drawing); readers' fonts differ, so callers keep a margin."""
    width, _, _ = TextToPath().get_text_width_height_descent(
        label, FontProperties(size=_LEGEND_POINTS), ismath=False)
    return float(width)


def _legend_columns(labels: Sequence[str], ncol: int) -> int:
    """At most ``ncol`` columns, as many as fit across the figure: each column is as wide as
    its widest label plus the handle and the spacing (about 3.5 em), with 10% to spare for the
    reader's font."""
    room = _FIGURE_WIDTH_IN * 72.0 * 0.9
    widest = max((_label_width_pt(x) for x in labels), default=0.0) + 3.5 * _LEGEND_POINTS
    return max(1, min(ncol, int(room // widest) if widest > 0 else ncol))


def _legend_below(fig: Figure, ax: Axes, *, ncol: int) -> None:
    """The legend under the axes: inside, it would hide a roof or a point wherever it went."""
    # The figure grows with the legend's rows, so that no entry falls off the canvas, and has
    # as many columns as fit across it, so that no entry falls off its side.
    labels = ax.get_legend_handles_labels()[1]
    ncol = _legend_columns(labels, ncol)
    entries = len(labels)
    rows = max(1, math.ceil(entries / ncol))
    legend_in = 0.75 + 0.19 * rows  # the x label and the legend's rows
    height = 3.9 + legend_in
    fig.set_size_inches(7.2, height)
    fig.subplots_adjust(bottom=legend_in / height, top=1 - 0.38 / height)
    ax.legend(loc="upper center", bbox_to_anchor=(0.45, -0.5 / (height - legend_in - 0.38)),
              ncol=ncol, fontsize=8, frameon=False)


def _legend(ax: Axes) -> None:
    ax.legend(loc="lower right", fontsize=8, framealpha=0.9)


def fmt(value: float | None, unit: str) -> str:
    return format_si(value, unit)


def _and(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _g(x: float) -> str:
    return whole(x, 4)


# --- the seed's hypothetical figures --------------------------------------------------------

def seed_roofline(seed_model: SeedModel) -> FigureOut:
    data = seed_model.figure
    xs = data.x
    styles = ("bandwidth budget", "compute budget", "combined ceiling")
    ridge = seed_model.ridge
    hover = [(x, y / 1e9, f"n={n}: intensity {_g(x)} FLOP/B, ceiling "
              f"{fmt(y, 'FLOP/s')} (hypothetical), {b}-bound")
             for n, x, y, b in zip(seed_model.sizes, seed_model.intensity,
                                   seed_model.roofline, seed_model.bound, strict=True)]

    def draw() -> Figure:
        fig, ax = _new_figure()
        for i, series in enumerate(data.series):
            lw = 3.0 if series.label == "combined ceiling" else 1.4
            alpha = 0.45 if series.label == "combined ceiling" else 1.0
            ax.plot(xs, series.y, label=f"{series.label} (hypothetical)",
                    color=PALETTE[i],
                    linestyle="--" if series.label != "combined ceiling" else "-",
                    linewidth=lw, alpha=alpha, marker="o", markersize=3)
        ax.axvline(ridge, color="#64748b", linewidth=0.8, linestyle=":")
        ax.annotate(f"ridge {_g(ridge)} FLOP/B", (ridge, data.series[1].y[0]),
                    textcoords="offset points", xytext=(6, -14), fontsize=8)
        for n, x, y in zip(seed_model.sizes, seed_model.intensity,
                           seed_model.roofline, strict=True):
            ax.annotate(f"n={n}", (x, y / 1e9), textcoords="offset points", xytext=(-8, 6),
                        fontsize=7)
        _hover(ax, hover)
        _log_axes(ax, data.xlabel, data.ylabel)
        ax.set_title("Hypothetical roofline: square f32 matmuls under assumed budgets",
                     fontsize=10, y=1.0, pad=6)
        _legend(ax)
        return fig

    title = "Hypothetical roofline of square float32 matmuls"
    by_bound = {b: [str(n) for n, bb in zip(seed_model.sizes, seed_model.bound,
                                            strict=True) if bb == b]
                for b in ("memory", "compute")}
    verdicts = "; ".join(f"{_and(by_bound[b])} {'is' if len(by_bound[b]) == 1 else 'are'} "
                         f"{b}-bound" for b in ("memory", "compute") if by_bound[b])
    desc = (f"Log-log plot of three hypothetical series against intensity: {', '.join(styles)}. "
            f"The ridge is at {_g(ridge)} FLOP/byte; sizes {verdicts}.")
    rows = tuple(
        (str(n), _g(x), fmt(mc, "FLOP/s"), fmt(r, "FLOP/s"), b)
        for n, x, mc, r, b in zip(seed_model.sizes, seed_model.intensity,
                                  seed_model.memory_ceiling, seed_model.roofline,
                                  seed_model.bound, strict=True)
    )
    table = Table(("n", "intensity (FLOP/B)", "bandwidth × intensity", "ceiling", "bound"), rows)
    return _finish(draw, "seed_roofline", title, desc, table, (Kind.HYPOTHETICAL.value,),
                   _tips(hover))


def doubled_traffic(experiment: DoubledTraffic, ridge: float) -> FigureOut:
    sizes = experiment.sizes
    hover = [(x, y / 1e9, f"n={n}, {what}: intensity {_g(x)} FLOP/B, ceiling "
              f"{fmt(y, 'FLOP/s')} (hypothetical)")
             for what, xs_, ys_ in (
                 ("minimum traffic", experiment.intensity, experiment.roofline),
                 ("twice the minimum traffic", experiment.reduced_intensity,
                  experiment.revised))
             for n, x, y in zip(sizes, xs_, ys_, strict=True)]

    def draw() -> Figure:
        fig, ax = _new_figure()
        ax.plot(experiment.intensity, [y / 1e9 for y in experiment.roofline], marker="o",
                color=PALETTE[0], label="minimum traffic (hypothetical)", linestyle="--")
        ax.plot(experiment.reduced_intensity, [y / 1e9 for y in experiment.revised],
                marker="s", color=PALETTE[1], label="twice the minimum traffic (hypothetical)",
                linestyle="--")
        for n, x, y in zip(sizes, experiment.reduced_intensity, experiment.revised,
                           strict=True):
            ax.annotate(f"n={n}", (x, y / 1e9), textcoords="offset points", xytext=(-6, -12),
                        fontsize=7)
        ax.axvline(ridge, color="#64748b", linewidth=0.8, linestyle=":")
        _hover(ax, hover)
        _log_axes(ax, "operations per byte (FLOP/byte)", "hypothetical ceiling (GFLOP/s)")
        ax.set_title("Doubling the data movement halves intensity", fontsize=10, y=1.0, pad=6)
        _legend(ax)
        return fig

    title = "Experiment: twice the minimum traffic"
    desc = ("Each square matmul's point moves left by a factor of two in intensity; below the "
            "ridge its ceiling halves, above it stays at the compute budget.")
    rows = tuple(
        (str(n), _g(x), _g(xr), fmt(r, "FLOP/s"), fmt(rv, "FLOP/s"), _g(q))
        for n, x, xr, r, rv, q in zip(sizes, experiment.intensity,
                                      experiment.reduced_intensity, experiment.roofline,
                                      experiment.revised, experiment.ratio, strict=True)
    )
    table = Table(("n", "intensity", "halved intensity", "ceiling", "revised ceiling", "ratio"),
                  rows)
    return _finish(draw, "doubled_traffic", title, desc, table, (Kind.HYPOTHETICAL.value,),
                   _tips(hover))


def _range(low: int | None, high: int | None) -> str:
    if low and high:
        return f"{format_binary(low)} to {format_binary(high)}"
    if high:
        return f"up to {format_binary(high)}"
    return f"from {format_binary(low)}" if low else "any"


def working_sets(above: int | None, at_least: int | None, up_to: int | None) -> str:
    """A memory level's working sets as its rule gives them: "up to 16 KiB", "more than
    32 KiB, up to 256 KiB", "at least 128 MiB" ("any" without a bound)."""
    parts = []
    if above:
        parts.append(f"more than {format_binary(above)}")
    if at_least:
        parts.append(f"at least {format_binary(at_least)}")
    if up_to:
        parts.append(f"up to {format_binary(up_to)}")
    return ", ".join(parts) or "any"


@dataclass(frozen=True)
class SweepSeries:
    """One kernel of the working-set sweep: (bytes, B/s) points."""

    name: str
    points: tuple[tuple[int, float], ...]


@dataclass(frozen=True)
class LevelBand:
    """A level found in the sweep: its bandwidth over its working-set range, and that range
    in words (:func:`working_sets`; by default from the two bounds)."""

    name: str
    kernel: str
    value: float
    min_bytes: int | None
    max_bytes: int | None
    range_text: str = ""


def working_set(series: Sequence[SweepSeries], levels: Sequence[LevelBand],
                caches: Sequence[tuple[str, int]]) -> FigureOut:
    """Bandwidth against working-set size, one line per kernel, each level found drawn as a
    horizontal band over its range and each cache's capacity as a dotted vertical line."""
    sizes = [b for s in series for b, _ in s.points]
    lo, hi = (min(sizes), max(sizes)) if sizes else (1 << 12, 1 << 28)
    hover = [(b, v, f"{s.name}: {format_binary(b)} working set, {fmt(v, 'B/s')} (measured)")
             for s in series for b, v in s.points]
    title = "Bandwidth against working-set size"

    def draw() -> Figure:
        fig, ax = _new_figure()
        for i, s in enumerate(series):
            ax.plot([b for b, _ in s.points], [v for _, v in s.points], marker="o",
                    markersize=3.5, color=PALETTE[i % len(PALETTE)], label=f"{s.name} (measured)",
                    **KIND_STYLE[Kind.MEASURED.value])
        for lv in levels:
            i = next((j for j, s in enumerate(series) if s.name == lv.kernel), 0)
            start = lv.min_bytes or lo
            end = lv.max_bytes or hi
            ax.plot([start, end], [lv.value, lv.value], color=PALETTE[i % len(PALETTE)],
                    linewidth=5, alpha=0.25, solid_capstyle="butt")
            ax.annotate(f"{lv.name} {format_si(lv.value, 'B/s', 2)}", (start, lv.value),
                        textcoords="offset points", xytext=(2, 4), fontsize=7)
        for name, size in caches:
            ax.axvline(size, color="#94a3b8", linewidth=1.0, linestyle=(0, (1, 2)))
            ax.annotate(name, (size, 1), xycoords=("data", "axes fraction"),
                        textcoords="offset points", xytext=(2, -10), fontsize=7,
                        color="#475569")
        _hover(ax, hover)
        ax.set_xscale("log", base=2)
        _log10(ax, "y")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: format_binary(v, 2)))
        ax.yaxis.set_major_formatter(FuncFormatter(
            lambda v, _p: format_si(v, "B/s", 2).replace(" B/s", "")))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda _v, _p: ""))
        ax.set_xlabel("working set (bytes)")
        ax.set_ylabel("bandwidth (B/s)")
        ax.set_title(title, fontsize=10, y=1.0, pad=6)
        _legend_below(fig, ax, ncol=2)
        return fig

    found = ", ".join(f"{lv.name} {format_si(lv.value, 'B/s')} ({lv.kernel})" for lv in levels)
    desc = ("Streaming kernels over working sets of growing size, each point the fastest "
            "sample (a write-new point is a whole call, dispatch included; its levels take "
            "the dispatch floor off, so their bands sit above its points); shaded bands are "
            "the memory levels found"
            + (f": {found}." if found else ": none was found."))
    rows = [(s.name, format_binary(b), fmt(v, "B/s")) for s in series for b, v in s.points]
    rows += [(f"level {lv.name} ({lv.kernel})",
              lv.range_text or _range(lv.min_bytes, lv.max_bytes), fmt(lv.value, "B/s"))
             for lv in levels]
    return _finish(draw, "working_set", title, desc,
                   Table(("kernel or level", "working set", "bandwidth"), tuple(rows)),
                   (Kind.MEASURED.value,), _tips(hover))


# --- sweeps ---------------------------------------------------------------------------------


def _dims_text(dims: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(dims.items()))


def sweep_trajectories(sweeps: Sequence[Sweep], roofs: RoofSet) -> FigureOut:
    """Each workload's sweep on the roofline it is predicted on, its points joined in order of
    size."""
    points = [PlotPoint(f"{sw.title} {_dims_text(pt.dims)}", pt.intensity, pt.achieved,
                        sw.title, 0.0,
                        f"{sw.title}, {_dims_text(pt.dims)}: {format_si(pt.measured, 's')} "
                        f"measured; closest to its {pt.observed_bound} time", series=sw.title)
              for sw in sweeps for pt in sw.points if pt.intensity > 0]
    title = "Size sweeps on the measured roofline"
    desc = ("Each workload measured at growing sizes, joined in order of size, at its "
            "compiled-program intensity: small sizes sit far below the roof (dispatch-bound), "
            "larger ones approach the memory slope or the compute roof. The compute roofs "
            "drawn are those the workloads' predictions price their work at.")
    return roofline("sweep_roofline", title, desc, [roofs], points,
                    uses=sweep_uses(sweeps, roofs))


def sweep_prediction(sweeps: Sequence[Sweep], median_error: float | None) -> FigureOut:
    """Predicted against measured time of every sweep point, with the line of equality."""
    rows = []
    hover: list[HoverPoint] = []
    lo, hi = math.inf, 0.0
    drawn: list[tuple[int, str, list[float], list[float]]] = []  # (colour, label, x, y)
    for i, sw in enumerate(sweeps):
        pts = [pt for pt in sw.points if pt.prediction is not None]
        if not pts:
            continue
        pred = [pt.prediction.seconds for pt in pts if pt.prediction is not None]
        meas = [pt.measured for pt in pts]
        lo, hi = min(lo, *pred, *meas), max(hi, *pred, *meas)
        drawn.append((i, sw.title, pred, meas))
        for pt, t_pred in zip(pts, pred, strict=True):
            rows.append((sw.title, _dims_text(pt.dims), fmt(t_pred, "s"), fmt(pt.measured, "s"),
                         f"{decimal(pt.measured / t_pred, 3)}×", pt.predicted_bound))
            hover.append((t_pred, pt.measured,
                          f"{sw.title} {_dims_text(pt.dims)}: predicted {fmt(t_pred, 's')}, "
                          f"measured {fmt(pt.measured, 's')} "
                          f"({decimal(pt.measured / t_pred, 3)}×)"))

    def draw() -> Figure:
        fig, ax = _new_figure()
        for i, label, pred, meas in drawn:
            ax.plot(pred, meas, marker="o", linestyle="none", markersize=4,
                    color=PALETTE[i % len(PALETTE)], label=label)
        _hover(ax, hover)
        if hi > 0:
            ax.plot([lo / 2, hi * 2], [lo / 2, hi * 2], color="#64748b", linewidth=0.9,
                    linestyle="--", label="measured = predicted")
        _log10(ax, "x")
        _log10(ax, "y")
        for axis in (ax.xaxis, ax.yaxis):
            _seconds_axis(axis)
        ax.set_xlabel("predicted time: the model of the compiled program")
        ax.set_ylabel("measured time (first quartile)")
        ax.set_title("The model's prediction against the stopwatch", fontsize=10, y=1.0, pad=6)
        _legend_below(fig, ax, ncol=3)
        return fig

    title = "Predicted against measured time"
    desc = ("Each sweep point's predicted time (the per-kernel model on this machine's roofs) "
            "against its measured time (the first quartile of its samples); points on the "
            "dashed line were predicted exactly. "
            + (f"Median error {percent_text(median_error)}." if median_error is not None
               else ""))
    table = Table(("workload", "size", "predicted", "measured", "measured ÷ predicted",
                   "predicted bound"), tuple(rows))
    return _finish(draw, "sweep_prediction", title, desc, table,
                   (Kind.PREDICTED.value, Kind.MEASURED.value), _tips(hover))


# --- lab notebook ---------------------------------------------------------------------------

def experiment_figure(exp_id: str, title: str, data: SweepFigure) -> FigureOut:
    """A lab experiment's sweep: measured times, the model's, and the fit, on log axes."""
    name = f"lab_{exp_id}"
    xs = data.x
    hover = [(x, y, f"{s.label} at {_tick(x)}: {fmt(y, 's')} ({s.kind.label})")
             for s in data.series for x, y in zip(xs, s.y, strict=True)
             if y is not None and y > 0]

    def draw() -> Figure:
        fig, ax = _new_figure()
        styles: dict[str, dict[str, Any]] = {"measured": {"marker": "o", "linestyle": "none"},
                                             "model": {"linestyle": "--"},
                                             "fit": {"linestyle": ":"}}
        for i, s in enumerate(data.series):
            key = "measured" if s.label == "measured" else "model" if "model" in s.label \
                else "fit"
            kind_label = s.kind.label
            label = s.label if s.label == kind_label else f"{s.label} ({kind_label})"
            ax.plot(xs, s.y, color=PALETTE[i % len(PALETTE)], label=label, **styles[key])
        _hover(ax, hover)
        ax.set_xscale("log", base=2)
        _log10(ax, "y")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: _tick(v)))
        _seconds_axis(ax.yaxis)
        ax.set_xlabel(data.xlabel)
        ax.set_ylabel(data.ylabel)
        ax.set_title(title, fontsize=10, y=1.0, pad=6)
        ax.legend(loc="upper left", fontsize=8)
        return fig

    desc = ("The measured times against the roofline model's, with a flat-then-proportional "
            "fit whose knee is the observed crossing.")
    headers = (data.xlabel, *(s.label for s in data.series))
    # The table's column of sizes: whole numbers as counts ("1,048,576"), as a column of
    # integers reads; the axis keeps its short ticks.
    rows = tuple((f"{int(x):,}" if float(x).is_integer() else _tick(x),
                  *(fmt(s.y[i], "s") for s in data.series))
                 for i, x in enumerate(xs))
    kinds = tuple(sorted({s.kind.value for s in data.series}))
    return _finish(draw, name, title, desc, Table(headers, rows), kinds, _tips(hover))


# --- the roofline ----------------------------------------------------------------------------

#: One colour per category of point, the same in every figure and explained in its legend.
CATEGORY_COLOURS: dict[str, str] = {
    "matmul": "#1f5fbf", "elementwise": "#15803d", "reduction": "#c2410c",
    "data movement": "#7e22ce", "collective": "#b91c1c", "other": "#475569",
    "yours": "#0e7490", "catalog": "#1f5fbf", "predicted": "#a16207",
}
_POINT_INK = "#0f172a"


@dataclass(frozen=True)
class PlotPoint:
    """A point on a roofline: a kernel or a program at its intensity and rate. ``size``: its
    share of the time (0 draws the smallest marker); ``tooltip``: the text a reader sees when
    pointing at it; ``predicted``: drawn as an open marker (a prediction, not a measurement)."""

    label: str
    intensity: float
    rate: float
    category: str
    size: float
    tooltip: str
    predicted: bool = False
    series: str = ""  # points of one series are joined in order


def _xrange(sets: Sequence[RoofSet], points: Sequence[PlotPoint]) -> list[float]:
    ridges = [r for r in (s.ridge() for s in sets) if r is not None]
    candidates = [*ridges, *(p.intensity for p in points if p.intensity > 0)] or [1.0]
    lo = min(candidates) / 8
    hi = max(candidates) * 8
    lo_e, hi_e = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
    steps = 200
    return [2 ** (lo_e + (hi_e - lo_e) * i / steps) for i in range(steps + 1)]


#: A roof family's colour, the same in every roofline: matrix products, integer products,
#: convolutions, padded ones, weight gradients, generic ones, 1-D (a sequence's) and grouped
#: (depthwise) ones, each roof of a family drawn in its own shade of it (the fastest first);
#: memory levels in shades of one colour, the outermost (main memory) darkest. Line styles
#: tell the kinds (sets) apart.
FAMILY_COLOURS: dict[str, tuple[str, ...]] = {
    "matmul": ("#1d4ed8", "#60a5fa", "#1e3a8a"),
    "integer matmul": ("#a16207", "#eab308"),
    "convolution": ("#7e22ce", "#c084fc"),
    "convolution-padded": ("#86198f", "#e879f9"),
    "convolution-weight-gradient": ("#9f1239", "#fb7185"),
    "convolution-generic": ("#57534e", "#a8a29e"),
    "convolution-1d": ("#6d28d9", "#a78bfa"),
    "grouped-convolution": ("#be185d", "#f472b6"),
    "other": ("#475569", "#94a3b8"),
}
MEMORY_SHADES = ("#14532d", "#15803d", "#22c55e", "#86efac", "#bbf7d0")
_INTEGER_DTYPES = ("int8", "uint8", "int4", "uint4", "float8")

#: (dtype, operation) pairs a figure's programs run: the compute roofs it draws.
Uses = Sequence[tuple[str | None, str]]


def roof_family(roof: ComputeRoof) -> str:
    """A compute roof's family (:data:`FAMILY_COLOURS`)."""
    if roof.op == "matmul" and roof.dtype is not None and roof.dtype.startswith(_INTEGER_DTYPES):
        return "integer matmul"
    return roof.op if roof.op in FAMILY_COLOURS else "other"


def _family_colour(roof: ComputeRoof | BandwidthRoof, roof_set: RoofSet,
                   drawn: Sequence[ComputeRoof] = ()) -> str:
    """A roof's colour: its family's, in the shade of its place among the ``drawn`` roofs of
    its family (fastest first); a memory level's shade by its place from main memory."""
    if isinstance(roof, ComputeRoof):
        family = roof_family(roof)
        shades = FAMILY_COLOURS[family]
        kin = sorted((r for r in drawn if roof_family(r) == family), key=lambda r: -r.value)
        place = next((i for i, r in enumerate(kin) if r is roof), 0)
        return shades[place % len(shades)]
    order = roof_set.levels()
    outward = len(order) - 1 - order.index(roof.level) if roof.level in order else 0
    return MEMORY_SHADES[min(outward, len(MEMORY_SHADES) - 1)]


def drawn_roofs(roof_set: RoofSet, dtype: str | None = None, uses: Uses | None = None
                ) -> tuple[list[ComputeRoof], list[BandwidthRoof]]:
    """The roofs :func:`roofline` draws of a set: its compute roofs (with ``uses``, those the
    set runs each (dtype, operation) pair under; with ``dtype``, only the matmul roof that
    dtype runs under; else every one) and one bandwidth slope per memory level, its fastest
    roof. A caption that names the roofs drawn names these."""
    computes = list(roof_set.compute)
    if uses is not None:
        chosen = [roof_set.compute_for(d, op) for d, op in uses]
        computes = [r for r in computes if any(r is c for c in chosen)]
    elif dtype is not None:
        found = roof_set.compute_for(dtype)
        computes = [found] if found is not None else []
    slopes = [max((r for r in roof_set.bandwidth if r.level == level), key=lambda r: r.value)
              for level in roof_set.levels()]
    return computes, sorted(slopes, key=lambda r: -r.value)


def _own(name: str, roof_set: RoofSet) -> str:
    """A roof's name without its set's label in front ("fp8", not "AMD Instinct MI300X fp8"
    after "AMD Instinct MI300X: "): the legend names the set once."""
    prefix = f"{roof_set.label} "
    return name[len(prefix):] if name.startswith(prefix) and len(name) > len(prefix) else name


def _level(bw: BandwidthRoof, roof_set: RoofSet) -> str:
    """'L3 (L3 read-write)', or the level alone where the roof is named after it ('HBM')."""
    own = _own(bw.name, roof_set)
    return bw.level if own == bw.level else f"{bw.level} ({own})"


def _set_rows(roof_set: RoofSet, dtype: str | None, uses: Uses | None = None
              ) -> list[tuple[str, ...]]:
    """The compute roofs drawn of one set and every bandwidth roof, as rows of the figure's
    table."""
    main_bw = roof_set.memory_bandwidth
    computes, _slopes = drawn_roofs(roof_set, dtype, uses)
    top = max((c.value for c in computes), default=None)
    rows: list[tuple[str, ...]] = []
    for c in sorted(computes, key=lambda r: -r.value):
        rows.append((f"{roof_set.label}: {_own(c.name, roof_set)}", Kind(c.kind).label,
                     fmt(c.value, "FLOP/s"),
                     "", _g(ridge(c.value, main_bw)) + " FLOP/B" if main_bw else "", ""))
    for bw in sorted(roof_set.bandwidth, key=lambda r: -r.value):
        rows.append((f"{roof_set.label}: {_own(bw.name, roof_set)} ({bw.level}"
                     + (f", working sets {_range(bw.min_bytes, bw.max_bytes)}"
                        if bw.min_bytes or bw.max_bytes else "") + ")",
                     Kind(bw.kind).label, "", fmt(bw.value, "B/s"),
                     _g(ridge(top, bw.value)) + " FLOP/B" if top else "", ""))
    return rows


def _draw_set(ax: Axes, roof_set: RoofSet, xs: Sequence[float], dtype: str | None,
              uses: Uses | None = None, colour: str | None = None) -> None:
    """The :func:`drawn_roofs` of one set, each in its family's colour (or every one in
    ``colour``) and its set's line style: compute roofs flat from where the set's main-memory
    slope meets them, one bandwidth slope per memory level."""
    style = KIND_STYLE.get(roof_set.kind.value, {})
    main_bw = roof_set.memory_bandwidth
    computes, slopes = drawn_roofs(roof_set, dtype, uses)
    top = max((c.value for c in computes), default=None)
    for c in sorted(computes, key=lambda r: -r.value):
        start = ridge(c.value, main_bw) if main_bw else xs[0]
        line = [x for x in xs if x >= start] or [xs[-1]]
        ax.plot([start, *line], [c.value] * (len(line) + 1),
                color=colour or _family_colour(c, roof_set, computes),
                label=f"{roof_set.label}: {_own(c.name, roof_set)} {format_si(c.value, 'FLOP/s')}",
                **style)
    for bw in sorted(roof_set.bandwidth, key=lambda r: -r.value):
        if not any(bw is slope for slope in slopes):  # one slope per memory level
            continue
        end = ridge(top, bw.value) if top else xs[-1]
        line = [x for x in xs if x <= end]
        ax.plot([*line, end], [bw.value * x for x in [*line, end]],
                color=colour or _family_colour(bw, roof_set), alpha=0.85,
                label=f"{roof_set.label}: {_level(bw, roof_set)} "
                f"{format_si(bw.value, 'B/s')}", **style)


def roofline(name: str, title: str, description: str, sets: Sequence[RoofSet],
             points: Sequence[PlotPoint], *, dtype: str | None = None,
             uses: Uses | None = None, colour_by_set: bool = False) -> FigureOut:
    """The one roofline plotter: the roofs of every set (with ``uses``, only the compute roofs
    of those (dtype, operation) pairs; with ``dtype``, the first set's of that dtype alone),
    one colour per roof family, one line style per kind, and points coloured by category,
    numbered, each carrying its tooltip (an SVG <title>), measured points filled and predicted
    ones open (``colour_by_set``: one colour per set instead, for sets of one kind, as
    compared runs are). The table beside it is the figure's text alternative: every roof
    drawn, every bandwidth roof and every point with its numbers."""
    rows: list[tuple[str, ...]] = []
    for i, roof_set in enumerate(sets):
        rows += _set_rows(roof_set, dtype if i == 0 else None, uses)
    rows += [(f"point {j}: {p.label}", "predicted" if p.predicted else "measured",
              fmt(p.rate, "FLOP/s"), "", _g(p.intensity) + " FLOP/B", p.category)
             for j, p in enumerate(points, 1)]

    def draw() -> Figure:
        fig, ax = _new_figure()
        xs = _xrange(sets, points)
        for i, roof_set in enumerate(sets):
            _draw_set(ax, roof_set, xs, dtype if i == 0 else None, uses,
                      PALETTE[i % len(PALETTE)] if colour_by_set else None)
        colours = dict(CATEGORY_COLOURS)
        for p in points:  # categories without a colour of their own, in order of appearance
            colours.setdefault(p.category, PALETTE[(len(colours) - len(CATEGORY_COLOURS))
                                                   % len(PALETTE)])
        series: dict[str, list[PlotPoint]] = {}
        for p in points:
            if p.series:
                series.setdefault(p.series, []).append(p)
        for members in series.values():
            ax.plot([p.intensity for p in members], [p.rate for p in members], linewidth=1.0,
                    color=colours[members[0].category], alpha=0.7, zorder=2)
        seen: set[str] = set()
        for j, p in enumerate(points, 1):
            color = colours[p.category]
            label = None if p.category in seen else p.category
            seen.add(p.category)
            # A marker of a line of its own (its size the diameter whose square is a
            # scatter's area): a one-point scatter took ten times as long to draw.
            ax.plot([p.intensity], [p.rate], marker="o",
                    markersize=math.sqrt(24 + 600 * p.size), linestyle="none", label=label,
                    markerfacecolor="none" if p.predicted else color, markeredgecolor=color,
                    markeredgewidth=1.2 if p.predicted else 0.6, alpha=0.85, zorder=3,
                    gid=f"point-{j}")
            ax.annotate(str(j), (p.intensity, p.rate), textcoords="offset points",
                        xytext=(5, 3 if j % 2 else -9), fontsize=7, color=_POINT_INK)
        _log_axes(ax, "intensity (FLOP per byte moved)", "FLOP/s", y_unit="FLOP/s")
        ax.set_title(title, fontsize=10, y=1.0, pad=6)
        _legend_below(fig, ax, ncol=2)
        return fig

    svg = _with_tooltips(to_svg(draw, name, title, description), name, points)
    table = Table(("roof or point", "kind", "compute (rate)", "bandwidth", "intensity",
                   "category"), tuple(rows))
    kinds = tuple(dict.fromkeys([*(s.kind.value for s in sets),
                                 *(Kind.PREDICTED.value if p.predicted else Kind.MEASURED.value
                                   for p in points)]))
    return FigureOut(name, title, description, svg, table, kinds)


def _with_tooltips(svg: str, name: str, points: Sequence[PlotPoint]) -> str:
    """Each point's group gets a <title> (browsers show it when pointing at the point)."""
    return titled(svg, name, [(f"point-{j}", p.tooltip) for j, p in enumerate(points, 1)])
