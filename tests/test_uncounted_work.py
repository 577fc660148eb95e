# ruff: noqa: E501
"""Work a kernel does beyond our count (roofline_report.hlo.uncounted_work): a loop fusion's
repeated evaluations and complex arithmetic, on hand-written HLO and on programs XLA:CPU
compiles here, and how the model prices them."""

from __future__ import annotations

from typing import Any

import pytest

from roofline_report.analysis import predict, roofs
from roofline_report.hlo.ir import parse_module
from roofline_report.hlo.kernels import kernel_inventory
from roofline_report.hlo.uncounted_work import uncounted_work
from roofline_report.results.schema import KernelInventory
from tests.ceilings_records import typed_ceilings
from tests.kernel_records import kernel_record

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
    again = uncounted_work(fusion, module)
    # The sine and the multiply of the [32] vector run for each of the 8 x 32 outputs: 256
    # evaluations, 32 of them counted; the root's own multiply is counted whole.
    assert dict(again.recomputed_transcendentals_by_op) == {"stablehlo.sine": 8 * 32 - 32}
    assert again.recomputed_flops == 8 * 32 - 32 and again.recomputed_transcendentals == 224
    assert again.complex_flops == 0


def test_a_broadcast_along_an_outer_axis_or_another_fusion_kind_repeats_nothing() -> None:
    # [8] spread along the outer axis of [8, 32]: fixed across the inner loop, hoisted.
    text = _MODULE.format(dims="0", kind="kLoop").replace("f32[32]{0} parameter(0)",
                                                          "f32[8]{0} parameter(0)")
    text = text.replace("%s = f32[32]", "%s = f32[8]").replace("%m = f32[32]", "%m = f32[8]")
    fusion, module = _entry_fusion(text)
    assert uncounted_work(fusion, module).recomputed_flops == 0
    assert not uncounted_work(fusion, module).recomputed_transcendentals_by_op
    # Only the loop emitter computes element by element.
    fusion, module = _entry_fusion(_MODULE.format(dims="1", kind="kInput"))
    assert uncounted_work(fusion, module).recomputed_transcendentals == 0


_PADDED = """HloModule m, entry_computation_layout={(f32[32]{0}, f32[8,32]{1,0})->f32[8,64]{1,0}}

%fused (p0: f32[32], p1: f32[8,32]) -> f32[8,64] {
  %p0 = f32[32]{0} parameter(0)
  %s = f32[32]{0} sine(%p0)
  %b = f32[8,32]{1,0} broadcast(%s), dimensions={1}
  %p1 = f32[8,32]{1,0} parameter(1)
  %m = f32[8,32]{1,0} multiply(%b, %p1)
  %c = f32[8,16]{1,0} cosine(%p1)
  %cut = f32[8,16]{1,0} slice(%m), slice={[0:8], [0:16]}
  %joined = f32[8,32]{1,0} concatenate(%cut, %c), dimensions={1}
  %z = f32[] constant(0)
  ROOT %r = f32[8,64]{1,0} pad(%joined, %z), padding=0_0x0_1_1
}

ENTRY %main (a: f32[32], x: f32[8,32]) -> f32[8,64] {
  %a = f32[32]{0} parameter(0)
  %x = f32[8,32]{1,0} parameter(1)
  ROOT %f = f32[8,64]{1,0} fusion(%a, %x), kind=kLoop, calls=%fused
}
"""


def test_a_pad_and_a_concatenate_evaluate_an_operand_only_where_it_lands() -> None:
    """A pad interleaving zeros fills half of its [8, 64] output from its operand, and the
    concatenate's first half comes from the sine's product: the sine under its broadcast is
    evaluated for 8 x 16 outputs (128, 32 of them counted), not for the pad's 512."""
    fusion, module = _entry_fusion(_PADDED)
    again = uncounted_work(fusion, module)
    assert dict(again.recomputed_transcendentals_by_op) == {"stablehlo.sine": 8 * 16 - 32}
    # The broadcast's multiply is counted over its own [8, 32]: asked for 8 x 16, no more.
    assert again.recomputed_flops == 0


def test_complex_ops_are_priced_at_their_real_arithmetic() -> None:
    # A complex multiply of the [32] vectors under a minor-axis broadcast: 6 real flops for
    # each of the 8 x 32 evaluations, 1 counted; the complex add at the root 2 per element.
    text = _MODULE.format(dims="1", kind="kLoop").replace("f32[", "c64[")
    text = text.replace("%s = c64[32]{0} sine(%p0)", "%s = c64[32]{0} negate(%p0)")
    text = text.replace("ROOT %r = c64[8,32]{1,0} multiply", "ROOT %r = c64[8,32]{1,0} add")
    fusion, module = _entry_fusion(text)
    again = uncounted_work(fusion, module)
    assert again.complex_flops == (6 - 1) * 256 + (2 - 1) * 256 + (2 - 1) * 256
    assert again.recomputed_flops == 2 * (256 - 32)  # the negate and the multiply again
    # A kernel that is a complex op alone.
    [mul] = [i for _c, i in module.instructions() if i.name == "m"]
    assert uncounted_work(mul, module).complex_flops == (6 - 1) * 32


