"""Beyond this machine: a real chip's spec sheet, and past one device the communication roofline
(the alpha-beta tables, the comparison with jax.experimental.roofline, the emulated
measurement and the projection to more devices).
"""

from __future__ import annotations

from roofline_report.report.blocks import (
    Block,
    BulletList,
    Cell,
    Code,
    Inline,
    Link,
    Note,
    Section,
    Strong,
)
from roofline_report.report.format import plural
from roofline_report.report.section_parts import VM, c, num, optional_figure, p, table
from roofline_report.report.sharding_view import (
    ProjectionRow,
    ShardingUnavailable,
    StepsView,
)


def preset(vm: VM) -> Section | None:
    """The spec-sheet section, or None when the run chose no preset. Each workload's predicted
    time there is at least the chip's launch floor where one is known; a chip without one is
    said to have no launch floor known."""
    pr = vm.preset
    if pr is None:
        return None
    sources: list[Inline] = []
    for i, (title, url) in enumerate(pr.sources):
        sources += ["; "] if i else []
        sources.append(Link(title, url))
    launch = pr.launch
    held = (f"Each workload is held to the roof of its own dtype ({pr.float32_roof}; "
            "bfloat16 to bfloat16's). ")
    if launch is not None:
        cited: list[Inline] = []
        for i, (title, url) in enumerate(pr.launch_sources):
            cited += ["; "] if i else [" ("]
            cited.append(Link(title, url))
        cited += [")"] if cited else []
        floor_line: tuple[Inline, ...] = ("; kernel launch floor ", launch, " (assumed)")
        times = p(held, "Its predicted time is the largest of flops ÷ that roof, minimum bytes "
                  "÷ HBM bandwidth and the launch floor, ", launch, ": a program runs at least "
                  "one kernel, and no kernel finishes sooner than its launch. Where the floor "
                  "comes from: ", pr.launch_note, *cited, ". ", pr.launch_binds)
        columns: tuple[str, ...] = ("workload", "intensity", "roof", "roofline time", "binds",
                                    "predicted time on it")
        rows: list[tuple[Cell, ...]] = [
            (c(r.title), num(r.intensity), c(r.roof_name), num(r.roofline),
             c(r.bound), num(r.time)) for r in pr.placed]
    else:
        floor_line = ("; no launch floor known for this chip",)
        times = p(held, "The times are the roofline's alone (flops ÷ that roof or minimum bytes "
                  "÷ HBM bandwidth, whichever is larger): no launch floor known for this chip, "
                  "so they leave out the cost of starting a kernel on it, which its spec sheet "
                  "does not publish.")
        columns = ("workload", "intensity", "roof", "bound", "roofline time on it")
        rows = [(c(r.title), num(r.intensity), c(r.roof_name), c(r.bound),
                 num(r.time)) for r in pr.placed]
    if pr.kernels_on_sheet:
        times = p(*times.parts, " These times place each program whole, at one intensity: "
                  "the predictions above, on the same spec sheet, price each kernel at its "
                  "own roofs (the model), and differ from them where the kernels' mixes do.")
    return Section(f"Spec sheet: {pr.name}", (
        p(f"Published dense figures of a real chip ({pr.chosen}), not measured here: the "
          "workloads above placed against its roof show where they would be bound on it."),
        table(("dtype", "dense peak", "ridge", "note"),
              [(c(r.dtype), num(r.value), num(r.ridge), c(r.note))
               for r in pr.peaks]),
        p("Memory bandwidth ", pr.hbm, "; interconnect ", pr.interconnect_name, " ",
          pr.interconnect, *floor_line, ".", f" {pr.notes}" if pr.notes else None),
        *((p("Sources: ", *sources, "."),) if sources else ()),
        times,
        table(columns, rows),
    ), id="preset")


