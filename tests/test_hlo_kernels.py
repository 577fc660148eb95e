"""The kernel inventory (roofline_report.hlo.kernels) and per-kernel times from traces
(roofline_report.traces.events.kernel_times) on recorded and hand-made traces.

tests/fixtures/cpu_scan_* were recorded on CPU (jax 0.10.2) by tests/fixtures/record_cpu_trace.py;
tests/fixtures/gpu_step_* are written by hand in the GPU spelling (a cuBLAS gemm custom call,
a kInput reduce fusion, a transpose on a second stream overlapping it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from roofline_report.analysis.kernels import kernel_seconds, trace_summary
from roofline_report.hlo.ir import SourceLocation
from roofline_report.hlo.kernels import kernel_inventory, reconcile_kernels, relative_source
from roofline_report.results.schema import KernelInventory, KernelTime, KernelTiming
from roofline_report.traces.events import kernel_times, xspace_text
from tests.kernel_records import kernel_time

FIXTURES = Path(__file__).parent / "fixtures"


def _profile(text: str) -> Any:
    from jax.profiler import ProfileData

    return ProfileData.from_text_proto(text)


def test_gpu_inventory_counts_library_gemm_reduce_and_transpose() -> None:
    inv = kernel_inventory((FIXTURES / "gpu_step_hlo.txt").read_text(), cwd="/home/someone/project")
    KernelInventory.model_validate(inv)
    by_name = {k["name"]: k for k in inv["kernels"]}
    assert list(by_name) == ["custom-call.1", "input_reduce_fusion", "transpose.1"]
    gemm = by_name["custom-call.1"]
    assert (gemm["category"], gemm["kind"], gemm["flops"]) == ("matmul", "__cublas$gemm",
                                                               2 * 64 * 128 * 256)
    assert gemm["bytes_read"] == (64 * 128 + 128 * 256) * 4
    assert gemm["bytes_written"] == 64 * 256 * 4  # the s8 workspace is not output
    reduce = by_name["input_reduce_fusion"]
    assert (reduce["category"], reduce["kind"]) == ("reduction", "kInput")
    assert reduce["flops"] == 64 * 256 - 64 and reduce["transcendentals"] == 64 * 256
    assert by_name["transpose.1"]["category"] == "data movement"
    # paths relative to the project or site-packages, never absolute
    assert gemm["source"] == "model.py:12"
    assert by_name["transpose.1"]["source"] == "flax/core.py:40"
    assert inv["flops"] == gemm["flops"] + reduce["flops"]


def test_relative_source_never_absolute() -> None:
    assert relative_source(SourceLocation("/a/b/proj/x/m.py", 3), cwd="/a/b/proj") == "x/m.py:3"
    outside = relative_source(SourceLocation("/home/u/other/m.py", 7), cwd="/a/b/proj")
    assert outside is not None and not outside.startswith("/") and outside.endswith("m.py:7")
    assert relative_source(None) is None


def test_cpu_scan_inventory_multiplies_loop_kernels_by_trip_count() -> None:
    inv = kernel_inventory((FIXTURES / "cpu_scan_hlo.txt").read_text())
    loop = [k for k in inv["kernels"] if k["loop"] == "while.5"]
    assert {k["name"] for k in loop} == {"ynn_fusion", "wrapped_add", "wrapped_tanh",
                                         "wrapped_compare"}
    assert all(k["trips"] == 10 for k in loop)
    matmul = next(k for k in loop if k["name"] == "ynn_fusion")
    assert (matmul["category"], matmul["kind"]) == ("matmul", "__ynn_fusion")
    assert inv["flops"] == 10 * (2 * 256**3 + 2)  # the dot and the counter's add and compare
    assert inv["transcendentals"] == 10 * 256 * 256


def test_reconcile_names_each_rewrite_with_its_amount() -> None:
    inv = {"flops": 110, "transcendentals": 5,
           "flops_by_op": {"stablehlo.convert": 12, "stablehlo.multiply": 98},
           "transcendentals_by_op": {"stablehlo.tanh": 5}}
    program = {"flops": 100, "transcendentals": 5,
               "flops_by_op": {"stablehlo.multiply": 90, "stablehlo.divide": 10},
               "transcendentals_by_op": {"stablehlo.tanh": 5}}
    r = reconcile_kernels(inv, program)
    kinds = {(x.op, x.kind, x.amount) for x in r.rewrites}
    assert kinds == {("stablehlo.convert", "converts_inserted", 12),
                     ("stablehlo.multiply", "duplicated", 8),
                     ("stablehlo.divide", "simplified_away", -10)}
    assert r.unexplained == {"flops": 0, "transcendentals": 0}
    assert r.transcendentals.equal and not r.flops.equal
    assert reconcile_kernels(inv, {"available": False}).flops.program is None


def test_cpu_trace_matches_kernels_and_end_events() -> None:
    inv = kernel_inventory((FIXTURES / "cpu_scan_hlo.txt").read_text())
    profile = _profile((FIXTURES / "cpu_scan_trace.pbtxt").read_text())
    r = kernel_times(profile, module=inv["module"], kernels=[k["name"] for k in inv["kernels"]])
    KernelTiming.model_validate(r)
    assert r["source"] == "host" and len(r["calls"]) == 3
    names = {k["name"]: k for k in r["kernels"]}
    assert names["ynn_fusion"]["launches"] == [10] * 3
    assert names["wrapped_tanh"]["launches"] == [10] * 3
    # Each kernel's own time (busy) never exceeds its launch-to-completion time (span).
    assert all(b <= s + 1e-15 for k in r["kernels"] for b, s in zip(k["busy_s"], k["span_s"],
                                                                     strict=True))
    assert r["unmatched"] == ["while.5"]  # the loop thunk: its self time is loop control
    summary = trace_summary(KernelTiming.model_validate(r))
    assert summary is not None and summary.calls == 3
    assert 0.9 < summary.coverage <= 1
    assert summary.kernel_sum_s <= summary.program_s * 1.001  # one thread: no overlap
    # Call by call, the kernels' shares add up to the time during which a kernel ran.
    for i, call in enumerate(r["calls"]):
        shares = sum(k["share_s"][i] for k in r["kernels"])
        assert shares == pytest.approx(call["busy_s"], rel=1e-6)
    assert summary.dispatch_s > 0


def test_gpu_trace_overlapping_streams() -> None:
    inv = kernel_inventory((FIXTURES / "gpu_step_hlo.txt").read_text())
    profile = _profile((FIXTURES / "gpu_step_trace.pbtxt").read_text())
    r = kernel_times(profile, module="jit_step", kernels=[k["name"] for k in inv["kernels"]])
    KernelTiming.model_validate(r)
    assert r["source"] == "device" and len(r["calls"]) == 3
    # middle call: execute at 0, gemm 6-27 us, reduce 28-33 us, transpose 29-37 us (overlap)
    s = trace_summary(KernelTiming.model_validate(r))
    assert s is not None
    assert s.program_s == pytest.approx(37e-6)
    assert s.busy_s == pytest.approx(30e-6)
    # The reduce and the transpose ran side by side for 4 us: each is charged half of it, so
    # the kernels' times add up to the time during which one ran.
    assert s.kernel_sum_s == pytest.approx(30e-6)
    shares = {k["name"]: k["share_s"][1] for k in r["kernels"]}
    assert shares["input_reduce_fusion"] == pytest.approx(1e-6 + 2e-6)
    assert shares["transpose.1"] == pytest.approx(2e-6 + 4e-6)
    assert shares["custom-call.1"] == pytest.approx(21e-6)
    assert s.coverage == pytest.approx(30 / 37)
    assert s.dispatch_s == pytest.approx(6e-6)
    assert s.basis == "device event, shared"
    assert [k["name"] for k in r["kernels"]] == ["custom-call.1", "transpose.1",
                                                 "input_reduce_fusion"]


def test_trace_without_kernel_events_says_why() -> None:
    empty = _profile(xspace_text({"/host:CPU": {"python": [
        {"name": "PjitFunction(f)", "start_ns": 0, "duration_ns": 10, "stats": {}}]}}))
    r = kernel_times(empty, module="jit_f", kernels=["fusion"])
    assert r["available"] is False and "no kernel event" in r["reason"]
    other = _profile(xspace_text({"/host:CPU": {"t": [
        {"name": "fusion", "start_ns": 0, "duration_ns": 10,
         "stats": {"hlo_op": "fusion", "hlo_module": "jit_g"}}]}}))
    r = kernel_times(other, module="jit_f", kernels=["fusion"])
    assert r["available"] is False and "jit_g" in r["reason"]


def test_nested_events_count_self_time() -> None:
    events = [
        {"name": "while.1", "start_ns": 0, "duration_ns": 100,
         "stats": {"hlo_op": "while.1", "hlo_module": "jit_f", "run_id": 1}},
        {"name": "fusion", "start_ns": 10, "duration_ns": 30,
         "stats": {"hlo_op": "fusion", "hlo_module": "jit_f", "run_id": 1}},
        {"name": "fusion", "start_ns": 50, "duration_ns": 30,
         "stats": {"hlo_op": "fusion", "hlo_module": "jit_f", "run_id": 1}},
    ]
    r = kernel_times(_profile(xspace_text({"/host:CPU": {"t": events}})), module="jit_f",
                     kernels=["fusion"])
    assert r["kernels"][0]["launches"] == [2]
    assert r["kernels"][0]["busy_s"] == [pytest.approx(60e-9)]
    s = trace_summary(KernelTiming.model_validate(r))
    assert s is not None
    assert s.loop_control_s == pytest.approx(40e-9)
    assert s.coverage == pytest.approx(60 / 100)


def test_an_asynchronous_kernel_is_busy_until_its_event_ends_and_spans_to_its_end_event(
) -> None:
    """On a CPU an asynchronous thunk's event is its dispatch and part of its work; its
    ``end:`` event marks completion. Busy time is the event's own duration, span runs to the
    end event (waiting for a worker thread included)."""
    events = [
        {"name": "fusion", "start_ns": 0, "duration_ns": 10,
         "stats": {"hlo_op": "fusion", "hlo_module": "jit_f", "run_id": 1}},
        {"name": "end: fusion", "start_ns": 70, "duration_ns": 5, "stats": {}},
    ]
    r = kernel_times(_profile(xspace_text({"/host:CPU": {"t": events}})), module="jit_f",
                     kernels=["fusion"])
    k = r["kernels"][0]
    assert k["busy_s"] == [pytest.approx(10e-9)] and k["span_s"] == [pytest.approx(75e-9)]
    assert k["wait_s"] == [0.0]  # nothing else ran: the whole span is its own


def test_a_kernel_queued_behind_another_kernels_work_is_not_charged_the_wait() -> None:
    """A select launched beside a convolution on two threads: its event is 10 ns, then the
    convolution's events hold both threads from 20 to 800 and its end event comes at 810. The
    780 ns during which only the convolution ran are the select's wait; its time is its
    launch to completion less that (30 ns: its event, the gap before the convolution, the tail
    after it). The convolution's own span is not touched by the select's end event."""
    ev = {"hlo_module": "jit_f", "run_id": 1}
    events = {
        "a": [{"name": "select", "start_ns": 0, "duration_ns": 10,
               "stats": {"hlo_op": "select", **ev}},
              {"name": "conv", "start_ns": 20, "duration_ns": 780,
               "stats": {"hlo_op": "conv", **ev}}],
        "b": [{"name": "conv.1", "start_ns": 30, "duration_ns": 700,
               "stats": {"hlo_op": "conv.1", **ev}},
              {"name": "end: select", "start_ns": 805, "duration_ns": 5, "stats": {}}],
    }
    r = kernel_times(_profile(xspace_text({"/host:CPU": events})), module="jit_f",
                     kernels=["select", "conv", "conv.1"])
    k = {row["name"]: row for row in r["kernels"]}
    assert k["select"]["span_s"] == [pytest.approx(810e-9)]
    assert k["select"]["wait_s"] == [pytest.approx(780e-9)]
    assert k["conv"]["wait_s"] == [0.0] and k["conv.1"]["wait_s"] == [0.0]
    table = kernel_seconds(KernelTime.model_validate(k["select"]))
    assert table == pytest.approx(30e-9)
    # A kernel that completes while the other kernel's event still runs ran beside it: an
    # end event for the select at 500 (both convolutions still running) leaves it no wait.
    events["b"][1] = {"name": "end: select", "start_ns": 495, "duration_ns": 5, "stats": {}}
    r = kernel_times(_profile(xspace_text({"/host:CPU": events})), module="jit_f",
                     kernels=["select", "conv", "conv.1"])
    k2 = {row["name"]: row for row in r["kernels"]}
    assert k2["select"]["wait_s"] == [0.0]
    # It ran alone 0-20, beside the first convolution 20-30 and beside both 30-500: its share
    # is 20 + 10/2 + 470/3 ns; the three shares add up to the 800 ns during which one ran.
    assert kernel_seconds(KernelTime.model_validate(k2["select"])) \
        == pytest.approx((20 + 5 + 470 / 3) * 1e-9)
    assert sum(row["share_s"][0] for row in r["kernels"]) == pytest.approx(800e-9, rel=1e-4)
    # A record without shares (analysed before they were kept) takes its span less its wait;
    # without waits, its span.
    assert kernel_seconds(kernel_time(span_s=[810e-9], wait_s=[780e-9])) \
        == pytest.approx(30e-9)
    assert kernel_seconds(kernel_time(span_s=[810e-9])) == pytest.approx(810e-9)


def test_kernels_side_by_side_share_the_cores_they_want() -> None:
    """Two kernels run at once for 100 ns on a 2-core machine. Each wanting one thread, both
    ran as fast as alone: each counts the whole 100 ns. A library kernel wanting both cores
    beside a one-thread kernel: 3 threads wanted on 2 cores, each counts 2/3 of the overlap.
    Without what they want, each counts half (each would fill the machine alone)."""
    ev = {"hlo_module": "jit_f", "run_id": 1}
    events = {
        "a": [{"name": "loop", "start_ns": 0, "duration_ns": 100,
               "stats": {"hlo_op": "loop", **ev}}],
        "b": [{"name": "ynn", "start_ns": 0, "duration_ns": 100,
               "stats": {"hlo_op": "ynn", **ev}}],
    }
    profile = _profile(xspace_text({"/host:CPU": events}))

    def shares(wants: dict[str, int] | None, cores: int | None) -> dict[str, float]:
        r = kernel_times(profile, module="jit_f", kernels=["loop", "ynn"], wants=wants,
                         cores=cores)
        KernelTiming.model_validate(r)
        return {row["name"]: row["share_s"][0] for row in r["kernels"]}

    assert shares({"loop": 1, "ynn": 1}, 2) == {"loop": pytest.approx(100e-9),
                                                "ynn": pytest.approx(100e-9)}
    assert shares({"loop": 1, "ynn": 2}, 2) == {"loop": pytest.approx(200e-9 / 3),
                                                "ynn": pytest.approx(200e-9 / 3)}
    assert shares(None, None) == {"loop": pytest.approx(50e-9), "ynn": pytest.approx(50e-9)}
    assert shares({}, 2) == {"loop": pytest.approx(50e-9), "ynn": pytest.approx(50e-9)}


def test_threads_a_kernel_keeps_busy_alone() -> None:
    from roofline_report.hlo.ir import parse_module
    from roofline_report.hlo.kernels import partitions, threads_wanted

    module = parse_module(
        "HloModule m\n\nENTRY %main (x: f32[512,512]) -> f32[512,512] {\n"
        "  %x = f32[512,512]{1,0} parameter(0)\n"
        "  ROOT %n = f32[512,512]{1,0} negate(%x), "
        'backend_config={"outer_dimension_partitions":["2","3"]}\n}\n')
    entry = module.entry_computation
    assert entry is not None and entry.root is not None
    assert partitions(entry.root) == 6
    assert threads_wanted({"partitions": 6}, 4) == 4  # never more than the cores
    assert threads_wanted({"partitions": 2}, 4) == 2
    assert threads_wanted({"partitions": 1, "kind": "__ynn_fusion"}, 4) == 4
    assert threads_wanted({"partitions": 1, "opcode": "dot"}, 4) == 4
    assert threads_wanted({"partitions": 1, "opcode": "sort", "kind": None}, 4) == 1
    assert threads_wanted({"opcode": "fusion", "kind": "kLoop"}, 4) == 1


@pytest.mark.parametrize("name", [w.name for w in __import__(
    "roofline_report.observe.workloads", fromlist=["catalog"]).catalog()])
def test_catalog_kernel_sum_reconciles_with_program_count(name: str) -> None:
    from roofline_report.hlo import count_stablehlo, inspect_compiled
    from roofline_report.observe import lower as lowering
    from roofline_report.observe.workloads import by_name

    w = by_name(name)
    args, _ = w.inputs()
    low = lowering.lower_and_compile(w.fn, args)
    text = low.compiled.as_text()
    program = count_stablehlo(lowering.stablehlo_module(low.lowered),
                              compiled_loops=inspect_compiled(text)["while_loops"])
    inv = kernel_inventory(text)
    KernelInventory.model_validate(inv)
    r = reconcile_kernels(inv, program)
    assert r.unexplained == {"flops": 0, "transcendentals": 0}
    import jax

    if jax.default_backend() != "cpu":
        # A TPU's compiler evaluates a transcendental again in each fusion that needs it,
        # inserts converts for its matrix unit and folds others: on every backend, what
        # holds is that each difference is a rewrite the reconciliation names (above).
        return
    assert r.transcendentals.equal
    kinds = {x.kind for x in r.rewrites}
    if w.dtype == "bfloat16":
        assert r.flops.equal or "converts_inserted" in kinds
    else:
        assert "converts_inserted" not in kinds
        # apart only by strength reduction (x / c -> x * (1/c)) and ops simplified away
        assert r.flops.difference is not None
        assert abs(r.flops.difference) <= 0.001 * program["flops"]


@pytest.mark.parametrize(("case", "shape", "dtype"), [
    ("rfft-irfft", (8, 128), "float32"),
    ("fft2", (4, 64, 32), "complex64"),
    ("ifft", (100,), "complex64"),  # a length that is not a power of two
])
@pytest.mark.cpu_backend(
    "XLA:CPU's fft kernel; a TPU runs an FFT as convolution fusions and custom calls")
def test_fft_kernels_count_xlas_flops(case: str, shape: tuple[int, ...], dtype: str) -> None:
    jax = pytest.importorskip("jax")
    fft = jax.numpy.fft
    fn = {"rfft-irfft": lambda x: fft.irfft(fft.rfft(x) * 2, n=128),
          "fft2": fft.fft2, "ifft": fft.ifft}[case]
    compiled = jax.jit(fn).lower(jax.ShapeDtypeStruct(shape, dtype)).compile()
    xla = compiled.cost_analysis()
    xla = xla[0] if isinstance(xla, list) else xla
    inv = kernel_inventory(compiled.as_text())
    ffts = [k for k in inv["kernels"] if "fft" in k["ops"]]
    assert ffts and all(k["flops"] > 0 and k["category"] == "other" for k in ffts)
    assert sum(k["flops"] for k in inv["kernels"]) == xla["flops"]


@pytest.mark.slow
@pytest.mark.cpu_backend("XLA:CPU's scan: two kernels around the loop, four a trip, its body "
                         "a ynn_fusion")
def test_measure_workload_records_kernels_times_and_jax_estimate() -> None:
    from roofline_report.observe import run as measure
    from roofline_report.observe.workloads import by_name
    from roofline_report.results.schema import Workload

    skips = measure.Skips()
    record = measure.measure_workload(by_name("scan"), quick=True, skips=skips)
    Workload.model_validate(record)
    assert record["kernels"]["launches"] == 2 + 4 * 10
    timing = record["kernel_timing"]
    if timing.get("available"):  # a profiler left running elsewhere would say why instead
        launches = {k["name"]: k["launches"] for k in timing["kernels"]}
        assert set(launches["ynn_fusion"]) == {10}
    else:
        assert timing["reason"]
    assert record["jax_roofline"]["flops"] == 2 * 256**3  # JAX counts the scan body once


DONATED_HLO = """\
HloModule jit_step, is_scheduled=true, input_output_alias={ {1}: (0, {}, may-alias) }, \
entry_computation_layout={(f32[1024]{0}, f32[])->(f32[1024]{0}, f32[1024]{0})}

