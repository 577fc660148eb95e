# ruff: noqa: E501
"""Kernel patterns (roofline_report.hlo.kernel_patterns.kernel_pattern) on programs XLA:CPU compiles
here, and on hand-written HLO for the edge cases."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest

from roofline_report.hlo.ir import parse_module
from roofline_report.hlo.kernel_patterns import kernel_pattern
from roofline_report.hlo.kernels import kernel_inventory
from roofline_report.results.schema import KernelInventory

ON_CPU = jax.default_backend() == "cpu"
cpu_only = pytest.mark.skipif(not ON_CPU, reason="which dots XLA:CPU leaves as dot is checked")


def _kernels(fn: Any, *args: Any) -> list[dict[str, Any]]:
    inv = kernel_inventory(jax.jit(fn).lower(*args).compile().as_text())
    KernelInventory.model_validate(inv)
    return list(inv["kernels"])


def _only(fn: Any, *args: Any) -> dict[str, Any]:
    [kernel] = [k for k in _kernels(fn, *args) if k["pattern"] is not None]
    return kernel


X = jnp.ones((512, 1024), jnp.float32)
IDX = jnp.array([3, 1, 7, 7], jnp.int32)


@pytest.mark.cpu_backend(
    "XLA:CPU's transposing copies; a TPU's are layout copies (test_tpu_pattern_plan)")
def test_transpose_copy() -> None:
    k = _only(jnp.transpose, X)
    assert (k["pattern"], k["pattern_size"]) == ("transpose", 512 * 1024)
    assert k["pattern_detail"] == "axes (1, 0) of f32[512,1024]"
    three = _only(lambda x: jnp.transpose(x, (0, 2, 1)), jnp.ones((4, 64, 32)))
    assert three["pattern_detail"] == "axes (0, 2, 1) of f32[4,64,32]"
    scaled = _only(lambda x: jnp.transpose(x) * 2, X)  # a broadcast constant fused in
    assert scaled["pattern"] == "broadcast-transpose"
    negated = _only(lambda x: -jnp.transpose(x), X)  # elementwise work without a broadcast
    assert negated["pattern"] == "transpose"


@pytest.mark.cpu_backend("XLA:CPU's loop emitter")
def test_a_transpose_fused_with_a_broadcast_is_a_pattern_of_its_own() -> None:
    square = jnp.ones((256, 256), jnp.float32)
    row = jnp.ones((256,), jnp.float32)
    assert _only(lambda x: (x * 2).T, square)["pattern"] == "broadcast-transpose"
    k = _only(lambda x, v: x.T * v[:, None], square, row)
    assert (k["pattern"], k["pattern_size"]) == ("broadcast-transpose", 256 * 256)
    assert k["pattern_row"] == 256  # each run of its output reads one element of 256 rows
    # Without a broadcast: the transpose it was.
    assert _only(lambda x, y: (x + y).T, square, square)["pattern"] == "transpose"
    # With rows that are not a power of two bytes long, or shorter than 1 KiB: one loop over
    # the output, as a fused transpose (about half the plain swap's rate here).
    for shape in ((1000, 1000), (128, 128), (8192, 64)):
        k = _only(lambda x: (x * 2).T, jnp.ones(shape, jnp.float32))
        assert (k["pattern"], k["pattern_row"]) == ("fused-transpose", 0)
        assert k["pattern_detail"].endswith("with a broadcast")
    bias = _only(lambda x, b: (x + b).T, jnp.ones((8192, 64), jnp.float32),
                 jnp.ones((64,), jnp.float32))
    assert (bias["pattern"], bias["pattern_size"]) == ("fused-transpose", 8192 * 64)
    # A conversion alone is no arithmetic: a bfloat16 copy of a transposed float32 stays one.
    assert _only(lambda x: x.T.astype(jnp.bfloat16), jnp.ones((1000, 1000), jnp.float32)
                 )["pattern"] == "transpose"
    assert _only(lambda x, y: x.T * y, square, square)["pattern"] == "fused-transpose"
    # A softmax's normaliser fused into the transposing copy of its weights (the Perceiver's).
    weights = jnp.ones((2, 1, 128, 4096), jnp.float32)
    total = jnp.ones((2, 1, 128), jnp.float32)
    k = _only(lambda a, c: jnp.transpose(a / c[..., None], (0, 1, 3, 2)).reshape(2, 4096, 128),
              weights, total)
    assert (k["pattern"], k["pattern_size"]) == ("broadcast-transpose", 2 * 128 * 4096)
    assert k["pattern_row"] == 128  # the runs of the output read 128 rows, not 4096
    # A full reversal of a weight-normalised filter (wav2vec's positional convolution's): rows
    # of 512 bytes, but each step along the output's minor axis is 16 x 128 floats (8 KiB) in
    # the source (0.42 G elements/s on a 2-core CPU against 3.8 without the broadcast); with
    # rows of 100 the step is 6,400 bytes, no power of two (1.3 G elements/s).
    gain = jnp.ones((128,), jnp.float32)
    k = _only(lambda v, g: jnp.transpose(v * g, (2, 1, 0)), jnp.ones((256, 16, 128)), gain)
    assert (k["pattern"], k["pattern_size"]) == ("broadcast-transpose", 256 * 16 * 128)
    assert k["pattern_row"] == 256  # the reversal brings the first axis out minor-most
    assert _only(lambda v, g: jnp.transpose(v * g, (2, 1, 0)), jnp.ones((256, 16, 100)),
                 jnp.ones((100,), jnp.float32))["pattern"] == "fused-transpose"


@pytest.mark.cpu_backend("XLA:CPU's transposing copies")
def test_a_transposing_copy_of_a_slice_is_a_transpose() -> None:
    # Swin's window attention: one of query, key and value sliced from their joint product
    # and its heads swapped forward, in one copy fusion.
    qkv = jnp.ones((64, 49, 3, 3, 32), jnp.float32)
    k = _only(lambda a: a.transpose(2, 0, 3, 1, 4)[1], qkv)
    assert (k["pattern"], k["pattern_size"]) == ("block-transpose", 64 * 49 * 3 * 32)
    assert k["pattern_row"] == 32  # runs of a head's 32 features
    swapped = _only(lambda a: a[:, :64].T, jnp.ones((512, 128), jnp.float32))
    assert (swapped["pattern"], swapped["pattern_size"]) == ("transpose", 512 * 64)


def test_moving_a_size_one_axis_or_copying_is_no_transpose() -> None:
    assert all(k["pattern"] is None for k in _kernels(
        lambda x: jnp.transpose(x, (1, 0, 2)), jnp.ones((1, 64, 32))))
    assert all(k["pattern"] is None for k in _kernels(lambda x: x * 2, X))


@pytest.mark.cpu_backend("XLA:CPU's row-major layouts")
def test_a_reduction_keeping_an_axis_between_two_it_reduces_is_read_a_run_at_a_time() -> None:
    # A group norm's statistics: over (H, W, channels of a group) of [N, H, W, G, C/G].
    k = _only(lambda x: x.sum(axis=(1, 2, 4)), jnp.ones((4, 32, 32, 32, 2), jnp.float32))
    assert (k["pattern"], k["pattern_size"]) == ("interleaved-reduction", 4 * 32 * 32 * 32)
    assert k["pattern_detail"] == \
        "dimensions (1, 2, 4) of f32[4,32,32,32,2]{4,3,2,1,0}, runs of 2"
    sixteen = _only(lambda x: x.sum(axis=(1, 3)), jnp.ones((4, 64, 32, 16), jnp.float32))
    assert sixteen["pattern_size"] == 4 * 64 * 32  # runs of 16 elements
    # Over the minor axes alone it is a sum over rows; without the minor one, strided.
    assert all(k["pattern"] is None for k in _kernels(
        lambda x: x.sum(axis=(2, 3)), jnp.ones((4, 64, 32, 16), jnp.float32)))
    assert _only(lambda x: x.sum(axis=(1, 2)), jnp.ones((4, 64, 32, 16), jnp.float32)
                 )["pattern"] == "strided-reduction"


@pytest.mark.cpu_backend("XLA:CPU's row-major layouts; a TPU's are tiled")
def test_reductions_strided_or_not() -> None:
    k = _only(lambda x: x.sum(axis=0), X)  # row-major: axis 0 is not the minor-most
    assert (k["pattern"], k["pattern_size"]) == ("strided-reduction", 512 * 1024)
    assert k["pattern_detail"] == "dimensions (0,) of f32[512,1024]{1,0}"
    assert all(k["pattern"] is None for k in _kernels(lambda x: x.sum(axis=1), X))
    assert all(k["pattern"] is None for k in _kernels(jnp.sum, X))


@pytest.mark.cpu_backend("XLA:CPU's gather and scatter shapes")
def test_gather_and_scatter() -> None:
    gather = _only(lambda x, i: jnp.take(x, i, axis=0), X, IDX)
    assert (gather["pattern"], gather["pattern_size"]) == ("gather", 4 * 1024)
    assert gather["pattern_detail"] == "f32[4,1,1024] gathered from f32[512,1024]"
    scatter = _only(lambda x, i: x.at[i].add(1.0), X, IDX)
    assert (scatter["pattern"], scatter["pattern_size"]) == ("scatter", 4 * 1024)
    assert scatter["pattern_detail"] == "updates f32[4,1,1024] into f32[512,1024]"


def test_a_kernel_counts_the_elements_each_of_its_reduce_ops_reads() -> None:
    def layer_norm(x: Any) -> Any:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-5)

    kernels = _kernels(layer_norm, X)
    reductions = [k for k in kernels if k["category"] == "reduction"]
    assert reductions
    # Every reduce reads the whole [512, 1024] input, fused into one kernel or not.
    assert sum(k["reduced_elements"] for k in reductions) == 2 * X.size
    assert all(k["reduced_elements"] == 0 for k in kernels if k["category"] != "reduction")


def test_an_argmax_is_a_variadic_reduction() -> None:
    k = _only(lambda x: jnp.argmax(x, axis=1), X)  # values and their indices reduced together
    assert (k["pattern"], k["pattern_size"]) == ("variadic-reduction", 512 * 1024)
    assert k["pattern_detail"] == "2 operands over dimensions (1,) of f32[512,1024]"
    # Along a non-minor axis it is still the variadic loop, not the strided reduction.
    assert _only(lambda x: jnp.argmin(x, axis=0), X)["pattern"] == "variadic-reduction"
    assert all(k["pattern"] is None for k in _kernels(lambda x: x.max(axis=1), X))


@pytest.mark.cpu_backend("XLA:CPU's sorts; a TPU sorts rows with their indices")
def test_sorts_count_their_comparisons() -> None:
    keys = jnp.arange(2048, dtype=jnp.int32)[::-1]
    k = _only(lambda x: jnp.argsort(x, stable=True), keys)
    # 2048 keys: 2048 x log2(2048) = 2048 x 11 comparisons; keys and their indices sorted.
    assert (k["pattern"], k["pattern_size"]) == ("sort", 2048 * 11)
    assert k["pattern_detail"] == "sort of s32[2048] along (0,), 2 operands"
    # Rows sorted apart: each row's length sets the depth (1000 keys: ceil(log2) = 10).
    rows = _only(lambda x: jnp.sort(x, axis=1), jnp.ones((4, 1000), jnp.float32))
    assert (rows["pattern"], rows["pattern_size"]) == ("sort", 4 * 1000 * 10)
    assert rows["pattern_detail"] == "sort of f32[4,1000] along (1,)"


@cpu_only
@pytest.mark.parametrize(
    ("a", "b", "flops"),
    [
        (jnp.ones((4, 4)), jnp.ones((4, 4)), 2 * 4 * 4 * 4),  # small: below 8 x 8
        (jnp.ones((64, 64), jnp.int32), jnp.ones((64, 64), jnp.int32), 2 * 64**3),  # integer
    ],
)
def test_dots_xla_cpu_leaves_as_dot_are_loop_dots(a: Any, b: Any, flops: int) -> None:
    k = _only(lambda a, b: a @ b, a, b)
    assert (k["opcode"], k["pattern"], k["pattern_size"]) == ("dot", "loop-dot", flops)
    assert k["pattern_size"] == k["flops"]


@cpu_only
def test_a_matrix_vector_dot_xla_cpu_leaves_as_dot_is_sized_by_its_matrix() -> None:
    k = _only(lambda a, b: a @ b, jnp.ones((256, 256)), jnp.ones((256,)))
    assert (k["opcode"], k["pattern"], k["pattern_size"], k["pattern_row"]) == \
        ("dot", "mat-vec", 256 * 256, 1)
    assert k["flops"] == 2 * 256 * 256


@cpu_only
def test_library_matmuls_have_no_pattern() -> None:
    for a in (jnp.ones((64, 64)), jnp.ones((8, 32, 32))):
        kernels = _kernels(lambda a: a @ a, a)
        assert [k["kind"] for k in kernels if k["category"] == "matmul"] == ["__ynn_fusion"]
        assert all(k["pattern"] is None for k in kernels)


EDGES = """HloModule patterns

