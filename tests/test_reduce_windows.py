# ruff: noqa: E501
"""A CPU's windowed reductions outside its library (``reduce-window`` and ``sum-window``): how the
inventory labels and sizes them (hand-written HLO in the forms an Equinox CNN's step compiled
to, and programs XLA:CPU compiles here), the roofs the ceilings plan for them, and how the
model prices a kernel with and without them."""

from __future__ import annotations

import math
from typing import Any

import pytest

from roofline_report.analysis import patterns
from roofline_report.analysis.roofs import ComputeRoof, RateRoof, RoofSet
from roofline_report.hlo.ir import Instruction, parse_module
from roofline_report.hlo.kernel_patterns import sums, window_elements
from roofline_report.hlo.kernels import kernel_inventory
from roofline_report.hlo.taps import window_dims
from roofline_report.kinds import Kind
from roofline_report.results.schema import KernelInventory
from tests.kernel_records import kernel_record
from tests.test_cpu_kinds import _pattern as pattern_in

# The CNN's two max pools' gradients, as XLA:CPU expands them: a window of the values and one
# iota of indices per dimension (an Equinox pool's [64, 1, 32, 32, 32]: 6 arrays), keeping
# the larger value and its indices; a mean's partial sums; a cumulative sum's windows of 16;
# ResNet's stem pool; an average pool's gradient written with a base dilation; a pool the
# library runs; a log-softmax's maximum as a TPU writes it, spanning its row.
WINDOWS = """HloModule windows

%choose (v: f32[], i0: s32[], i1: s32[], i2: s32[], i3: s32[], i4: s32[], w: f32[], j0: s32[], j1: s32[], j2: s32[], j3: s32[], j4: s32[]) -> (f32[], s32[], s32[], s32[], s32[], s32[]) {
  %none = s32[] constant(-1)
  %v = f32[] parameter(0)
  %i0 = s32[] parameter(1)
  %i1 = s32[] parameter(2)
  %i2 = s32[] parameter(3)
  %i3 = s32[] parameter(4)
  %i4 = s32[] parameter(5)
  %w = f32[] parameter(6)
  %j0 = s32[] parameter(7)
  %j1 = s32[] parameter(8)
  %j2 = s32[] parameter(9)
  %j3 = s32[] parameter(10)
  %j4 = s32[] parameter(11)
  %set = pred[] compare(%i0, %none), direction=NE
  %other = pred[] compare(%j0, %none), direction=NE
  %ge = pred[] compare(%v, %w), direction=GE
  %unset = pred[] not(%other)
  %both = pred[] and(%ge, %set)
  %take = pred[] or(%both, %unset)
  %s = f32[] select(%take, %v, %w)
  %s0 = s32[] select(%take, %i0, %j0)
  %s1 = s32[] select(%take, %i1, %j1)
  %s2 = s32[] select(%take, %i2, %j2)
  %s3 = s32[] select(%take, %i3, %j3)
  %s4 = s32[] select(%take, %i4, %j4)
  ROOT %t = (f32[], s32[], s32[], s32[], s32[], s32[]) tuple(%s, %s0, %s1, %s2, %s3, %s4)
}

%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%pool_grad_window (v: f32[64,1,32,32,32], i0: s32[64,1,32,32,32], i1: s32[64,1,32,32,32], i2: s32[64,1,32,32,32], i3: s32[64,1,32,32,32], i4: s32[64,1,32,32,32], low: f32[], none: s32[]) -> (f32[64,1,16,16,32], s32[64,1,16,16,32], s32[64,1,16,16,32], s32[64,1,16,16,32], s32[64,1,16,16,32], s32[64,1,16,16,32]) {
  %v = f32[64,1,32,32,32]{4,3,2,1,0} parameter(0)
  %i0 = s32[64,1,32,32,32]{4,3,2,1,0} parameter(1)
  %i1 = s32[64,1,32,32,32]{4,3,2,1,0} parameter(2)
  %i2 = s32[64,1,32,32,32]{4,3,2,1,0} parameter(3)
  %i3 = s32[64,1,32,32,32]{4,3,2,1,0} parameter(4)
  %i4 = s32[64,1,32,32,32]{4,3,2,1,0} parameter(5)
  %low = f32[] parameter(6)
  %none = s32[] parameter(7)
  ROOT %rw = (f32[64,1,16,16,32]{4,3,2,1,0}, s32[64,1,16,16,32]{4,3,2,1,0}, s32[64,1,16,16,32]{4,3,2,1,0}, s32[64,1,16,16,32]{4,3,2,1,0}, s32[64,1,16,16,32]{4,3,2,1,0}, s32[64,1,16,16,32]{4,3,2,1,0}) reduce-window(%v, %i0, %i1, %i2, %i3, %i4, %low, %none, %none, %none, %none, %none), window={size=1x1x2x2x1 stride=1x1x2x2x1}, to_apply=%choose
}

%partial_sums_window (p: f32[64,10], z: f32[]) -> f32[2,10] {
  %p = f32[64,10]{1,0} parameter(0)
  %z = f32[] parameter(1)
  ROOT %rw = f32[2,10]{1,0} reduce-window(%p, %z), window={size=32x1 stride=32x1}, to_apply=%add
}

%prefix_window (p: f32[512,32,16], z: f32[]) -> f32[512,32,16] {
  %p = f32[512,32,16]{2,1,0} parameter(0)
  %z = f32[] parameter(1)
  ROOT %rw = f32[512,32,16]{2,1,0} reduce-window(%p, %z), window={size=1x1x16 pad=0_0x0_0x15_0}, to_apply=%add
}

%stem_pool_window (p: f32[2,32,32,4], z: f32[]) -> f32[2,16,16,4] {
  %p = f32[2,32,32,4]{3,2,1,0} parameter(0)
  %z = f32[] parameter(1)
  ROOT %rw = f32[2,16,16,4]{3,2,1,0} reduce-window(%p, %z), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x0_1x0_1x0_0}, to_apply=%max
}

%dilated_window (p: f32[2,8,8,4], z: f32[]) -> f32[2,16,16,4] {
  %p = f32[2,8,8,4]{3,2,1,0} parameter(0)
  %z = f32[] parameter(1)
  ROOT %rw = f32[2,16,16,4]{3,2,1,0} reduce-window(%p, %z), window={size=1x2x2x1 pad=0_0x1_1x1_1x0_0 lhs_dilate=1x2x2x1}, to_apply=%add
}

%library_pool (p: f32[64,32,32,32], z: f32[]) -> f32[64,16,16,32] {
  %p = f32[64,32,32,32]{3,2,1,0} parameter(0)
  %z = f32[] parameter(1)
  ROOT %rw = f32[64,16,16,32]{3,2,1,0} reduce-window(%p, %z), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=%max
}

%row_window (p: f32[4,512,1024], z: f32[]) -> f32[4,512,1024] {
  %p = f32[4,512,1024]{2,1,0} parameter(0)
  %z = f32[] parameter(1)
  ROOT %rw = f32[4,512,1024]{2,1,0} reduce-window(%p, %z), window={size=1x1x2047 pad=0_0x0_0x1023_1023}, to_apply=%max
}

ENTRY %main (v: f32[64,1,32,32,32], i0: s32[64,1,32,32,32], i1: s32[64,1,32,32,32], i2: s32[64,1,32,32,32], i3: s32[64,1,32,32,32], i4: s32[64,1,32,32,32], g: f32[64,10], c: f32[512,32,16], x: f32[2,32,32,4], d: f32[2,8,8,4], y: f32[64,32,32,32], r: f32[4,512,1024]) -> f32[2,10] {
  %v = f32[64,1,32,32,32]{4,3,2,1,0} parameter(0)
  %i0 = s32[64,1,32,32,32]{4,3,2,1,0} parameter(1)
  %i1 = s32[64,1,32,32,32]{4,3,2,1,0} parameter(2)
  %i2 = s32[64,1,32,32,32]{4,3,2,1,0} parameter(3)
  %i3 = s32[64,1,32,32,32]{4,3,2,1,0} parameter(4)
  %i4 = s32[64,1,32,32,32]{4,3,2,1,0} parameter(5)
  %g = f32[64,10]{1,0} parameter(6)
  %c = f32[512,32,16]{2,1,0} parameter(7)
  %x = f32[2,32,32,4]{3,2,1,0} parameter(8)
  %d = f32[2,8,8,4]{3,2,1,0} parameter(9)
  %y = f32[64,32,32,32]{3,2,1,0} parameter(10)
  %r = f32[4,512,1024]{2,1,0} parameter(11)
  %low = f32[] constant(-inf)
  %zero = f32[] constant(0)
  %none = s32[] constant(-1)
  %pool_grad = (f32[64,1,16,16,32]{4,3,2,1,0}, s32[64,1,16,16,32]{4,3,2,1,0}, s32[64,1,16,16,32]{4,3,2,1,0}, s32[64,1,16,16,32]{4,3,2,1,0}, s32[64,1,16,16,32]{4,3,2,1,0}, s32[64,1,16,16,32]{4,3,2,1,0}) fusion(%v, %i0, %i1, %i2, %i3, %i4, %low, %none), kind=kLoop, calls=%pool_grad_window, backend_config={"outer_dimension_partitions":["2"]}
  %partial_sums = f32[2,10]{1,0} fusion(%g, %zero), kind=kLoop, calls=%partial_sums_window
  %prefix = f32[512,32,16]{2,1,0} fusion(%c, %zero), kind=kLoop, calls=%prefix_window
  %stem_pool = f32[2,16,16,4]{3,2,1,0} fusion(%x, %low), kind=kLoop, calls=%stem_pool_window
  %dilated = f32[2,16,16,4]{3,2,1,0} fusion(%d, %zero), kind=kLoop, calls=%dilated_window
  %library = f32[64,16,16,32]{3,2,1,0} fusion(%y, %low), kind=kCustom, calls=%library_pool, backend_config={"fusion_config":{"kind":"__ynn_fusion"},"outer_dimension_partitions":[]}
  %row = f32[4,512,1024]{2,1,0} fusion(%r, %low), kind=kLoop, calls=%row_window
  ROOT %out = f32[2,10]{1,0} copy(%partial_sums)
}
"""