@pytest.mark.cpu_backend(
    "XLA:CPU's loop emitter evaluates a broadcast operand once per output element")
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


@pytest.mark.cpu_backend("XLA:CPU's one kernel for a complex product")
def test_a_compiled_complex_product_records_its_real_arithmetic() -> None:
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    a = jnp.ones((64, 256), jnp.complex64)
    inv = kernel_inventory(jax.jit(lambda x, y: x * y).lower(a, a).compile().as_text())
    KernelInventory.model_validate(inv)
    [k] = inv["kernels"]
    assert k["flops"] == 64 * 256 and k["complex_flops"] == 5 * 64 * 256


@pytest.mark.cpu_backend("XLA:CPU's one kernel for a power spectrum")
def test_a_complex_magnitude_records_its_square_root_and_its_flops() -> None:
    """|z|² of complex64 [64, 256] (a spectrogram's power): the magnitude is a hypotenuse, a
    square root and ten flops an element (one counted); the square is real arithmetic. A real
    magnitude is one flop, no root."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    z = jnp.ones((64, 256), jnp.complex64)
    inv = kernel_inventory(jax.jit(lambda x: jnp.square(jnp.abs(x))).lower(z).compile()
                           .as_text())
    KernelInventory.model_validate(inv)
    [k] = inv["kernels"]
    assert k["complex_transcendentals_by_op"] == {"stablehlo.sqrt": 64 * 256}
    assert k["complex_flops"] == 9 * 64 * 256
    assert k["transcendentals"] == 0  # the count's: XLA's cost analysis charges none
    real = kernel_inventory(jax.jit(lambda x: jnp.square(jnp.abs(x))).lower(
        jnp.ones((64, 256), jnp.float32)).compile().as_text())
    [r] = real["kernels"]
    assert r["complex_transcendentals_by_op"] == {} and r["complex_flops"] == 0


def test_the_model_prices_a_complex_magnitude_at_the_square_root_rate() -> None:
    """64 K complex magnitudes at a square-root rate of 1e8/s: 655 us of roots, over their
    bytes' 0.13 us, and the note counts them."""
    m = _roofs(bandwidth=1e12, rate=("sqrt", "elements/s", 1e8))
    record = {**_kernel(), "transcendentals": 0, "transcendentals_by_op": {},
              "flops": 1 << 16, "flops_by_op": {"stablehlo.abs": 1 << 16},
              "complex_flops": 9 << 16,
              "complex_transcendentals_by_op": {"stablehlo.sqrt": 1 << 16}}
    k = predict.predict_kernel(kernel_record(record), "float32", m)
    assert k is not None
    [root] = [t for t in k.terms if t.name == "transcendental"]
    assert root.seconds == pytest.approx((1 << 16) / 1e8)
    assert k.binding.label == "compute: sqrt"
    assert any("65,536 square roots of complex magnitudes" in n for n in k.notes), k.notes


def _kernel(**extra: Any) -> dict[str, Any]:
    return {"name": "f", "category": "elementwise", "flops": 0, "transcendentals": 256,
            "transcendentals_by_op": {"stablehlo.sine": 256}, "bytes_read": 1 << 16,
            "bytes_written": 1 << 16, "read_by_dtype": {"f32": 1 << 16},
            "written_by_dtype": {"f32": 1 << 16}, **extra}


def _roofs(*, bandwidth: float, rate: tuple[str, str, float]) -> roofs.RoofSet:
    """Measured roofs: a matmul roof, one bandwidth and one float32 rate (op, unit, value)."""
    op, unit, value = rate
    m = roofs.measured(typed_ceilings({
        "available": True, "backend": "cpu",
        "compute": [{"name": "matmul", "dtype": "float32", "value": 1e11, "kind": "measured",
                     "available": True, "unit": "FLOP/s"}],
        "bandwidth": [{"name": "triad", "value": bandwidth, "kind": "measured",
                       "available": True, "unit": "B/s"}],
        "dispatch": {"available": True, "value": 5e-6, "enqueued": None},
        "rates": [{"name": f"{op} float32", "op": op, "dtype": "float32", "unit": unit,
                   "value": value, "kind": "measured", "available": True, "reason": "",
                   "elements": 1 << 20, "reps": 1, "ops_per_call": 1 << 20}]}))
    assert m is not None
    return m


