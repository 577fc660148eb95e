"""An accelerator's calls, enqueued: the host dispatches one call while the device runs the one
before, so a call takes the longer of its dispatch and its kernels, not their sum; and the
dispatch grows with the buffers a call passes (a training step passes hundreds)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from roofline_report.analysis import on_chip, predict
from roofline_report.analysis import roofs as roofs_mod
from roofline_report.analysis.dispatch_netting import DISPATCH_FLOOR_BUFFERS
from roofline_report.analysis.roofs import BandwidthRoof, ComputeRoof, Floor, RoofSet
from roofline_report.kinds import Kind
from tests.ceilings_records import typed_ceilings
from tests.kernel_records import kernel_record

M = Kind.MEASURED
DISPATCH = Floor("dispatch enqueued", 120e-6, M, "", per_buffer=4e-6, buffers=3)
TPU = RoofSet("this machine", M,
              compute=(ComputeRoof("matmul bfloat16", 190e12, "bfloat16", M, ""),),
              bandwidth=(BandwidthRoof("HBM stream", 650e9, "HBM", M, ""),),
              floors=(DISPATCH, Floor("launch", 1e-6, M, "")), dispatch_overlaps=True)
CPU = replace(TPU, dispatch_overlaps=False)


def _stream(nbytes: float) -> predict.Prediction:
    """One streaming kernel moving ``nbytes``."""
    k = {"flops": nbytes / 8, "flops_by_op": {"add": nbytes / 8}, "bytes_read": nbytes / 2,
         "bytes_written": nbytes / 2, "trips": 1, "category": "elementwise"}
    p = predict.predict_kernel(kernel_record(k), "float32", TPU)
    assert p is not None
    return p


def test_a_floor_measured_by_buffers_grows_with_them() -> None:
    assert DISPATCH.at_buffers(None) == DISPATCH.seconds == DISPATCH.at_buffers(2)
    assert DISPATCH.at_buffers(3) == pytest.approx(120e-6)
    assert DISPATCH.at_buffers(103) == pytest.approx(520e-6)
    assert Floor("dispatch", 5e-6, M, "").at_buffers(1000) == 5e-6  # not measured by buffers


def test_a_device_bound_call_takes_its_kernels_time_alone() -> None:
    parts = [_stream(650e6), _stream(325e6)]  # 1 ms + 0.5 ms of HBM traffic
    device = sum(p.seconds for p in parts)
    program = predict.predict_program(parts, TPU, buffers=10)
    assert program is not None
    assert program.seconds == pytest.approx(device)
    assert all(t.name != "dispatch" for t in program.terms)
    assert sum(t.seconds for t in program.terms) == pytest.approx(program.seconds)
    # On a CPU the host runs the call too: its dispatch adds.
    on_cpu = predict.predict_program(parts, CPU, buffers=10)
    assert on_cpu is not None
    assert on_cpu.seconds == pytest.approx(device + DISPATCH.at_buffers(10))


def test_a_host_bound_call_takes_its_dispatch() -> None:
    parts = [_stream(6.5e6)]  # 10 us on the device, and a call passing 203 buffers
    program = predict.predict_program(parts, TPU, buffers=203)
    assert program is not None
    assert program.seconds == pytest.approx(120e-6 + 200 * 4e-6)
    assert program.binding.name == "dispatch" and program.terms == (program.binding,)
    assert program.binding.detail == "203 buffers"
    assert predict.DISPATCH_BOUND in program.notes
    # the work and bytes priced stay the kernels'
    assert program.bytes == parts[0].bytes and program.flops == parts[0].flops


def test_a_call_read_from_a_trace_is_its_devices_span() -> None:
    """A trace times a call by its device's span, first kernel to last; on an accelerator the
    host's dispatch overlaps the device and lies outside it, so the kernels' sum alone is
    predicted (a TPU v5e trace of a training step: 32.4 us on the device, against a dispatch
    floor of 198 us for its 101 buffers, which made the step read 6.1 times faster than
    predicted)."""
    parts = [_stream(6.5e6)]  # 10 us on the device, and a call passing 203 buffers
    traced = predict.predict_program(parts, TPU, buffers=203, device_span=True)
    assert traced is not None and traced.seconds == pytest.approx(parts[0].seconds)
    assert all(t.name != "dispatch" for t in traced.terms)
    assert predict.DISPATCH_BOUND not in traced.notes
    # a CPU's trace times its call on the host that dispatches it: the dispatch stays
    on_cpu = predict.predict_program(parts, CPU, buffers=203, device_span=True)
    assert on_cpu is not None
    assert on_cpu.seconds == pytest.approx(parts[0].seconds + DISPATCH.at_buffers(203))


def _ceilings(backend: str) -> dict[str, object]:
    return {"available": True, "backend": backend, "compute": [], "bandwidth": [],
            "dispatch": {"available": True, "value": 400e-6, "enqueued": 120e-6,
                         "by_buffers": [{"buffers": 2, "enqueued": 118e-6},
                                        {"buffers": 33, "enqueued": 242e-6},
                                        {"buffers": 129, "enqueued": 626e-6}]},
            "rates": [{"name": "row reduction float32", "op": "reduce", "dtype": "float32",
                       "available": True, "value": 1e9, "elements": 10**8, "reps": 1,
                       "ops_per_call": 10**8, "by_size": [
                           {"elements": 1000, "bytes": 4000, "seconds": 130e-6, "value": 1},
                           {"elements": 10**8, "bytes": 4 * 10**8, "seconds": 1e-3,
                            "value": 1}]}]}


def test_measured_roofs_of_an_accelerator_keep_the_devices_time() -> None:
    tpu = roofs_mod.measured(typed_ceilings(_ceilings("tpu")), [])
    cpu = roofs_mod.measured(typed_ceilings(_ceilings("cpu")), [])
    assert tpu is not None and cpu is not None
    assert tpu.dispatch_overlaps and not cpu.dispatch_overlaps
    floor = tpu.floor("dispatch enqueued")
    assert floor is not None and floor.buffers == DISPATCH_FLOOR_BUFFERS
    # the least-squares slope of 118, 242 and 626 us over 2, 33 and 129 buffers
    assert floor.per_buffer == pytest.approx(4.0e-6, rel=1e-3)
    # 130 us is mostly dispatch on both; 1 ms is the device's time on the TPU, and 1 ms less
    # the enqueued dispatch on the CPU
    on_tpu = tpu.rate_for("reduce", "float32")
    on_cpu = cpu.rate_for("reduce", "float32")
    assert on_tpu is not None and on_tpu.by_size == ((1e8, 1e11),)
    assert on_cpu is not None and len(on_cpu.by_size) == 1
    assert on_cpu.by_size[0][0] == 1e8
    assert on_cpu.by_size[0][1] == pytest.approx(1e8 / 880e-6)


def test_one_buffer_count_gives_no_slope() -> None:
    ceilings = _ceilings("tpu")
    ceilings["dispatch"]["by_buffers"] = [{"buffers": 2, "enqueued": 118e-6}]  # type: ignore[index]
    roofs = roofs_mod.measured(typed_ceilings(ceilings), [])
    assert roofs is not None
    floor = roofs.floor("dispatch enqueued")
    assert floor is not None and floor.per_buffer == 0.0


def test_products_at_the_highest_precision_take_that_roof() -> None:
    exact = ComputeRoof("matmul float32 (highest)", 30e12, "float32", M, "", precision="highest")
    roofs = replace(TPU, compute=(*TPU.compute, ComputeRoof("matmul float32", 190e12, "float32",
                                                            M, ""), exact))
    k = {"flops": 2e12, "flops_by_op": {"dot": 2e12}, "bytes_read": 1e6,
         "bytes_written": 1e6, "trips": 1, "category": "matmul", "matmul_products": 1}
    assert roofs.compute_at_precision("float32", "highest") == exact
    default = predict.predict_kernel(kernel_record(k), "float32", roofs)
    highest = predict.predict_kernel(kernel_record({**k, "matmul_precision": "highest"}),
                                     "float32", roofs)
    assert default is not None and highest is not None
    assert highest.seconds == pytest.approx(6.4 * default.seconds, rel=0.05)
    assert highest.binding.roof == exact.name
    # without such a roof, the default one, and a note that says so
    plain = predict.predict_kernel(kernel_record({**k, "matmul_precision": "highest"}),
                                   "float32", TPU)
    assert plain is not None and any("highest precision" in n for n in plain.notes)


def test_the_inventory_counts_the_buffers_a_call_passes() -> None:
    import gzip
    from pathlib import Path

    from roofline_report.hlo.kernels import kernel_inventory

    folder = Path(__file__).resolve().parent / "fixtures" / "tpu_v5e_hlo"

    def inventory(name: str) -> dict[str, object]:
        return kernel_inventory(gzip.decompress((folder / f"{name}.txt.gz").read_bytes())
                                .decode())

    assert inventory("scale_f32_64M")["buffers"] == 2  # x in, 2 x out
    # the cache, the new row (the position is a constant of the program), the cache out
    assert inventory("kv_update_bf16_32x8192x1024")["buffers"] == 3
    # a training step: its parameters and optimizer state in and out, a batch and a loss
    assert inventory("transformer_step")["buffers"] == 101
    text = ("HloModule m, entry_computation_layout={(f32[4]{0}, f32[4]{0})->(f32[4]{0}, "
            "f32[4]{0}, f32[])}\n\nENTRY %main (a: f32[4], b: f32[4]) -> (f32[4], f32[4], "
            "f32[]) {\n  %a = f32[4]{0} parameter(0)\n  %b = f32[4]{0} parameter(1)\n"
            "  %s = f32[4]{0} add(%a, %b)\n  %z = f32[] constant(0)\n"
            "  ROOT %t = (f32[4]{0}, f32[4]{0}, f32[]) tuple(%s, %a, %z)\n}\n")
    assert kernel_inventory(text)["buffers"] == 5


def test_an_asynchronous_copy_is_not_charged_to_the_call() -> None:
    copy = {"flops": 0, "flops_by_op": {}, "bytes_read": 650e6, "bytes_written": 650e6,
            "trips": 1, "category": "data movement", "asynchronous": True}
    p = predict.predict_kernel(kernel_record(copy), "float32", TPU)
    sync = predict.predict_kernel(kernel_record({**copy, "asynchronous": False}), "float32", TPU)
    assert p is not None and sync is not None
    assert sync.seconds == pytest.approx(2e-3 + 1e-6)  # 1.3 GB at 650 GB/s, and a launch
    assert p.seconds == pytest.approx(1e-6) and p.binding.name == "launch"
    assert predict.ASYNCHRONOUS in p.notes and p.bytes == sync.bytes
    # without a launch floor: nothing on the call's path
    bare = replace(TPU, floors=(DISPATCH,))
    q = predict.predict_kernel(kernel_record(copy), "float32", bare)
    assert q is not None and q.seconds == 0.0 and q.binding.name == predict.OVERLAPPED


def test_bytes_in_the_cores_own_memory_take_the_on_chip_rate() -> None:
    from roofline_report.analysis.roofs import RateRoof

    chip = RateRoof("on-chip float32", on_chip.ON_CHIP, "float32", 1e12, M, "")
    roofs = replace(TPU, rates=(chip,))
    k = {"flops": 1e6, "flops_by_op": {"add": 1e6}, "bytes_read": 65e6, "bytes_written": 0,
         "on_chip_bytes_read": 100e6, "on_chip_bytes_written": 100e6, "trips": 1,
         "category": "elementwise"}
    p = predict.predict_kernel(kernel_record(k), "float32", roofs)
    assert p is not None
    # the larger of 65 MB of HBM at 650 GB/s (100 us) and 200 MB on chip at 1 TB/s (200 us)
    assert p.seconds == pytest.approx(200e-6 + 1e-6)
    assert p.binding.detail == "on chip" and p.binding.roof == chip.name
    q = predict.predict_kernel(kernel_record(k),
                               "float32", TPU)  # no on-chip rate: HBM alone, and a note
    assert q is not None and q.seconds == pytest.approx(100e-6 + 1e-6)
    assert any("on-chip rate" in n for n in q.notes)


def test_a_programs_own_host_dispatch_is_its_dispatch() -> None:
    parts = [_stream(6.5e6)]  # 10 us on the device
    program = predict.predict_program(parts, TPU, buffers=101, host=764e-6)
    assert program is not None and program.seconds == pytest.approx(764e-6)
    assert program.binding.roof == predict.HOST_DISPATCH and program.binding.kind == M
    assert program.binding.detail == "101 buffers"
    long = [_stream(6.5e9)]  # 10 ms on the device: the host's 764 us hides behind it
    device_bound = predict.predict_program(long, TPU, buffers=101, host=764e-6)
    assert device_bound is not None and device_bound.seconds == pytest.approx(long[0].seconds)


def test_the_host_dispatch_twin_passes_every_argument_and_result() -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from roofline_report.observe import donation
    from roofline_report.observe import run as measure

    def step(params: dict[str, Any], x: Any) -> tuple[Any, dict[str, Any]]:
        # "unused" is passed and not read: the twin still passes it
        return x @ params["w"], {"w": params["w"] * 2, "b": params["b"] + 1}

    params = {"w": jnp.ones((8, 8)), "b": jnp.ones((8,)), "unused": jnp.ones((3,))}
    x = jnp.ones((4, 8))
    compiled = jax.jit(step).lower(params, x).compile()
    calls = donation.calls_of(compiled, (params, x), {})
    record = measure._host_dispatch(calls, compiled)
    assert record["available"] and record["seconds"] > 0
    assert record["buffers"] == 4 + 3  # three parameters and x in, three arrays out
    from roofline_report.results.schema_workloads import HostDispatch

    HostDispatch.model_validate(record)


def test_an_accelerators_reads_take_the_read_stream() -> None:
    streams = (BandwidthRoof("HBM read-write", 569e9, "HBM", M, ""),
               BandwidthRoof("reduce stream", 678e9, "HBM", M, ""),
               BandwidthRoof("scale stream", 601e9, "HBM", M, ""))
    tpu = replace(TPU, bandwidth=streams)
    def roof(touched: float, written: float | None) -> str:
        found = tpu.bandwidth_for(touched, written, program=True)
        assert found is not None
        return found.name

    assert roof(256e6, 64e3) == "reduce stream"  # a reduction: 256 MB read, 64 kB written
    # a copy reads and writes alike: the fastest of the others, never the read stream's
    assert roof(512e6, 256e6) == "scale stream"
    assert roof(512e6, None) == "scale stream"


def test_a_tpus_units_work_side_by_side() -> None:
    """A TPU kernel's products (matrix unit), other arithmetic (vector unit) and
    transcendentals (their own unit) run side by side: its compute is the largest of the three,
    where a CPU's cores do all of it one after another."""
    from roofline_report.analysis.roofs import RateRoof

    rates = (RateRoof("multiply-add float32", "multiply-add", "float32", 2e12, M, ""),
             RateRoof("tanh float32", "tanh", "float32", 0.5e12, M, ""))
    tpu = replace(TPU, compute=(ComputeRoof("matmul float32", 100e12, "float32", M, ""),),
                  rates=rates, units_overlap=True)
    cpu_like = replace(tpu, units_overlap=False)
    k = {"flops": 3.05e9, "flops_by_op": {"dot": 3e9, "add": 0.05e9},
         "transcendentals_by_op": {"tanh": 4e6}, "bytes_read": 1e3, "bytes_written": 1e3,
         "trips": 1, "category": "matmul"}
    on_tpu = predict.predict_kernel(kernel_record(k), "float32", tpu)
    summed = predict.predict_kernel(kernel_record(k), "float32", cpu_like)
    assert on_tpu is not None and summed is not None
    matmul, vector, transcendental = 30e-6, 25e-6, 8e-6
    assert on_tpu.seconds == pytest.approx(matmul + 1e-6)  # and its launch
    assert summed.seconds == pytest.approx(matmul + vector + transcendental + 1e-6)
    assert on_tpu.binding.name == "matmul"