%dot_comp (p0: f32[16,16], p1: f32[16,16]) -> f32[16,16] {
  %p0 = f32[16,16]{1,0} parameter(0)
  %p1 = f32[16,16]{1,0} parameter(1)
  %d = f32[16,16]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %c = f32[] constant(1)
  %bc = f32[16,16]{1,0} broadcast(%c), dimensions={}
  ROOT %a = f32[16,16]{1,0} add(%d, %bc)
}

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

%col_major_sum0 (p: f32[64,32]) -> f32[32] {
  %p = f32[64,32]{0,1} parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[32]{0} reduce(%p, %z), dimensions={0}, to_apply=%add
}

%col_major_sum1 (p: f32[64,32]) -> f32[64] {
  %p = f32[64,32]{0,1} parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[64]{0} reduce(%p, %z), dimensions={1}, to_apply=%add
}

%unit_minor (p: f32[64,1]) -> f32[1] {
  %p = f32[64,1]{1,0} parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[1]{0} reduce(%p, %z), dimensions={0}, to_apply=%add
}

%reshaped (p: f32[8,4,16]) -> f32[16,32] {
  %p = f32[8,4,16]{2,1,0} parameter(0)
  %r = f32[32,16]{1,0} reshape(%p)
  %t = f32[16,32]{0,1} transpose(%r), dimensions={1,0}
  ROOT %c = f32[16,32]{1,0} copy(%t)
}

