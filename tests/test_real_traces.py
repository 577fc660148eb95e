"""Profiles of JAX programs captured on real AMD Instinct GPUs (tests/fixtures/traces_real,
from AMD-AGI/TraceLens, MIT): the chip recognised from the device plane, the library
convolution counted, the kernel times checked against TraceLens's own report of the same trace
(its CSV files beside the traces), the opaque custom calls said to be uncounted."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from roofline_report.analysis.analyse import analyse
from roofline_report.device_recognition import DeviceFacts, recognise
from roofline_report.ingest.pipeline import read_profile
from roofline_report.ingest.records import results_document
from roofline_report.kinds import Kind
from roofline_report.report import views

REAL = Path(__file__).resolve().parent / "fixtures" / "traces_real"
CSV = REAL / "tracelens_conv_csv"


@pytest.fixture(scope="module")
def documents() -> dict[str, dict[str, Any]]:
    return {name: results_document(read_profile(REAL / name))
            for name in ("mi300x_conv_08", "mi300x_conv_legacy", "mi355x_te_fused_attn")}


def _rows(name: str) -> list[dict[str, str]]:
    with (CSV / name).open(newline="") as f:
        return list(csv.DictReader(f))


def _kernel(data: dict[str, Any], name: str) -> dict[str, Any]:
    (w,) = data["workloads"]
    return next(k for k in w["kernels"]["kernels"] if k["name"] == name)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "chip", "arch"), [
    ("mi300x_conv_08", "AMD Instinct MI300X", "9.4"),
    ("mi300x_conv_legacy", "AMD Instinct MI300X", "9.4"),
    ("mi355x_te_fused_attn", "AMD Instinct MI355X", "9.5"),
])
def test_the_chip_is_recognised_from_the_device_plane(
        documents: dict[str, dict[str, Any]], name: str, chip: str, arch: str) -> None:
    data = documents[name]
    env = data["environment"]
    assert env["device_kind"] == chip and env["device_preset"] == chip
    assert env["device_recognised_by"] == "stats" and env["compute_capability"] == arch
    an = analyse(data)
    roofs = an.roofs.kernels
    assert roofs.kind is Kind.SPEC_SHEET and roofs.label == chip
    md = views.render(data).markdown
    assert f"Roofs: the spec sheet of the {chip} (recognised from the trace's device plane: " \
        "vendor AMD" in md
    assert "100 GFLOP/s" not in md and "20 GB/s" not in md  # never the seed's budgets


def test_the_convolution_is_counted_from_its_window_and_dim_labels(
        documents: dict[str, dict[str, Any]]) -> None:
    conv = _kernel(documents["mi300x_conv_legacy"], "cudnn-conv.1.0")
    # input bf16[1,16,32,60,104] (bf012), filter [5120,16,1,2,2] (oi012), output
    # [1,5120,34,31,53], window size 1x2x2 stride 1x2x2 pad 1_1 each: 2 x 16 input features x
    # 5120 output features x the taps that land on the input (32 x 60 x 104 of the
    # 34 x 31x2 x 53x2 window positions: padding excluded, XLA's rule).
    assert conv["flops"] == 2 * 16 * 5120 * 32 * 60 * 104 == 32_715_571_200
    (row,) = [r for r in _rows("op_conv.csv") if r["name"] == "Im3d2Col"]
    # TraceLens counts 2.288 GFLOP: 2 x output elements x the filter's spatial size only
    # (its jax_conv model drops the input features, 16, and the filter's first spatial
    # extent); with the input features and without the padding taps the counts agree.
    tracelens = float(row["GFLOPS_first"]) * 1e9
    assert tracelens == pytest.approx(2 * 5120 * 34 * 31 * 53 * 2 * 2)
    assert conv["flops"] == pytest.approx(tracelens * 16 * (32 / 34) * (60 / 62) * (104 / 106))
    # The bytes agree with TraceLens's: input, filter and output once each (bf16).
    moved = conv["bytes_read"] + conv["bytes_written"]
    assert moved == pytest.approx(float(row["Data Moved (MB)_first"]) * 2**20, rel=0.01)


@pytest.mark.slow
def test_kernel_times_match_tracelens(documents: dict[str, dict[str, Any]]) -> None:
    """TraceLens's CSVs are of the legacy trace (its one GPU): the per-call kernel times agree
    to within the first quartile's difference from the mean."""
    data = documents["mi300x_conv_legacy"]
    (w,) = data["workloads"]
    times = {k["name"]: k for k in w["kernel_timing"]["kernels"]}
    summary = {r["name"]: float(r["total_direct_kernel_time_sum"]) / float(r["Count"]) * 1e-6
               for r in _rows("xla_summary.csv")}
    assert times["input_transpose_fusion"]["busy_s"][0] == pytest.approx(
        summary["input_transpose_fusion"], rel=0.02)  # 0.390 ms per call
    conv = _rows("op_conv.csv")
    im2col = next(float(r["Kernel Time (µs)_mean"]) for r in conv if r["name"] == "Im3d2Col")
    gemm = next(float(r["Kernel Time (µs)_mean"]) for r in conv if r["name"] != "Im3d2Col")
    assert im2col == pytest.approx(16.2, abs=0.1) and gemm == pytest.approx(291.75, abs=0.1)
    # One HLO op, two device kernels (Im3d2Col + the GEMM): both belong to the op.
    assert times["cudnn-conv.1.0"]["launches"] == [2.0]
    im2col_name, gemm_name = w["trace"]["device_kernels"]["cudnn-conv.1.0"]
    assert im2col_name == "Im3d2Col" and gemm_name.startswith("Cijk_Ailk_Bljk_BBS_BH")
    assert "that ran as several device kernels on GPU:7" in views.render(data).markdown
    assert times["cudnn-conv.1.0"]["busy_s"][0] == pytest.approx((im2col + gemm) * 1e-6,
                                                                 rel=0.02)