def _pattern(name: str, backend: str | None = None) -> tuple[str | None, int, int]:
    return pattern_in(WINDOWS, name, backend)


def _window(name: str) -> Instruction:
    """The reduce-window of the kernel ``name`` (the root of its computation)."""
    root = parse_module(WINDOWS).computations[f"{name}_window"].root
    assert root is not None and root.opcode == "reduce-window"
    return root


def _counted_by_hand(window: Instruction) -> int:
    """Every (output, window position) pair whose position lands on an element of the
    operand (not on padding, not between base-dilated elements), counted one by one."""
    source = window.operand_shapes[0]
    assert source is not None and source.array is not None
    result = window.shape.array if window.shape.array is not None else \
        window.shape.elements[0].array
    assert result is not None
    total = 1
    for d, (size, stride, pad, base, dilation) in enumerate(
            window_dims(window.attributes["window"], len(source.array.dims))):
        last = (source.array.dims[d] - 1) * base
        total *= sum(1 for o in range(result.dims[d]) for k in range(size)
                     if 0 <= (t := o * stride + k * dilation - pad) <= last and t % base == 0)
    return total


def test_a_max_pools_gradient_window_counts_its_window_elements_times_its_arrays() -> None:
    # The CNN's first pool: 64 x 16 x 16 x 32 outputs of 2 x 2 windows, 6 arrays.
    assert _pattern("pool_grad") == ("reduce-window", 64 * 16 * 16 * 32 * 4 * 6, 6)
    inv = kernel_inventory(WINDOWS)
    KernelInventory.model_validate(inv)
    [record] = [k for k in inv["kernels"] if k["name"] == "pool_grad"]
    assert record["pattern_detail"] == \
        "window size=1x1x2x2x1 stride=1x1x2x2x1 of f32[64,1,32,32,32], 6 arrays"
    # ResNet's stem pool, SAME-padded: a plain window, row 1, the padding left out: 15 of
    # 16 outputs along each side see 3 elements, the last 2 (47 a side).
    assert _pattern("stem_pool") == ("reduce-window", 2 * 4 * 47 * 47, 1)


