"""The communication roofline's figures, from results.json (no jax): the sharded matmuls'
time bounds per device, how they scale with the device count and the batch, and a training
step projected to more devices. Built with :mod:`.figures`' helpers, byte-deterministic and
with a table each."""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from roofline_report.analysis.sharding_records import (
    CommStudy,
    ProjectedStep,
    Projection,
    ScalingSeries,
)
from roofline_report.kinds import Kind
from roofline_report.report.figures import (
    KIND_STYLE,
    PALETTE,
    FigureOut,
    Table,
    _and,
    _finish,
    _legend_below,
    _log10,
    _new_figure,
    _seconds_axis,
    fmt,
)
from roofline_report.report.format import plural, whole
from roofline_report.units import format_si

__all__ = ["comm_projection", "comm_scaling", "comm_times"]

# The characters of bar labels that fit side by side under the figure's axis at 8 points
# ("contracting-bfloat16" beside "fsdp" and "dp-step" ran into each other): past them, each
# long label is broken in two at its middlemost hyphen.
TICK_CHARACTERS = 48


def _two_lines(label: str) -> str:
    """``label`` broken after the hyphen nearest its middle, where it has one and is longer
    than a short word ("contracting-" over "bfloat16"); else as it is."""
    cuts = [i for i, c in enumerate(label) if c == "-"]
    if len(label) <= 10 or not cuts:
        return label
    at = min(cuts, key=lambda i: abs(2 * i - len(label)))
    return f"{label[:at + 1]}\n{label[at + 1:]}"


def comm_times(study: CommStudy) -> FigureOut:
    """Bars of T_math, T_mem and T_comm per sharded workload, per device."""
    rows = [r.bounds for r in study.bounds]
    kind = study.kind
    terms = ("T_math", "T_mem", "T_comm")
    # each term's time per workload, in the order of ``terms``
    times = [[b.t_math for b in rows], [b.t_mem for b in rows], [b.t_comm for b in rows]]
    labels = [r.name if r.sharding == "user" else r.sharding for r in study.bounds]

    def draw() -> Figure:
        fig, ax = _new_figure()
        width = 0.26
        positive = [t for i in range(len(rows)) for term in times if (t := term[i]) > 0]
        floor = min(positive, default=1e-6) / 4  # bars start here on the log axis
        for j, (label, term) in enumerate(zip(terms, times, strict=True)):
            xs = [i + (j - 1) * width for i in range(len(rows))]
            ys = [t - floor if t > floor else 0.0 for t in term]
            ax.bar(xs, ys, bottom=floor, width=width, label=f"{label} ({Kind(kind).label})",
                   color=PALETTE[j])
            for x, t in zip(xs, term, strict=True):
                if t == 0:  # nothing to draw on a log axis: say so
                    ax.annotate("none", (x, floor), textcoords="offset points", xytext=(0, 3),
                                ha="center", fontsize=7, rotation=90)
        ticks = labels
        if sum(map(len, labels)) > TICK_CHARACTERS:  # side by side they would run together
            ticks = [_two_lines(label) for label in labels]
        ax.set_xticks(range(len(rows)), ticks, fontsize=8)
        _log10(ax, "y")
        ax.set_ylim(floor, max(positive, default=1.0) * 3)
        _seconds_axis(ax.yaxis)
        ax.set_ylabel("time per device")
        ax.set_title("Per-device time bounds of the sharded matmuls", fontsize=10, y=1.0, pad=6)
        _legend_below(fig, ax, ncol=3)
        return fig

    budget = study.budget
    title = "Communication roofline of the sharded matmuls"
    desc = (f"Per device, under {Kind(kind).label} budgets of {format_si(budget.peak, 'FLOP/s')}"
            f", {format_si(budget.bandwidth, 'B/s')} memory and "
            f"{format_si(budget.interconnect, 'B/s')} interconnect"
            + (f" ({format_si(budget.latency, 's')} a collective step)"
               if budget.latency else "")
            + ": the time the math, the memory traffic (a training step's with its collectives' "
            "buffers) and the collectives each need, as the time-bounds table states them. The "
            "largest binds.")
    table = Table(("sharding", "T_math", "T_mem", "T_comm", "lower bound (max)",
                   "upper bound (sum)", "binding"),
                  tuple((label, fmt(r.t_math, "s"), fmt(r.t_mem, "s"),
                         fmt(r.t_comm, "s"), fmt(r.lower_bound, "s"),
                         fmt(r.upper_bound, "s"), r.binding)
                        for label, r in zip(labels, rows, strict=True)))
    return _finish(draw, "comm_times", title, desc, table, (kind,))