def sharding(vm: VM) -> Section:
    sh = vm.sharding
    title = "Past one device: the communication roofline"
    if isinstance(sh, ShardingUnavailable):
        return Section(title, (p("Not available: ", sh.reason),), id="sharding")
    st = sh.steps
    body: list[Block] = [p(
        f"Each workload below is compiled for {plural(sh.devices, 'device', 'devices')} "
        "(the built-ins: a matmul ", Code("x[B, D] @ w[D, F]"), " sharded three ways, "
        + ("once more in bfloat16, " if sh.bf16_variant else "")
        + "and whole training steps: forward, backward and an Adam update, data "
        "parallel, FSDP, a tensor-parallel MLP and FSDP over scanned layers). Every collective "
        "is read from the compiled HLO with its replica groups and the trip count of any loop "
        "around it, in the dtype the program gives it (a combined collective, several arrays "
        "in one instruction, once); per device, T_math = flops ÷ peak, T_mem = bytes ÷ memory "
        "bandwidth, and T_comm = the sum over collectives of latency × steps + bytes sent ÷ "
        "interconnect bandwidth (the α–β model). The largest is a lower bound on the step time "
        "(perfect overlap), their sum an upper bound (no overlap). Budgets: ", sh.peak, ", ",
        sh.bandwidth, " memory, ", sh.interconnect, " interconnect, ",
        st.latency if st is not None else "no", " latency per step; a device that computes "
        "fewer than ", sh.critical, " per byte it sends is communication-bound.")]
    if sh.emulated:
        body.append(Note((f"{sh.note}.",)))
    batches = {r.name: r.batch for r in (st.rows if st is not None else [])}
    body.append(table(
        ("sharding", "batch, mesh", "collectives (compiled HLO, program dtype)", "flops / device",
         "memory traffic / device (shards)", "sent / device", "XLA flops / device", "check"),
        [(c(r.description), c(batches.get(r.name, "not analysed")),
          c(Code(r.collectives)), num(r.flops), num(r.hbm), num(r.comm_hlo),
          num(r.xla_flops), c(r.check)) for r in sh.rows],
        caption="What each device computes, moves and sends, per step"))
    if sh.notes:
        body.append(BulletList(tuple((note,) for note in sh.notes)))
    if st is not None:
        body += _sharded_steps(st)
    body += [*optional_figure(vm, "comm_times"), *optional_figure(vm, "comm_scaling"),
             *optional_figure(vm, "comm_projection")]
    return Section(title, tuple(body), id="sharding")


