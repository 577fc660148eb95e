# ruff: noqa: E501
"""The kinds of kernel a CPU runs at rates of their own (matrix-vector products, transposed dots,
block transposes, real FFTs by length, row scatters by width): how the inventory labels them
(hand-written HLO and programs XLA:CPU compiles here), the roofs the ceilings plan for them, and
how the model picks the roof a kernel is priced at."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from roofline_report.analysis import patterns
from roofline_report.analysis.roofs import RateRoof, RoofSet
from roofline_report.hlo.dot_patterns import NARROW_DOT, contracted_on_major, narrow_side
from roofline_report.hlo.ir import parse_module
from roofline_report.hlo.kernel_patterns import kernel_pattern
from roofline_report.hlo.kernels import kernel_inventory
from roofline_report.hlo.shapes import parse_shape
from roofline_report.hlo.transpose_patterns import kept_run
from roofline_report.kinds import Kind
from roofline_report.results.schema import KernelInventory
from tests.kernel_records import kernel_record

DOTS = """HloModule dots

ENTRY %main (v: f32[256,1], w: f32[256,2048], x: f32[128,1024], y: f32[128,10], z: f32[128,1024], a: f32[512,512], i: s32[128,1024], j: s32[128,10], c: c64[128,1024], k: f32[8,4096,64], q: f32[8,64,1], g: f32[128,96], kt: f32[8,64,4096], p: f32[8,4096,1], s: f32[8,16,32], t: f32[8,32,8], n: f32[3072,64]) -> f32[1,2048] {
  %v = f32[256,1]{1,0} parameter(0)
  %w = f32[256,2048]{1,0} parameter(1)
  %x = f32[128,1024]{1,0} parameter(2)
  %y = f32[128,10]{1,0} parameter(3)
  %z = f32[128,1024]{1,0} parameter(4)
  %a = f32[512,512]{1,0} parameter(5)
  %i = s32[128,1024]{1,0} parameter(6)
  %j = s32[128,10]{1,0} parameter(7)
  %c = c64[128,1024]{1,0} parameter(8)
  %k = f32[8,4096,64]{2,1,0} parameter(9)
  %q = f32[8,64,1]{2,1,0} parameter(10)
  %g = f32[128,96]{1,0} parameter(11)
  %kt = f32[8,64,4096]{2,1,0} parameter(12)
  %p = f32[8,4096,1]{2,1,0} parameter(13)
  %s = f32[8,16,32]{2,1,0} parameter(14)
  %t = f32[8,32,8]{2,1,0} parameter(15)
  %n = f32[3072,64]{1,0} parameter(16)
  %narrow = f32[64,64]{1,0} dot(%n, %n), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %inputs = f32[10,1024]{1,0} dot(%y, %x), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %values = f32[8,64,1]{2,1,0} dot(%kt, %p), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  %small = f32[8,16,8]{2,1,0} dot(%s, %t), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  %token = f32[1,2048]{1,0} dot(%v, %w), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %classes = f32[1024,10]{1,0} dot(%x, %y), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %wgrad = f32[1024,1024]{1,0} dot(%x, %z), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %both = f32[512,512]{1,0} dot(%a, %a), lhs_contracting_dims={0}, rhs_contracting_dims={1}
  %integer = s32[1024,10]{1,0} dot(%i, %j), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %complex = c64[1024,1024]{1,0} dot(%c, %c), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %keys = f32[8,4096,1]{2,1,0} dot(%k, %q), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  %wide = f32[1024,96]{1,0} dot(%x, %g), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT %out = f32[1,2048]{1,0} copy(%token)
}
"""


def _pattern(text: str, name: str, backend: str | None = None) -> tuple[str | None, int, int]:
    module = parse_module(text)
    entry = module.entry_computation
    assert entry is not None
    instr = entry.instruction(name)
    assert instr is not None
    found = kernel_pattern(instr, module, backend)
    return found.name, found.size, found.row


def test_a_dot_with_a_narrow_side_is_a_matrix_vector_product_of_its_wide_operand() -> None:
    # one token through a projection: v [256] contracted with W [256, 2048]
    assert _pattern(DOTS, "token") == ("mat-vec", 256 * 2048, 1)
    # a layer of ten classes' weight gradient: x.T @ y, ten columns wide
    assert _pattern(DOTS, "classes") == ("mat-vec", 128 * 1024, 10)
    # a query against a cache of keys: batched, one column per batch
    assert _pattern(DOTS, "keys") == ("mat-vec", 8 * 4096 * 64, 1)
    # the mirror of "classes": the narrow operand on the left, the result's rows its width
    assert _pattern(DOTS, "inputs") == ("vec-mat", 128 * 1024, 10)
    # attention weights against a cache's values: one vector, a mat-vec on either side
    assert _pattern(DOTS, "values") == ("mat-vec", 8 * 64 * 4096, 1)
    # 96 columns: wider than NARROW_DOT, a product of its flops
    assert NARROW_DOT < 96
    assert _pattern(DOTS, "wide") == ("transposed-dot", 2 * 128 * 1024 * 96, 0)


def test_a_dot_contracting_both_operands_along_their_major_axis_is_a_transposed_dot() -> None:
    assert _pattern(DOTS, "wgrad") == ("transposed-dot", 2 * 128 * 1024 * 1024, 0)
    # a.T @ b.T: the right operand contracted along its minor axis, the loop dot it was
    assert _pattern(DOTS, "both") == ("loop-dot", 2 * 512**3, 0)


def test_integer_and_complex_dots_stay_loop_dots_and_a_tpu_keeps_them_all() -> None:
    assert _pattern(DOTS, "integer") == ("loop-dot", 2 * 128 * 1024 * 10, 0)
    assert _pattern(DOTS, "complex") == ("loop-dot", 2 * 128 * 1024 * 1024, 0)
    for name in ("token", "classes", "wgrad", "keys"):
        assert _pattern(DOTS, name, "tpu")[0] == "loop-dot"


def test_narrow_sides_and_major_contractions_by_hand() -> None:
    module = parse_module(DOTS)
    entry = module.entry_computation
    assert entry is not None

    def dot(name: str) -> Any:
        found = entry.instruction(name)
        assert found is not None
        return found

    assert narrow_side(dot("token")) == (1, 1)  # one element wide; the matrix on the right
    assert narrow_side(dot("classes")) == (10, 0)
    assert narrow_side(dot("wgrad")) is None
    # attention weights against a cache's values: 64 features by 4,096 positions, one query
    # (both free sides narrow, but the contraction makes the left a matrix)
    assert narrow_side(dot("values")) == (1, 0)
    assert narrow_side(dot("small")) is None  # 16 x 32 by 32 x 8: a small product
    # a narrow layer's weight gradient over 3,072 rows: two narrow sides, no vector
    assert narrow_side(dot("narrow")) is None
    # x [128, 1024] contracted along 128, its major axis; y [128, 10] too (a standard right
    # operand); a.T @ b.T's right operand along its minor one
    assert contracted_on_major(dot("wgrad"), 0) and contracted_on_major(dot("wgrad"), 1)
    assert contracted_on_major(dot("both"), 0) and not contracted_on_major(dot("both"), 1)
    assert not contracted_on_major(dot("keys"), 0)  # [8, 4096, 64] along its minor 64


TRANSPOSES = """HloModule transposes