%fused_scale (param_0.1: f32[1024], param_1.1: f32[]) -> f32[1024] {
  %param_1.1 = f32[] parameter(1)
  %b.1 = f32[1024]{0} broadcast(%param_1.1), dimensions={}
  %param_0.1 = f32[1024]{0} parameter(0)
  ROOT %m.0 = f32[1024]{0} multiply(%b.1, %param_0.1)
}

%fused_add (param_0.2: f32[1024]) -> f32[1024] {
  %param_0.2 = f32[1024]{0} parameter(0)
  %constant.0 = f32[] constant(1)
  %bc.1 = f32[1024]{0} broadcast(%constant.0), dimensions={}
  ROOT %a.0 = f32[1024]{0} add(%param_0.2, %bc.1)
}

ENTRY %main.1 (x.1: f32[1024], s.1: f32[]) -> (f32[1024], f32[1024]) {
  %x.1 = f32[1024]{0} parameter(0)
  %s.1 = f32[] parameter(1)
  %added = f32[1024]{0} fusion(%x.1), kind=kLoop, calls=%fused_add
  %scaled = f32[1024]{0} fusion(%x.1, %s.1), kind=kLoop, calls=%fused_scale
  %cast = f32[1024]{0} bitcast(%scaled)
  ROOT %tuple = (f32[1024]{0}, f32[1024]{0}) tuple(%added, %cast)
}
"""


def test_a_kernel_writing_a_donated_buffer_is_in_place() -> None:
    from roofline_report.hlo import parse_module

    module = parse_module(DONATED_HLO)
    assert module.aliased_outputs == ((1,),)
    inv = kernel_inventory(module)
    KernelInventory.model_validate(inv)
    by_name = {k["name"]: k for k in inv["kernels"]}
    # Output 1 (through the bitcast) aliases parameter 0: the scaling writes in place.
    assert by_name["scaled"]["in_place"] is True
    assert by_name["added"]["in_place"] is False
    single = DONATED_HLO.replace("{ {1}: (0, {}, may-alias) }", "{ {}: (0, {}, may-alias) }")
    assert parse_module(single).aliased_outputs == ((),)
    assert parse_module(DONATED_HLO.replace("input_output_alias={ {1}: (0, {}, may-alias) }, ",
                                            "")).aliased_outputs == ()


# ---- bytes a kernel touches ------------------------------------------------------------------


def _inventory(fn: Any, *args: Any) -> dict[str, Any]:
    import jax

    inv = kernel_inventory(jax.jit(fn).lower(*args).compile().as_text())
    KernelInventory.model_validate(inv)
    return inv


def _holding(inv: dict[str, Any], op: str) -> dict[str, Any]:
    [kernel] = [k for k in inv["kernels"] if op in k["ops"]]
    return kernel


@pytest.mark.cpu_backend(
    "XLA:CPU's bytes of a loop's rows in main memory; a TPU keeps them in vector memory")
def test_scan_updates_and_slices_charge_one_row_per_iteration() -> None:
    import jax.numpy as jnp
    from jax import lax

    def rnn(xs: Any, h0: Any, w: Any) -> Any:
        return lax.scan(lambda h, x: (jnp.tanh(h * w + x),) * 2, h0, xs)[1]

    # 100 steps, rows of 4096 f32 (16 KiB) in a [100, 4096] buffer (1.6 MB).
    inv = _inventory(rnn, jnp.ones((100, 4096)), jnp.ones((4096,)), jnp.ones((4096,)))
    row, buffer = 4096 * 4, 100 * 4096 * 4
    update = _holding(inv, "dynamic-update-slice")
    assert update["trips"] == 100 and update["in_place"] is True
    assert update["bytes_written"] == row  # one row per iteration, written in place
    assert update["bytes_read"] == row + 4  # the row and its start index, not the buffer
    assert update["boundary_bytes_read"] == buffer + 4 + row
    assert update["boundary_bytes_written"] == buffer
    assert update["bytes_rule"] is not None and "in place" in update["bytes_rule"]
    # The step's fusion reads one row of the inputs (dynamic-slice), h and w whole.
    step = _holding(inv, "dynamic-slice")
    assert step["bytes_read"] == row + 4 + row + row and step["bytes_written"] == row
    assert step["boundary_bytes_read"] == buffer + 4 + row + row
    # Per call: 100 x (16 KiB read + 16 KiB written) for the updates, against 328 MB whole.
    moved = 100 * (update["bytes_read"] + update["bytes_written"])
    assert moved == 100 * (2 * row + 4)
    assert 100 * (update["boundary_bytes_read"] + update["boundary_bytes_written"]) > 328e6
    assert inv["boundary_bytes_read"] > inv["bytes_read"]


@pytest.mark.cpu_backend(
    "XLA:CPU's bytes of a loop's rows in main memory; a TPU keeps them in vector memory")
def test_gru_scan_buffer_rows() -> None:
    import jax.numpy as jnp
    from jax import lax

    def gru(xs: Any, h0: Any, w: Any) -> Any:
        return lax.scan(lambda h, x: (jnp.tanh(x @ w + h),) * 2, h0, xs)[1]

    inv = _inventory(gru, jnp.ones((32, 32, 256)), jnp.ones((32, 256)), jnp.ones((256, 256)))
    row = 32 * 256 * 4  # one [32, 256] slice of the [32, 32, 256] buffer
    update = _holding(inv, "dynamic-update-slice")
    sliced = _holding(inv, "dynamic-slice")
    assert (update["trips"], sliced["trips"]) == (32, 32)
    assert (update["bytes_read"], update["bytes_written"]) == (row + 4, row)
    assert (sliced["bytes_read"], sliced["bytes_written"]) == (row + 4, row)
    assert update["boundary_bytes_written"] == 32 * row


@pytest.mark.cpu_backend("XLA:CPU's bytes of a gather and a scatter in main memory")
def test_gather_and_scatter_charge_their_elements() -> None:
    import jax.numpy as jnp

    x = jnp.ones((512, 1024))
    idx = jnp.array([3, 1, 7, 7], jnp.int32)
    take = _holding(_inventory(lambda x, i: jnp.take(x, i, axis=0), x, idx), "gather")
    rows = 4 * 1024 * 4
    assert take["bytes_read"] == rows + 4 * 4  # the gathered rows and the indices
    assert take["bytes_written"] == rows
    assert take["boundary_bytes_read"] == 512 * 1024 * 4 + 16
    # x.at[i].add(1): the operand's rows read and written, the updates and indices read
    # (jax.experimental.roofline's rule: 3 x updates + indices).
    added = _holding(_inventory(lambda x, i: x.at[i].add(1.0), x, idx), "scatter")
    assert added["bytes_read"] == 2 * rows + 4 * 4 and added["bytes_written"] == rows
    assert added["in_place"] is True
    # x.at[i].set(1): an overwrite reads nothing of the operand.
    put = _holding(_inventory(lambda x, i: x.at[i].set(1.0), x, idx), "scatter")
    assert put["bytes_read"] == rows + 4 * 4 and put["bytes_written"] == rows


EDGE_HLO = """HloModule edges