@pytest.mark.slow
def test_fused_attention_ffi_calls_are_counted_by_name(
        documents: dict[str, dict[str, Any]]) -> None:
    """Transformer Engine's fused attention (55 % of the MI355X trace's kernel time) is an
    opaque FFI call; its config states the sizes (batch 2, 16 heads, 2,048 positions, head
    dims 128, mask_type 2: causal). The count follows FlashAttention's convention, as
    TraceLens's SDPA model does: forward Q x K^T + P x V, backward the scores recomputed,
    dV, dP, dQ, dK; causal halves both."""
    data = documents["mi355x_te_fused_attn"]
    attention = {k["name"]: k for k in data["workloads"][0]["kernels"]["kernels"]
                 if k["name"].startswith("te_fused_attn")}
    assert len(attention) == 4
    product = 2 * 2 * 16 * 2048 * 2048 * 128  # one of Q x K^T or P x V
    for name, k in attention.items():
        expected = (3 + 2) * product // 2 if "backward" in name else 2 * product // 2
        assert k["flops"] == expected, name
        assert not k["uncosted"] and "by its name and config" in k["counted_by_name"][0]
        assert "causal: half the scores" in k["counted_by_name"][0]
    gemm = _kernel(data, "custom-call.1")  # __cublas$gemm (hipBLASLt on ROCm)
    assert gemm["flops"] == 2 * 4096 * 2048 * 6144  # bf16[4096,2048] contracting 6,144
    (p,) = analyse(data).programs
    assert p.kernels is not None and p.kernels.counted_share == 1.0
    md = views.render(data).markdown
    assert r"te\_fused\_attn\_forward\_ffi: counted as fused attention by its name" in md
    assert not data["skipped"]