%kv_values (p: f32[1,4096,8,64]) -> f32[1,8,4096,64] {
  %p = f32[1,4096,8,64]{3,2,1,0} parameter(0)
  %t = f32[1,8,4096,64]{3,1,2,0} transpose(%p), dimensions={0,2,1,3}
  ROOT %c = f32[1,8,4096,64]{3,2,1,0} copy(%t)
}

%kv_keys (p: f32[1,4096,8,64]) -> f32[1,8,64,4096] {
  %p = f32[1,4096,8,64]{3,2,1,0} parameter(0)
  %t = f32[1,8,64,4096]{1,3,2,0} transpose(%p), dimensions={0,2,3,1}
  ROOT %c = f32[1,8,64,4096]{3,2,1,0} copy(%t)
}

%split_minor (p: f32[8,128]) -> f32[2,8,64] {
  %p = f32[8,128]{1,0} parameter(0)
  %r = f32[8,2,64]{2,1,0} reshape(%p)
  %t = f32[2,8,64]{2,0,1} transpose(%r), dimensions={1,0,2}
  ROOT %c = f32[2,8,64]{2,1,0} copy(%t)
}

%scaled_runs (p: f32[64,8,256]) -> f32[8,64,256] {
  %p = f32[64,8,256]{2,1,0} parameter(0)
  %two = f32[] constant(2)
  %b = f32[64,8,256]{2,1,0} broadcast(%two), dimensions={}
  %m = f32[64,8,256]{2,1,0} multiply(%p, %b)
  %t = f32[8,64,256]{2,0,1} transpose(%m), dimensions={1,0,2}
  ROOT %c = f32[8,64,256]{2,1,0} copy(%t)
}

ENTRY %main (cache: f32[1,4096,8,64], s: f32[8,128], w: f32[2,512,2048], m: f32[64,8,256]) -> f32[1,8,4096,64] {
  %cache = f32[1,4096,8,64]{3,2,1,0} parameter(0)
  %s = f32[8,128]{1,0} parameter(1)
  %w = f32[2,512,2048]{2,1,0} parameter(2)
  %m = f32[64,8,256]{2,1,0} parameter(3)
  %values = f32[1,8,4096,64]{3,2,1,0} fusion(%cache), kind=kLoop, calls=%kv_values
  %keys = f32[1,8,64,4096]{3,2,1,0} fusion(%cache), kind=kLoop, calls=%kv_keys
  %split = f32[2,8,64]{2,1,0} fusion(%s), kind=kLoop, calls=%split_minor
  %scaled = f32[8,64,256]{2,1,0} fusion(%m), kind=kLoop, calls=%scaled_runs
  %weights = f32[512,2,2048]{2,0,1} copy(%w)
  ROOT %out = f32[1,8,4096,64]{3,2,1,0} copy(%values)
}
"""


def test_a_transposing_copy_that_keeps_the_minor_axis_moves_runs() -> None:
    # a key-value cache from [B, S, H, D] to [B, H, S, D]: runs of D = 64
    assert _pattern(TRANSPOSES, "values") == ("block-transpose", 4096 * 8 * 64, 64)
    # to [B, H, D, S]: the minor axis moves, a transpose
    assert _pattern(TRANSPOSES, "keys") == ("transpose", 4096 * 8 * 64, 0)
    # the minor axis split in two: the run is its minor part, 64
    assert _pattern(TRANSPOSES, "split") == ("block-transpose", 2 * 8 * 64, 64)
    # a weight [2, 512, 2048] laid out as [512, 2, 2048] by a bare copy: runs of 2048
    assert _pattern(TRANSPOSES, "weights") == ("block-transpose", 2 * 512 * 2048, 2048)
    # a broadcast fused in, rows of 1 KiB: still runs of 256, no cache-set aliasing
    assert _pattern(TRANSPOSES, "scaled") == ("block-transpose", 64 * 8 * 256, 256)


# An Equinox MLP's gradient (jax.vmap over eqx.nn.Linear, XLA:CPU): a stream transposed there
# and back meets, before the root's copy, one transposed once, so no one layout names the
# root's order; each source followed alone finds the transposed one.
ROUND_TRIP = """HloModule round_trip

%fused (param_0.224: f32[16,128,1024], param_1.302: f32[1024], param_2.279: f32[1024,2048]) -> f32[1024,2048] {
  %param_2.279 = f32[1024,2048]{1,0} parameter(2)
  %bitcast.87 = f32[1024,16,128]{2,1,0} bitcast(%param_2.279)
  %param_1.302 = f32[1024]{0} parameter(1)
  %broadcast.195 = f32[1024,16,128]{2,1,0} broadcast(%param_1.302), dimensions={0}
  %add.79 = f32[1024,16,128]{2,1,0} add(%bitcast.87, %broadcast.195)
  %transpose.110 = f32[16,128,1024]{1,0,2} transpose(%add.79), dimensions={1,2,0}
  %copy.69 = f32[16,128,1024]{2,1,0} copy(%transpose.110)
  %param_0.224 = f32[16,128,1024]{2,1,0} parameter(0)
  %constant.243 = f32[] constant(1)
  %broadcast.194 = f32[16,128,1024]{2,1,0} broadcast(%constant.243), dimensions={}
  %add.78 = f32[16,128,1024]{2,1,0} add(%param_0.224, %broadcast.194)
  %constant.242 = f32[] constant(0.5)
  %broadcast.193 = f32[16,128,1024]{2,1,0} broadcast(%constant.242), dimensions={}
  %mul.300 = f32[16,128,1024]{2,1,0} multiply(%add.78, %broadcast.193)
  %mul.299 = f32[16,128,1024]{2,1,0} multiply(%copy.69, %mul.300)
  %transpose.109 = f32[1024,16,128]{0,2,1} transpose(%mul.299), dimensions={2,0,1}
  %copy.68 = f32[1024,16,128]{2,1,0} copy(%transpose.109)
  ROOT %bitcast.86 = f32[1024,2048]{1,0} bitcast(%copy.68)
}