def test_a_window_that_adds_is_a_sum_window_of_its_elements_on_the_input() -> None:
    # A mean's partial sums: 640 elements, a few hundred nanoseconds at any window rate.
    assert _pattern("partial_sums") == ("sum-window", 640, 0)
    # A cumulative sum's blocks of 16: 1 + 2 + ... + 16 = 136 elements each, not 256.
    assert _pattern("prefix") == ("sum-window", 512 * 32 * 136, 0)
    # An average pool's gradient over a base-dilated input: the holes are no elements.
    name, size, _ = _pattern("dilated")
    assert name == "sum-window" and size == _counted_by_hand(_window("dilated")) == 2 * 4 * 16 * 16
    module = parse_module(WINDOWS)
    assert sums(_window("prefix"), module) and not sums(_window("stem_pool"), module)
    assert not sums(_window("pool_grad"), module)


@pytest.mark.parametrize("name", ["pool_grad", "partial_sums", "prefix", "stem_pool", "dilated",
                                  "row"])
def test_window_elements_by_hand(name: str) -> None:
    window = _window(name)
    assert window_elements(window) == _counted_by_hand(window)


def test_a_librarys_pool_a_tpus_windows_and_a_whole_row_are_not_these_windows() -> None:
    assert _pattern("library") == (None, 0, 0)  # XLA:CPU's library runs it
    # A TPU's kernels keep their own patterns: a window spanning its row is its
    # reduce-window-lane, a pool's gradient none of these.
    assert _pattern("row", "tpu")[0] == "reduce-window-lane"
    assert _pattern("pool_grad", "tpu")[0] is None
    assert _pattern("prefix", "tpu")[0] is None
    # On a CPU a window spanning its whole row is not one of them either.
    assert _pattern("row")[0] is None


