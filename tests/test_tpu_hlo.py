"""The kernel inventory of what a TPU runs, checked on the optimized HLO of a TPU v5e.

Fixtures (jax 0.10.2, one TPU v5e chip): ``tests/fixtures/tpu_v5e_hlo/NAME.txt.gz``, the
optimized HLO of each program; ``captured.json`` beside them, XLA's cost analysis of each on the
TPU; the traces under ``tests/fixtures/traces_real/tpu_v5e/``, whose ``XLA Ops`` events carry
XLA's own figures for each op (``model_flops``, and ``memory_access_breakdown``: the bytes it
reads and writes per memory space, space 1 the HBM); and ``benchmarks/tpu_capture.py``, whose
pattern cases give the jax function and argument shapes of each pattern program, lowered here on
the CPU (arguments as ``jax.ShapeDtypeStruct``: nothing is allocated) for the program's
StableHLO count.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import json
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from roofline_report.hlo.compiled import inspect_compiled, while_loops
from roofline_report.hlo.ir import Instruction, Module, parse_module
from roofline_report.hlo.kernels import kernel_inventory, reconcile_kernels
from roofline_report.hlo.stablehlo_count import count_stablehlo
from roofline_report.hlo.tpu import (
    TPU,
    backend_name,
    hlo_backend,
    lane_reduction,
    on_chip,
    product_convolution,
)
from roofline_report.traces.xspace_schema import message_class

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "tpu_v5e_hlo"
TRACES = REPO / "tests" / "fixtures" / "traces_real" / "tpu_v5e"
CAPTURED: dict[str, Any] = json.loads((FIXTURES / "captured.json").read_text())
PROGRAMS = CAPTURED["programs"]
ALL = sorted(p.name[: -len(".txt.gz")] for p in FIXTURES.glob("*.txt.gz"))
PATTERNS = sorted(n for n in ALL if PROGRAMS[n].get("group") == "patterns")
MiB = 1 << 20


@functools.cache
def _text(name: str) -> str:
    with gzip.open(FIXTURES / f"{name}.txt.gz", "rt") as f:
        return f.read()


@functools.cache
def _module(name: str) -> Module:
    return parse_module(_text(name))


@functools.cache
def _inventory(name: str) -> dict[str, Any]:
    return kernel_inventory(_module(name))


def _kernel(name: str, kernel: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [k for k in _inventory(name)["kernels"]
                                   if k["name"] == kernel]
    assert len(found) == 1, f"{name}: no kernel {kernel}"
    return found[0]


def _xla_cost(name: str) -> dict[str, float]:
    return dict(PROGRAMS[name].get("cost") or {})


def test_every_capture_is_a_fixture() -> None:
    assert len(ALL) == 76 and set(ALL) == set(PROGRAMS)
    assert len(PATTERNS) == 63


# --------------------------------------------------------------------------------------------
# The backend and the TPU's forms
# --------------------------------------------------------------------------------------------


def test_a_tpu_module_is_recognised_by_its_tiles_and_a_cpu_one_is_not() -> None:
    assert all(hlo_backend(_module(n)) == TPU for n in ALL)
    for cpu in ("cpu_scan_hlo.txt", "gpu_step_hlo.txt"):
        module = parse_module((REPO / "tests" / "fixtures" / cpu).read_text())
        assert hlo_backend(module) is None
        inventory = kernel_inventory(module)
        assert inventory["backend"] is None
        assert all(k["on_chip_bytes_read"] == k["on_chip_bytes_written"] == 0
                   for k in inventory["kernels"])
    assert hlo_backend(_module("scale_f32_64M"), "cpu") == "cpu"  # the caller's word wins
    assert [backend_name(n) for n in ("TPU", "cuda", "rocm", "cpu", None)] == \
        ["tpu", "gpu", "gpu", "cpu", None]


def test_memory_spaces_vmem_scalars_and_flags_are_on_chip_hbm_and_host_are_not() -> None:
    from roofline_report.hlo.shapes import parse_shape

    def array(text: str) -> Any:
        shape = parse_shape(text)
        assert shape is not None and shape.array is not None
        return shape.array

    assert array("f32[8,64,128]{2,1,0:T(8,128)S(1)}").memory_space == 1
    assert on_chip(array("f32[8,64,128]{2,1,0:T(8,128)S(1)}"), TPU)
    assert on_chip(array("bf16[16,128]{1,0:T(8,128)(2,1)S(1)}"), TPU)
    assert on_chip(array("f32[]{:T(128)S(6)}"), TPU) and on_chip(array("u32[]{:S(2)}"), TPU)
    assert not on_chip(array("f32[8,128]{1,0:T(8,128)}"), TPU)  # HBM
    assert not on_chip(array("f32[8,128]{1,0:T(8,128)S(5)}"), TPU)  # the host's memory
    assert not on_chip(array("f32[8,64,128]{2,1,0:T(8,128)S(1)}"), None)  # not a TPU's rule


def _convolutions() -> list[tuple[str, Instruction]]:
    return [(n, i) for n in ALL for _, i in _module(n).instructions()
            if i.opcode == "convolution"]


def test_products_written_as_convolutions_are_told_from_real_ones() -> None:
    # Every convolution jax lowered from dot_general is a product, none it lowered from
    # conv_general_dilated is; the FFT's factors (op_name jit(fft)) are products.
    seen: dict[str, set[bool]] = {}
    for _, conv in _convolutions():
        op = (conv.op_name or "").rsplit("/", 1)[-1]
        seen.setdefault(op, set()).add(product_convolution(conv))
    assert seen == {"dot_general": {True}, "conv_general_dilated": {False}, "jit(fft)": {True}}
    # Without the op_name (a module printed without metadata) the structure alone decides:
    # the same verdict everywhere but the 1x1 convolution, a product in form.
    differ = sorted({name for name, conv in _convolutions()
                     if product_convolution(conv) != product_convolution(
                         _without_op_name(conv))})
    assert differ == ["conv1x1_bf16_32x64x64x256"]


def _without_op_name(instr: Instruction) -> Instruction:
    from dataclasses import replace

    return replace(instr, op_name=None)


def test_a_whole_row_reduce_window_is_a_lane_reduction_and_a_prefix_window_is_not() -> None:
    windows = [(n, i) for n in ALL for _, i in _module(n).instructions()
               if i.opcode == "reduce-window"]
    lanes = {(n, i.name): lane_reduction(i) for n, i in windows if lane_reduction(i)}
    assert lanes == {("log_softmax_4x512x8192", "reduce-window.3.clone.1"): (2, 8192)}
    # cumsum's blocked prefix sums (window 128, padding 127 on one side), a max pool's 3x3
    # window: counted by the reduce-window rule, as the program count and XLA count them.
    assert {n for n, _ in windows} - {"log_softmax_4x512x8192"} == {
        "cumsum_f32_4096x4096", "cumsum_axis0_f32_4096x4096", "maxpool3x3s2_f32_32x128x128x64"}


def test_a_tpu_loop_counts_its_trips_read_from_its_condition() -> None:
    # The TPU compiler writes no known_trip_count; the fori_loop's 16 trips and the scan's 64
    # steps are read from the loops' conditions, bodies and initial values.
    assert "known_trip_count" not in _text("fori16_tanh_matmul_bf16_4096")
    loops = while_loops(_text("fori16_tanh_matmul_bf16_4096"))
    assert [loop["known_trip_count"] for loop in loops] == [16]
    body = _kernel("fori16_tanh_matmul_bf16_4096", "convolution_tanh_fusion.2")
    assert body["trips"] == 16 and body["trips_known"]
    for name in ("heldout_gru_scan_x8", "heldout_gru_scan_x32", "heldout_gru_scan_x128"):
        assert [loop["known_trip_count"] for loop in while_loops(_text(name))] == [64, 64]
    assert inspect_compiled(_text("fori16_tanh_matmul_bf16_4096"))["kernels"] == \
        _inventory("fori16_tanh_matmul_bf16_4096")["launches"]


# --------------------------------------------------------------------------------------------
# (a) No kernel counts more than its program
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_no_kernel_counts_more_flops_than_its_program(name: str) -> None:
    """Per launch, no kernel counts more flops or transcendentals than XLA counts for the whole
    program on the TPU (its cost analysis charges a loop body once: a launch of it is the
    unit). Counting the log-softmax's whole-row window as a window per output gave one fusion
    275 GFLOP in a program XLA counts at 50 MFLOP."""
    cost = _xla_cost(name)
    flops, transcendentals = cost.get("flops", 0.0), cost.get("transcendentals", 0.0)
    for k in _inventory(name)["kernels"]:
        assert k["flops"] <= flops, (k["name"], k["flops"], flops)
        assert k["transcendentals"] <= transcendentals, (k["name"], k["transcendentals"])


# --------------------------------------------------------------------------------------------
# (b) The kernels' sum against the program's StableHLO count
# --------------------------------------------------------------------------------------------


@functools.cache
def _cases() -> dict[str, Any]:
    """benchmarks/tpu_capture.py's pattern cases by name (the module is loaded from its file;
    the search path it extends is put back)."""
    spec = importlib.util.spec_from_file_location("tpu_capture_cases",
                                                  REPO / "benchmarks" / "tpu_capture.py")
    assert spec is not None and spec.loader is not None
    saved = list(sys.path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up while it is made
    try:
        spec.loader.exec_module(module)
        return {case.name: case for case in module._pattern_cases()}
    finally:
        sys.path[:] = saved
        sys.modules.pop(spec.name, None)


@functools.cache
def _stablehlo(name: str) -> dict[str, Any]:
    """The program's StableHLO count: its case lowered on the CPU at its exact shapes, its loops
    paired with the TPU program's (whose trip counts serve where a condition gives none)."""
    import jax

    case = _cases()[name]
    shapes = jax.eval_shape(case.args)
    lowered = jax.jit(case.fn, donate_argnums=case.donate).lower(*shapes)
    return count_stablehlo(lowered.compiler_ir("stablehlo"),
                           compiled_loops=while_loops(_module(name)))