ENTRY %main (a: f32[16,128,1024], b: f32[1024], c: f32[1024,2048]) -> f32[1024,2048] {
  %a = f32[16,128,1024]{2,1,0} parameter(0)
  %b = f32[1024]{0} parameter(1)
  %c = f32[1024,2048]{1,0} parameter(2)
  ROOT %k = f32[1024,2048]{1,0} fusion(%a, %b, %c), kind=kLoop, calls=%fused
}
"""


def test_a_root_copy_whose_sources_meet_in_two_orders_is_still_a_transpose() -> None:
    # each run of its output reads one element of 128 rows of 4 KiB
    assert _pattern(ROUND_TRIP, "k") == ("broadcast-transpose", 16 * 128 * 1024, 128)


def test_a_tpu_keeps_its_transposes() -> None:
    assert _pattern(TRANSPOSES, "values", "tpu") == ("transpose", 4096 * 8 * 64, 0)
    assert _pattern(TRANSPOSES, "weights", "tpu") == ("transpose", 2 * 512 * 2048, 0)


def test_kept_run_by_hand() -> None:
    source = parse_shape("f32[4,6,8]{2,1,0}").array
    assert source is not None
    whole = [(0, 0, 4, 1), (0, 1, 6, 1), (0, 2, 8, 1)]
    assert kept_run(whole, 0, source) == 4 * 6 * 8  # nothing moved: one run
    assert kept_run([(0, 1, 6, 1), (0, 0, 4, 1), (0, 2, 8, 1)], 0, source) == 8
    assert kept_run([(0, 2, 8, 1), (0, 0, 4, 1), (0, 1, 6, 1)], 0, source) == 1
    # the minor axis split: its minor part of 2 stays minor, its major part of 4 moves out
    assert kept_run([(0, 2, 4, 2), (0, 0, 4, 1), (0, 1, 6, 1), (0, 2, 2, 1)], 0, source) == 2
    # another source's atom at the minor end: nothing of source 0 stays there
    assert kept_run([(0, 0, 4, 1), (0, 1, 6, 1), (0, 2, 8, 1), (1, 0, 3, 1)], 0, source) == 1


FFTS = """HloModule ffts