# ------------------------------------------------------------------------------ compiled

def _window_kernels(fn: Any, *args: Any) -> list[dict[str, Any]]:
    import jax

    inv = kernel_inventory(jax.jit(fn).lower(*args).compile().as_text())
    KernelInventory.model_validate(inv)
    return [k for k in inv["kernels"] if "reduce-window" in k["ops"]]


@pytest.mark.cpu_backend("XLA:CPU's pools: its library's, its loop emitter's, and how it "
                         "expands a max pool's gradient")
def test_compiled_pools_and_their_gradients() -> None:
    jax = pytest.importorskip("jax")
    jnp, lax = jax.numpy, jax.lax
    x = jnp.ones((2, 8, 8, 4), jnp.float32)

    def max_pool(a: Any) -> Any:  # flax's max_pool, NHWC
        return lax.reduce_window(a, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    def avg_pool(a: Any) -> Any:
        return lax.reduce_window(a, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4

    # The pools themselves go to the library once they are of some size (here 16 K
    # elements): no window of the loop emitter; smaller, they stay plain windows.
    larger = jnp.ones((2, 16, 16, 32), jnp.float32)
    for pool, small in ((max_pool, ("reduce-window", x.size, 1)),
                        (avg_pool, ("sum-window", x.size, 0))):
        found = _window_kernels(pool, larger)
        assert found and all(k["pattern"] is None and k["kind"] == "__ynn_fusion"
                             for k in found)
        [plain] = _window_kernels(pool, x)
        assert (plain["pattern"], plain["pattern_size"], plain["pattern_row"]) == small
    # The max pool's gradient: the values and the indices of the 4 dimensions, each 2 x 2
    # window visiting every input element once.
    [grad] = _window_kernels(jax.grad(lambda a: max_pool(a).sum()), x)
    assert (grad["pattern"], grad["pattern_size"], grad["pattern_row"]) == \
        ("reduce-window", 5 * x.size, 5)
    # An Equinox pool's 5 dimensions ([N, 1, H, W, C] under vmap): 6 arrays.
    five = jnp.ones((2, 1, 8, 8, 4), jnp.float32)
    [eqx] = _window_kernels(jax.grad(lambda a: lax.reduce_window(
        a, -jnp.inf, lax.max, (1, 1, 2, 2, 1), (1, 1, 2, 2, 1), "VALID").sum()), five)
    assert (eqx["pattern"], eqx["pattern_size"], eqx["pattern_row"]) == \
        ("reduce-window", 6 * five.size, 6)
    # The average pool's gradient sums 2 x 2 windows of stride 1 over the cotangent, padded
    # and dilated by a kernel before it (its zeros are elements here): 4 for each output.
    [avg] = _window_kernels(jax.grad(lambda a: avg_pool(a).sum()), x)
    assert avg["pattern"] == "sum-window" and avg["pattern_size"] == 4 * x.size
    # ResNet's stem pool stays in the loop emitter, a plain window.
    [stem] = _window_kernels(lambda a: lax.reduce_window(
        a, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME"), x)
    assert (stem["pattern"], stem["pattern_size"], stem["pattern_row"]) == \
        ("reduce-window", 2 * 4 * 11 * 11, 1)


@pytest.mark.cpu_backend("XLA:CPU's rewrites of sums and cumulative sums into windows")
def test_compiled_sums_and_cumulative_sums_are_sum_windows() -> None:
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    # A column sum of [64, 10]: partial sums over windows of 32, then their sum.
    [partial] = _window_kernels(lambda a: a.sum(0), jnp.ones((64, 10), jnp.float32))
    assert (partial["pattern"], partial["pattern_size"]) == ("sum-window", 640)
    # A cumulative sum along rows of 512: blocks of 16 (136 elements each), then sums of
    # the blocks' totals.
    found = _window_kernels(lambda a: jnp.cumsum(a, axis=-1), jnp.ones((64, 512), jnp.float32))
    assert {k["pattern"] for k in found} == {"sum-window"}
    assert max(k["pattern_size"] for k in found) == 64 * 32 * 136
    # A cumulative maximum keeps the larger: its windows are reduce-windows.
    found = _window_kernels(lambda a: jax.lax.cummax(a, axis=1),
                            jnp.ones((64, 512), jnp.float32))
    assert {k["pattern"] for k in found} == {"reduce-window"}


# ------------------------------------------------------------------------------ the plan and the check


def test_a_cpu_measures_the_windows_by_their_arrays_and_an_accelerator_none() -> None:
    from roofline_report.observe.ceilings import pattern_plans
    from roofline_report.observe.ceilings.pattern_programs import POOL_ARRAYS

    for quick in (False, True):
        plan = pattern_plans.pattern_plan("cpu", quick=quick)
        found = [k for k in pattern_plans.kernels(plan)
                 if k.pattern in ("reduce-window", "sum-window")]
        assert sorted((k.pattern, k.row) for k in found) == [
            ("reduce-window", 1), ("reduce-window", POOL_ARRAYS), ("sum-window", 0)]
        assert all(k.roof and k.dtype == "float32" for k in found)
        if quick:  # one size each, the largest: well under a second
            assert all(k.sizes == plan.sizes[-1:] for k in found)
        else:  # pools of one image or more: no size repeats another's point
            pools = [k for k in found if k.pattern == "reduce-window"]
            assert all(len(k.sizes) > 1 and k.sizes[0] == 32 * 32 * 32 for k in pools)
        for backend in ("tpu", "gpu"):
            other = pattern_plans.kernels(pattern_plans.pattern_plan(backend, quick=quick))
            assert not {"reduce-window", "sum-window"} & {k.pattern for k in other}


@pytest.mark.cpu_backend("XLA:CPU's library pools and its loop emitter's windows")
def test_the_check_finds_a_window_of_the_loop_emitter_not_the_librarys() -> None:
    jax = pytest.importorskip("jax")
    jnp, lax = jax.numpy, jax.lax
    from roofline_report.observe.ceilings.pattern_check import pattern_kernel

    def text(fn: Any, *args: Any) -> str:
        return str(jax.jit(fn).lower(*args).compile().as_text())

    x = jnp.ones((2, 16, 16, 32), jnp.float32)
    pool = text(lambda a: lax.reduce_window(a, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                                            "VALID"), x)
    name, described = pattern_kernel(pool, "reduce-window")
    assert name is None and "ynn" in described
    stem = text(lambda a: lax.reduce_window(a, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1),
                                            "SAME"), x)
    assert pattern_kernel(stem, "reduce-window")[0] is not None
    assert pattern_kernel(stem, "sum-window")[0] is None
    cumsum = text(lambda a: jnp.cumsum(a, axis=-1), jnp.ones((64, 512), jnp.float32))
    assert pattern_kernel(cumsum, "sum-window")[0] is not None
    assert pattern_kernel(cumsum, "reduce-window")[0] is None


# ------------------------------------------------------------------------------ pricing


def _rate(op: str, points: tuple[tuple[float, float], ...], row: int = 0) -> RateRoof:
    return RateRoof(f"{op} {row}", op, "float32", max(r for _, r in points), Kind.MEASURED,
                    "test", by_size=points, row=row)


WINDOW_ROOFS = (
    _rate("reduce-window", ((1e5, 2e9), (1e7, 4e9)), row=1),
    _rate("reduce-window", ((1e5, 1.8e9), (1e6, 1.6e9)), row=5),
    _rate("sum-window", ((1e5, 7e9), (1e7, 12e9))),
)
COMPUTE = (ComputeRoof("matmul", 100e9, "float32", Kind.MEASURED, "test"),)


def _roofs(*rates: RateRoof) -> RoofSet:
    from roofline_report.analysis.roofs import BandwidthRoof

    return RoofSet("test", Kind.MEASURED, COMPUTE,
                   (BandwidthRoof("L3 read-write", 200e9, "L3", Kind.MEASURED, "test"),),
                   (), rates)


def _kernel(pattern: str, size: float, row: int = 0) -> dict[str, Any]:
    # the CNN's second pool's gradient: 25 MB read, 6 MB written
    return {"name": "wrapped_reduce-window.1", "category": "reduction", "pattern": pattern,
            "pattern_size": size, "pattern_row": row, "bytes_read": 25165832,
            "bytes_written": 6291456, "read_by_dtype": {"f32": 4194312, "s32": 20971520},
            "written_by_dtype": {"f32": 1048576, "s32": 5242880}}


def test_a_window_takes_the_roof_measured_on_the_arrays_nearest_its_own() -> None:
    roofs = _roofs(*WINDOW_ROOFS)
    # 6 arrays: the max pool's gradient's roof of 5 (an integer-heavy kernel: no int32 roof,
    # the float32 one), 1.6 G elements/s at 1e6 and beyond.
    six = patterns.pattern_time(kernel_record(_kernel("reduce-window", 6291456, 6)),
                                "float32", roofs)
    assert six is not None and six.roof == "reduce-window 5"
    assert six.seconds == pytest.approx(6291456 / 1.6e9)
    # 2 arrays: nearer 1 than 5 in log; 3: nearer 5.
    two = patterns.pattern_roof(kernel_record(_kernel("reduce-window", 1e6, 2)), "float32",
                                roofs)
    three = patterns.pattern_roof(kernel_record(_kernel("reduce-window", 1e6, 3)), "float32",
                                  roofs)
    assert two is not None and two.row == 1 and three is not None and three.row == 5
    # A plain window at 1e6: halfway in log between 1e5 and 1e7, 3 G elements/s.
    plain = patterns.pattern_time(kernel_record(_kernel("reduce-window", 1e6, 1)), "float32",
                                  roofs)
    assert plain is not None and plain.rate == pytest.approx(3e9)
    # A sum's window at its own roof, whatever its row.
    summed = patterns.pattern_time(kernel_record(_kernel("sum-window", 1e7)), "float32", roofs)
    assert summed is not None and summed.seconds == pytest.approx(1e7 / 12e9)
    assert summed.unit == "elements"


def test_without_the_window_roofs_a_window_is_priced_as_before_and_says_so() -> None:
    from roofline_report.analysis.predict import predict_kernel

    older = _roofs()  # ceilings measured before the window roofs
    for pattern in ("reduce-window", "sum-window"):
        record = kernel_record(_kernel(pattern, 6291456, 6))
        assert patterns.pattern_time(record, "float32", older) is None
        assert patterns.missing(record, "float32", older) == patterns.NO_ROOF
        before = predict_kernel(kernel_record({**_kernel(pattern, 0), "pattern": None}),
                                "float32", older)
        now = predict_kernel(record, "float32", older)
        assert before is not None and now is not None
        assert now.seconds == pytest.approx(before.seconds)
        assert not any(t.group == "pattern" for t in now.terms)
    # With them, the pattern's term binds: 6.3 M elements at 1.6 G/s, 3.9 ms, where the
    # bytes at the L3's rate took 0.16 ms.
    priced = predict_kernel(kernel_record(_kernel("reduce-window", 6291456, 6)), "float32",
                            _roofs(*WINDOW_ROOFS))
    assert priced is not None and priced.binding.group == "pattern"
    assert priced.seconds == pytest.approx(6291456 / 1.6e9, rel=1e-3)
    assert math.isclose(priced.binding.seconds, 6291456 / 1.6e9)