def test_the_model_prices_the_repeated_evaluations_and_says_so() -> None:
    m = _roofs(bandwidth=1e10, rate=("exp", "elements/s", 1e8))
    once = predict.predict_kernel(kernel_record(_kernel()), "float32", m)
    again = predict.predict_kernel(
        kernel_record(_kernel(recomputed_transcendentals_by_op={"stablehlo.sine": 64 * 256 - 256})),
        "float32", m)
    assert once is not None and again is not None
    sine = [t for t in again.terms if t.name == "transcendental"]
    assert [t.seconds for t in sine] == pytest.approx([64 * 256 / 1e8])
    # What binds says why a kernel of 256 counted sines is bound by them.
    assert again.binding.label == "compute: sine, once per output element"
    assert once.binding.name == "memory"
    assert any("once per output element" in n and "16,384 evaluations" in n
               for n in again.notes), again.notes
    assert again.flops == once.flops  # the work counted is the count's


def test_the_model_prices_complex_arithmetic_and_says_so() -> None:
    m = _roofs(bandwidth=1e12, rate=("multiply-add", "FLOP/s", 1e9))
    record = {**_kernel(), "transcendentals": 0, "transcendentals_by_op": {},
              "flops": 1 << 16, "flops_by_op": {"stablehlo.multiply": 1 << 16}}
    plain = predict.predict_kernel(kernel_record(record), "float32", m)
    real = predict.predict_kernel(kernel_record({**record, "complex_flops": 5 << 16}), "float32", m)
    assert plain is not None and real is not None
    [term] = [t for t in real.terms if t.name == "elementwise"]
    assert term.seconds == pytest.approx(6 * (1 << 16) / 1e9)
    assert real.binding.label == "compute: complex arithmetic"
    assert real.seconds > plain.seconds and real.flops == plain.flops
    assert any(n.startswith("complex arithmetic: 327,680 real flops") for n in real.notes), \
        real.notes


def test_a_tiled_layout_reads_its_minor_axis_from_the_order_alone() -> None:
    # TPU layouts carry tiles after the order: {1,0:T(8,128)} is still minor axis 1.
    tiled = _MODULE.format(dims="1", kind="kLoop").replace("{1,0}", "{1,0:T(8,128)}")
    fusion, module = _entry_fusion(tiled)
    assert uncounted_work(fusion, module).recomputed_transcendentals == 8 * 32 - 32
    [array] = [i.shape.array for _c, i in module.instructions() if i.name == "b"]
    assert array is not None and array.layout == "{1,0:T(8,128)}"
    assert array.minor_to_major() == [1, 0]


_DUS = """HloModule m, entry_computation_layout={(f32[64,2048]{1,0}, f32[2048]{0}, f32[2048]{0}, s32[])->f32[64,2048]{1,0}}

%fused (buf: f32[64,2048], a: f32[2048], b: f32[2048], i: s32[]) -> f32[64,2048] {
  %buf = f32[64,2048]{1,0} parameter(0)
  %a = f32[2048]{0} parameter(1)
  %b = f32[2048]{0} parameter(2)
  %d = f32[2048]{0} subtract(%a, %b)
  %row = f32[1,2048]{1,0} bitcast(%d)
  %i = s32[] parameter(3)
  %zero = s32[] constant(0)
  %u = f32[64,2048]{1,0} dynamic-update-slice(%buf, %row, %i, %zero)
  ROOT %r = f32[64,2048]{1,0} bitcast(%u)
}

ENTRY %main (buf: f32[64,2048], a: f32[2048], b: f32[2048], i: s32[]) -> f32[64,2048] {
  %buf = f32[64,2048]{1,0} parameter(0)
  %a = f32[2048]{0} parameter(1)
  %b = f32[2048]{0} parameter(2)
  %i = s32[] parameter(3)
  ROOT %f = f32[64,2048]{1,0} fusion(%buf, %a, %b, %i), kind=kLoop, calls=%fused
}
"""


def test_a_fusion_updating_a_slice_in_place_loops_over_the_update_alone() -> None:
    """A scan's step writing its row of the stacked outputs (a dynamic-update-slice root, under
    a bitcast) computes the row's 2,048 elements, not the buffer's 131,072: its subtract is
    evaluated once per element, nothing repeated."""
    fusion, module = _entry_fusion(_DUS)
    again = uncounted_work(fusion, module)
    assert again.recomputed_flops == 0 and not again.recomputed_transcendentals_by_op