ENTRY %main (x: f32[8,1001,400], c: c64[8,64,128]) -> c64[8,1001,201] {
  %x = f32[8,1001,400]{2,1,0} parameter(0)
  %c = c64[8,64,128]{2,1,0} parameter(1)
  %planes = c64[8,64,128]{2,1,0} fft(%c), fft_type=FFT, fft_length={64,128}
  ROOT %frames = c64[8,1001,201]{2,1,0} fft(%x), fft_type=RFFT, fft_length={400}
}
"""


def test_an_fft_says_its_last_length() -> None:
    # XLA's rule: 8 flops per operand element per floor(log2 n) of each length
    assert _pattern(FFTS, "frames") == ("fft", 8 * 8 * 8 * 1001 * 400, 400)
    assert _pattern(FFTS, "planes") == ("fft", 8 * 6 * 7 * 8 * 64 * 128, 128)
    inv = kernel_inventory(FFTS)
    KernelInventory.model_validate(inv)


# ------------------------------------------------------------------------------ pricing


def _rate(op: str, dtype: str, points: tuple[tuple[float, float], ...], row: int = 0,
          name: str = "") -> RateRoof:
    return RateRoof(name or f"{op} {dtype} {row}", op, dtype, max(r for _, r in points),
                    Kind.MEASURED, "test", by_size=points, row=row)


def _roofs(*rates: RateRoof) -> RoofSet:
    return RoofSet("test", Kind.MEASURED, (), (), (), rates)


ROOFS = _roofs(
    _rate("mat-vec", "float32", ((1e4, 5e9), (1e6, 20e9)), row=1),
    _rate("mat-vec", "float32", ((1e4, 0.5e9), (1e6, 0.5e9)), row=16),
    _rate("transposed-dot", "float32", ((1e6, 50e9), (1e8, 160e9))),
    _rate("loop-dot", "float32", ((1e6, 40e9), (1e8, 130e9))),
    _rate("transpose", "float32", ((1e4, 1e9), (1e6, 2e9))),
    _rate("block-transpose", "float32", ((1e4, 4e9), (1e6, 10e9)), row=64),
    _rate("block-transpose", "float32", ((1e4, 6e9), (1e6, 12e9)), row=1024),
    _rate("fft", "complex64", ((1e6, 100e9), (1e8, 200e9))),
    _rate("fft", "float32", ((1e6, 60e9), (1e8, 150e9)), row=256),
    _rate("fft", "float32", ((1e6, 70e9), (1e8, 140e9)), row=2048),
)


def _kernel(pattern: str, size: float, row: int = 0, read: dict[str, int] | None = None
            ) -> dict[str, Any]:
    return {"pattern": pattern, "pattern_size": size, "pattern_row": row,
            "read_by_dtype": read or {"f32": 4 * int(size)}}


def _priced(kernel: dict[str, Any], roofs: RoofSet) -> float:
    """A kernel's seconds at its pattern's roof in ``roofs``, which must price it."""
    found = patterns.pattern_time(kernel_record(kernel), "float32", roofs)
    assert found is not None
    return found.seconds


def test_a_matrix_vector_product_takes_the_roof_of_the_nearest_width() -> None:
    # one token: the vector's roof, 1e6 matrix elements at 20 G/s
    vector = patterns.pattern_time(kernel_record(_kernel("mat-vec", 1e6, 1)), "float32", ROOFS)
    assert vector is not None and vector.seconds == pytest.approx(1e6 / 20e9)
    assert vector.unit == "elements"
    # ten columns: nearer 16 than 1 in log, 0.5 G matrix elements/s
    ten = patterns.pattern_time(kernel_record(_kernel("mat-vec", 1e6, 10)), "float32", ROOFS)
    assert ten is not None and ten.seconds == pytest.approx(1e6 / 0.5e9)
    # three: nearer 1 (log 3) than 16 (log 16/3)
    three = patterns.pattern_roof(kernel_record(_kernel("mat-vec", 1e6, 3)), "float32", ROOFS)
    assert three is not None and three.row == 1


def test_a_product_of_one_column_takes_the_roof_measured_as_its_matrix_comes() -> None:
    import dataclasses

    computed = dataclasses.replace(_rate("mat-vec", "float32", ((1e4, 2e9), (1e6, 10e9)),
                                         row=1), computed=True)
    both = _roofs(*ROOFS.rates, computed)

    def seconds(row: int, arguments: int, roofs: RoofSet = both) -> float:
        return _priced({**_kernel("mat-vec", 1e6, row), "bytes_read": 4 * 10**6 + 4096,
                        "argument_bytes_read": arguments}, roofs)

    # Its matrix an argument (its vector computed): the roof of an argument's matrix.
    assert seconds(1, 4 * 10**6) == pytest.approx(1e6 / 20e9)
    # Its matrix computed before it (a weight re-laid out, a cache just updated): the roof
    # measured so, twice the time here.
    assert seconds(1, 4096) == pytest.approx(1e6 / 10e9)
    assert seconds(1, 0) == pytest.approx(1e6 / 10e9)
    # A matrix smaller than any measured computed: the argument's roof (5 G/s at 1e4).
    small = {**_kernel("mat-vec", 1e3, 1), "bytes_read": 4000, "argument_bytes_read": 0}
    found = patterns.pattern_time(kernel_record(small), "float32", both)
    assert found is not None and found.seconds == pytest.approx(1e3 / 5e9)
    # Sixteen columns have no such roof: their own, as before.
    assert seconds(16, 0) == pytest.approx(1e6 / 0.5e9)
    # Ceilings measured before the computed matrix's roof: the argument's.
    assert seconds(1, 0, ROOFS) == pytest.approx(1e6 / 20e9)


def test_a_few_vectors_on_the_left_take_their_own_roof_else_the_matrix_vector_one() -> None:
    own = _roofs(*ROOFS.rates, _rate("vec-mat", "float32", ((1e4, 1e9), (1e6, 2.5e9)), row=16))
    found = patterns.pattern_time(kernel_record(_kernel("vec-mat", 1e6, 16)), "float32", own)
    assert found is not None and found.seconds == pytest.approx(1e6 / 2.5e9)
    # ceilings measured before the mirrored roof was: the mat-vec roof of the nearest width
    older = patterns.pattern_time(kernel_record(_kernel("vec-mat", 1e6, 16)), "float32", ROOFS)
    assert older is not None and older.seconds == pytest.approx(1e6 / 0.5e9)


def test_a_transposed_dot_takes_its_own_roof_and_the_loop_dots_without_one() -> None:
    own = patterns.pattern_time(kernel_record(_kernel("transposed-dot", 1e8)), "float32", ROOFS)
    assert own is not None and own.seconds == pytest.approx(1e8 / 160e9)
    assert own.unit == "FLOP"
    older = _roofs(*(r for r in ROOFS.rates if r.op != "transposed-dot"))
    stand_in = patterns.pattern_time(kernel_record(_kernel("transposed-dot", 1e8)),
                                     "float32", older)
    assert stand_in is not None and stand_in.seconds == pytest.approx(1e8 / 130e9)
    # a matrix-vector product has no stand-in: its size is in matrix elements
    no_vector = _roofs(*(r for r in ROOFS.rates if r.op != "mat-vec"))
    kernel = _kernel("mat-vec", 1e6, 1)
    assert patterns.pattern_time(kernel_record(kernel), "float32", no_vector) is None
    assert patterns.missing(kernel_record(kernel), "float32", no_vector) == patterns.NO_ROOF


def test_a_block_transpose_takes_the_nearest_run_or_the_transposes_roof() -> None:
    # runs of 128: 64 (log 2) against 1024 (log 8)
    found = patterns.pattern_time(kernel_record(_kernel("block-transpose", 1e6, 128)),
                                  "float32", ROOFS)
    assert found is not None and found.seconds == pytest.approx(1e6 / 10e9)
    wide = patterns.pattern_time(kernel_record(_kernel("block-transpose", 1e6, 2048)),
                                 "float32", ROOFS)
    assert wide is not None and wide.seconds == pytest.approx(1e6 / 12e9)
    older = _roofs(*(r for r in ROOFS.rates if r.op != "block-transpose"))
    stand_in = patterns.pattern_time(kernel_record(_kernel("block-transpose", 1e6, 64)),
                                     "float32", older)
    assert stand_in is not None and stand_in.seconds == pytest.approx(1e6 / 2e9)


def test_a_real_fft_takes_the_float_roof_of_its_length_a_complex_one_the_complex_roof() -> None:
    real = patterns.pattern_time(kernel_record(_kernel("fft", 1e8, 400)), "float32", ROOFS)
    assert real is not None and real.seconds == pytest.approx(1e8 / 150e9)  # 256 is nearer
    long = patterns.pattern_time(kernel_record(_kernel("fft", 1e6, 4096)), "float32", ROOFS)
    assert long is not None and long.seconds == pytest.approx(1e6 / 70e9)
    planes = patterns.pattern_time(kernel_record(_kernel("fft", 1e8, 128, {"c64": 8 * 10**6})),
                                   "float32",
                                   ROOFS)
    assert planes is not None and planes.seconds == pytest.approx(1e8 / 200e9)


def test_a_real_fft_of_a_length_with_a_factor_other_than_two_takes_such_a_lengths_roof() -> None:
    mixed = _roofs(*ROOFS.rates, _rate("fft", "float32", ((1e6, 30e9), (1e8, 65e9)), row=400))
    for length, rate in ((400, 65e9),  # 2^4 x 5^2: its own roof
                         (1000, 65e9),  # 2^3 x 5^3: nearer 512 or 2048 in log, but a power of 2
                         (320, 65e9),  # 2^6 x 5
                         (256, 150e9), (512, 150e9),  # powers of two keep theirs, 400 nearer
                         (4096, 140e9)):
        found = patterns.pattern_time(kernel_record(_kernel("fft", 1e8, length)), "float32",
                                      mixed)
        assert found is not None and found.seconds == pytest.approx(1e8 / rate), length


def test_an_fft_takes_the_roof_measured_as_its_operand_comes() -> None:
    import dataclasses

    computed = (dataclasses.replace(_rate("fft", "float32", ((1e6, 40e9), (1e8, 80e9)),
                                          row=400), computed=True),
                dataclasses.replace(_rate("fft", "float32", ((1e6, 45e9), (1e8, 90e9)),
                                          row=512), computed=True),
                dataclasses.replace(_rate("fft", "complex64", ((1e6, 60e9), (1e8, 90e9))),
                                    computed=True))
    both = _roofs(*ROOFS.rates, *computed)

    def seconds(length: int, arguments: int, read: dict[str, int] | None = None,
                roofs: RoofSet = both) -> float:
        return _priced({**_kernel("fft", 1e8, length, read), "bytes_read": 4 * 10**8,
                        "argument_bytes_read": arguments}, roofs)

    # Its operand a program's argument: the roofs measured of an argument, as before.
    assert seconds(256, 4 * 10**8) == pytest.approx(1e8 / 150e9)
    # Computed in the program (a framing, a window): the roofs measured so, by length, a
    # power of two taking the power of two's.
    assert seconds(400, 0) == pytest.approx(1e8 / 80e9)
    assert seconds(256, 0) == pytest.approx(1e8 / 90e9)
    assert seconds(2048, 10**8) == pytest.approx(1e8 / 90e9)  # partly an argument's
    assert seconds(128, 0, {"c64": 8 * 10**6}) == pytest.approx(1e8 / 90e9)
    assert seconds(128, 8 * 10**8, {"c64": 8 * 10**6}) == pytest.approx(1e8 / 200e9)
    # Ceilings measured before the computed operand's roofs: the argument's stand.
    assert seconds(256, 0, roofs=ROOFS) == pytest.approx(1e8 / 150e9)


def _two_costs(row: int, low: tuple[int, float], high: tuple[int, float]) -> float:
    """By hand: the rate at ``row`` of a cost a an index and b an element, t = a/row + b
    seconds an element, through the rates of two measured rows."""
    (r1, rate1), (r2, rate2) = low, high
    a = (1 / rate1 - 1 / rate2) / (1 / r1 - 1 / r2)
    b = 1 / rate2 - a / r2
    return 1 / (a / row + b)


def test_a_scatter_takes_its_own_row_or_the_two_costs_between_two_rows() -> None:
    roofs = _roofs(
        _rate("scatter", "float32", ((1e4, 1e9), (1e6, 1e9)), row=1),
        _rate("scatter", "float32", ((1e4, 4e9), (1e6, 4e9)), row=16),
        _rate("scatter", "float32", ((1e4, 5e9), (1e6, 5e9)), row=64),
        _rate("scatter", "float32", ((1e4, 7e9), (1e6, 7e9)), row=256))
    for row, rate in ((1, 1e9), (16, 4e9), (64, 5e9), (256, 7e9), (512, 7e9),
                      (8, _two_costs(8, (1, 1e9), (16, 4e9))),  # 3.33 G/s
                      (128, _two_costs(128, (64, 5e9), (256, 7e9))),  # 6.18 G/s
                      (200, _two_costs(200, (64, 5e9), (256, 7e9)))):
        found = patterns.pattern_time(kernel_record(_kernel("scatter", 1e6, row)), "float32", roofs)
        assert found is not None and found.seconds == pytest.approx(1e6 / rate), row
    assert _two_costs(8, (1, 1e9), (16, 4e9)) == pytest.approx(1e9 / 0.3)
    # Two rows whose rates give no positive cost of an index (the shorter row the faster):
    # the nearest row's roof, as without the model.
    odd = _roofs(_rate("scatter", "float32", ((1e4, 8e9), (1e6, 8e9)), row=1),
                 _rate("scatter", "float32", ((1e4, 2e9), (1e6, 2e9)), row=256))
    found = patterns.pattern_time(kernel_record(_kernel("scatter", 1e6, 128)), "float32", odd)
    assert found is not None and found.seconds == pytest.approx(1e6 / 2e9)


def test_a_gather_of_rows_between_two_rows_measured_takes_the_two_costs() -> None:
    """A gather's rows of 128 (a mixture of experts' tokens) lie between the CPU's roofs of
    rows of 64 and 256: a cost an index and a cost an element through both; rows of 64 take
    their own roof; rows of 3 (a position bias) take the nearest roof, not a line through
    the scattered elements' (their cost is their table's cache misses)."""
    roofs = _roofs(
        _rate("gather", "float32", ((1e4, 2e9), (1e6, 2e9)), row=1),
        _rate("gather", "float32", ((1e4, 5e9), (1e6, 5e9)), row=64),
        _rate("gather", "float32", ((1e4, 9.5e9), (1e6, 9.5e9)), row=256))

    def rate(row: int) -> float:
        found = patterns.pattern_time(kernel_record(_kernel("gather", 1e6, row)), "float32",
                                      roofs)
        assert found is not None
        return 1e6 / found.seconds

    assert rate(64) == pytest.approx(5e9) and rate(256) == pytest.approx(9.5e9)
    assert rate(128) == pytest.approx(_two_costs(128, (64, 5e9), (256, 9.5e9)))
    assert 5e9 < rate(128) < 9.5e9
    assert rate(3) == pytest.approx(2e9)  # the nearest (in log): single elements
    assert rate(1024) == pytest.approx(9.5e9)  # beyond the rows measured: the nearest


def test_a_scatter_of_elements_takes_the_roof_of_the_nearest_table() -> None:
    """A Bloom filter's 1 M updates into a 16 KiB table ran at 2.5 to 3.6 times the speed of
    the scattered elements' roof, whose table grows with its updates: a scatter of single
    elements takes the roof of the table nearest its own (in log); a scatter into a table
    as large as its updates, the growing one's; rows keep their own roofs."""
    growing = _rate("scatter", "float32", ((1e4, 0.7e9), (1e6, 0.7e9)), row=1,
                    name="elements")
    small = replace(_rate("scatter", "float32", ((1e4, 1.7e9), (1e6, 1.7e9)), row=1,
                          name="16 KiB"), table=1 << 14)
    mid = replace(_rate("scatter", "float32", ((1e4, 1.1e9), (1e6, 1.1e9)), row=1,
                        name="1 MiB"), table=1 << 20)
    rows = _rate("scatter", "float32", ((1e4, 4e9), (1e6, 4e9)), row=16, name="rows")
    roofs = _roofs(growing, small, mid, rows)

    def roof(row: int, table: int) -> str:
        kernel = kernel_record({**_kernel("scatter", 1e6, row), "pattern_table_bytes": table})
        found = patterns.pattern_time(kernel, "float32", roofs)
        assert found is not None
        return found.roof

    assert roof(1, 1 << 14) == "16 KiB" and roof(1, 1 << 12) == "16 KiB"
    assert roof(1, 1 << 20) == "1 MiB"
    assert roof(1, 4 << 20) == "elements"  # as large as its million updates
    assert roof(1, 0) == "elements"  # no table known: the growing table's
    assert roof(16, 1 << 14) == "rows"


