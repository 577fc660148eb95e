"""Figures from results.json (no jax): byte-deterministic, accessible SVG plus a table each.

Determinism: the Agg backend, a fixed ``svg.hashsalt`` per figure (so ids stay unique when several
SVGs are inlined in one page), text kept as text (``svg.fonttype = "none"``), no date or creator in
the metadata. Accessibility: every SVG gets a <title> and <desc> and ``role="img"``.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import escape

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator

from roofline_report.analysis.roofs import RoofSet
from roofline_report.kinds import Kind
from roofline_report.report.format import percent_text
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


def _to_svg(fig: Figure, name: str, title: str, description: str) -> str:
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"roofline-report-{name}",
                                "svg.fonttype": "none"}):
        # Fixed margins instead of bbox_inches="tight", which draws every figure twice.
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return _inlinable(buf.getvalue(), name, title, description)


def _inlinable(text: str, name: str, title: str, description: str) -> str:
    """Make matplotlib's SVG fit to inline in HTML: no XML prolog, DOCTYPE or RDF metadata,
    every id prefixed with the figure's name (matplotlib reuses ids such as ``axes_1`` in every
    figure) with the references to them, no fixed size, and a <title> and <desc>."""
    text = text[text.index("<svg"):]
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, flags=re.S)
    text = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{name}-{m.group(1)}"', text)
    text = re.sub(r'(href="#|url\(#)([^")]+)', lambda m: f"{m.group(1)}{name}-{m.group(2)}",
                  text)
    head_end = text.index(">") + 1
    head = text[:head_end]
    head = re.sub(r'\swidth="([\d.]+)pt"\s+height="([\d.]+)pt"', "", head, count=1)
    head = head.replace(
        "<svg", f'<svg role="img" aria-labelledby="{name}-title {name}-desc"', 1
    )
    extra = (f'<title id="{name}-title">{escape(title)}</title>'
             f'<desc id="{name}-desc">{escape(description)}</desc>')
    lines = [line.rstrip() for line in (head + extra + text[head_end:]).splitlines()]
    return "\n".join(lines).strip() + "\n"


def _tick(v: float) -> str:
    """A plain tick label: 0.0156, 0.5, 2, 2048 (never 2.05e+03)."""
    return f"{v:.0f}" if v >= 1 else f"{v:.3g}"


def _log_axes(ax: Axes, xlabel: str, ylabel: str, *, y_unit: str | None = None) -> None:
    """Log axes with plain tick labels (2, 4, 8 ... and 100, 1 G, ...), not powers."""
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=10)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: _tick(v)))
    if y_unit:
        ax.yaxis.set_major_formatter(
            FuncFormatter(lambda v, _pos: format_si(v, y_unit, 2).replace(f" {y_unit}", "")
                          or "0"))
    else:  # a narrow range (the seed's figures): label 1, 2 and 5 of every decade
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda _v, _pos: ""))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


def _seconds_axis(axis: Any) -> None:
    """Log-scale seconds labelled 1 ms, 100 µs ..., minor ticks unlabelled."""
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: format_si(v, "s", 2)))
    axis.set_minor_formatter(FuncFormatter(lambda _v, _pos: ""))


def _finish(fig: Figure, name: str, title: str, desc: str, table: Table,
            kinds: tuple[str, ...]) -> FigureOut:
    return FigureOut(name, title, desc, _to_svg(fig, name, title, desc), table, kinds)


def _legend_below(fig: Figure, ax: Axes, *, ncol: int) -> None:
    """The legend under the axes: inside, it would hide a roof or a point wherever it went."""
    # The figure grows with the legend's rows, so that no entry falls off the canvas.
    entries = len(ax.get_legend_handles_labels()[0])
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
    return f"{x:.4g}"


# --- the seed's hypothetical figures --------------------------------------------------------

def seed_roofline(seed_model: Mapping[str, Any]) -> FigureOut:
    data = seed_model["figure"]
    xs = data["x"]
    fig, ax = _new_figure()
    styles = ("bandwidth budget", "compute budget", "combined ceiling")
    for i, series in enumerate(data["series"]):
        lw = 3.0 if series["label"] == "combined ceiling" else 1.4
        alpha = 0.45 if series["label"] == "combined ceiling" else 1.0
        ax.plot(xs, series["y"], label=f"{series['label']} (hypothetical)", color=PALETTE[i],
                linestyle="--" if series["label"] != "combined ceiling" else "-",
                linewidth=lw, alpha=alpha, marker="o", markersize=3)
    ridge = seed_model["ridge"]
    ax.axvline(ridge, color="#64748b", linewidth=0.8, linestyle=":")
    ax.annotate(f"ridge {_g(ridge)} FLOP/B", (ridge, data["series"][1]["y"][0]),
                textcoords="offset points", xytext=(6, -14), fontsize=8)
    for n, x, y in zip(seed_model["sizes"], seed_model["intensity"], seed_model["roofline"],
                       strict=True):
        ax.annotate(f"n={n}", (x, y / 1e9), textcoords="offset points", xytext=(-8, 6),
                    fontsize=7)
    _log_axes(ax, data["xlabel"], data["ylabel"])
    ax.set_title("Hypothetical roofline: square f32 matmuls under assumed budgets", fontsize=10,
                 y=1.0, pad=6)
    _legend(ax)
    title = "Hypothetical roofline of square float32 matmuls"
    by_bound = {b: [str(n) for n, bb in zip(seed_model["sizes"], seed_model["bound"],
                                            strict=True) if bb == b]
                for b in ("memory", "compute")}
    verdicts = "; ".join(f"{_and(by_bound[b])} {'is' if len(by_bound[b]) == 1 else 'are'} "
                         f"{b}-bound" for b in ("memory", "compute") if by_bound[b])
    desc = (f"Log-log plot of three hypothetical series against intensity: {', '.join(styles)}. "
            f"The ridge is at {_g(ridge)} FLOP/byte; sizes {verdicts}.")
    rows = tuple(
        (str(n), _g(x), fmt(mc, "FLOP/s"), fmt(r, "FLOP/s"), b)
        for n, x, mc, r, b in zip(seed_model["sizes"], seed_model["intensity"],
                                  seed_model["memory_ceiling"], seed_model["roofline"],
                                  seed_model["bound"], strict=True)
    )
    table = Table(("n", "intensity (FLOP/B)", "bandwidth × intensity", "ceiling", "bound"), rows)
    return _finish(fig, "seed_roofline", title, desc, table, (Kind.HYPOTHETICAL.value,))


def doubled_traffic(experiment: Mapping[str, Any], ridge: float) -> FigureOut:
    fig, ax = _new_figure()
    sizes = experiment["sizes"]
    ax.plot(experiment["intensity"], [y / 1e9 for y in experiment["roofline"]], marker="o",
            color=PALETTE[0], label="minimum traffic (hypothetical)", linestyle="--")
    ax.plot(experiment["reduced_intensity"], [y / 1e9 for y in experiment["revised"]],
            marker="s", color=PALETTE[1], label="twice the minimum traffic (hypothetical)",
            linestyle="--")
    for n, x, y in zip(sizes, experiment["reduced_intensity"], experiment["revised"],
                       strict=True):
        ax.annotate(f"n={n}", (x, y / 1e9), textcoords="offset points", xytext=(-6, -12),
                    fontsize=7)
    ax.axvline(ridge, color="#64748b", linewidth=0.8, linestyle=":")
    _log_axes(ax, "operations per byte (FLOP/byte)", "hypothetical ceiling (GFLOP/s)")
    ax.set_title("Doubling the data movement halves intensity", fontsize=10, y=1.0, pad=6)
    _legend(ax)
    title = "Experiment: twice the minimum traffic"
    desc = ("Each square matmul's point moves left by a factor of two in intensity; below the "
            "ridge its ceiling halves, above it stays at the compute budget.")
    rows = tuple(
        (str(n), _g(x), _g(xr), fmt(r, "FLOP/s"), fmt(rv, "FLOP/s"), _g(q))
        for n, x, xr, r, rv, q in zip(sizes, experiment["intensity"],
                                      experiment["reduced_intensity"], experiment["roofline"],
                                      experiment["revised"], experiment["ratio"], strict=True)
    )
    table = Table(("n", "intensity", "halved intensity", "ceiling", "revised ceiling", "ratio"),
                  rows)
    return _finish(fig, "doubled_traffic", title, desc, table, (Kind.HYPOTHETICAL.value,))


# --- measured roofline ----------------------------------------------------------------------

@dataclass(frozen=True)
class Roof:
    label: str
    kind: str
    peak: float
    bandwidth: float


@dataclass(frozen=True)
class Point:
    label: str
    intensity: float
    flops_per_s: float


def _draw_roof(ax: Axes, roof: Roof, xs: Sequence[float], color: str) -> None:
    ys = [min(roof.peak, roof.bandwidth * x) for x in xs]
    style = KIND_STYLE.get(roof.kind, {})
    label = (f"{roof.label} ({Kind(roof.kind).label}): {format_si(roof.peak, 'FLOP/s')}, "
             f"{format_si(roof.bandwidth, 'B/s')}")
    ax.plot(xs, ys, color=color, label=label, **style)


def _xrange(roofs: Sequence[Roof], points: Sequence[Point]) -> list[float]:
    ridges = [r.peak / r.bandwidth for r in roofs]
    candidates = [*ridges, *(p.intensity for p in points)]
    lo = min(candidates) / 8
    hi = max(candidates) * 8
    lo_e, hi_e = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
    steps = 200
    return [2 ** (lo_e + (hi_e - lo_e) * i / steps) for i in range(steps + 1)]


def roofset_figure(name: str, title: str, description: str, sets: Sequence[RoofSet],
                   points: Sequence[Point], *, dispatch_floor: float | None = None,
                   dispatch_work: float | None = None) -> tuple[str, Table]:
    """A roofline that draws every roof of every set: compute roofs as horizontal lines from
    where the set's main-memory slope meets them, bandwidth roofs as slopes up to the set's
    highest compute roof (one colour per set, one line style per kind), and numbered points."""
    fig, ax = _new_figure()
    pairs = [(s.peak or 0.0, s.memory_bandwidth or 0.0) for s in sets]
    xs = _xrange([Roof(s.label, s.kind.value, p, b) for s, (p, b) in zip(sets, pairs, strict=True)
                  if p and b], points)
    rows: list[tuple[str, ...]] = []
    for i, roof_set in enumerate(sets):
        color = PALETTE[i % len(PALETTE)]
        style = KIND_STYLE.get(roof_set.kind.value, {})
        main_bw = roof_set.memory_bandwidth
        top = max((c.value for c in roof_set.compute), default=None)
        for c in sorted(roof_set.compute, key=lambda r: -r.value):
            start = c.value / main_bw if main_bw else xs[0]
            line = [x for x in xs if x >= start] or [xs[-1]]
            ax.plot([start, *line], [c.value] * (len(line) + 1), color=color,
                    label=f"{roof_set.label}: {c.name} {format_si(c.value, 'FLOP/s')}", **style)
            rows.append((f"{roof_set.label}: {c.name}", Kind(c.kind).label,
                         fmt(c.value, "FLOP/s"), "",
                         _g(c.value / main_bw) + " FLOP/B" if main_bw else ""))
        drawn = {level: max((r for r in roof_set.bandwidth if r.level == level),
                            key=lambda r: r.value) for level in roof_set.levels()}
        for bw in sorted(roof_set.bandwidth, key=lambda r: -r.value):
            if drawn[bw.level] is bw:  # one slope per memory level: its fastest roof
                end = top / bw.value if top else xs[-1]
                line = [x for x in xs if x <= end]
                ax.plot([*line, end], [bw.value * x for x in [*line, end]], color=color,
                        alpha=0.85, label=f"{roof_set.label}: {bw.level} ({bw.name}) "
                        f"{format_si(bw.value, 'B/s')}", **style)
            rows.append((f"{roof_set.label}: {bw.name} ({bw.level}"
                         + (f", working sets {_range(bw.min_bytes, bw.max_bytes)}"
                            if bw.min_bytes or bw.max_bytes else "") + ")",
                         Kind(bw.kind).label, "", fmt(bw.value, "B/s"),
                         _g(top / bw.value) + " FLOP/B" if top else ""))
        peak, bandwidth = pairs[i]
        if peak and bandwidth:
            ax.plot([peak / bandwidth], [peak], marker="|", color=color, markersize=10)
    if dispatch_floor and dispatch_work:
        rate = dispatch_work / dispatch_floor
        ax.axhline(rate, color="#94a3b8", linewidth=1.2, linestyle=(0, (1, 1)),
                   label="dispatch floor for the seed's work "
                   f"(measured, {format_si(dispatch_floor, 's')}/call)")
    _draw_points(ax, points)
    _log_axes(ax, "intensity (FLOP/byte of minimum traffic)", "FLOP/s", y_unit="FLOP/s")
    ax.set_title(title, fontsize=10, y=1.0, pad=6)
    _legend_below(fig, ax, ncol=1)
    svg = _to_svg(fig, name, title, description)
    rows += _point_rows(points)
    table = Table(("roof or point", "kind", "compute (achieved)", "bandwidth",
                   "intensity (ridge with the top compute roof)"), tuple(rows))
    return svg, table


def _range(low: int | None, high: int | None) -> str:
    if low and high:
        return f"{format_binary(low)} to {format_binary(high)}"
    if high:
        return f"up to {format_binary(high)}"
    return f"from {format_binary(low)}" if low else "any"


@dataclass(frozen=True)
class SweepSeries:
    """One kernel of the working-set sweep: (bytes, B/s) points."""

    name: str
    points: tuple[tuple[int, float], ...]


@dataclass(frozen=True)
class LevelBand:
    """A level found in the sweep: its bandwidth over its working-set range."""

    name: str
    kernel: str
    value: float
    min_bytes: int | None
    max_bytes: int | None


def working_set(series: Sequence[SweepSeries], levels: Sequence[LevelBand],
                caches: Sequence[tuple[str, int]]) -> FigureOut:
    """Bandwidth against working-set size, one line per kernel, each level found drawn as a
    horizontal band over its range and each cache's capacity as a dotted vertical line."""
    fig, ax = _new_figure()
    sizes = [b for s in series for b, _ in s.points]
    lo, hi = (min(sizes), max(sizes)) if sizes else (1 << 12, 1 << 28)
    for i, s in enumerate(series):
        ax.plot([b for b, _ in s.points], [v for _, v in s.points], marker="o", markersize=3.5,
                color=PALETTE[i % len(PALETTE)], label=f"{s.name} (measured)",
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
                    textcoords="offset points", xytext=(2, -10), fontsize=7, color="#475569")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=10)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: format_binary(v, 2)))
    ax.yaxis.set_major_formatter(FuncFormatter(
        lambda v, _p: format_si(v, "B/s", 2).replace(" B/s", "")))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda _v, _p: ""))
    ax.set_xlabel("working set (bytes)")
    ax.set_ylabel("bandwidth (B/s)")
    title = "Bandwidth against working-set size"
    ax.set_title(title, fontsize=10, y=1.0, pad=6)
    _legend_below(fig, ax, ncol=2)
    found = ", ".join(f"{lv.name} {format_si(lv.value, 'B/s')} ({lv.kernel})" for lv in levels)
    desc = ("Streaming kernels over working sets of growing size, each point the fastest "
            "sample (a write-new point is a whole call, dispatch included; its levels take "
            "the dispatch floor off, so their bands sit above its points); shaded bands are "
            "the memory levels found"
            + (f": {found}." if found else ": none was found."))
    svg = _to_svg(fig, "working_set", title, desc)
    rows = [(s.name, format_binary(b), fmt(v, "B/s")) for s in series for b, v in s.points]
    rows += [(f"level {lv.name} ({lv.kernel})", _range(lv.min_bytes, lv.max_bytes),
              fmt(lv.value, "B/s")) for lv in levels]
    return FigureOut("working_set", title, desc, svg,
                     Table(("kernel or level", "working set", "bandwidth"), tuple(rows)),
                     (Kind.MEASURED.value,))