%dus_not_root (b: f32[64,16], u: f32[1,16], i: s32[]) -> f32[64,16] {
  %b = f32[64,16]{1,0} parameter(0)
  %u = f32[1,16]{1,0} parameter(1)
  %i = s32[] parameter(2)
  %z = s32[] constant(0)
  %d = f32[64,16]{1,0} dynamic-update-slice(%b, %u, %i, %z)
  ROOT %n = f32[64,16]{1,0} negate(%d)
}

%slice_and_more (b: f32[64,16]) -> f32[8,16] {
  %b = f32[64,16]{1,0} parameter(0)
  %s = f32[8,16]{1,0} slice(%b), slice={[0:8], [0:16]}
  %r = f32[8,16]{1,0} slice(%b), slice={[8:16], [0:16]}
  ROOT %a = f32[8,16]{1,0} add(%s, %r)
}

%slice_and_whole (b: f32[64,16]) -> (f32[8,16], f32[64,16]) {
  %b = f32[64,16]{1,0} parameter(0)
  %s = f32[8,16]{1,0} slice(%b), slice={[0:8], [0:16]}
  %n = f32[64,16]{1,0} negate(%b)
  ROOT %t = (f32[8,16]{1,0}, f32[64,16]{1,0}) tuple(%s, %n)
}