# ------------------------------------------------------------------------------ the plan


def test_a_cpu_plans_its_kinds_by_width_and_an_accelerator_none_of_them() -> None:
    from roofline_report.observe.ceilings import pattern_plans
    from roofline_report.observe.ceilings.pattern_programs import GATHER_ROW

    for quick in (False, True):
        cpu = pattern_plans.kernels(pattern_plans.pattern_plan("cpu", quick=quick))
        rows = {(k.pattern, k.row) for k in cpu if k.roof}
        assert {("mat-vec", w) for w in pattern_plans.MAT_VEC_WIDTHS} <= rows
        assert {("block-transpose", r) for r in pattern_plans.BLOCK_RUNS} <= rows
        assert {("fft", n) for n in pattern_plans.RFFT_LENGTHS} <= rows
        assert {("scatter", r) for r in (*pattern_plans.SCATTER_ROWS, GATHER_ROW)} <= rows
        assert {("gather", r) for r in (*pattern_plans.GATHER_ROWS, GATHER_ROW)} <= rows
        assert {k.table for k in cpu if k.pattern == "scatter" and k.row == 1} >= set(
            pattern_plans.SCATTER_TABLES)
        assert ("transposed-dot", 0) in rows
        # its transposed dots are wider than a narrow product
        dots = [k for k in cpu if k.pattern == "transposed-dot"]
        assert dots and all(n > NARROW_DOT for k in dots for n in k.sizes)
        # the complex FFT roof stays, without a row
        assert ("fft", 0) in {(k.pattern, k.row) for k in cpu if k.dtype == "complex64"}
        for backend in ("tpu", "gpu"):
            plan = pattern_plans.kernels(pattern_plans.pattern_plan(backend, quick=quick))
            mine = {k.name for k in pattern_plans.cpu_kernels(
                pattern_plans.pattern_plan(backend, quick=quick))}
            assert not mine & {k.name for k in plan}, backend
            assert not {"mat-vec", "transposed-dot", "block-transpose"} & {
                k.pattern for k in plan}