def comm_scaling(series: ScalingSeries, kind: str) -> FigureOut:
    """Lower-bound time per strategy as the device count and the batch size change."""
    strategies = sorted(series.strategies)
    rows = [(strategy, f"{plural(n_dev, 'device', 'devices')}, B={series.batch}", fmt(t, "s"), b)
            for strategy in strategies
            for n_dev, t, b in zip(series.device_counts,
                                   series.by_devices[strategy].lower_bound,
                                   series.by_devices[strategy].binding, strict=True)]

    def draw() -> Figure:
        fig = Figure(figsize=(8.4, 3.8), dpi=100)
        fig.subplots_adjust(left=0.11, right=0.98, bottom=0.14, top=0.9, wspace=0.28)
        left, right = fig.subplots(1, 2)
        for i, strategy in enumerate(strategies):
            left.plot(series.device_counts, series.by_devices[strategy].lower_bound,
                      marker="o", color=PALETTE[i], label=strategy)
            right.plot(series.batches, series.by_batch[strategy].lower_bound,
                       marker="o", color=PALETTE[i], label=strategy)
        for ax, xlabel in ((left, "devices"), (right, "global batch")):
            ax.set_xscale("log", base=2)
            _log10(ax, "y")
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: whole(v, 3)))
            _seconds_axis(ax.yaxis)
            ax.set_xlabel(xlabel)
            ax.grid(True, alpha=0.3)
        left.set_ylabel(f"lower bound per device ({Kind(kind).label})")
        left.legend(fontsize=8)
        left.set_title(f"global batch {series.batch} fixed", fontsize=9, y=1.0, pad=6)
        right.set_title(plural(series.devices, "device", "devices"), fontsize=9, y=1.0, pad=6)
        return fig

    title = "How the sharded matmuls scale"
    desc = ("Lower-bound time per device (the largest of T_math, T_mem, T_comm, bandwidth terms "
            "only) of the forward matmul x[B, D] @ w[D, F] with "
            f"D={series.d_model}, F={series.d_ff}, for data-parallel, "
            "contracting-axis and FSDP shardings, as the device count grows at the global batch "
            f"B={series.batch} the matmuls were compiled at, and as the batch grows on "
            f"{plural(series.devices, 'device', 'devices')}.")
    fixed_batch = [series.by_devices[name].binding for name in series.strategies]
    if all(b == "compute" for bindings in fixed_batch for b in bindings):
        desc += (" At the fixed batch every sharding is compute-bound at every device count, so "
                 "the three lines of the left panel coincide.")
    table = Table(("sharding", "devices", "lower bound", "binding"), tuple(rows))
    return _finish(draw, "comm_scaling", title, desc, table, (kind,))


def comm_projection(projection: Projection) -> FigureOut:
    """Projected step time (lower bound) and its T_comm per training step against the device
    count, on one chip preset: a projection from the compiled 8-device program, not a run."""
    kind = projection.kind
    names = list(dict.fromkeys(r.name for r in projection.rows))
    preset = projection.preset
    rows = []
    for name in names:
        for r in projection.rows:
            if r.name != name:
                continue
            if not isinstance(r, ProjectedStep):
                rows.append((name, str(r.devices), "", "", "", "", "", r.reason))
                continue
            rows.append((name, str(r.devices), r.link, str(r.global_batch),
                         fmt(r.bounds.t_math, "s"), fmt(r.bounds.t_comm_latency, "s") + " + "
                         + fmt(r.bounds.t_comm_bandwidth, "s"), fmt(r.bounds.lower_bound, "s"),
                         r.bounds.binding))

    def draw() -> Figure:
        fig, ax = _new_figure()
        for i, name in enumerate(names):
            points = [r for r in projection.rows
                      if r.name == name and isinstance(r, ProjectedStep)]
            xs = [r.devices for r in points]
            ax.plot(xs, [r.bounds.lower_bound for r in points], marker="o", color=PALETTE[i],
                    label=f"{name}: step (max)", **KIND_STYLE[kind])
            ax.plot(xs, [r.bounds.t_comm for r in points], marker="x", color=PALETTE[i],
                    linestyle=":", linewidth=1.2, label=f"{name}: T_comm")
        ax.set_xscale("log", base=2)
        _log10(ax, "y")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: whole(v, 3)))
        _seconds_axis(ax.yaxis)
        ax.set_xlabel("devices (projected, not run)")
        ax.set_ylabel("time per step, per device")
        ax.grid(True, alpha=0.3)
        domain = projection.domain
        if domain:
            ax.axvline(domain, color="#475569", linewidth=0.8)
            ax.annotate(f"one {preset} domain ({domain})", (domain, 1),
                        xycoords=("data", "axes fraction"), xytext=(3, -12),
                        textcoords="offset points", fontsize=7)
        ax.set_title(f"Projection on {preset}: step time as the mesh grows", fontsize=10,
                     y=1.0, pad=6)
        _legend_below(fig, ax, ncol=2)
        return fig

    title = f"Projected training steps on {preset} (projection, not measured)"
    desc = (f"A projection, not a run: the per-device FLOPs, HBM bytes and collectives of the "
            f"compiled 8-device steps carried to {_and([str(d) for d in projection.devices])}"
            f" devices with each device keeping its share of the batch (weak scaling), on "
            f"{preset}'s published peak ({projection.peak_dtype}) and HBM bandwidth; "
            "collectives priced by the alpha-beta model level by level: inside the fast "
            "domain, then across the network.")
    table = Table(("step", "devices", "link", "global batch", "T_math", "T_comm (latency + "
                   "bandwidth)", "step lower bound", "binding"), tuple(rows))
    return _finish(draw, "comm_projection", title, desc, table, (kind,))