def _sharded_steps(st: StepsView) -> list[Block]:
    """The alpha-beta tables, the comparison with jax.experimental.roofline, the emulated
    measurement and the projection beyond this machine."""
    body: list[Block] = []
    if st.collectives:
        body.append(table(
            ("workload", "collective", "arrays (per device, program dtype)", "replica groups",
             "sent / device, each run", "runs per step", "algorithm, where it runs",
             "latency × steps", "bytes ÷ bandwidth"),
            [(c(r.workload), c(r.op), c(Code(r.array)), c(r.groups), num(r.sent),
              c(r.runs), c(r.algorithm), num(r.t_latency), num(r.t_bandwidth))
             for r in st.collectives],
            caption="Every collective of the compiled programs, priced by the α–β model"))
    body.append(p("The algorithms the libraries run, for a group of N devices: ",
                  "; ".join(st.algorithms), ". On a switch an all-reduce takes the faster "
                  "of the ring and NCCL's double binary tree; a collective over two network "
                  "levels runs them pipelined, as NCCL does: its bandwidth time is the slower "
                  "level's, its latency every level's. Bytes are what one device sends, in the "
                  "program's dtype."))
    body.append(table(
        ("workload", "batch, mesh", "T_math", "T_mem", "memory traffic (shards + collective "
         "buffers)", "T_comm latency", "T_comm bandwidth", "lower bound (max)",
         "upper bound (sum)", "binds", "critical batch (latency, whole step)",
         "critical batch (bandwidth only, backward flops)"),
        [(c(r.name), c(r.batch), num(r.t_math), num(r.t_mem), num(r.memory),
          num(r.t_latency), num(r.t_bandwidth), num(r.lower), num(r.upper),
          c(r.binding), num(r.critical), num(r.critical_book)) for r in st.rows],
        caption="Time bounds per step (α–β), each at the batch and mesh it was compiled at"))
    body.append(p(
        "The critical batch is the global batch at which T_math catches up with T_comm, the "
        "math growing with the batch: gradients and weights (data parallel, FSDP) cost the same "
        "at any batch; activations (tensor parallel, the contracting-axis matmul) grow with it, "
        "so only their latency is left to amortise. It is given both ways: with the latency, "
        "on the step's own flops (forward and backward), and as 'How to Scale Your Model' "
        "states it, bandwidth only, the math counted over the backward pass alone (twice the "
        "forward pass's flops: its B/X > C/W). A training step's memory traffic counts "
        "its arguments' and results' shards and each collective's own buffers: the operand it "
        "reads, the result it writes and the read of that result (the gathered weights of "
        "FSDP)."))
    if st.flags:
        body.append(BulletList(tuple((flag,) for flag in st.flags)))
    if st.jax_roofline:
        body.append(table(
            ("workload", "sent / device (ours, HLO)", "ICI bytes (jax)", "latency steps (ours)",
             "ICI latency (jax, hops)", "matmul flops (ours)", "flops (jax)", "why they differ"),
            [(c(r.name), num(r.ours_bytes), num(r.jax_bytes), num(r.ours_steps),
              num(r.jax_latency), num(r.ours_flops), num(r.jax_flops), c(r.why))
             for r in st.jax_roofline],
            caption="Beside jax.experimental.roofline, which costs the shard_map body"))
        body.append(p(
            "jax.experimental.roofline prices each collective of the traced program with the "
            "same ring formulas, so the bytes agree where no loop intervenes; it counts N hops "
            "of latency per all-gather or reduce-scatter (2N per all-reduce) where our steps "
            "are those of the faster algorithm, and it costs the body of a scan once, as XLA's "
            "cost analysis does, where the compiled loop runs it once per iteration.",
            *((" Not available here: ", st.jax_unavailable, " (it needs absl-py, a "
               "dependency of this package).") if st.jax_unavailable else ())))
    if st.emulated:
        body.append(p(
            "What the emulated timings can show: the devices are threads of one process on this "
            "machine's cores, so their work runs one after another and their collectives are "
            "memory copies. The prediction is the devices' work added up at this machine's "
            "measured rates (devices × the larger of flops ÷ measured peak and bytes ÷ measured "
            "bandwidth); measured ÷ predicted is ", st.emulated_range, " here, where 1 would "
            "mean the serialised work explains the whole time and the rest is the runtime's "
            "threads, copies and dispatch. It cannot show the interconnect, the overlap of "
            "communication with compute, or the time one real device would take: T_comm above "
            "is a model."))
        body.append(table(
            ("workload", "devices", "T_math of one device at the measured peak",
             "predicted, devices serialised", "measured", "measured ÷ predicted"),
            [(c(r.name), c(r.devices), num(r.per_device), num(r.serialised),
              num(r.measured), num(r.ratio)) for r in st.emulated],
            caption="The emulated measurement, predicted from this machine's measured roofs"))
    if st.projection:
        topology = (f"the {st.torus} torus of one pod, each axis a group spans a "
                    "bidirectional ring where it wraps around, a one-way line where it does "
                    "not; an all-to-all is bound by the links across the slice's bisection"
                    if st.torus else
                    f"one domain of {st.domain} devices on the fast link, beyond it the "
                    "network: a collective over more devices runs inside each domain and across "
                    "domains on the slower link (an all-reduce reduce-scatters inside, "
                    "all-reduces 1/D of the array across, all-gathers inside; an all-to-all "
                    "sends each peer its share directly), the levels pipelined: the slower one "
                    "sets the bandwidth time")
        body.append(p(
            Strong("Projection, not a measurement:"), " ",
            f"the compiled 8-device training steps carried to more devices on {st.preset} "
            "(peak ", st.peak, f" {st.peak_dtype} for float32 steps, HBM ", st.hbm,
            "; links: ", "; ".join(st.links), f"). The network is {topology}; "
            + ("the rings along the torus axes (the bisection for an all-to-all) are the "
               "algorithms priced there. " if st.torus
               else "each level prices its own latency and bandwidth with the algorithms "
               "NCCL runs there (an all-reduce the faster of the ring and the double binary "
               "tree). ")
            + "Each device keeps its share of the batch (weak scaling), so its flops stay "
            "those compiled here; its memory traffic rescales the shards (weights split over "
            "the mesh shrink) and adds the collectives' buffers; a collective over the whole "
            "mesh grows its group and keeps its array (activations grow with the global "
            "batch). Latencies are assumptions (marked hypothetical), and so is every time "
            "they enter. A weight dimension that cannot be split over the devices is not "
            "projected."))
        body.append(table(
            ("training step", "devices", "global batch", "network: devices, algorithm",
             "T_math", "T_mem", "T_comm latency", "T_comm bandwidth", "step lower bound",
             "binds", "compute-bound above", "flags"),
            [(c(r.name), c(r.devices), c(r.batch), c(r.network), num(r.t_math),
              num(r.t_mem), num(r.t_latency), num(r.t_bandwidth), num(r.lower),
              c(r.binding), num(r.critical), c(r.flags)) if isinstance(r, ProjectionRow) else
             (c(r.name), c(r.devices), c(""), c(r.reason), c(""), c(""), c(""),
              c(""), c(""), c(""), c(""), c(""))
             for r in st.projection],
            caption=f"Projected step time on {st.preset} for 8 to 1024 devices (projection)"))
        if st.crossovers:
            body.append(p(
                "Where a data-parallel or FSDP step stays compute-bound: its gradients and "
                "weights cost the same time at any batch, so above the per-device batch where "
                "its math catches up with them the communication hides behind the math. Each "
                "is given with the assumed latency on the step's own flops, and bandwidth only "
                "on the backward pass's flops, the convention of 'How to Scale Your Model' "
                "(the chip's FLOP/s over the bandwidth each device sends at, C/W, times "
                "(N-1)/N)."))
            body.append(BulletList(tuple(st.crossovers)))
    return [*body]