def _draw_points(ax: Axes, points: Sequence[Point]) -> None:
    # Points are numbered (labels of neighbours would collide); the table gives the names.
    for j, p in enumerate(points, 1):
        ax.plot([p.intensity], [p.flops_per_s], marker="o", linestyle="none",
                color="#0f172a", markersize=5, markeredgecolor="white", markeredgewidth=0.6)
        ax.annotate(str(j), (p.intensity, p.flops_per_s), textcoords="offset points",
                    xytext=(4, 3 if j % 2 else -9), fontsize=7)


def _point_rows(points: Sequence[Point]) -> list[tuple[str, ...]]:
    return [(f"point {j}: {p.label}", Kind.MEASURED.label, fmt(p.flops_per_s, "FLOP/s"), "",
             _g(p.intensity) + " FLOP/B") for j, p in enumerate(points, 1)]


def roofline_figure(name: str, title: str, description: str, roofs: Sequence[Roof],
                    points: Sequence[Point], *, dispatch_floor: float | None = None,
                    dispatch_work: float | None = None) -> tuple[str, Table]:
    """A roofline of (peak, bandwidth) pairs, one per run or budget, and labelled points."""
    fig, ax = _new_figure()
    xs = _xrange(roofs, points)
    for i, roof in enumerate(roofs):
        _draw_roof(ax, roof, xs, PALETTE[i % len(PALETTE)])
        ridge = roof.peak / roof.bandwidth
        ax.plot([ridge], [roof.peak], marker="|", color=PALETTE[i % len(PALETTE)], markersize=10)
    if dispatch_floor and dispatch_work:
        rate = dispatch_work / dispatch_floor
        ax.axhline(rate, color="#94a3b8", linewidth=1.2, linestyle=(0, (1, 1)),
                   label="dispatch floor for the seed's work "
                   f"(measured, {format_si(dispatch_floor, 's')}/call)")
    _draw_points(ax, points)
    _log_axes(ax, "intensity (FLOP/byte of minimum traffic)", "FLOP/s", y_unit="FLOP/s")
    ax.set_title(title, fontsize=10, y=1.0, pad=6)
    _legend_below(fig, ax, ncol=1)
    svg = _to_svg(fig, name, title, description)
    rows: list[tuple[str, ...]] = [
        (r.label, Kind(r.kind).label, fmt(r.peak, "FLOP/s"), fmt(r.bandwidth, "B/s"),
         _g(r.peak / r.bandwidth) + " FLOP/B") for r in roofs]
    rows += _point_rows(points)
    table = Table(("roof or point", "kind", "compute (achieved)", "bandwidth", "intensity"),
                  tuple(rows))
    return svg, table