%two_outputs (b: f32[64,16], u: f32[1,16], i: s32[]) -> (f32[64,16], f32[1,16]) {
  %b = f32[64,16]{1,0} parameter(0)
  %u = f32[1,16]{1,0} parameter(1)
  %i = s32[] parameter(2)
  %z = s32[] constant(0)
  %old = f32[1,16]{1,0} dynamic-slice(%b, %i, %z), dynamic_slice_sizes={1,16}
  %new = f32[1,16]{1,0} add(%old, %u)
  %d = f32[64,16]{1,0} dynamic-update-slice(%b, %new, %i, %z)
  ROOT %t = (f32[64,16]{1,0}, f32[1,16]{1,0}) tuple(%d, %old)
}

%onto_fresh (u: f32[1,16], i: s32[]) -> f32[64,16] {
  %u = f32[1,16]{1,0} parameter(0)
  %i = s32[] parameter(1)
  %zero = f32[] constant(0)
  %b = f32[64,16]{1,0} broadcast(%zero), dimensions={}
  %z = s32[] constant(0)
  ROOT %d = f32[64,16]{1,0} dynamic-update-slice(%b, %u, %i, %z)
}

ENTRY %main (b: f32[64,16], u: f32[1,16], i: s32[]) -> (f32[64,16], f32[1,16], f32[1,16], f32[64,16], f32[8,16]) {
  %b = f32[64,16]{1,0} parameter(0)
  %u = f32[1,16]{1,0} parameter(1)
  %i = s32[] parameter(2)
  %z = s32[] constant(0)
  %ds = f32[1,16]{1,0} dynamic-slice(%b, %i, %z), dynamic_slice_sizes={1,16}
  %dus = f32[64,16]{1,0} dynamic-update-slice(%b, %u, %i, %z)
  %not_root = f32[64,16]{1,0} fusion(%dus, %u, %i), kind=kLoop, calls=%dus_not_root
  %slices = f32[8,16]{1,0} fusion(%b), kind=kLoop, calls=%slice_and_more
  %mixed = (f32[8,16]{1,0}, f32[64,16]{1,0}) fusion(%b), kind=kLoop, calls=%slice_and_whole
  %pair = (f32[64,16]{1,0}, f32[1,16]{1,0}) fusion(%not_root, %u, %i), kind=kLoop, calls=%two_outputs
  %fresh = f32[64,16]{1,0} fusion(%u, %i), kind=kLoop, calls=%onto_fresh
  %p0 = f32[64,16]{1,0} get-tuple-element(%pair), index=0
  %p1 = f32[1,16]{1,0} get-tuple-element(%pair), index=1
  ROOT %out = (f32[64,16]{1,0}, f32[1,16]{1,0}, f32[1,16]{1,0}, f32[64,16]{1,0}, f32[8,16]{1,0}) tuple(%p0, %ds, %p1, %fresh, %slices)
}
"""  # noqa: E501


def test_byte_rules_on_hand_written_edges() -> None:
    inv = kernel_inventory(EDGE_HLO)
    KernelInventory.model_validate(inv)
    k = {x["name"]: x for x in inv["kernels"]}
    buf, row = 64 * 16 * 4, 16 * 4
    # Unfused: the slice reads its row; the update writes its row in place.
    assert (k["ds"]["bytes_read"], k["ds"]["bytes_written"]) == (row + 4 + 4, row)
    assert (k["dus"]["bytes_read"], k["dus"]["bytes_written"]) == (row + 4 + 4, row)
    assert k["dus"]["in_place"] is True and k["ds"]["in_place"] is False
    # An update that is not the fusion's root computes a fresh value: whole buffers.
    assert (k["not_root"]["bytes_read"], k["not_root"]["bytes_written"]) == (buf + row + 4, buf)
    assert k["not_root"]["bytes_rule"] is None and k["not_root"]["in_place"] is False
    # Two slices of a parameter read their rows (8 + 8 of 64); a parameter also used whole
    # (negated) is read whole.
    assert k["slices"]["bytes_read"] == 16 * 16 * 4
    assert k["mixed"]["bytes_read"] == buf
    # A read-modify-write of one row, with a second output: the row read, the row written in
    # place, and the second output whole.
    assert k["pair"]["bytes_read"] == row + row + 4
    assert k["pair"]["bytes_written"] == row + row and k["pair"]["in_place"] is True
    assert k["pair"]["boundary_bytes_written"] == buf + row
    # An update onto a broadcast, not a parameter: the whole result is written.
    assert k["fresh"]["bytes_written"] == buf and k["fresh"]["in_place"] is False


@pytest.mark.parametrize(("ops", "pattern", "inventory", "shown"), [
    ({"fusion": 1, "copy": 1, "transpose": 1}, "transpose", "elementwise", "data movement"),
    ({"fusion": 1, "scatter": 1}, "scatter", "elementwise", "data movement"),
    ({"fusion": 1, "gather": 1, "reshape": 1}, "gather", "elementwise", "data movement"),
    # A loss reduced over gathered values computes: it stays a reduction.
    ({"fusion": 1, "gather": 1, "log": 1, "reduce": 1, "add": 2}, "gather", "reduction",
     "reduction"),
    # A transpose fused with arithmetic stays elementwise.
    ({"fusion": 1, "copy": 1, "transpose": 1, "multiply": 2}, "transpose", "elementwise",
     "elementwise"),
    ({"fusion": 1, "copy": 1}, None, "data movement", "data movement"),
])
def test_a_pattern_kernel_is_data_movement_only_when_it_computes_nothing(
        ops: dict[str, int], pattern: str | None, inventory: str, shown: str) -> None:
    from roofline_report.analysis.kernels import _category
    from tests.kernel_records import kernel_record

    assert _category(kernel_record(ops=ops, pattern=pattern, category=inventory)) == shown


# ---- padded image convolutions ---------------------------------------------------------------

def _named(text: str) -> tuple[Any, dict[str, Any]]:
    """The parsed module of ``text`` and its instructions by name."""
    from roofline_report.hlo.ir import parse_module

    module = parse_module(text)
    return module, {i.name: i for _c, i in module.instructions()}


_PADDED_HLO = """HloModule padded