@pytest.mark.slow
def test_an_opaque_call_is_said_to_be_uncounted_and_exits_3(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no rule for Transformer Engine's calls, they are opaque: their bytes count, their
    work does not, the rows and the program say so, and the command exits 3."""
    from roofline_report import cli
    from roofline_report.errors import EXIT_PARTIAL
    from roofline_report.hlo import library_calls

    monkeypatch.setattr(library_calls, "TE_ATTENTION", ("no such call",))
    data = results_document(read_profile(REAL / "mi355x_te_fused_attn"))
    attention = [k for k in data["workloads"][0]["kernels"]["kernels"]
                 if k["name"].startswith("te_fused_attn")]
    assert len(attention) == 4
    for k in attention:
        assert k["flops"] == 0 and "opaque custom call" in k["uncosted"][0]
        assert k["bytes_read"] > 0
    (p,) = analyse(data).programs
    assert p.kernels is not None and p.kernels.counted_share is not None
    assert 0.3 < p.kernels.counted_share < 0.6  # the attention calls: about 55% of the time
    md = views.render(data).markdown
    assert r"work not counted: te\_fused\_attn\_forward\_ffi: an opaque custom call" in md
    assert "The kernels whose work is counted take" in md
    (missing,) = [s for s in data["skipped"] if s["what"].startswith("work of 4 kernel(s)")]
    assert "te_fused_attn_backward_ffi: an opaque custom call" in missing["reason"]
    out = tmp_path / "report"
    assert cli.main(["profile", str(REAL / "mi355x_te_fused_attn"), "--out", str(out)]) \
        == EXIT_PARTIAL
    assert (out / "report.html").is_file()


def test_an_unknown_device_gets_no_roof() -> None:
    facts = DeviceFacts(vendor="AMD", cores=228, compute_capability=(9, 4),
                        memory_bytes=128 << 30, clock_hz=2.1e9)  # an MI300A: no preset
    found = recognise(facts)
    assert found.preset is None and "no chip preset" in found.reason
    mi355x = DeviceFacts(vendor="AMD", cores=256, compute_capability=(9, 5),
                         memory_bytes=309_220_868_096, clock_hz=2.2e9)
    assert recognise(mi355x).preset == "AMD Instinct MI350X"  # the clock tells them apart


@pytest.mark.slow
def test_events_no_hlo_op_claims_are_listed(documents: dict[str, dict[str, Any]]) -> None:
    """On GPU:0 of the 8-GPU trace the first call's Im3d2Col and input transpose carry no HLO
    op (so 0.8 and 1.8 launches per call are timed): they and the runtime's copy kernels are
    listed, the transpose with the kernel its name looks like."""
    data = documents["mi300x_conv_08"]
    (w,) = data["workloads"]
    found = {u["name"]: u for u in w["trace"]["unclaimed"]}
    assert found["Im3d2Col.kd"]["events"] == 1 and found["Im3d2Col.kd"]["like"] is None
    assert found["input_transpose_fusion_1.kd"]["like"] == "input_transpose_fusion.1"
    assert found["__amd_rocclr_copyBuffer.kd"]["events"] > 0
    md = views.render(data).markdown
    assert "Events no HLO op claims, on GPU:0" in md
    assert "looks like input\\_transpose\\_fusion.1 by its name" in md


@pytest.mark.slow
def test_the_machine_that_ran_the_trace_is_never_this_machine(
        documents: dict[str, dict[str, Any]]) -> None:
    md = views.render(documents["mi300x_conv_legacy"]).markdown
    assert "Measured on the machine that ran the trace" in md
    assert "Ceilings of the machine that ran the trace" in md
    assert "timed on the machine that ran the trace, read from its trace" in md
    assert "this machine" not in md.replace("the machine that ran the trace", "")
    # A kernel that only moves an argument is named after the argument, not as a source line.
    assert "| `input_transpose_fusion.1` | data movement | argument x (no source line) |" in md


@pytest.mark.slow
def test_a_mostly_idle_device_is_said_to_be_host_bound_first(
        documents: dict[str, dict[str, Any]]) -> None:
    an = analyse(documents["mi300x_conv_legacy"])
    (p,) = an.programs
    assert p.kernels is not None and p.kernels.trace is not None
    assert p.kernels.trace.host_bound and p.kernels.trace.idle > 0.5
    md = views.render(documents["mi300x_conv_legacy"]).markdown
    assert md.index("**Host-bound**") < md.index("Roofs: the spec sheet")
    # Said once, at the top of the summary, before its table of roofs and predictions.
    summary = md[md.index("## <a id=\"summary\"></a>"):md.index("| program | measured |")]
    assert "**Host-bound**" in summary and md.count("**Host-bound**") == 1
    (te,) = analyse(documents["mi355x_te_fused_attn"]).programs
    assert te.kernels is not None and te.kernels.trace is not None
    assert not te.kernels.trace.host_bound


def test_two_profiles_compared_kernel_by_kernel(documents: dict[str, dict[str, Any]]) -> None:
    import copy

    from roofline_report.report.compare import render_comparison

    legacy, newer = documents["mi300x_conv_legacy"], copy.deepcopy(documents["mi300x_conv_08"])
    (w,) = newer["workloads"]  # a kernel only the first run holds: listed, not dropped
    w["kernels"]["kernels"] = [k for k in w["kernels"]["kernels"]
                               if k["name"] != "loop_transpose_fusion"]
    w["kernel_timing"]["kernels"] = [k for k in w["kernel_timing"]["kernels"]
                                     if k["name"] != "loop_transpose_fusion"]
    _, md, _, doc = render_comparison([("legacy", legacy), ("08", newer)])
    (kernels,) = doc["kernels"].values()
    # cudnn-conv.1.0 (legacy) and cudnn-conv.1 (08) are one op renamed between compilations.
    assert kernels["every run"]["cudnn-conv.1.0 / cudnn-conv.1"] == ["308 µs", "313 µs"]
    assert kernels["every run"]["input_transpose_fusion"] == ["390 µs", "359 µs"]
    assert kernels["some runs"] == {"loop_transpose_fusion": "1"}
    assert "speed-up, run 2 vs 1" in md and "kernel in some runs only" in md


@pytest.mark.slow
def test_device_timelines_match_tracelens(documents: dict[str, dict[str, Any]]) -> None:
    """TraceLens's GPU timeline of the legacy trace: its pid 8 is GPU:7 (the kernels), its
    pid 1 GPU:0 (memory copies only)."""
    expected = {("GPU:7" if r["gpu_pid"] == "8" else "GPU:0", r["type"]): float(r["time ms"])
                for r in _rows("gpu_timeline.csv")}
    timeline = {t["device"]: t for t in documents["mi300x_conv_legacy"]["trace"]["timeline"]}
    for device, t in timeline.items():
        for key, theirs in (("total_s", "total_time"), ("computation_s", "computation_time"),
                            ("exposed_communication_s", "exposed_comm_time"),
                            ("exposed_memcpy_s", "exposed_memcpy_time"),
                            ("idle_s", "idle_time")):
            assert t[key] * 1e3 == pytest.approx(expected[(device, theirs)], abs=1e-6), \
                (device, key)
    md = views.render(documents["mi300x_conv_legacy"]).markdown
    assert "The devices' time over the whole trace" in md


def test_a_device_no_preset_describes_gets_no_roof_and_one_line_on_how_to_give_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The MI300X trace as read before any preset described its chip: the kernels keep their
    achieved rates, with no share of a roof and no prediction, never the seed's budgets."""
    from roofline_report import device_recognition

    monkeypatch.setattr(device_recognition, "_SHAPES", ())
    data = results_document(read_profile(REAL / "mi300x_conv_legacy"))
    env = data["environment"]
    assert env["device_kind"] == "AMD" and "device_preset" not in env
    assert "no chip preset" in env["device_unrecognised"]
    an = analyse(data)
    assert not an.roofs.kernels.compute and not an.roofs.kernels.bandwidth
    (p,) = an.programs
    assert p.prediction is None and p.kernels is not None
    conv = next(r for r in p.kernels.rows if r.name == "cudnn-conv.1.0")
    assert conv.prediction is None and conv.share_of_hardware_roof is None
    assert conv.achieved is not None and conv.achieved > 1e14  # 32.7 GFLOP in 308 us
    md = views.render(data).markdown
    assert ("No roofs: the machine that ran the trace is AMD (vendor AMD, compute capability "
            "9.4, 304 compute units, 192 GiB of device memory, a 2.1 GHz clock)") in md
    assert "--preset NAME" in md and "--ceilings FILE" in md
    assert "100 GFLOP/s" not in md and "20 GB/s" not in md
    assert "% `P`" not in md  # no share of any roof


# --- an NVIDIA H200 trace: the kernels run in a CUDA graph ----------------------------------
H200 = REAL / "h200_train_step"


def _h200_events() -> list[Any]:
    from roofline_report.traces.xspace import read_xspace

    (path,) = sorted(H200.glob("plugins/profile/*/*.xplane.pb*"))
    plane = read_xspace(path).plane("/device:GPU:0")
    assert plane is not None
    return [e for line in plane.lines for e in line.events]


@pytest.fixture(scope="module")
def h200() -> dict[str, Any]:
    return results_document(read_profile(H200))


@pytest.mark.slow
def test_an_h200_trace_is_held_to_the_h200_spec_sheet(h200: dict[str, Any]) -> None:
    env = h200["environment"]
    assert env["device_kind"] == "NVIDIA H200" and env["device_preset"] == "H200"
    assert env["jax"] == "0.11.2" and env["compute_capability"] == "9.0"
    roofs = analyse(h200).roofs.kernels
    assert roofs.kind is Kind.SPEC_SHEET and roofs.label == "H200"
    md = views.render(h200).markdown
    assert "100 GFLOP/s" not in md and "20 GB/s" not in md  # never the seed's budgets
    # the preset's launch cost is its assumption, not a measured ceiling
    assert "(the launch cost H200 assumes: 2 µs `H`)" in md
    assert "measured on a chain of kernels" not in md


@pytest.mark.slow
def test_command_buffer_kernels_are_each_timed_by_their_own_names(
        h200: dict[str, Any]) -> None:
    """Every kernel event of the trace names the command buffer (``command_buffer_1``) as its
    HLO op; each of the 70 kernels is timed from the event its name names, and the 11 fusions
    that run another's compiled code (four products as ``gemm_fusion_dot_47``) from that
    kernel's events in schedule order."""
    evs = _h200_events()
    assert {e.stats["hlo_op"] for e in evs} == {"command_buffer_1"} and len(evs) == 350
    (w,) = h200["workloads"]
    timing = w["kernel_timing"]
    assert timing["available"] and timing["source"] == "device" and not timing["unmatched"]
    assert w["trace"]["device"] == "GPU:0" and w["trace"]["per"] == "step"
    assert len(timing["calls"]) == 5
    names = [k["name"] for k in w["kernels"]["kernels"]]
    rows = {k["name"]: k for k in timing["kernels"]}
    assert set(rows) == set(names) and len(names) == 70
    assert all(r["launches"] == [1.0] * 5 for r in rows.values())
    (note,) = [n for n in timing["notes"] if "command_buffer_1" in n]
    assert note.startswith("350 kernel events") and "55 of them" in note
    # gemm_fusion_dot.47 runs its own kernel first; .53, .52 and .51 (in that schedule order)
    # run the same compiled kernel: the 2nd, 3rd and 4th such event of each step.
    shared = [e for e in evs if e.name == "gemm_fusion_dot_47"]
    for i, name in enumerate(["gemm_fusion_dot.47", "gemm_fusion_dot.53",
                              "gemm_fusion_dot.52", "gemm_fusion_dot.51"]):
        expected = [shared[4 * step + i].duration_ns * 1e-9 for step in range(5)]
        assert rows[name]["busy_s"] == pytest.approx(expected), name
    assert names.index("gemm_fusion_dot.53") < names.index("gemm_fusion_dot.51")
    # the command buffer is no HLO op that ran as several kernels
    assert w["trace"]["device_kernels"] == {}
    md = views.render(h200).markdown
    assert "ran as several device kernels" not in md


def test_without_step_markers_the_calls_are_counted_from_the_kernels_names(
        tmp_path: Path) -> None:
    """The same trace with its step markers taken out: the events carry no run id and their
    HLO op is the command buffer's, so the calls are counted from the launches of the kernels
    their names name (five, not one)."""
    import gzip

    from roofline_report.traces.xspace_schema import message_class

    (path,) = sorted(H200.glob("plugins/profile/*/*.xplane.pb*"))
    space = message_class("XSpace")()
    space.ParseFromString(gzip.decompress(path.read_bytes()))
    event_class, stat_class = message_class("XEvent"), message_class("XStat")
    dropped = 0
    for plane in space.planes:
        step_ids = {e.key for e in plane.stat_metadata if e.value.name == "step_num"}
        if not step_ids:
            continue
        for line in plane.lines:
            kept = []
            for raw in line.events:
                ev = event_class.FromString(raw)
                if any(stat_class.FromString(s).metadata_id in step_ids for s in ev.stats):
                    dropped += 1
                    continue
                kept.append(raw)
            del line.events[:]
            line.events.extend(kept)
    assert dropped == 5
    run = tmp_path / "plugins" / "profile" / "run"
    run.mkdir(parents=True)
    (run / "vm.xplane.pb").write_bytes(space.SerializeToString())
    (w,) = results_document(read_profile(tmp_path))["workloads"]
    timing = w["kernel_timing"]
    assert w["trace"]["per"] == "call"
    assert timing["calls_per_sample"] == 5 and len(timing["calls"]) == 1
    rows = {k["name"]: k for k in timing["kernels"]}
    assert len(rows) == 70 and rows["gemm_fusion_dot.51"]["launches"] == [1.0]


def test_the_h200_trace_repeated_to_size_reads_as_its_copies(
        h200: dict[str, Any], tmp_path: Path) -> None:
    """benchmarks/profile_scale.py --gpu-sizes: the shipped trace's events repeated in time
    read as that many copies of its five steps, each kernel's per-step times repeated."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "profile_scale", Path(__file__).resolve().parents[1] / "benchmarks" / "profile_scale.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    trace, calls = module._h200_of_size(tmp_path, 1.0, False)
    copies = calls // 5
    assert copies >= 2 and calls == 5 * copies
    assert module._h200_of_size(tmp_path, 1.0, True) == (trace, calls)  # kept, read again
    grown = results_document(read_profile(trace.parent))
    (w,) = h200["workloads"]
    (g,) = grown["workloads"]
    assert len(g["trace"]["steps_s"]) == calls
    assert g["trace"]["steps_s"] == pytest.approx(w["trace"]["steps_s"] * copies, abs=1e-12)
    before = {k["name"]: k for k in w["kernel_timing"]["kernels"]}
    after = {k["name"]: k for k in g["kernel_timing"]["kernels"]}
    assert after.keys() == before.keys()
    for name, k in before.items():
        assert after[name]["busy_s"] == pytest.approx(k["busy_s"] * copies, abs=1e-12), name
        assert after[name]["share_s"] == pytest.approx(k["share_s"] * copies, abs=1e-12), name
