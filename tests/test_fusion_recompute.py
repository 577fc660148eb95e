# ruff: noqa: E501
"""Work a loop fusion repeats per output element (roofline_report.hlo.fusion_recompute), on
hand-written HLO and on programs XLA:CPU compiles here, and how the model prices it."""

from __future__ import annotations

from typing import Any

import pytest

from roofline_report.analysis import predict, roofs
from roofline_report.hlo.fusion_recompute import recomputed_work
from roofline_report.hlo.ir import parse_module
from roofline_report.hlo.kernels import kernel_inventory
from roofline_report.results.schema import KernelInventory

_MODULE = """HloModule m, entry_computation_layout={{(f32[32]{{0}}, f32[8,32]{{1,0}})->f32[8,32]{{1,0}}}}

%fused (p0: f32[32], p1: f32[8,32]) -> f32[8,32] {{
  %p0 = f32[32]{{0}} parameter(0)
  %s = f32[32]{{0}} sine(%p0)
  %m = f32[32]{{0}} multiply(%s, %s)
  %b = f32[8,32]{{1,0}} broadcast(%m), dimensions={{{dims}}}
  %p1 = f32[8,32]{{1,0}} parameter(1)
  ROOT %r = f32[8,32]{{1,0}} multiply(%b, %p1)
}}

ENTRY %main (a: f32[32], x: f32[8,32]) -> f32[8,32] {{
  %a = f32[32]{{0}} parameter(0)
  %x = f32[8,32]{{1,0}} parameter(1)
  ROOT %f = f32[8,32]{{1,0}} fusion(%a, %x), kind={kind}, calls=%fused
}}
"""


def _entry_fusion(text: str) -> tuple[Any, Any]:
    module = parse_module(text)
    [fusion] = [i for _c, i in module.instructions() if i.opcode == "fusion"]
    return fusion, module


def test_an_operand_broadcast_along_the_minor_axis_is_computed_per_output_element() -> None:
    fusion, module = _entry_fusion(_MODULE.format(dims="1", kind="kLoop"))
    again = recomputed_work(fusion, module)
    # The sine and the multiply of the [32] vector run for each of the 8 x 32 outputs: 256
    # evaluations, 32 of them counted; the root's own multiply is counted whole.
    assert dict(again.transcendentals_by_op) == {"stablehlo.sine": 8 * 32 - 32}
    assert again.flops == 8 * 32 - 32 and again.transcendentals == 224


def test_a_broadcast_along_an_outer_axis_or_another_fusion_kind_repeats_nothing() -> None:
    # [8] spread along the outer axis of [8, 32]: fixed across the inner loop, hoisted.
    text = _MODULE.format(dims="0", kind="kLoop").replace("f32[32]{0} parameter(0)",
                                                          "f32[8]{0} parameter(0)")
    text = text.replace("%s = f32[32]", "%s = f32[8]").replace("%m = f32[32]", "%m = f32[8]")
    fusion, module = _entry_fusion(text)
    assert recomputed_work(fusion, module).flops == 0
    assert not recomputed_work(fusion, module).transcendentals_by_op
    # Only the loop emitter computes element by element.
    fusion, module = _entry_fusion(_MODULE.format(dims="1", kind="kInput"))
    assert recomputed_work(fusion, module).transcendentals == 0


def test_compiled_programs_record_the_repeated_work() -> None:
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    v, x = jnp.ones((256,), jnp.float32), jnp.ones((64, 256), jnp.float32)

    def only(fn: Any, *args: Any) -> dict[str, Any]:
        inv = kernel_inventory(jax.jit(fn).lower(*args).compile().as_text())
        KernelInventory.model_validate(inv)
        [k] = [k for k in inv["kernels"] if k["transcendentals"]]
        return k

    def minor(a: Any, b: Any) -> Any:
        return b * jnp.sin(a)[None, :]

    def minor_rows(a: Any, b: Any) -> Any:
        return b * jnp.sin(a)[:, None]

    k = only(minor, v, x)
    assert k["transcendentals"] == 256  # the count: once per element of the vector
    assert k["recomputed_transcendentals_by_op"] == {"stablehlo.sine": 64 * 256 - 256}
    k = only(minor_rows, x[:, 0], x)  # [64] spread along the outer axis: hoisted
    assert k["transcendentals"] == 64 and k["recomputed_transcendentals_by_op"] == {}


def _kernel(**extra: Any) -> dict[str, Any]:
    return {"name": "f", "category": "elementwise", "flops": 0, "transcendentals": 256,
            "transcendentals_by_op": {"stablehlo.sine": 256}, "bytes_read": 1 << 16,
            "bytes_written": 1 << 16, "read_by_dtype": {"f32": 1 << 16},
            "written_by_dtype": {"f32": 1 << 16}, **extra}


def test_the_model_prices_the_repeated_evaluations_and_says_so() -> None:
    ceilings = {"available": True, "backend": "cpu",
                "compute": [{"name": "matmul", "dtype": "float32", "value": 1e11,
                             "kind": "measured", "available": True, "unit": "FLOP/s"}],
                "bandwidth": [{"name": "triad", "value": 1e10, "kind": "measured",
                               "available": True, "unit": "B/s"}],
                "dispatch": {"available": True, "value": 5e-6, "enqueued": 0.0},
                "rates": [{"name": "exp float32", "op": "exp", "dtype": "float32",
                           "unit": "elements/s", "value": 1e8, "kind": "measured",
                           "available": True, "reason": ""}]}
    m = roofs.measured(ceilings)
    assert m is not None
    once = predict.predict_kernel(_kernel(), "float32", m)
    again = predict.predict_kernel(
        _kernel(recomputed_transcendentals_by_op={"stablehlo.sine": 64 * 256 - 256}),
        "float32", m)
    assert once is not None and again is not None
    sine = [t for t in again.terms if t.detail == "sine"]
    assert [t.seconds for t in sine] == pytest.approx([64 * 256 / 1e8])
    assert again.binding.detail == "sine" and once.binding.name == "memory"
    assert any("once per output element" in n and "16,384 evaluations" in n
               for n in again.notes), again.notes
    assert again.flops == once.flops  # the work counted is the count's