@pytest.mark.parametrize("name", ["mat-vec float32 (v @ W)",
                                  "mat-vec float32 (v @ W, W computed)",
                                  "mat-vec float32 (x.T @ y, y of 16 columns)",
                                  "vec-mat float32 (x.T @ y, x of 16 columns)",
                                  "transposed-dot float32 (x.T @ y)",
                                  "block-transpose float32 ([1, S, 8, 64] -> (0, 2, 1, 3))",
                                  "block-transpose float32 ([1, S, 8, 1024] -> (0, 2, 1, 3))",
                                  "fft float32 (rfft of [R, 256])",
                                  "fft float32 (rfft of [R, 400])",
                                  "fft float32 (rfft of [R, 400], its operand computed)",
                                  "fft complex64 (2-D FFT of [8, n, n], its operand computed)",
                                  "transpose float32 (2-D swap, its operand from main memory)",
                                  "scatter float32 (scatter-add of rows of 16)",
                                  "scatter float32 (scatter-add of scattered elements into a "
                                  "table of 16 KiB)",
                                  "reduce-window float32 (3 x 3 max pool of stride 2, SAME, of "
                                  "[B, 32, 32, 32])",
                                  "reduce-window float32 (2 x 2 window of stride 2 over "
                                  "[B, 32, 32, 32] and the indices of its dimensions (5 "
                                  "arrays: a max pool's gradient))",
                                  "sum-window float32 (a cumulative sum's windows of 16 along "
                                  "rows of 512)"])
def test_each_cpu_kind_compiles_to_a_kernel_of_its_pattern_and_row(name: str) -> None:
    """Each roof's smallest compiled program holds a kernel the inventory labels with the
    roof's pattern and, where the roof has one, its row (compiled, not timed)."""
    jax = pytest.importorskip("jax")
    if jax.default_backend() != "cpu":
        pytest.skip("XLA:CPU's kernels")
    from roofline_report.observe.ceilings import pattern_plans
    from roofline_report.observe.ceilings.pattern_check import pattern_kernel

    plan = pattern_plans.pattern_plan("cpu", quick=False)
    [kernel] = [k for k in pattern_plans.kernels(plan) if k.name == name]
    point = kernel.build(kernel.sizes[0])
    text = jax.jit(point.fn).lower(*point.args).compile().as_text()
    found, described = pattern_kernel(text, kernel.pattern)
    assert found is not None, described
    inventory = kernel_inventory(text)["kernels"]
    [record] = [k for k in inventory if k["name"] == found]
    # A complex FFT's roof has no row (its record names its last length).
    assert record["pattern_row"] == kernel.row or kernel.dtype == "complex64"
    if kernel.pattern != "transposed-dot":  # a dot's size is its flops, the point's too
        assert record["pattern_size"] == point.ops
    if kernel.table:  # the bytes of the operand it scatters into
        assert record["pattern_table_bytes"] == kernel.table
    if kernel.computed:
        # Its operand computed by a kernel before it, which its baseline runs alone: the
        # pattern's kernel reads no argument (a product of one column, only its vector), and
        # the baseline has no such kernel.
        if kernel.pattern == "mat-vec":
            assert record["argument_bytes_read"] == kernel.build(kernel.sizes[0]).args[1].nbytes
            assert 2 * record["argument_bytes_read"] < record["bytes_read"]
        else:
            assert record["argument_bytes_read"] == 0
        assert point.baseline is not None
        alone = jax.jit(point.baseline).lower(*point.args).compile().as_text()
        assert pattern_kernel(alone, kernel.pattern)[0] is None
    else:
        assert point.baseline is None


# ------------------------------------------------------------------------------ cold arguments