ENTRY %main (x: f32[4,16,16,32], w: f32[3,3,32,32], y: f32[4,18,18,32]) -> (f32[4,16,16,32], f32[4,15,15,32], f32[4,16,16,32]) {
  %x = f32[4,16,16,32]{3,2,1,0} parameter(0)
  %w = f32[3,3,32,32]{3,2,1,0} parameter(1)
  %y = f32[4,18,18,32]{3,2,1,0} parameter(2)
  %same = f32[4,16,16,32]{3,2,1,0} convolution(%x, %w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %corner = f32[4,15,15,32]{3,2,1,0} convolution(%x, %w), window={size=3x3 pad=0_1x0_1}, dim_labels=b01f_01io->b01f
  %valid = f32[4,16,16,32]{3,2,1,0} convolution(%y, %w), window={size=3x3 pad=0_0x0_0}, dim_labels=b01f_01io->b01f
  ROOT %out = (f32[4,16,16,32]{3,2,1,0}, f32[4,15,15,32]{3,2,1,0}, f32[4,16,16,32]{3,2,1,0}) tuple(%same, %corner, %valid)
}
"""  # noqa: E501


def test_an_image_convolution_says_whether_it_pads_its_input() -> None:
    """Padding on any side of any dimension makes a convolution a padded one (XLA:CPU runs
    those on a faster path); a window whose padding is all zeros, printed or not, does not."""
    from roofline_report.hlo.product_facts import image_conv_padded

    module, found = _named(_PADDED_HLO)
    assert image_conv_padded(found["same"], module)
    assert image_conv_padded(found["corner"], module)
    assert not image_conv_padded(found["valid"], module)
    assert not image_conv_padded(found["x"], module)  # no convolution at all


_GRADIENT_HLO = """HloModule gradient

ENTRY %main (x: f32[32,16,16,8], g: f32[16,16,8,32], w: f32[3,3,32,32], s: f32[1,2,2,32]) -> (f32[32,3,3,32], f32[1,2,2,32]) {
  %x = f32[32,16,16,8]{3,2,1,0} parameter(0)
  %g = f32[16,16,8,32]{3,2,1,0} parameter(1)
  %w = f32[3,3,32,32]{3,2,1,0} parameter(2)
  %s = f32[1,2,2,32]{3,2,1,0} parameter(3)
  %filter = f32[32,3,3,32]{3,2,1,0} convolution(%x, %g), window={size=16x16 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %tiny = f32[1,2,2,32]{3,2,1,0} convolution(%s, %w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  ROOT %out = (f32[32,3,3,32]{3,2,1,0}, f32[1,2,2,32]{3,2,1,0}) tuple(%filter, %tiny)
}
"""  # noqa: E501


def test_a_convolution_whose_window_outgrows_its_output_is_a_weight_gradient() -> None:
    """A ResNet block's filter gradient (its window the 16x16 images, a 3x3 output) is one;
    a forward 3x3 convolution over 16x16 images is not; one over 2x2 images reads as one
    (the rule's known limit: its window, 9, exceeds its 4 outputs)."""
    from roofline_report.hlo.product_facts import image_conv_weight_gradient

    module, found = _named(_GRADIENT_HLO)
    assert image_conv_weight_gradient(found["filter"], module)
    assert image_conv_weight_gradient(found["tiny"], module)
    padded, forward = _named(_PADDED_HLO)
    assert not image_conv_weight_gradient(forward["same"], padded)
    assert not image_conv_weight_gradient(forward["x"], padded)


_GENERIC_HLO = """HloModule generic

ENTRY %main (x: f32[8,8,128,8], g: f32[64,16,16,8], y: f32[8,4,4,128], w: f32[4,4,128,64]) -> (f32[128,4,4,64], f32[8,8,8,64]) {
  %x = f32[8,8,128,8]{3,2,1,0} parameter(0)
  %g = f32[64,16,16,8]{3,2,1,0} parameter(1)
  %y = f32[8,4,4,128]{3,2,1,0} parameter(2)
  %w = f32[4,4,128,64]{3,2,1,0} parameter(3)
  %filter = f32[128,4,4,64]{3,2,1,0} convolution(%x, %g), window={size=4x4 pad=1_1x1_1 rhs_dilate=2x2 rhs_reversal=1x1}, dim_labels=01fb_o01i->f01b
  %upsampled = f32[8,8,8,64]{3,2,1,0} convolution(%y, %w), window={size=4x4 pad=2_2x2_2 lhs_dilate=2x2}, dim_labels=b01f_01io->b01f
  ROOT %out = (f32[128,4,4,64]{3,2,1,0}, f32[8,8,8,64]{3,2,1,0}) tuple(%filter, %upsampled)
}
"""  # noqa: E501


def test_a_bare_convolution_no_library_takes_counts_its_flops_and_window_apart() -> None:
    """A transposed convolution's filter gradient as XLA:CPU leaves it (features first, batch
    last, its window dilated and reversed) runs on XLA's generic code: its flops and window
    are recorded apart. A transposed convolution itself, in the libraries' form, is not; nor
    is anything on a TPU."""
    from roofline_report.hlo.kernel_cost import conv_flops
    from roofline_report.hlo.product_facts import generic_conv_flops, generic_conv_window

    _module, found = _named(_GENERIC_HLO)
    assert generic_conv_flops(found["filter"]) == conv_flops(found["filter"]) > 0
    assert generic_conv_window(found["filter"]) == 16
    assert generic_conv_flops(found["upsampled"]) == generic_conv_window(found["upsampled"]) == 0
    assert generic_conv_flops(found["filter"], "tpu") == 0
    assert generic_conv_flops(found["x"]) == 0


def test_a_padded_depthwise_convolution_counts_its_flops_as_if_every_tap_landed() -> None:
    """A grouped convolution's time goes with its outputs: besides the flops XLA counts (taps
    on the padding left out), the kernel records those of every tap (2 x outputs x taps),
    which equal the count where nothing is padded."""
    import jax
    import jax.numpy as jnp

    def depthwise(x: Any, w: Any, pad: Any) -> Any:
        return jax.lax.conv_general_dilated(x, w, (1, 1), pad, feature_group_count=8,
                                            dimension_numbers=("NHWC", "HWIO", "NHWC"))

    x, w = jnp.ones((2, 12, 12, 8)), jnp.ones((7, 7, 1, 8))
    [same] = [k for k in _inventory(lambda a, b: depthwise(a, b, "SAME"), x, w)["kernels"]
              if k["flops"]]
    assert same["grouped_conv_tap_flops"] == 2 * (2 * 12 * 12 * 8) * 49
    # Along each dimension 12 outputs see 4 + 5 + 6 + 7 x 6 + 6 + 5 + 4 = 72 of their 84 taps.
    assert same["grouped_conv_flops"] == 2 * 2 * 8 * 72 * 72
    [valid] = [k for k in _inventory(lambda a, b: depthwise(a, b, "VALID"), x, w)["kernels"]
               if k["flops"]]
    assert valid["grouped_conv_tap_flops"] == valid["grouped_conv_flops"] == 2 * 2 * 6 * 6 * 8 * 49


# ---- a sequence's convolutions ---------------------------------------------------------------


@pytest.mark.cpu_backend("XLA:CPU's compiled 1-D convolution: on a TPU v5e the same strided "
                         "convolution is compiled over 56 outputs where 50 are asked")
def test_a_sequences_dense_convolutions_give_their_flops_and_filter() -> None:
    """A dense 1-D convolution (an audio encoder's, strided) counts its flops and its filter's
    elements; an image's convolution and a grouped 1-D one count none (other roofs)."""
    import jax
    import jax.numpy as jnp

    def convs(x: Any, w: Any, image: Any, k: Any, g: Any) -> Any:
        seq = jax.lax.conv_general_dilated(x, w, (2,), "VALID",
                                           dimension_numbers=("NWC", "WIO", "NWC"))
        pic = jax.lax.conv_general_dilated(image, k, (1, 1), "VALID",
                                           dimension_numbers=("NHWC", "HWIO", "NHWC"))
        grouped = jax.lax.conv_general_dilated(x, g, (1,), "SAME", feature_group_count=4,
                                               dimension_numbers=("NWC", "WIO", "NWC"))
        return seq, pic, grouped

    x = jnp.ones((2, 101, 32))
    args = (x, jnp.ones((3, 32, 48)), jnp.ones((1, 10, 10, 8)), jnp.ones((3, 3, 8, 8)),
            jnp.ones((5, 8, 32)))
    inv = _inventory(convs, *args)
    convolutions = [k for k in inv["kernels"]
                    if any("convolution" in op for op in k["flops_by_op"])]
    assert len(convolutions) == 3
    [seq] = [k for k in convolutions if k["line_conv_flops"]]
    # 50 outputs of 48 features, each 3 x 32 multiply-adds, twice over the batch
    assert seq["line_conv_flops"] == 2 * 2 * 50 * 48 * 3 * 32
    assert seq["line_conv_filter"] == 3 * 32 * 48
    assert all(k["line_conv_filter"] == 0 for k in convolutions if k is not seq)
    # The image's convolution keeps its patch matrix (8 x 8 outputs x a 3x3 window x 8
    # features in); the sequence's and the grouped one keep none.
    [pic] = [k for k in convolutions if k["image_conv_patch"]]
    assert pic["image_conv_patch"] == 8 * 8 * 9 * 8
    assert pic is not seq and not pic["line_conv_flops"]
    # A strided convolution's gradients are dilated convolutions (lhs_dilate, rhs_dilate),
    # another path of XLA:CPU's: none of them counts as one.
    def loss(x: Any, w: Any) -> Any:
        return (jax.lax.conv_general_dilated(x, w, (2,), "VALID",
                                             dimension_numbers=("NWC", "WIO", "NWC")) ** 2).sum()

    grads = _inventory(jax.grad(loss, argnums=(0, 1)), x, args[1])
    lines = [k["name"] for k in grads["kernels"] if k["line_conv_flops"]]
    assert len(lines) == 1 and not [n for n in lines if "-dilated" in n]