# --- communication roofline -----------------------------------------------------------------

def comm_times(study: Mapping[str, Any]) -> FigureOut:
    """Bars of T_math, T_mem and T_comm per sharded workload, per device."""
    rows = study["bounds"]
    kind = study["kind"]
    fig, ax = _new_figure()
    terms = (("t_math", "T_math"), ("t_mem", "T_mem"), ("t_comm", "T_comm"))
    width = 0.26
    positive = [r[key] for r in rows for key, _ in terms if r[key] > 0]
    floor = min(positive, default=1e-6) / 4  # bars start here on the log axis
    for j, (key, label) in enumerate(terms):
        xs = [i + (j - 1) * width for i in range(len(rows))]
        ys = [r[key] - floor if r[key] > floor else 0.0 for r in rows]
        ax.bar(xs, ys, bottom=floor, width=width, label=f"{label} ({Kind(kind).label})",
               color=PALETTE[j])
        for x, r in zip(xs, rows, strict=True):
            if r[key] == 0:  # nothing to draw on a log axis: say so
                ax.annotate("none", (x, floor), textcoords="offset points", xytext=(0, 3),
                            ha="center", fontsize=7, rotation=90)
    labels = [r["name"] if r["sharding"] == "user" else r["sharding"] for r in rows]
    ax.set_xticks(range(len(rows)), labels, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylim(floor, max(positive, default=1.0) * 3)
    _seconds_axis(ax.yaxis)
    ax.set_ylabel("time per device")
    ax.set_title("Per-device time bounds of the sharded matmuls", fontsize=10, y=1.0, pad=6)
    _legend_below(fig, ax, ncol=3)
    budget = study["budget"]
    title = "Communication roofline of the sharded matmuls"
    desc = (f"Per device, under {Kind(kind).label} budgets of {format_si(budget['peak'], 'FLOP/s')}"
            f", {format_si(budget['bandwidth'], 'B/s')} memory and "
            f"{format_si(budget['interconnect'], 'B/s')} interconnect: the time the math, the "
            "memory traffic and the collectives each need. The largest binds.")
    table = Table(("sharding", "T_math", "T_mem", "T_comm", "lower bound (max)",
                   "upper bound (sum)", "binding"),
                  tuple((label, fmt(r["t_math"], "s"), fmt(r["t_mem"], "s"),
                         fmt(r["t_comm"], "s"), fmt(r["lower_bound"], "s"),
                         fmt(r["upper_bound"], "s"), r["binding"])
                        for label, r in zip(labels, rows, strict=True)))
    return _finish(fig, "comm_times", title, desc, table,
                     (kind,))


def comm_scaling(study: Mapping[str, Any]) -> FigureOut:
    """Lower-bound time per strategy as the device count and the batch size change."""
    series = study["series"]
    kind = study["kind"]
    fig = Figure(figsize=(8.4, 3.8), dpi=100)
    fig.subplots_adjust(left=0.11, right=0.98, bottom=0.14, top=0.9, wspace=0.28)
    left, right = fig.subplots(1, 2)
    rows = []
    shapes_batch = series["shapes"].get("batch", "")
    for i, strategy in enumerate(sorted(series["strategies"])):
        by_n, by_b = series["by_devices"][strategy], series["by_batch"][strategy]
        left.plot(series["by_devices"]["devices"], by_n["lower_bound"], marker="o",
                  color=PALETTE[i], label=strategy)
        right.plot(series["by_batch"]["batch"], by_b["lower_bound"], marker="o",
                   color=PALETTE[i], label=strategy)
        for n_dev, t, b in zip(series["by_devices"]["devices"], by_n["lower_bound"],
                               by_n["binding"], strict=True):
            rows.append((strategy, f"{n_dev} devices, B={shapes_batch}", fmt(t, "s"), b))
    for ax, xlabel in ((left, "devices"), (right, "global batch")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
        _seconds_axis(ax.yaxis)
        ax.set_xlabel(xlabel)
        ax.grid(True, alpha=0.3)
    left.set_ylabel(f"lower bound per device ({Kind(kind).label})")
    left.legend(fontsize=8)
    left.set_title(f"global batch {series['shapes'].get('batch', '')} fixed", fontsize=9,
                   y=1.0, pad=6)
    right.set_title(f"{series['shapes'].get('devices', '')} devices", fontsize=9, y=1.0, pad=6)
    title = "How the sharded matmuls scale"
    shapes = series["shapes"]
    desc = ("Lower-bound time per device (the largest of T_math, T_mem, T_comm, bandwidth terms "
            "only) of the forward matmul x[B, D] @ w[D, F] with "
            f"D={shapes.get('d_model')}, F={shapes.get('d_ff')}, for data-parallel, "
            "contracting-axis and FSDP shardings, as the device count grows at the global batch "
            f"B={shapes.get('batch')} the matmuls were compiled at, and as the batch grows on "
            f"{shapes.get('devices')} devices.")
    fixed_batch = [series["by_devices"][s]["binding"] for s in series["strategies"]]
    if all(b == "compute" for bindings in fixed_batch for b in bindings):
        desc += (" At the fixed batch every sharding is compute-bound at every device count, so "
                 "the three lines of the left panel coincide.")
    table = Table(("sharding", "devices", "lower bound", "binding"), tuple(rows))
    return _finish(fig, "comm_scaling", title, desc, table, (kind,)
    )


def comm_projection(projection: Mapping[str, Any]) -> FigureOut:
    """Projected step time (lower bound) and its T_comm per training step against the device
    count, on one chip preset: a projection from the compiled 8-device program, not a run."""
    fig, ax = _new_figure()
    kind = projection["kind"]
    names = list(dict.fromkeys(r["name"] for r in projection["rows"]))
    rows = []
    for i, name in enumerate(names):
        points = [r for r in projection["rows"] if r["name"] == name and r["available"]]
        xs = [r["devices"] for r in points]
        ax.plot(xs, [r["lower_bound"] for r in points], marker="o", color=PALETTE[i],
                label=f"{name}: step (max)", **KIND_STYLE[kind])
        ax.plot(xs, [r["t_comm"] for r in points], marker="x", color=PALETTE[i],
                linestyle=":", linewidth=1.2, label=f"{name}: T_comm")
        for r in projection["rows"]:
            if r["name"] != name:
                continue
            if not r["available"]:
                rows.append((name, str(r["devices"]), "", "", "", "", "", r["reason"]))
                continue
            rows.append((name, str(r["devices"]), r["link"], str(r["global_batch"]),
                         fmt(r["t_math"], "s"), fmt(r["t_comm_latency"], "s") + " + "
                         + fmt(r["t_comm_bandwidth"], "s"), fmt(r["lower_bound"], "s"),
                         r["binding"]))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    _seconds_axis(ax.yaxis)
    ax.set_xlabel("devices (projected, not run)")
    ax.set_ylabel("time per step, per device")
    ax.grid(True, alpha=0.3)
    domain = projection.get("domain")
    if domain:
        ax.axvline(domain, color="#475569", linewidth=0.8)
        ax.annotate(f"one {projection['preset']} domain ({domain})", (domain, 1),
                    xycoords=("data", "axes fraction"), xytext=(3, -12),
                    textcoords="offset points", fontsize=7)
    preset = projection["preset"]
    ax.set_title(f"Projection on {preset}: step time as the mesh grows", fontsize=10, y=1.0,
                 pad=6)
    _legend_below(fig, ax, ncol=2)
    title = f"Projected training steps on {preset} (projection, not measured)"
    desc = (f"A projection, not a run: the per-device FLOPs, HBM bytes and collectives of the "
            f"compiled 8-device steps carried to {_and([str(d) for d in projection['devices']])}"
            f" devices with each device keeping its share of the batch (weak scaling), on "
            f"{preset}'s published peak ({projection['peak_dtype']}) and HBM bandwidth; "
            "collectives priced by the alpha-beta model level by level: inside the fast "
            "domain, then across the network.")
    table = Table(("step", "devices", "link", "global batch", "T_math", "T_comm (latency + "
                   "bandwidth)", "step lower bound", "binding"), tuple(rows))
    return _finish(fig, "comm_projection", title, desc, table, (kind,))


# --- sweeps ---------------------------------------------------------------------------------


def _dims_text(dims: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(dims.items()))


def sweep_trajectories(sweep_model: Mapping[str, Any]) -> FigureOut:
    """Each workload's sweep as a connected trajectory on the measured roofline."""
    b = sweep_model["budget"]
    roof = Roof("this machine", Kind.MEASURED.value, b["peak"], b["bandwidth"])
    fig, ax = _new_figure()
    all_points = [pt for w in sweep_model["workloads"] for pt in w["points"]]
    xs = _xrange(
        [roof], [Point("", pt["intensity"], pt["achieved_flops_per_s"]) for pt in all_points]
    )
    _draw_roof(ax, roof, xs, "#334155")
    rows = []
    for i, w in enumerate(sweep_model["workloads"]):
        pts = w["points"]
        if not pts:
            continue
        color = PALETTE[i % len(PALETTE)]
        ax.plot(
            [p["intensity"] for p in pts],
            [p["achieved_flops_per_s"] for p in pts],
            marker="o",
            markersize=4,
            color=color,
            linewidth=1.1,
            label=w["title"],
        )
        for p in pts:
            rows.append(
                (
                    w["title"],
                    _dims_text(p["dims"]),
                    _g(p["intensity"]),
                    fmt(p["achieved_flops_per_s"], "FLOP/s"),
                    p["observed_bound"],
                )
            )
    _log_axes(ax, "intensity (FLOP/byte of minimum traffic)", "achieved FLOP/s", y_unit="FLOP/s")
    ax.set_title("Size sweeps on the measured roofline", fontsize=10, y=1.0, pad=6)
    _legend_below(fig, ax, ncol=3)
    title = "Size sweeps on the measured roofline"
    desc = (
        "Each workload measured at growing sizes, joined in order of size: small sizes sit far "
        "below the roof (dispatch-bound), larger ones approach the memory slope or the "
        "compute roof."
    )
    table = Table(
        ("workload", "size", "intensity (FLOP/B)", "achieved", "closest term"), tuple(rows)
    )
    return _finish(fig, "sweep_roofline", title, desc, table,
        (Kind.MEASURED.value,),
    )


def sweep_prediction(sweep_model: Mapping[str, Any]) -> FigureOut:
    """Predicted against measured time of every sweep point, with the line of equality."""
    fig, ax = _new_figure()
    rows = []
    lo, hi = math.inf, 0.0
    for i, w in enumerate(sweep_model["workloads"]):
        pts = w["points"]
        if not pts:
            continue
        pred = [p["predicted_s"] for p in pts]
        meas = [p["measured_s"] for p in pts]
        lo, hi = min(lo, *pred, *meas), max(hi, *pred, *meas)
        ax.plot(
            pred,
            meas,
            marker="o",
            linestyle="none",
            markersize=4,
            color=PALETTE[i % len(PALETTE)],
            label=w["title"],
        )
        for p in pts:
            rows.append(
                (
                    w["title"],
                    _dims_text(p["dims"]),
                    fmt(p["predicted_s"], "s"),
                    fmt(p["measured_s"], "s"),
                    f"{p['measured_s'] / p['predicted_s']:.2f}×",
                    p["predicted_bound"],
                )
            )
    if hi > 0:
        ax.plot(
            [lo / 2, hi * 2],
            [lo / 2, hi * 2],
            color="#64748b",
            linewidth=0.9,
            linestyle="--",
            label="measured = predicted",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        _seconds_axis(axis)
    ax.set_xlabel("predicted time: max(work ÷ peak, traffic ÷ bandwidth, dispatch)")
    ax.set_ylabel("measured time (median)")
    ax.set_title("The roofline model's prediction against the stopwatch", fontsize=10, y=1.0, pad=6)
    _legend_below(fig, ax, ncol=3)
    med = sweep_model.get("median_abs_error")
    title = "Predicted against measured time"
    desc = (
        "Every sweep point: the time the measured ceilings predict against the time measured. "
        "Points above the dashed line ran slower than the roofline bound. "
        + (f"Median absolute error {100 * med:.0f}%." if med is not None else "")
    )
    table = Table(
        ("workload", "size", "predicted", "measured", "measured ÷ predicted", "predicted bound"),
        tuple(rows),
    )
    return _finish(fig, "sweep_prediction", title, desc, table,
        (Kind.MEASURED.value,),
    )


# --- lab notebook ---------------------------------------------------------------------------

def experiment_figure(exp_id: str, title: str, data: Mapping[str, Any]) -> FigureOut:
    """A lab experiment's sweep: measured times, the model's, and the fit, on log axes."""
    name = f"lab_{exp_id}"
    fig, ax = _new_figure()
    xs = data["x"]
    styles: dict[str, dict[str, Any]] = {"measured": {"marker": "o", "linestyle": "none"},
              "model": {"linestyle": "--"}, "fit": {"linestyle": ":"}}
    for i, s in enumerate(data["series"]):
        key = "measured" if s["label"] == "measured" else "model" if "model" in s["label"] \
            else "fit"
        kind_label = Kind(s["kind"]).label
        label = s["label"] if s["label"] == kind_label else f"{s['label']} ({kind_label})"
        ax.plot(xs, s["y"], color=PALETTE[i % len(PALETTE)], label=label, **styles[key])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: _tick(v)))
    _seconds_axis(ax.yaxis)
    ax.set_xlabel(data.get("xlabel", ""))
    ax.set_ylabel(data.get("ylabel", ""))
    ax.set_title(title, fontsize=10, y=1.0, pad=6)
    ax.legend(loc="upper left", fontsize=8)
    desc = ("The measured times against the roofline model's, with a flat-then-proportional "
            "fit whose knee is the observed crossing.")
    headers = (data.get("xlabel", "x"), *(s["label"] for s in data["series"]))
    rows = tuple((_tick(x), *(fmt(s["y"][i], "s") for s in data["series"]))
                 for i, x in enumerate(xs))
    kinds = tuple(sorted({s["kind"] for s in data["series"]}))
    return _finish(fig, name, title, desc, Table(headers, rows),
                     kinds)


@dataclass(frozen=True)
class KernelPoint:
    """A kernel on the roofline: its intensity, achieved FLOP/s and share of the kernel time."""

    label: str
    intensity: float
    flops_per_s: float
    share: float


def kernel_roofline(name: str, title: str, description: str, roof_set: RoofSet,
                    points: Sequence[KernelPoint], dtype: str | None = None) -> FigureOut:
    """The top kernels of one workload on one set of roofs (the compute roof of ``dtype``, the
    main-memory bandwidth), marker area by time share, numbered (the table names them)."""
    fig, ax = _new_figure()
    compute = roof_set.compute_for(dtype)
    bandwidth = roof_set.bandwidth_for(None)
    roofs = [Roof(roof_set.label, roof_set.kind.value, compute.value, bandwidth.value)] \
        if compute is not None and bandwidth is not None else []
    xs = _xrange(roofs, [Point(p.label, p.intensity, p.flops_per_s) for p in points])
    rows: list[tuple[str, ...]] = []
    if compute is not None and bandwidth is not None:
        ridge = compute.value / bandwidth.value
        ax.plot(xs, [min(compute.value, bandwidth.value * x) for x in xs], color=PALETTE[0],
                label=f"{roof_set.label}: {compute.name} {format_si(compute.value, 'FLOP/s')}, "
                f"{bandwidth.name} {format_si(bandwidth.value, 'B/s')}",
                **KIND_STYLE.get(roof_set.kind.value, {}))
        rows.append((roof_set.label, roof_set.kind.label, fmt(compute.value, "FLOP/s"),
                     fmt(bandwidth.value, "B/s"), _g(ridge) + " FLOP/B", ""))
    for j, p in enumerate(points, 1):
        ax.scatter([p.intensity], [p.flops_per_s], s=20 + 600 * p.share, color="#0f172a",
                   alpha=0.55, edgecolors="white", linewidths=0.6)
        ax.annotate(str(j), (p.intensity, p.flops_per_s), textcoords="offset points",
                    xytext=(5, 3 if j % 2 else -9), fontsize=7)
        rows.append((f"kernel {j}: {p.label}", Kind.MEASURED.label, fmt(p.flops_per_s, "FLOP/s"),
                     "", _g(p.intensity) + " FLOP/B", percent_text(p.share)))
    _log_axes(ax, "intensity (FLOP/byte at the kernel's boundary)", "FLOP/s", y_unit="FLOP/s")
    ax.set_title(title, fontsize=10, y=1.0, pad=6)
    if roofs:
        _legend_below(fig, ax, ncol=1)
    svg = _to_svg(fig, name, title, description)
    table = Table(("roof or kernel", "kind", "compute (achieved)", "bandwidth", "intensity",
                   "time share"), tuple(rows))
    return FigureOut(name, title, description, svg, table,
                     (roof_set.kind.value, Kind.MEASURED.value))