def test_a_tpu_spec_sheet_overlaps_its_units_and_its_dispatch() -> None:
    from roofline_report import presets
    from roofline_report.analysis.roofs import spec_sheet

    tpu = spec_sheet(presets.get_preset("TPU v5e"))
    gpu = spec_sheet(presets.get_preset("H100"))
    assert tpu.units_overlap and tpu.dispatch_overlaps
    assert not gpu.units_overlap and gpu.dispatch_overlaps


def test_a_tpus_hardware_roof_takes_its_busiest_unit_and_memory() -> None:
    from roofline_report.analysis.headroom import kernel_roof
    from roofline_report.analysis.roofs import RateRoof

    rates = (RateRoof("multiply-add float32", "multiply-add", "float32", 2e12, M, ""),
             RateRoof("on-chip float32", on_chip.ON_CHIP, "float32", 1e12, M, ""))
    tpu = replace(TPU, compute=(ComputeRoof("matmul float32", 100e12, "float32", M, ""),),
                  rates=rates, units_overlap=True)
    k = {"flops": 3.05e9, "flops_by_op": {"dot": 3e9, "add": 0.05e9}, "bytes_read": 6.5e6,
         "bytes_written": 0, "on_chip_bytes_read": 40e6, "on_chip_bytes_written": 0,
         "trips": 1, "category": "matmul"}
    roof = kernel_roof(kernel_record(k), "float32", tpu)
    summed = kernel_roof(kernel_record(k), "float32", replace(tpu, units_overlap=False))
    assert roof is not None and summed is not None
    # matrix 30 us beside vector 25 us; on chip 40 us beside HBM 10 us
    assert roof.group_seconds("compute") == pytest.approx(30e-6)
    assert roof.group_seconds("memory") == pytest.approx(40e-6)
    assert roof.seconds == pytest.approx(40e-6) and roof.binding == "memory"
    assert summed.group_seconds("compute") == pytest.approx(55e-6)