%layout_only (p: f32[16,32]) -> f32[32,16] {
  %p = f32[16,32]{1,0} parameter(0)
  ROOT %t = f32[32,16]{0,1} transpose(%p), dimensions={1,0}
}

ENTRY %main (a: f32[16,16], m: f32[64,32], u: f32[64,1], c: f32[8,4,16], s: f32[16,32]) -> f32[16,16] {
  %a = f32[16,16]{1,0} parameter(0)
  %m = f32[64,32]{0,1} parameter(1)
  %u = f32[64,1]{1,0} parameter(2)
  %c = f32[8,4,16]{2,1,0} parameter(3)
  %s = f32[16,32]{1,0} parameter(4)
  %loop_dot = f32[16,16]{1,0} fusion(%a, %a), kind=kOutput, calls=%dot_comp
  %library = f32[16,16]{1,0} fusion(%a, %a), kind=kCustom, calls=%dot_comp, backend_config={"fusion_config":{"kind":"__ynn_fusion"}}
  %sum0 = f32[32]{0} fusion(%m), kind=kInput, calls=%col_major_sum0
  %sum1 = f32[64]{0} fusion(%m), kind=kInput, calls=%col_major_sum1
  %unit = f32[1]{0} fusion(%u), kind=kInput, calls=%unit_minor
  %moved = f32[16,32]{1,0} fusion(%c), kind=kLoop, calls=%reshaped
  %relaid = f32[32,16]{0,1} fusion(%s), kind=kLoop, calls=%layout_only
  %copied = f32[16,32]{0,1} copy(%s)
  %same = f32[16,32]{1,0} copy(%s)
  ROOT %t = f32[16,16]{1,0} transpose(%a), dimensions={1,0}
}
"""


def _patterns_of(text: str) -> Callable[[str], tuple[str | None, int, str | None]]:
    """(pattern, size, detail) of an entry instruction of the module ``text``, by name."""
    module = parse_module(text)
    entry = module.entry_computation
    assert entry is not None

    def pattern(name: str) -> tuple[str | None, int, str | None]:
        instr = entry.instruction(name)
        assert instr is not None
        found = kernel_pattern(instr, module)
        return found.name, found.size, found.detail

    return pattern


def test_pattern_edges_by_hand() -> None:
    pattern = _patterns_of(EDGES)

    assert pattern("loop_dot") == ("loop-dot", 2 * 16**3, "dot f32[16,16] x f32[16,16] -> f32[16,16]")
    assert pattern("library") == (None, 0, None)  # a library fusion: no loop emitter
    # Column-major f32[64,32]{0,1}: dimension 0 is the minor-most one.
    assert pattern("sum0") == (None, 0, None)
    assert pattern("sum1") == ("strided-reduction", 64 * 32, "dimensions (1,) of f32[64,32]{0,1}")
    assert pattern("unit") == (None, 0, None)  # the size-1 minor axis does not count
    # A reshape then a transpose: the [8,4] axes come out after the 16.
    assert pattern("moved") == ("transpose", 16 * 32, "axes (2, 0, 1) of f32[8,4,16]")
    # A transpose whose layout keeps the bytes in order moves nothing.
    assert pattern("relaid") == (None, 0, None)
    assert pattern("copied") == ("transpose", 16 * 32, "axes (1, 0) of f32[16,32]")
    assert pattern("same") == (None, 0, None)
    assert pattern("t") == ("transpose", 16 * 16, "axes (1, 0) of f32[16,16]")
    inv = kernel_inventory(EDGES)
    KernelInventory.model_validate(inv)
    assert {k["name"]: k["pattern_size"] for k in inv["kernels"] if k["pattern"] is None} \
        == dict.fromkeys(("library", "sum0", "unit", "relaid", "same"), 0)


@pytest.mark.parametrize(
    ("a", "b", "products"),
    [
        (jnp.ones((64, 64)), jnp.ones((64, 64)), 1),  # a plain product
        (jnp.ones((8, 32, 32)), jnp.ones((8, 32, 32)), 8),  # one batch dimension
        (jnp.ones((2, 3, 16, 8)), jnp.ones((2, 3, 8, 16)), 6),  # two: 2 x 3 products
    ],
)
def test_a_batched_dot_counts_its_products(a: Any, b: Any, products: int) -> None:
    kernels = _kernels(lambda a, b: a @ b, a, b)
    assert [k["matmul_products"] for k in kernels if k["category"] == "matmul"] == [products]
    assert {k["matmul_products"] for k in kernels if k["category"] != "matmul"} <= {1}


def _conv(x: Any, w: Any, stride: int, padding: str, dilation: int = 1) -> Any:
    return jax.lax.conv_general_dilated(x, w, (stride, stride), padding,
                                        rhs_dilation=(dilation, dilation),
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))


@pytest.mark.parametrize(("window", "stride", "padding", "dilation", "tiles"), [
    (8, 8, "VALID", 1, True),   # a vision transformer's patch embedding
    (3, 1, "SAME", 1, False),   # a sliding window, padded
    (3, 1, "VALID", 1, False),  # a sliding window
    (4, 2, "VALID", 1, False),  # windows that overlap
    (2, 2, "VALID", 2, False),  # a dilated filter skips pixels
    (4, 4, "SAME", 1, True),    # stride equal to the window; 16 divides by 4, so no padding
])
def test_a_convolution_whose_windows_tile_its_input_is_a_matrix_product(
        window: int, stride: int, padding: str, dilation: int, tiles: bool) -> None:
    x = jnp.ones((2, 16, 16, 3), jnp.float32)
    w = jnp.ones((window, window, 3, 8), jnp.float32)
    [conv] = [k for k in _kernels(lambda a, b: _conv(a, b, stride, padding, dilation), x, w)
              if any("convolution" in op for op in k["flops_by_op"])]
    flops = sum(v for op, v in conv["flops_by_op"].items() if "convolution" in op)
    assert conv["patch_conv_flops"] == (flops if tiles else 0)
    if tiles:  # the product of (2 * (16 / stride)^2) patches of window^2 * 3 values by 8 filters
        assert flops == 2 * (2 * (16 // stride) ** 2) * (window * window * 3) * 8


@pytest.mark.cpu_backend("XLA:CPU's dot for a 1x1 convolution; a TPU keeps it a convolution")
def test_xla_compiles_a_1x1_convolution_to_a_dot() -> None:
    """The rule the model follows for tiling windows, taken by XLA itself for 1x1 windows."""
    x = jnp.ones((2, 16, 16, 3), jnp.float32)
    [k] = _kernels(lambda a, b: _conv(a, b, 1, "VALID"), x, jnp.ones((1, 1, 3, 8)))
    assert set(k["flops_by_op"]) == {"stablehlo.dot_general"} and k["patch_conv_flops"] == 0


SPECIAL = """HloModule special