DONATED = """HloModule donated, input_output_alias={ {1}: (1, {}, may-alias) }

%update (cache: f32[1024,1024], row: f32[1,1024], i: s32[]) -> f32[1024,1024] {
  %cache = f32[1024,1024]{1,0} parameter(0)
  %row = f32[1,1024]{1,0} parameter(1)
  %i = s32[] parameter(2)
  %zero = s32[] constant(0)
  ROOT %dus = f32[1024,1024]{1,0} dynamic-update-slice(%cache, %row, %i, %zero)
}

%swap (p: f32[1024,1024]) -> f32[1024,1024] {
  %p = f32[1024,1024]{1,0} parameter(0)
  %t = f32[1024,1024]{0,1} transpose(%p), dimensions={1,0}
  ROOT %c = f32[1024,1024]{1,0} copy(%t)
}

ENTRY %main (w: f32[256,256], cache: f32[1024,1024], row: f32[1,1024], i: s32[]) -> (f32[256,256], f32[1024,1024]) {
  %w = f32[256,256]{1,0} parameter(0)
  %cache = f32[1024,1024]{1,0} parameter(1)
  %row = f32[1,1024]{1,0} parameter(2)
  %i = s32[] parameter(3)
  %relaid = f32[256,256]{0,1} copy(%w)
  %again = f32[256,256]{1,0} copy(%relaid)
  %updated = f32[1024,1024]{1,0} fusion(%cache, %row, %i), kind=kLoop, calls=%update
  %swapped = f32[1024,1024]{1,0} fusion(%updated), kind=kLoop, calls=%swap
  ROOT %out = (f32[256,256]{1,0}, f32[1024,1024]{1,0}) tuple(%again, %updated)
}
"""


def test_a_kernel_says_what_it_reads_from_the_programs_arguments() -> None:
    inv = kernel_inventory(DONATED)
    KernelInventory.model_validate(inv)
    by_name = {k["name"]: k for k in inv["kernels"]}
    # a weight read once a call: all its bytes are an argument's
    assert by_name["relaid"]["argument_bytes_read"] == 256 * 256 * 4
    # a copy of a copy reads a temporary
    assert by_name["again"]["argument_bytes_read"] == 0
    # a donated cache updated in place one row at a time stays the argument's buffer: its
    # transposing copy reads the argument
    assert by_name["swapped"]["argument_bytes_read"] == 1024 * 1024 * 4
    # the arguments, and the one result that aliases none (the donated cache counts once)
    assert inv["call_bytes"] == 4 * (256 * 256 + 1024 * 1024 + 1024 + 1) + 4 * 256 * 256


def _bandwidth(name: str, level: str, value: float, low: int | None, high: int | None) -> Any:
    from roofline_report.analysis.roofs import BandwidthRoof

    return BandwidthRoof(name, value, level, Kind.MEASURED, "test", min_bytes=low,
                         max_bytes=high)


MIB = 1 << 20
LEVELS = RoofSet("test", Kind.MEASURED, (), (
    _bandwidth("L3 read-write", "L3", 200e9, MIB, 32 * MIB),
    _bandwidth("DRAM read-write", "DRAM", 50e9, 32 * MIB, None),
    _bandwidth("DRAM read", "DRAM", 25e9, 32 * MIB, None)))


def test_arguments_come_from_main_memory_where_the_programs_data_exceed_the_last_cache() -> None:
    from roofline_report.analysis.predict import Facts, cold_arguments

    # an 8 MiB argument read, 16 MiB touched: priced in the L3
    f = Facts("float32", 0.0, 0.0, {}, 16 * MIB, "test", arguments=8 * MIB)
    cold = cold_arguments(f, LEVELS, 100 * MIB, "L3", 64 * MIB)
    assert cold is not None
    extra, roof = cold
    assert roof.name == "DRAM read"
    assert extra == pytest.approx(8 * MIB / 25e9 - 8 * MIB / 200e9)
    # the program's data fit the cache, or are not known: the argument stays in the cache
    assert cold_arguments(f, LEVELS, 100 * MIB, "L3", 16 * MIB) is None
    assert cold_arguments(f, LEVELS, 100 * MIB, "L3", None) is None
    # no argument read, or priced at main memory already
    assert cold_arguments(Facts("float32", 0.0, 0.0, {}, 16 * MIB, "test"), LEVELS,
                          100 * MIB, "L3", 64 * MIB) is None
    assert cold_arguments(f, LEVELS, 100 * MIB, "DRAM", 64 * MIB) is None
    # an accelerator's memory: no caches the model knows of
    accelerator = RoofSet("test", Kind.MEASURED, (), LEVELS.bandwidth, dispatch_overlaps=True)
    assert cold_arguments(f, accelerator, 100 * MIB, "L3", 64 * MIB) is None


def test_a_kernel_reading_a_cold_argument_is_priced_at_main_memorys_read_roof() -> None:
    from roofline_report.analysis.predict import COLD, predict_kernel
    from roofline_report.analysis.roofs import ComputeRoof

    roofs = RoofSet("test", Kind.MEASURED,
                    (ComputeRoof("matmul", 100e9, "float32", Kind.MEASURED, "test"),),
                    LEVELS.bandwidth)
    kernel = {"name": "copy", "category": "data movement", "flops": 0,
              "bytes_read": 8 * MIB, "bytes_written": 8 * MIB, "read_by_dtype": {"f32": 8 * MIB},
              "written_by_dtype": {"f32": 8 * MIB}, "argument_bytes_read": 8 * MIB,
              "trips": 1}
    hot = predict_kernel(kernel_record(kernel),
                         "float32", roofs, traffic=100 * MIB, footprint=16 * MIB)
    cold = predict_kernel(kernel_record(kernel),
                          "float32", roofs, traffic=100 * MIB, footprint=64 * MIB)
    assert hot is not None and cold is not None
    assert hot.seconds == pytest.approx(16 * MIB / 200e9)
    assert cold.seconds == pytest.approx(16 * MIB / 200e9 + 8 * MIB / 25e9 - 8 * MIB / 200e9)
    assert cold.binding.detail == COLD and cold.binding.roof == "DRAM read"