def test_every_pattern_program_has_its_case() -> None:
    assert sorted(_cases()) == PATTERNS


N64M, N16M = 1 << 26, 1 << 24


def _fft_products(elements: int, lengths: tuple[int, ...]) -> int:
    """The TPU's FFT as products: each transformed length n = 128 x (n / 128) computed as two
    DFT products of sides 128 and n / 128, each complex multiply-add as three real products
    (Gauss's trick: 6 flops), for every element."""
    return 6 * sum(128 + n // 128 for n in lengths) * elements


def _fft_count(elements: int, lengths: tuple[int, ...]) -> int:
    """The program count's FFT: XLA's rule, 8 flops per element per floor(log2 n)."""
    return 8 * math.prod(n.bit_length() - 1 for n in lengths) * elements


# The rewrites each pattern program's kernels show against its StableHLO count, and why; every
# other pattern program reconciles exactly (flops and transcendentals). ``exact``: the
# rewrites of these ops, each of this amount (quantity, op) -> amount; ``small``: the other
# ops the compiler rewrote, and a bound on the sum of their amounts' sizes.
REWRITES: dict[str, dict[str, Any]] = {
    # XLA rewrote the matrix-vector product as a multiply and a row sum (on the vector unit):
    # 2n^2 of dot_general become n^2 multiplies and n (n - 1) adds.
    "matvec_f32_8192": {"exact": {("flops", "dot_general"): -2 * 8192 ** 2,
                                  ("flops", "multiply"): 8192 ** 2,
                                  ("flops", "reduce"): 8192 * 8191}},
    # The TPU v5e computes bfloat16 arithmetic in float32: three converts an element.
    "scale_bf16_64M": {"exact": {("flops", "convert"): 3 * N64M}},
    # The maximum of each row's maximum with -inf, folded; x - max and exp(x - max) computed
    # in both fusions (the sum's and the normalisation's).
    "softmax_8192x4096": {"exact": {("flops", "maximum"): -8192,
                                    ("flops", "subtract"): 8192 * 4096,
                                    ("transcendentals", "exponential"): 8192 * 4096}},
    # The whole-row reduce-window counted as the reduce it computes: only the folded maximum
    # with -inf differs, one per row.
    "log_softmax_4x512x8192": {"exact": {("flops", "maximum"): -4 * 512}},
    # jnp.var takes the row mean again: XLA computes it once (one row reduce fewer); the square
    # is a multiply; the divisions by the row length become multiplies; the degrees-of-freedom
    # guard (a select per row, scalar compares and converts) folds away.
    "layer_norm_8192x4096": {"exact": {("flops", "square"): -8192 * 4096,
                                       ("flops", "reduce"): -8192 * 4095},
                             "small": (("compare", "convert", "divide", "multiply", "select",
                                        "subtract"), 8192 * 4096 + 8 * 8192)},
    # x + 0 is a copy.
    "copy_f32_64M": {"exact": {("flops", "add"): -N64M}},
    # The argmax comparator's NaN tests, always false for integers, fold away: 2 flops per
    # element reduced.
    "argmax_int32_16384x4096": {"exact": {("flops", "reduce"): -2 * 16384 * 4095}},
    # A complex multiply done as its real arithmetic: 4 multiplies, an add and a subtract
    # where the program count charges 1.
    "complex_mul_c64_16M": {"exact": {("flops", "multiply"): 3 * N16M,
                                      ("flops", "add"): N16M, ("flops", "subtract"): N16M}},
    # A cumulative sum over 4,096 as prefix sums of blocks of 128 (a window of 128), prefix
    # sums of the 32 block totals (a window of 32 over 33 positions) and one add an element
    # to put them together, where the program's window is 4,096 wide.
    "cumsum_f32_4096x4096": {"exact": {
        ("flops", "reduce_window"): (127 - 4095) * N16M + 31 * 4096 * 33,
        ("flops", "add"): N16M}},
    "cumsum_axis0_f32_4096x4096": {"exact": {
        ("flops", "reduce_window"): (127 - 4095) * N16M + 31 * 4096 * 33,
        ("flops", "add"): N16M}},
    # The table's rows are moved, not computed: the rewrites are the index arithmetic (the
    # remainder as negates, ands and selects, the bounds checks), a few ops per index of
    # 65,536.
    "gather_rows_f32_262144x256": {"small": (("add", "and", "clamp", "compare", "convert",
                                              "multiply", "negate", "remainder", "select"),
                                             24 * 65536)},
    # The scatter's indices sorted first (65,536 x 16 comparisons), and their arithmetic.
    "scatter_add_rows_f32_262144x256": {
        "exact": {("flops", "sort"): 65536 * 16},
        "small": (("and", "clamp", "compare", "convert", "negate", "remainder", "select"),
                  24 * 65536)},
    # The bfloat16 product's tanh computed in float32: converted up and down, every trip.
    # Its induction variable's add and compare run on the scalar unit: no kernel's.
    "fori16_tanh_matmul_bf16_4096": {"exact": {("flops", "convert"): 2 * 16 * 4096 ** 2},
                                     "small": (("add", "compare"), 2 * 16)},
    # The cache position (a constant) folded: its clamp's compare, select and add.
    "kv_update_bf16_32x8192x1024": {"small": (("add", "compare", "select"), 3)},
    # A concatenation as two pads and their maximum: one maximum per output element.
    "concat_f32_2x8192x4096": {"exact": {("flops", "maximum"): 8192 * 8192}},
    "pad_f32_8192x4096": {"small": (("convert",), 1)},
}
# The FFTs: the program's fft is computed as DFT products (:func:`_fft_products`), plus the
# elementwise combination of their parts and the twiddle factors (at most 32 flops and 1/64 of
# a transcendental per element).
FFTS = {"fft_c64_2048x4096": (2048 * 4096, (4096,)),
        "rfft_f32_4096x4096": (4096 * 4096, (4096,)),
        "fft2_c64_64x512x512": (64 * 512 * 512, (512, 512))}
for _name, (_elements, _lengths) in FFTS.items():
    REWRITES[_name] = {
        "exact": {("flops", "dot_general"): _fft_products(_elements, _lengths)},
        "gone": ("fft",),
        "small": (("add", "and", "convert", "multiply", "subtract", "cosine", "sine"),
                  32 * _elements)}


def _short(op: str) -> str:
    return op.split(".", 1)[-1]


@pytest.mark.parametrize("name", PATTERNS)
def test_kernel_flops_reconcile_with_the_stablehlo_count(name: str) -> None:
    program = _stablehlo(name)
    assert program.get("available", True) is not False, program.get("reason")
    report = reconcile_kernels(_inventory(name), program)
    expected = REWRITES.get(name, {})
    exact: Mapping[tuple[str, str], int] = expected.get("exact", {})
    small_ops, bound = expected.get("small", ((), 0))
    seen = {(r.quantity, _short(r.op)): r.amount for r in report.rewrites}
    for key, amount in exact.items():
        assert seen.pop(key, 0) == amount, (key, amount)
    for op in expected.get("gone", ()):
        amount = seen.pop(("flops", op), 0)
        assert amount == -int(program["flops_by_op"][f"stablehlo.{op}"]), op
    assert {op for _, op in seen} <= set(small_ops), seen
    assert sum(abs(a) for a in seen.values()) <= bound, seen
    assert report.unexplained == {"flops": 0, "transcendentals": 0}
    if not expected:
        assert report.flops.equal and report.transcendentals.equal, report


def test_the_fft_count_and_its_products() -> None:
    # The rule the FFT rewrites are checked by, on the counts: XLA's 805 MFLOP for the
    # [2048, 4096] FFT, done on the TPU as 8.05 GFLOP of products.
    assert _fft_count(2048 * 4096, (4096,)) == 805306368
    assert int(_stablehlo("fft_c64_2048x4096")["flops_by_op"]["stablehlo.fft"]) == 805306368
    assert _fft_products(2048 * 4096, (4096,)) == 8053063680


# --------------------------------------------------------------------------------------------
# (c) Each pattern program's main kernel
# --------------------------------------------------------------------------------------------

# program -> (kernel, category, pattern): what the pattern program is about.
MAIN: dict[str, tuple[str, str, str | None]] = {
    "matmul_bf16_4096": ("fusion", "matmul", None),
    "matmul_f32_4096": ("fusion", "matmul", None),
    "matmul_f32_highest_2048": ("fusion", "matmul", None),
    "matmul_int8_4096": ("fusion", "matmul", None),
    "matmul_bf16_tall_65536x256x256": ("fusion", "matmul", None),
    "bmm_bf16_64x512": ("fusion", "matmul", None),
    "matvec_f32_8192": ("multiply_reduce_fusion", "reduction", None),
    "token_proj_bf16_8x4096x16384": ("fusion", "matmul", None),
    "scale_f32_64M": ("broadcast_multiply_fusion", "elementwise", None),
    "axpy_f32_64M": ("multiply_add_fusion", "elementwise", None),
    "scale_donated_f32_64M": ("broadcast_multiply_fusion", "elementwise", None),
    "exp_f32_64M": ("exp.1", "elementwise", None),
    "tanh_f32_64M": ("tanh.1", "elementwise", None),
    "log_f32_64M": ("add_log_fusion", "elementwise", None),
    "sin_f32_64M": ("sin.1", "elementwise", None),
    "erf_f32_64M": ("erf.1", "elementwise", None),
    "sqrt_f32_64M": ("abs_sqrt_fusion", "elementwise", None),
    "fma_chain_f32_16M": ("multiply_add_fusion", "elementwise", None),
    "convert_f32_bf16_64M": ("convert_element_type.1", "elementwise", None),
    "scale_bf16_64M": ("broadcast_multiply_fusion", "elementwise", None),
    "row_sum_16384x4096": ("reduce_sum.7", "reduction", None),
    "col_sum_16384x4096": ("reduce_sum.7", "reduction", "strided-reduction"),
    "mid_sum_256x256x1024": ("reduce_sum.7", "reduction", "strided-reduction"),
    "full_sum_64M": ("reduce_sum.7", "reduction", None),
    "row_max_16384x4096": ("reduce_max.7", "reduction", None),
    "softmax_8192x4096": ("fusion.1", "reduction", None),
    "log_softmax_4x512x8192": ("exponential_reduce_fusion", "reduction", "reduce-window-lane"),
    "layer_norm_8192x4096": ("multiply_reduce_fusion", "reduction", None),
    "row_max_broadcast_8192x4096": ("broadcast_subtract_fusion", "elementwise", None),
    "transpose_f32_8192": ("copy", "data movement", "transpose"),
    "transpose_bf16_8192": ("copy", "data movement", "transpose"),
    "transpose_scaled_f32_8192": ("copy", "data movement", "transpose"),
    "swap_minor_64x1024x1024": ("copy", "data movement", "transpose"),
    "swap_major_64x1024x1024": ("copy_bitcast_fusion", "data movement", "transpose"),
    "kv_layout_bf16_8x32x2048x128": ("copy_bitcast_fusion", "data movement", "transpose"),
    "heads_split_f32_16x2048x1024": ("copy", "data movement", "transpose"),
    "copy_f32_64M": ("copy.1", "data movement", None),  # the same layout: a plain copy
    "top_k_2048x32768_k20": ("custom-call", "other", "top-k"),
    "sort_2048x32768": ("sort.6", "other", "sort"),
    "argmax_16384x4096": ("iota_reduce_fusion", "reduction", "variadic-reduction"),
    "argmax_int32_16384x4096": ("iota_reduce_fusion", "reduction", "variadic-reduction"),
    "fft_c64_2048x4096": ("fusion.62", "matmul", None),
    "rfft_f32_4096x4096": ("fusion.63", "matmul", None),
    "fft2_c64_64x512x512": ("fusion.109", "matmul", None),
    "complex_mul_c64_16M": ("multiply_add_fusion", "elementwise", None),
    "conv3x3_f32_32x64x64x128": ("fusion", "matmul", None),
    "conv3x3_bf16_32x64x64x128": ("fusion", "matmul", None),
    "conv1x1_bf16_32x64x64x256": ("fusion", "matmul", None),
    "patch16_bf16_64x224x224x3": ("fusion", "matmul", None),
    "depthwise3x3_f32_32x64x64x256": ("fusion", "matmul", None),
    "depthwise7x7_f32_32x64x64x256": ("fusion", "matmul", None),
    "maxpool3x3s2_f32_32x128x128x64": ("reduce_window_max.7", "reduction", None),
    "cumsum_f32_4096x4096": ("fusion", "reduction", None),
    "cumsum_axis0_f32_4096x4096": ("fusion", "reduction", None),
    "gather_rows_f32_262144x256": ("gather_fusion", "data movement", "gather"),
    "scatter_add_rows_f32_262144x256": ("scatter_custom_fusion", "elementwise", "scatter"),
    "fori16_tanh_matmul_bf16_4096": ("convolution_tanh_fusion.2", "matmul", None),
    "kv_update_bf16_32x8192x1024": ("dynamic_update_slice.1", "data movement", "update-slice"),
    "concat_f32_2x8192x4096": ("pad_maximum_fusion", "elementwise", None),
    "pad_f32_8192x4096": ("pad.0", "data movement", None),
    "slice_rows_f32_16384x4096": ("slice.1", "data movement", None),
    "broadcast_add_f32_8192x8192": ("broadcast_add_fusion", "elementwise", None),
    "where_mask_f32_64M": ("compare_select_fusion", "elementwise", None),
}


def test_every_pattern_program_names_its_main_kernel() -> None:
    assert sorted(MAIN) == PATTERNS


@pytest.mark.parametrize("name", PATTERNS)
def test_the_main_kernel_has_its_category_and_pattern(name: str) -> None:
    kernel, category, pattern = MAIN[name]
    k = _kernel(name, kernel)
    assert (k["category"], k["pattern"]) == (category, pattern)


def _dot(k: Mapping[str, Any]) -> int:
    return int(k["flops_by_op"].get("stablehlo.dot_general", 0))


@pytest.mark.parametrize("name", ["matmul_bf16_4096", "matmul_f32_4096", "matmul_int8_4096"])
def test_a_product_is_charged_as_a_dot_at_its_flops(name: str) -> None:
    k = _kernel(name, "fusion")
    assert _dot(k) == k["flops"] == 2 * 4096 ** 3
    assert "stablehlo.convolution" not in k["flops_by_op"]
    assert k["matmul_products"] == 1 and k["patch_conv_flops"] == 0
    assert k["matmul_dtype"] == ("int8" if "int8" in name else None)


def test_the_products_batches_precision_and_the_convolutions() -> None:
    bmm = _kernel("bmm_bf16_64x512", "fusion")  # the batch as a spatial dimension
    assert _dot(bmm) == 2 * 64 * 512 ** 3 and bmm["matmul_products"] == 64
    tall = _kernel("matmul_bf16_tall_65536x256x256", "fusion")
    assert _dot(tall) == 2 * 65536 * 256 * 256 and tall["matmul_products"] == 1
    assert _kernel("matmul_f32_highest_2048", "fusion")["matmul_precision"] == "highest"
    assert _kernel("matmul_f32_4096", "fusion")["matmul_precision"] is None
    assert _kernel("fft_c64_2048x4096", "fusion.62")["matmul_precision"] == "highest"
    # A real convolution stays one, at the convolution roof; a 1x1 and a patch embedding too.
    for name, patch in (("conv3x3_f32_32x64x64x128", 0), ("conv3x3_bf16_32x64x64x128", 0),
                        ("conv1x1_bf16_32x64x64x256", 1), ("patch16_bf16_64x224x224x3", 1)):
        k = _kernel(name, "fusion")
        assert set(k["flops_by_op"]) == {"stablehlo.convolution"}, name
        assert k["grouped_conv_flops"] == 0 and k["patch_conv_flops"] == patch * k["flops"]
    # A depthwise one as grouped, with its taps.
    for name, taps in (("depthwise3x3_f32_32x64x64x256", 9), ("depthwise7x7_f32_32x64x64x256",
                                                               49)):
        k = _kernel(name, "fusion")
        assert k["grouped_conv_flops"] == k["flops"] > 0 and k["grouped_conv_taps"] == taps
    # The transformer step's attention products: batches of 8 x 4 written spatial.
    step = [k for k in _inventory("transformer_step")["kernels"] if _dot(k)]
    assert {k["matmul_products"] for k in step} == {1, 32}


def test_the_log_softmax_fusion_counts_what_it_computes() -> None:
    k = _kernel("log_softmax_4x512x8192", "exponential_reduce_fusion")
    elements = 4 * 512 * 8192
    # The row maximum (as a reduce), x - max and the row sum of exp: about 3 flops an element,
    # not the 16,382 of a window per output.
    assert k["flops"] <= 3 * elements
    assert k["flops_by_op"] == {"stablehlo.reduce": 2 * 2048 * 8191,
                                "stablehlo.subtract": elements}
    assert k["transcendentals"] == elements
    assert (k["pattern_size"], k["pattern_row"]) == (elements, 8192)
    assert k["reduced_elements"] == 2 * elements  # the window's rows and exp's row sum


def test_transposes_are_copies_between_logical_layouts_and_copies_are_not() -> None:
    for name in ("transpose_f32_8192", "transpose_bf16_8192", "swap_minor_64x1024x1024",
                 "heads_split_f32_16x2048x1024", "top_k_2048x32768_k20"):
        k = _kernel(name, "copy")
        assert k["pattern"] == "transpose" and k["opcode"] == "copy", name
    # A relayout that keeps the logical order (int8 tiles (32,128) to (8,128), a size-1 axis
    # moved) is a plain copy.
    assert _kernel("kv_update_bf16_32x8192x1024", "copy")["pattern"] is None
    assert _kernel("copy_f32_64M", "copy.1")["pattern"] is None


def test_asynchronous_copies_and_slices_are_one_kernel_each_marked() -> None:
    names = [k["name"] for k in _inventory("matmul_bf16_4096")["kernels"]]
    assert names == ["copy-start", "fusion"]  # the copy-done is its start's
    start = _kernel("matmul_bf16_4096", "copy-start")
    assert start["asynchronous"] and start["category"] == "data movement"
    assert (start["bytes_read"], start["on_chip_bytes_written"]) == (32 * MiB, 32 * MiB)
    assert not _kernel("matmul_bf16_4096", "fusion")["asynchronous"]
    slices = [k for k in _inventory("fft_c64_2048x4096")["kernels"]
              if k["opcode"] == "slice-start"]
    assert len(slices) == 8
    for k in slices:  # an asynchronous slice reads its slice: a quarter of its operand
        assert k["asynchronous"] and k["category"] == "data movement"
        assert k["bytes_read"] == 8 * MiB and k["on_chip_bytes_written"] == 8 * MiB


def test_the_tpu_custom_calls_move_bytes_and_compute_nothing() -> None:
    kernels = _inventory("complex_mul_c64_16M")["kernels"]
    calls = {k["kind"]: k for k in kernels if k["opcode"] == "custom-call"}
    assert set(calls) == {"X64SplitLow", "X64SplitHigh", "X64Combine"}
    for k in calls.values():
        assert k["flops"] == 0 and k["uncosted"] == [] and k["category"] == "data movement"
    split = calls["X64SplitLow"]  # reads the complex64 array, writes its float32 half
    assert (split["bytes_read"], split["bytes_written"]) == (128 * MiB, 64 * MiB)
    assert _inventory("complex_mul_c64_16M")["notes"] == []
    concat = [k for k in _inventory("fft_c64_2048x4096")["kernels"] if k["kind"] == "ConcatBitcast"]
    assert concat and all(k["bytes_read"] == k["bytes_written"] == 0 for k in concat)
    gru = [k for k in _inventory("heldout_gru_scan_x128")["kernels"]
           if k["kind"] == "AllocateBuffer"]
    assert gru and all(k["bytes_written"] == 0 and k["category"] == "other" for k in gru)


def test_the_loop_emitter_rule_is_not_a_tpu_rule() -> None:
    # a + v * sin(v) over rows: on a TPU the sine of the vector is a kernel of its own, and the
    # broadcast's operand is not charged again per output element.
    for name in ALL:
        for k in _inventory(name)["kernels"]:
            assert k["recomputed_flops"] == 0 and not k["recomputed_transcendentals_by_op"]
    sine = _kernel("broadcast_add_f32_8192x8192", "sine_multiply_fusion")
    assert sine["transcendentals"] == 8192


# --------------------------------------------------------------------------------------------
# (d) Bytes: the HBM's traffic
# --------------------------------------------------------------------------------------------

# program -> (kernel, HBM bytes read, HBM bytes written, on-chip read, on-chip written).
STREAMS: dict[str, tuple[str, int, int, int, int]] = {
    "scale_f32_64M": ("broadcast_multiply_fusion", 256 * MiB, 256 * MiB, 0, 0),
    "scale_donated_f32_64M": ("broadcast_multiply_fusion", 256 * MiB, 256 * MiB, 0, 0),
    "axpy_f32_64M": ("multiply_add_fusion", 512 * MiB, 256 * MiB, 0, 0),
    "exp_f32_64M": ("exp.1", 256 * MiB, 256 * MiB, 0, 0),
    "convert_f32_bf16_64M": ("convert_element_type.1", 256 * MiB, 128 * MiB, 0, 0),
    "scale_bf16_64M": ("broadcast_multiply_fusion", 128 * MiB, 128 * MiB, 0, 0),
    "copy_f32_64M": ("copy.1", 256 * MiB, 256 * MiB, 0, 0),
    "fma_chain_f32_16M": ("multiply_add_fusion", 64 * MiB, 64 * MiB, 0, 0),
    "transpose_f32_8192": ("copy", 256 * MiB, 256 * MiB, 0, 0),
    "row_sum_16384x4096": ("reduce_sum.7", 256 * MiB + 4, 64 * 1024, 0, 0),  # + the init
    # The matrix a in vector memory (its copy-start brought it), b and the int32 result in HBM.
    "matmul_int8_4096": ("fusion", 16 * MiB, 64 * MiB, 16 * MiB, 0),
    # x read from HBM once; the [4, 512] sums and the 64 MiB x - max stay in vector memory.
    "log_softmax_4x512x8192": ("exponential_reduce_fusion", 64 * MiB, 0, 0, 64 * MiB + 8192),
    # The fori_loop's body runs on vector memory alone.
    "fori16_tanh_matmul_bf16_4096": ("convolution_tanh_fusion.2", 0, 0, 64 * MiB, 32 * MiB),
    # The gather reads its 65,536 rows of 1 KiB; the indices and its result are on chip.
    "gather_rows_f32_262144x256": ("gather_fusion", 64 * MiB, 0, 256 * 1024, 64 * MiB),
    # The donated table updated in place: the rows it adds to, read and written.
    "scatter_add_rows_f32_262144x256": ("scatter_custom_fusion", 64 * MiB, 64 * MiB,
                                        64 * MiB + 2 * 256 * 1024, 0),
    # One position of a cache whose positions are second-minor: one row of each of the 256
    # tiles of 8 x 128 it crosses (32 rows of 8 tiles), each tile read and written whole; the
    # update, in vector memory as bf16[32,1,1024] in tiles of 2 x 128, twice its bytes.
    "kv_update_bf16_32x8192x1024": ("dynamic_update_slice.1", 12 + 512 * 1024, 512 * 1024,
                                    128 * 1024, 0),
}


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_the_main_kernel_moves_what_it_reads_and_writes_in_hbm(name: str) -> None:
    kernel, read, written, chip_read, chip_written = STREAMS[name]
    k = _kernel(name, kernel)
    assert (k["bytes_read"], k["bytes_written"]) == (read, written)
    assert (k["on_chip_bytes_read"], k["on_chip_bytes_written"]) == (chip_read, chip_written)
    assert k["boundary_bytes_read"] >= k["bytes_read"]


def test_scale_moves_512_mib_and_the_donated_one_writes_in_place() -> None:
    k = _kernel("scale_f32_64M", "broadcast_multiply_fusion")
    assert k["bytes_read"] + k["bytes_written"] == 512 * MiB and not k["in_place"]
    assert _kernel("scale_donated_f32_64M", "broadcast_multiply_fusion")["in_place"]
    assert _kernel("scatter_add_rows_f32_262144x256", "scatter_custom_fusion")["in_place"]


# XLA's per-op figures from the traces ------------------------------------------------------


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    out: list[tuple[int, int | bytes]] = []
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        if key & 7 == 0:
            value, at = _varint(data, at)
            out.append((key >> 3, value))
        elif key & 7 == 2:
            size, at = _varint(data, at)
            out.append((key >> 3, data[at:at + size]))
            at += size
        else:
            raise ValueError(f"wire type {key & 7}")
    return out


def _hbm(breakdown: bytes) -> tuple[int, int]:
    """(read, written) bytes of the HBM (memory space 1) in an op's
    ``memory_access_breakdown`` (repeated {operation 1 read / 2 write, space, bytes})."""
    read = written = 0
    for number, entry in _fields(breakdown):
        if number != 1 or not isinstance(entry, bytes):
            continue
        access = dict(_fields(entry))
        if access.get(2) == 1:
            if access.get(1) == 1:
                read += int(access.get(3, 0))
            elif access.get(1) == 2:
                written += int(access.get(3, 0))
    return read, written


@functools.cache
def _xla_ops() -> dict[str, dict[str, dict[str, Any]]]:
    """XLA's figures per op of each traced program: {program: {op: {"model_flops", "flops",
    "hbm_read", "hbm_written"}}}. A trace holds several programs (and the copies a donating
    program's inputs were made by): each program id goes to the fixture of its trace's group
    whose HLO holds every op it ran, named and shaped as the trace names it."""
    space_class, stat_class, event_class = (message_class(n) for n in
                                            ("XSpace", "XStat", "XEvent"))
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for path in sorted(TRACES.glob("*/plugins/profile/*/*.xplane.pb.gz")):
        group = path.relative_to(TRACES).parts[0]
        space = space_class()
        space.ParseFromString(gzip.decompress(path.read_bytes()))
        for plane in space.planes:
            if not plane.name.startswith("/device:TPU"):
                continue
            names = {e.key: e.value.name for e in plane.stat_metadata}
            ops: dict[int, dict[str, dict[str, Any]]] = {}
            for entry in plane.event_metadata:
                stats: dict[str, Any] = {}
                for raw in entry.value.stats:
                    stat = stat_class()
                    stat.ParseFromString(raw)
                    kind = stat.WhichOneof("value")
                    stats[names.get(stat.metadata_id, "")] = getattr(stat, kind) if kind else None
                if "program_id" not in stats or " = " not in entry.value.name:
                    continue
                ops.setdefault(int(stats["program_id"]), {})[entry.value.name] = stats
            used = {event_class.FromString(raw).metadata_id for line in plane.lines
                    if line.name == "XLA Ops" for raw in line.events}
            texts_of = {m.value.name for m in plane.event_metadata if m.key in used}
            taken: set[str] = set()
            for program_id in _program_order(plane, event_class):
                texts = {t: s for t, s in ops.get(program_id, {}).items() if t in texts_of}
                name = _program_of(group, texts, taken)
                if name is not None:
                    taken.add(name)
                    out[name] = {text.split(" = ", 1)[0].lstrip("%"): _figures(stats)
                                 for text, stats in texts.items()}
    return out


def _program_order(plane: Any, event_class: Any) -> list[int]:
    """The plane's program ids in the order the programs first ran (its ``XLA Modules``
    events, named ``module(program id)``)."""
    names = {m.key: m.value.name for m in plane.event_metadata}
    runs = sorted((event.offset_ps, names.get(event.metadata_id, ""))
                  for line in plane.lines if line.name == "XLA Modules"
                  for event in map(event_class.FromString, line.events))
    order: list[int] = []
    for _, module in runs:
        program = module.rsplit("(", 1)[-1].rstrip(")")
        if program.isdigit() and int(program) not in order:
            order.append(int(program))
    return order


def _figures(stats: Mapping[str, Any]) -> dict[str, Any]:
    read, written = _hbm(bytes(stats.get("memory_access_breakdown") or b""))
    return {"model_flops": int(stats.get("model_flops") or 0),
            "flops": int(stats.get("flops") or 0), "hbm_read": read, "hbm_written": written,
            "bytes_accessed": int(stats.get("bytes_accessed") or 0)}


def _program_of(group: str, texts: Mapping[str, Any], taken: set[str]) -> str | None:
    """The first fixture of the trace's group, in the order it was traced, not yet matched,
    whose HLO defines every op of ``texts`` with the result shape the trace prints (a copy a
    donating program's input was made by matches none)."""
    heads = [t.split(" = ", 1)[0] + " = " + t.split(" = ", 1)[1].split(" ", 1)[0]
             for t in texts]
    return next((n for n in CAPTURED["traces"].get(group, []) if n not in taken
                 and heads and all(h in _text(n) for h in heads)), None)


def test_the_traces_give_xla_figures_for_each_traced_program() -> None:
    traced = {n for names in CAPTURED["traces"].values() for n in names}
    assert set(_xla_ops()) == traced


def _done_of(name: str, start: str) -> str | None:
    return next((i.name for _, i in _module(name).instructions()
                 if i.opcode.endswith("-done") and i.operands[:1] == (start,)), None)


# Kernels whose HBM bytes differ from XLA's per-op figures, and why.
HBM_EXCEPTIONS = {
    # XLA's figures leave custom calls out (0 bytes): the X64 splits and combines read and
    # write their arrays (a split of a complex64 [16 M] took 0.39 ms, a stream of 192 MiB).
    "custom-call": "XLA's figures leave custom calls out",
    # The log-softmax's fusion reads x once for the whole-row window and once for x - max:
    # XLA charges the operand for each of the two ops that read it; the emitter streams it.
    ("log_softmax_4x512x8192", "exponential_reduce_fusion"): "x charged twice by XLA",
    # XLA charges the scatter its whole table written and nothing read; the donated table is
    # updated in place, the 65,536 rows it adds to read and written.
    ("scatter_add_rows_f32_262144x256", "scatter_custom_fusion"): "the scatter in place",
    # XLA charges the sort and the top-k no HBM write: the sort writes its sorted keys and
    # indices (512 MiB), the top-k its [2048, 20] values and indices.
    ("sort_2048x32768", "sort.6"): "no write in XLA's figure",
    ("top_k_2048x32768_k20", "custom-call"): "no write in XLA's figure",
    # XLA charges an in-place update its update's bytes; it moves the whole tiles it crosses
    # (64 KiB of update, 512 KiB of tiles read and written: 4.8 µs a call, where 128 KiB
    # would take 0.2 µs at the HBM's rate).
    ("kv_update_bf16_32x8192x1024", "dynamic_update_slice.1"): "whole tiles moved",
}


@pytest.mark.parametrize("name", sorted({n for names in CAPTURED["traces"].values()
                                         for n in names}))
def test_hbm_bytes_match_xlas_per_op_figures(name: str) -> None:
    """Each traced kernel moves the HBM bytes XLA's own per-op figures give (an asynchronous
    copy's start and done together: XLA gives the HBM write of a copy to vector memory's
    counterpart to its done), but for the kernels of :data:`HBM_EXCEPTIONS`. VMEM-only
    operands are no traffic on either side."""
    ops = _xla_ops()[name]
    compared = 0
    for k in _inventory(name)["kernels"]:
        if k["name"] not in ops or k["opcode"] == "custom-call" \
                or (name, k["name"]) in HBM_EXCEPTIONS:
            continue
        read, written = ops[k["name"]]["hbm_read"], ops[k["name"]]["hbm_written"]
        done = _done_of(name, k["name"]) if k["asynchronous"] else None
        if done is not None and done in ops:
            read += ops[done]["hbm_read"]
            written += ops[done]["hbm_written"]
        # XLA's figures are the arrays' logical bytes: the count's, its tiles' padding aside
        assert (k["bytes_read"] - k["padding_bytes_read"],
                k["bytes_written"] - k["padding_bytes_written"]) == (read, written), k["name"]
        compared += 1
    assert compared > 0


# XLA charges a gather fusion's index operand twice (4 KiB more in the two held-out steps).
ACCESSED_EXCEPTIONS = {("heldout_mixer_step_x128", "gather_fusion"),
                       ("heldout_resnet_bn_step_x128", "gather_fusion")}


@pytest.mark.parametrize("name", sorted({n for names in CAPTURED["traces"].values()
                                         for n in names}))
def test_hbm_and_on_chip_bytes_add_up_to_xlas_bytes_accessed(name: str) -> None:
    """XLA's ``bytes_accessed`` of an op counts every memory space: each traced kernel's HBM
    and on-chip bytes add up to it, within the 8 bytes of constant operands XLA leaves out
    (a reduce's initial value, a constant index), but for the kernels whose HBM bytes differ
    as explained (:data:`HBM_EXCEPTIONS`) and those of :data:`ACCESSED_EXCEPTIONS`; an
    asynchronous pair's figures are split between its start and done, and not compared."""
    ops = _xla_ops()[name]
    for k in _inventory(name)["kernels"]:
        if k["name"] not in ops or k["opcode"] == "custom-call" or k["asynchronous"] \
                or (name, k["name"]) in HBM_EXCEPTIONS or (name, k["name"]) in \
                ACCESSED_EXCEPTIONS:
            continue
        ours = k["bytes_read"] + k["bytes_written"] + k["on_chip_bytes_read"] \
            + k["on_chip_bytes_written"] - _padding(k)
        assert 0 <= ours - ops[k["name"]]["bytes_accessed"] <= 8, k["name"]


def _padding(k: Mapping[str, Any]) -> int:
    """The bytes of a kernel's arrays' tile padding, HBM and on chip."""
    return int(k["padding_bytes_read"] + k["padding_bytes_written"]
               + k["padding_on_chip_bytes"])


def test_the_exceptions_differ_as_explained() -> None:
    ops = _xla_ops()
    softmax = ops["log_softmax_4x512x8192"]["exponential_reduce_fusion"]
    assert softmax["hbm_read"] == 2 * _kernel("log_softmax_4x512x8192",
                                              "exponential_reduce_fusion")["bytes_read"]
    scatter = ops["scatter_add_rows_f32_262144x256"]["scatter_custom_fusion"]
    assert (scatter["hbm_read"], scatter["hbm_written"]) == (0, 256 * MiB)
    assert ops["sort_2048x32768"]["sort.6"]["hbm_written"] == 0
    update = ops["kv_update_bf16_32x8192x1024"]["dynamic_update_slice.1"]
    assert (update["hbm_read"], update["hbm_written"]) == (12, 64 * 1024)
    assert all(ops["complex_mul_c64_16M"][c]["hbm_read"] == 0
               for c in ("custom-call", "custom-call.1", "custom-call.4"))
    for name, kernel in ACCESSED_EXCEPTIONS:
        k = _kernel(name, kernel)
        ours = k["bytes_read"] + k["bytes_written"] + k["on_chip_bytes_read"] \
            + k["on_chip_bytes_written"] - _padding(k)
        assert ops[name][kernel]["bytes_accessed"] - ours == 4096


# Kernels whose flops differ from XLA's per-op model flops, and why.
FLOP_EXCEPTIONS = {
    # XLA counts the whole-row window at nothing; it is the row's reduce (2,048 x 8,191).
    ("log_softmax_4x512x8192", "exponential_reduce_fusion"),
    # XLA charges a top-k k flops per element searched; the program count charges the call
    # nothing, and so do the kernels.
    ("top_k_2048x32768_k20", "custom-call"),
    # XLA counts no arithmetic inside a gather's custom fusion (its index selects).
    ("heldout_mixer_step_x128", "gather_fusion"),
    ("heldout_resnet_bn_step_x128", "gather_fusion"),
}


@pytest.mark.parametrize("name", sorted({n for names in CAPTURED["traces"].values()
                                         for n in names}))
def test_kernel_flops_match_xlas_per_op_model_flops(name: str) -> None:
    """Each traced kernel's flops are XLA's ``model_flops`` for the op (within 1e-6: XLA's
    reduce charges a row n adds where the count charges n - 1), but for
    :data:`FLOP_EXCEPTIONS`. XLA's ``flops`` count the passes the TPU runs: a float product
    at ``highest`` precision six times (its other ops once), at the default once; an int8
    product about half (it runs at twice the bfloat16 rate)."""
    ops = _xla_ops()[name]
    for k in _inventory(name)["kernels"]:
        if k["name"] not in ops or (name, k["name"]) in FLOP_EXCEPTIONS:
            continue
        theirs = ops[k["name"]]
        assert math.isclose(k["flops"], theirs["model_flops"], rel_tol=1e-6), k["name"]
        dot = _dot(k)
        if dot and k["matmul_dtype"] is None:
            passes = 6 if k["matmul_precision"] == "highest" else 1
            assert theirs["flops"] - theirs["model_flops"] == (passes - 1) * dot, k["name"]
        elif dot:
            assert 0.45 * dot < theirs["flops"] < 0.55 * dot, k["name"]


def test_the_lane_fusion_is_where_xla_counts_the_window_at_nothing() -> None:
    theirs = _xla_ops()["log_softmax_4x512x8192"]["exponential_reduce_fusion"]["model_flops"]
    ours = _kernel("log_softmax_4x512x8192", "exponential_reduce_fusion")["flops"]
    window = 2048 * 8191  # the row maximum, as the reduce it is
    # Without the window's reduce, ours is XLA's (x - max and the row sum) within 0.1 %.
    assert math.isclose(ours - window, theirs, rel_tol=1e-3)


def test_a_tpu_mat_vec_is_a_multiply_and_a_row_sum() -> None:
    """A TPU v5e's compiler writes W @ x (W[8192, 8192], x[8192]) as one loop fusion: x
    broadcast along W's rows, multiplied, and each row summed; no dot, no convolution. Its
    flops are d² multiplies and (d - 1)·d adds, the product's 2·d² less one add a row."""
    inventory = kernel_inventory(_text("matvec_f32_8192"))
    d = 8192
    (kernel,) = inventory["kernels"]
    assert kernel["flops_by_op"] == {"stablehlo.multiply": d * d,
                                     "stablehlo.reduce": (d - 1) * d}
    assert inventory["flops"] == 2 * d * d - d