%int_dot (p0: s8[64,32], p1: s8[32,16]) -> s32[64,16] {
  %p0 = s8[64,32]{1,0} parameter(0)
  %p1 = s8[32,16]{1,0} parameter(1)
  ROOT %d = s32[64,16]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

%float_dot (p0: f32[64,32], p1: f32[32,16]) -> f32[64,16] {
  %p0 = f32[64,32]{1,0} parameter(0)
  %p1 = f32[32,16]{1,0} parameter(1)
  ROOT %d = f32[64,16]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

%depthwise (x: f32[2,10,10,8], w: f32[3,3,1,8]) -> f32[2,8,8,8] {
  %x = f32[2,10,10,8]{3,2,1,0} parameter(0)
  %w = f32[3,3,1,8]{3,2,1,0} parameter(1)
  ROOT %c = f32[2,8,8,8]{3,2,1,0} convolution(%x, %w), window={size=3x3}, dim_labels=b01f_01io->b01f, feature_group_count=8
}

%greater (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %g = pred[] compare(%a, %b), direction=GT
}

ENTRY %main (a: s8[64,32], b: s8[32,16], f: f32[64,32], g: f32[32,16], x: f32[2,10,10,8], w: f32[3,3,1,8], v: f32[4,1000]) -> f32[4,5] {
  %a = s8[64,32]{1,0} parameter(0)
  %b = s8[32,16]{1,0} parameter(1)
  %f = f32[64,32]{1,0} parameter(2)
  %g = f32[32,16]{1,0} parameter(3)
  %x = f32[2,10,10,8]{3,2,1,0} parameter(4)
  %w = f32[3,3,1,8]{3,2,1,0} parameter(5)
  %v = f32[4,1000]{1,0} parameter(6)
  %quantized = s32[64,16]{1,0} fusion(%a, %b), kind=kCustom, calls=%int_dot, backend_config={"fusion_config":{"kind":"__ynn_fusion"}}
  %plain = f32[64,16]{1,0} fusion(%f, %g), kind=kCustom, calls=%float_dot, backend_config={"fusion_config":{"kind":"__ynn_fusion"}}
  %dw = f32[2,8,8,8]{3,2,1,0} fusion(%x, %w), kind=kCustom, calls=%depthwise, backend_config={"fusion_config":{"kind":"__ynn_fusion"}}
  %topk = (f32[4,5]{1,0}, s32[4,5]{1,0}) custom-call(%v), custom_call_target="TopK", called_computations={%greater}
  %cudnn = (f32[2,8,8,8]{3,2,1,0}, u8[0]{0}) custom-call(%x, %w), window={size=3x3}, dim_labels=b01f_01io->b01f, feature_group_count=8, custom_call_target="__cudnn$convForward"
  %gemm = (s32[64,16]{1,0}, s8[1024]{0}) custom-call(%a, %b), custom_call_target="__cublas$gemm", backend_config={"gemm_backend_config":{"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["0"]}}}
  ROOT %values = f32[4,5]{1,0} get-tuple-element(%topk), index=0
}
"""


def test_integer_products_depthwise_convolutions_and_top_k_by_hand() -> None:
    inv = kernel_inventory(SPECIAL)
    KernelInventory.model_validate(inv)
    by_name = {k["name"]: k for k in inv["kernels"]}
    # The integer type a dot multiplies, from its left operand; none for a float product.
    assert by_name["quantized"]["matmul_dtype"] == "int8"
    assert by_name["plain"]["matmul_dtype"] is None
    assert by_name["quantized"]["pattern"] is None  # a library product: no loop dot
    # A depthwise 3x3 convolution of 8 channels, 2 images of 8 x 8 outputs: each output
    # element sums 3 x 3 taps of its own channel, 2 flops each.
    depthwise = 2 * (2 * 8 * 8 * 8) * 3 * 3
    assert by_name["dw"]["grouped_conv_flops"] == depthwise
    assert sum(by_name["dw"]["flops_by_op"].values()) >= depthwise
    assert by_name["dw"]["patch_conv_flops"] == 0
    # The same depthwise convolution as a cuDNN call (its result first in a tuple).
    assert by_name["cudnn"]["grouped_conv_flops"] == depthwise
    assert all(by_name[n]["grouped_conv_flops"] == 0
               for n in ("quantized", "plain", "topk", "gemm"))
    # Their taps: a 3 x 3 window (from the window attribute) over one feature per group.
    assert by_name["dw"]["grouped_conv_taps"] == by_name["cudnn"]["grouped_conv_taps"] == 9
    assert all(by_name[n]["grouped_conv_taps"] == 0 for n in ("quantized", "plain", "topk"))
    # A cuBLAS gemm of int8 operands (its dot in the backend config).
    assert by_name["gemm"]["matmul_dtype"] == "int8"
    # The TopK custom call: the elements it searches.
    topk = by_name["topk"]
    assert (topk["pattern"], topk["pattern_size"]) == ("top-k", 4 * 1000)
    assert topk["pattern_detail"] == "f32[4,5] of f32[4,1000]"
    # XLA's GPU backend names its TopK call __gpu$TopK: the same pattern
    gpu = {k["name"]: k for k in kernel_inventory(
        SPECIAL.replace('custom_call_target="TopK"', 'custom_call_target="__gpu$TopK"'))
        ["kernels"]}
    assert (gpu["topk"]["pattern"], gpu["topk"]["pattern_size"]) == ("top-k", 4 * 1000)


@cpu_only
def test_compiled_integer_products_depthwise_convolutions_and_top_k() -> None:
    a = jnp.ones((64, 64), jnp.int8)
    [k] = _kernels(lambda x, y: jax.lax.dot(x, y, preferred_element_type=jnp.int32), a, a)
    assert k["matmul_dtype"] == "int8" and k["kind"] == "__ynn_fusion"
    [k] = _kernels(lambda x, y: x @ y, jnp.ones((64, 64)), jnp.ones((64, 64)))
    assert k["matmul_dtype"] is None
    x, w = jnp.ones((2, 12, 12, 16)), jnp.ones((5, 5, 1, 16))
    [k] = [k for k in _kernels(lambda x, w: jax.lax.conv_general_dilated(
        x, w, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"),
        feature_group_count=16), x, w) if k["category"] == "matmul"]
    assert k["grouped_conv_flops"] == 2 * (2 * 8 * 8 * 16) * 5 * 5
    assert k["grouped_conv_taps"] == 25
    # Groups of 4 features (16 features in 4 groups) with a 3-wide 1-D window: 12 taps.
    x1, w1 = jnp.ones((2, 32, 16)), jnp.ones((3, 4, 16))
    [k] = [k for k in _kernels(lambda x, w: jax.lax.conv_general_dilated(
        x, w, (1,), "VALID", dimension_numbers=("NWC", "WIO", "NWC"),
        feature_group_count=4), x1, w1) if k["grouped_conv_flops"]]
    assert k["grouped_conv_taps"] == 12
    [k] = [k for k in _kernels(lambda v: jax.lax.top_k(v, 8), jnp.ones((32, 512)))
           if k["pattern"] is not None]
    assert (k["pattern"], k["pattern_size"]) == ("top-k", 32 * 512)
    # A 2-D FFT of c64[4, 32, 64]: XLA's 8 flops per element per log2 of each length.
    [k] = [k for k in _kernels(jnp.fft.fft2, jnp.ones((4, 32, 64), jnp.complex64))
           if k["pattern"] is not None]
    assert (k["pattern"], k["pattern_size"]) == ("fft", 8 * 5 * 6 * 4 * 32 * 64)
    assert k["pattern_detail"] == "FFT of c64[4,32,64], lengths (32, 64)"


FUSED = """HloModule fused

%gradient (p0: f32[2,128,2048], p1: f32[2,128], p2: f32[2048,256]) -> f32[2,128,2048] {
  %p2 = f32[2048,256]{1,0} parameter(2)
  %t = f32[256,2048]{0,1} transpose(%p2), dimensions={1,0}
  %c = f32[256,2048]{1,0} copy(%t)
  %b = f32[2,128,2048]{2,1,0} bitcast(%c)
  %p1 = f32[2,128]{1,0} parameter(1)
  %bc = f32[2,128,2048]{2,1,0} broadcast(%p1), dimensions={0,1}
  %p0 = f32[2,128,2048]{2,1,0} parameter(0)
  %m = f32[2,128,2048]{2,1,0} multiply(%bc, %p0)
  ROOT %a = f32[2,128,2048]{2,1,0} add(%m, %b)
}

%in_order (p0: f32[256,2048], p1: f32[256,2048]) -> f32[256,2048] {
  %p0 = f32[256,2048]{1,0} parameter(0)
  %p1 = f32[256,2048]{1,0} parameter(1)
  %c = f32[256,2048]{1,0} copy(%p1)
  ROOT %m = f32[256,2048]{1,0} multiply(%p0, %c)
}

%split (p: f32[2048,256]) -> f32[2,128,2048] {
  %p = f32[2048,256]{1,0} parameter(0)
  %t = f32[256,2048]{0,1} transpose(%p), dimensions={1,0}
  %c = f32[256,2048]{1,0} copy(%t)
  ROOT %b = f32[2,128,2048]{2,1,0} bitcast(%c)
}

%split_in_order (p: f32[256,2048]) -> f32[2,128,2048] {
  %p = f32[256,2048]{1,0} parameter(0)
  %c = f32[256,2048]{1,0} copy(%p)
  ROOT %b = f32[2,128,2048]{2,1,0} bitcast(%c)
}

ENTRY %main (x: f32[2,128,2048], s: f32[2,128], g: f32[2048,256], h: f32[256,2048]) -> f32[2,128,2048] {
  %x = f32[2,128,2048]{2,1,0} parameter(0)
  %s = f32[2,128]{1,0} parameter(1)
  %g = f32[2048,256]{1,0} parameter(2)
  %h = f32[256,2048]{1,0} parameter(3)
  %plain = f32[256,2048]{1,0} fusion(%h, %h), kind=kLoop, calls=%in_order
  %moved = f32[2,128,2048]{2,1,0} fusion(%g), kind=kLoop, calls=%split
  %kept = f32[2,128,2048]{2,1,0} fusion(%h), kind=kLoop, calls=%split_in_order
  ROOT %grad = f32[2,128,2048]{2,1,0} fusion(%x, %s, %g), kind=kLoop, calls=%gradient
}
"""


def test_transposes_through_split_axes_and_fused_into_other_work_by_hand() -> None:
    pattern = _patterns_of(FUSED)

    # A log-softmax gradient fused with the [2048,256] -> [256,2048] -> [2,128,2048] transpose
    # of its incoming gradient: the source's axes come out swapped, across a split axis; the
    # broadcast of its row sums in the same loop makes it a broadcast-transpose.
    assert pattern("grad") == ("broadcast-transpose", 2 * 128 * 2048,
                               "axes (1, 0) of f32[2048,256] into add")
    # The transposing copy alone, its 256 rows split into [2, 128] by the bitcast.
    assert pattern("moved") == ("transpose", 2 * 128 * 2048, "axes (1, 0) of f32[2048,256]")
    # Copies that keep the order move nothing, split or not.
    assert pattern("plain") == (None, 0, None)
    assert pattern("kept") == (None, 0, None)
    KernelInventory.model_validate(kernel_inventory(FUSED))


@cpu_only
def test_compiled_transposes_fused_into_other_work() -> None:
    a, b = jnp.ones((256, 2048)), jnp.ones((2048, 256))
    [k] = _kernels(lambda x, y: x.T * y, a, b)
    assert (k["pattern"], k["pattern_size"]) == ("fused-transpose", 2048 * 256)
    assert k["category"] == "elementwise"
    # A product without the swap: one operation alone in its kernel, no transpose.
    assert [k["pattern"] for k in _kernels(lambda x, y: x * y, a, a)] == ["lone-op"]


@pytest.mark.cpu_backend("XLA:CPU's row-major layouts, a TPU's tiles aside")
def test_a_gathers_row_is_its_slices_contiguous_run() -> None:
    """jnp.take of rows of 128: runs of 128; the framing of 8 channels by a column index
    (an audio front end's: slices {8, 1} of [8, 4096]): eight single elements per index,
    each a row apart, so a row of 1, not 8."""
    table = jnp.ones((1024, 128), jnp.float32)
    index = jnp.arange(64, dtype=jnp.int32) * 3
    rows = _only(lambda t, i: jnp.take(t, i, axis=0), table, index)
    assert (rows["pattern"], rows["pattern_row"]) == ("gather", 128)
    signal = jnp.ones((8, 4096), jnp.float32)
    frames = _only(lambda s, i: s[:, i], signal, index)
    assert (frames["pattern"], frames["pattern_size"]) == ("gather", 8 * 64)
    assert frames["pattern_row"] == 1


@pytest.mark.cpu_backend("a TPU keeps a scatter's window elements (it stores arrays in tiles)")
def test_a_scatters_row_is_its_windows_contiguous_run() -> None:
    """An embedding gradient's scatter-add of rows of 64: runs of 64; the gradient of a
    pairwise interaction's upper triangle (DLRM's: x[:, i, j] of [512, 27, 27]), a window of
    one element in each of 512 rows per index: single elements 729 apart, a row of 1."""
    table = jnp.zeros((1024, 64), jnp.float32)
    index = jnp.arange(96, dtype=jnp.int32) * 5

    def scatter(fn: Any, *args: Any) -> dict[str, Any]:
        [kernel] = [k for k in _kernels(fn, *args) if k["pattern"] == "scatter"]
        return kernel

    rows = scatter(lambda t, i, u: t.at[i].add(u), table, index, jnp.ones((96, 64)))
    assert rows["pattern_row"] == 64
    upper = jnp.triu_indices(27, 1)
    pairs = scatter(lambda t, u: t.at[:, upper[0], upper[1]].add(u),
                    jnp.zeros((512, 27, 27), jnp.float32), jnp.ones((512, 351), jnp.float32))
    assert (pairs["pattern_size"], pairs["pattern_row"]) == (512 * 351, 1)


def _layer_norm(x: jax.Array) -> jax.Array:
    mean = x.mean(-1, keepdims=True)
    var = jnp.square(x - mean).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-6)


@pytest.mark.cpu_backend("XLA:CPU's library fusions")
def test_a_layer_norm_of_short_rows_in_one_library_kernel_is_a_normalization() -> None:
    """XLA:CPU fuses a layer norm of rows of 64 whole into one library kernel (mean, variance
    about it, normalized rows): a normalization of its input's elements by its rows. A single
    row reduction, or a layer norm of long rows split into several kernels, is none."""
    k = _only(_layer_norm, jnp.ones((4096, 64), jnp.float32))
    assert (k["pattern"], k["pattern_size"], k["pattern_row"]) == \
        ("normalization", 4096 * 64, 64)
    assert k["kind"] == "__ynn_fusion"
    assert k["pattern_detail"] == "rows of 64 of f32[4096,64], 2 reductions"
    assert all(k["pattern"] != "normalization"
               for k in _kernels(lambda x: x.sum(-1), jnp.ones((4096, 64), jnp.float32)))
    assert all(k["pattern"] != "normalization"
               for k in _kernels(_layer_norm, jnp.ones((1024, 1024), jnp.float32)))
    # Fused whole over rows of 1,024 (a softmax's maximum, then its sum of exponentials about
    # it): long rows run at the rates of the kernel's own terms, no normalization.
    [whole] = [k for k in _kernels(lambda x: jax.nn.softmax(x, axis=-1),
                                   jnp.ones((4096, 1024), jnp.float32))
               if k["kind"] == "__ynn_fusion"]
    assert whole["ops"]["reduce"] == 2 and whole["pattern"] is None
    short = _only(lambda x: jax.nn.softmax(x, axis=-1), jnp.ones((4096, 64), jnp.float32))
    assert (short["pattern"], short["pattern_row"]) == ("normalization", 64)


@pytest.mark.cpu_backend("XLA:CPU's wrapped conversions; a TPU's stream at its memory's rate")
def test_a_conversion_alone_in_its_kernel_is_a_lone_convert() -> None:
    """A bfloat16 product: XLA:CPU converts each operand to float32 in a kernel of its own
    (wrapped_convert) and its product back after: three lone conversions; a conversion fused
    with a multiply is not one."""
    a = jnp.ones((64, 32), jnp.bfloat16)
    found = {k["name"]: k for k in _kernels(lambda x, y: x @ y.T, a, a)}
    lone = [k for k in found.values() if k["pattern"] == "lone-convert"]
    assert len(lone) >= 2
    assert {k["pattern_size"] for k in lone} <= {64 * 32, 64 * 64}
    assert any(k["pattern_detail"] == "bf16[64,32] to f32[64,32]" for k in lone)
    fused = _kernels(lambda x: (x.astype(jnp.float32) * 2).astype(jnp.bfloat16), a)
    assert all(k["pattern"] != "lone-convert" for k in fused)


@pytest.mark.cpu_backend("XLA:CPU's wrapped single operations")
def test_one_arithmetic_operation_alone_in_its_kernel_is_a_lone_op() -> None:
    """A sum, a maximum, a negation alone in their kernels (XLA:CPU's wrapped_add, ...) are
    lone operations of their result's elements; the same add fused with a product, an
    exponential fused with one, and a conversion alone are not."""
    a = jnp.ones((96, 128), jnp.float32)
    for f in (lambda x, y: x + y, lambda x, y: jnp.maximum(x, y), lambda x, y: -x):
        k = _only(f, a, a)
        assert (k["pattern"], k["pattern_size"]) == ("lone-op", 96 * 128), k["name"]
    assert _only(lambda x, y: x + y, a, a)["pattern_detail"] == "add of f32[96,128]"
    for f in (lambda x, y: x * 2 + y, lambda x, y: jnp.exp(x) * 2,
              lambda x, y: x.astype(jnp.bfloat16)):
        assert all(k["pattern"] != "lone-op" for k in _kernels(f, a, a))