def test_a_transposing_copy_of_an_argument_from_main_memory_takes_the_roof_measured_so() -> None:
    """The held-out Gemma decode step swaps the minor axes of its two 8 MiB caches each step
    in a program whose data outgrow the 32 MiB cache: 673 and 710 µs against 285 µs at the
    2-D swap's roof (its operand in the cache); a swap of [8, 4096, 64] ran 330 µs with its
    operand in the cache and 730 µs from main memory."""
    import dataclasses

    from roofline_report.analysis.predict import predict_kernel
    from roofline_report.analysis.roofs import ComputeRoof

    warm = _rate("transpose", "float32", ((1e4, 1e9), (1e6, 7e9)), name="2-D swap")
    cold = dataclasses.replace(_rate("transpose", "float32", ((1e6, 3e9),),
                                     name="2-D swap from main memory"), from_memory=True)
    compute = (ComputeRoof("matmul", 100e9, "float32", Kind.MEASURED, "test"),)
    both = RoofSet("test", Kind.MEASURED, compute, LEVELS.bandwidth, (), (cold, warm))
    elements = 2 * MIB
    kernel = {"name": "copy_bitcast_fusion", "category": "data movement", "flops": 0,
              "bytes_read": 4 * elements, "bytes_written": 4 * elements,
              "read_by_dtype": {"f32": 4 * elements}, "written_by_dtype": {"f32": 4 * elements},
              "argument_bytes_read": 4 * elements, "trips": 1, "pattern": "transpose",
              "pattern_size": elements}

    def pattern(record: dict[str, Any], footprint: float, roofs: RoofSet = both) -> Any:
        p = predict_kernel(kernel_record(record), "float32", roofs, traffic=100 * MIB,
                           footprint=footprint)
        assert p is not None
        return next(t for t in p.terms if t.group == "pattern")

    # The lookups by pattern never take the roof from main memory as the pattern's own.
    assert both.rate_for("transpose", "float32") is warm
    # The program's data fit the cache: the roof of its operand in the cache.
    fits = pattern(kernel, 16 * MIB)
    assert fits.roof == "2-D swap" and fits.seconds == pytest.approx(elements / 7e9)
    # They outgrow it: the roof measured with its operand in main memory.
    past = pattern(kernel, 64 * MIB)
    assert past.roof == "2-D swap from main memory"
    assert past.seconds == pytest.approx(elements / 3e9)
    # Half its reads an argument's: half its elements at each roof.
    half = pattern({**kernel, "argument_bytes_read": 2 * elements}, 64 * MIB)
    assert half.seconds == pytest.approx(elements / 2 / 3e9 + elements / 2 / 7e9)
    # Never faster than its operand in the cache: a small copy at the cache's slower rate.
    small = {**kernel, "pattern_size": 1e4, "bytes_read": 4e4, "bytes_written": 4e4,
             "argument_bytes_read": 4e4, "read_by_dtype": {"f32": 4e4},
             "written_by_dtype": {"f32": 4e4}}
    assert pattern(small, 64 * MIB).seconds == pytest.approx(1e4 / 1e9)
    # Ceilings measured before the roof from main memory: the cache's, as before.
    without = RoofSet("test", Kind.MEASURED, compute, LEVELS.bandwidth, (), (warm,))
    assert pattern(kernel, 64 * MIB, without).seconds == pytest.approx(elements / 7e9)


def test_a_fresh_output_past_the_last_cache_streams_at_the_slower_of_its_rate_and_the_sweeps(
        ) -> None:
    """``3 x + y`` over 16 MiB arrays (48 MiB touched, a 32 MiB last-level cache) is priced at
    the slower of its fresh output's write-new rate and the sweep's transition from the cache
    at its size (what this run's sweep found of the shared cache), its arguments not charged
    again. It ran at 51 to 140 GB/s (median 92) over seven runs of two days, where main
    memory's read-write roof past its window (60 to 74) priced it at 1.5 to 2.6 times its
    time."""
    from roofline_report.analysis.predict import predict_kernel
    from roofline_report.analysis.roofs import BandwidthRoof, ComputeRoof

    dram = BandwidthRoof("DRAM read-write", 50e9, "DRAM", Kind.MEASURED, "test",
                         min_bytes=32 * MIB, transition=((32 * MIB, 140e9), (128 * MIB, 50e9)))

    def machine(write_new: float) -> RoofSet:
        fresh = _bandwidth("L3 write-new", "L3", write_new, MIB, 32 * MIB)
        return RoofSet("test", Kind.MEASURED,
                       (ComputeRoof("matmul", 100e9, "float32", Kind.MEASURED, "test"),),
                       (LEVELS.bandwidth[0], dram, LEVELS.bandwidth[2], fresh))

    kernel = {"name": "multiply_add_fusion", "category": "elementwise", "flops": 2 * MIB,
              "bytes_read": 32 * MIB, "bytes_written": 16 * MIB,
              "read_by_dtype": {"f32": 32 * MIB}, "written_by_dtype": {"f32": 16 * MIB},
              "argument_bytes_read": 32 * MIB, "trips": 1}

    def predicted(roofs: RoofSet) -> Any:
        p = predict_kernel(kernel_record(kernel), "float32", roofs, traffic=48 * MIB,
                           footprint=48 * MIB)
        assert p is not None
        return p

    # The transition at 48 MiB, between 140 GB/s at 32 MiB and 50 at 128 MiB.
    between = dram.rate_for(48 * MIB)
    assert 50e9 < between < 140e9
    # A fresh output's rate faster than that: the transition, not main memory's 50 GB/s.
    fast = predicted(machine(130e9))
    assert fast.binding.roof == "DRAM read-write" and fast.level == "DRAM"
    assert fast.seconds == pytest.approx(48 * MIB / between)
    # Slower: the fresh output's rate, and still no cold-argument term.
    slow = predicted(machine(40e9))
    assert slow.binding.roof == "L3 write-new"
    assert slow.seconds == pytest.approx(48 * MIB / 40e9)
    # In place (no fresh output): the sweep's transition, as before.
    in_place = machine(90e9).bandwidth_for(48 * MIB, 0.0, program=True)
    assert in_place is not None and in_place.value > 50e9
    # A kernel inside the cache whose program's data exceed it still reads cold arguments.
    small = {**kernel, "bytes_read": 8 * MIB, "bytes_written": 4 * MIB,
             "read_by_dtype": {"f32": 8 * MIB}, "written_by_dtype": {"f32": 4 * MIB},
             "argument_bytes_read": 8 * MIB}
    p = predict_kernel(kernel_record(small), "float32", machine(90e9), traffic=48 * MIB,
                       footprint=48 * MIB)
    assert p is not None and p.binding.roof == "DRAM read"
