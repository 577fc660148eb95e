"""Kernel patterns that run below the streaming roofs: the time of a launch at its pattern's rate
(hand-made kernel records and roofs, times computed by hand), the roofs read from ceilings, the
check of compiled programs, and a tiny measurement."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

import pytest

from roofline_report.analysis import patterns, roofs
from roofline_report.analysis.roofs import RateRoof, RoofSet
from roofline_report.kinds import Kind
from roofline_report.results import schema
from tests.ceilings_records import typed_ceilings
from tests.kernel_records import EMPTY_KERNEL, kernel_record


def _rate(op: str, dtype: str, by_size: tuple[tuple[float, float], ...],
          name: str = "") -> RateRoof:
    return RateRoof(name or f"{op} {dtype}", op, dtype, max(r for _, r in by_size),
                    Kind.MEASURED, "hand-made", by_size=by_size)


ROOFS = RoofSet("hand-made", Kind.MEASURED, (), (), (), (
    # elements per call -> elements per second
    _rate("transpose", "float32", ((4096.0, 1e9), (262144.0, 2e9))),
    _rate("transpose", "bfloat16", ((4096.0, 3e9), (262144.0, 6e9))),
    _rate("gather", "float32", ((1024.0, 5e8), (1048576.0, 2.5e8))),
    # flops per call -> FLOP/s
    _rate("loop-dot", "float32", ((2 * 64.0**3, 3e10), (2 * 256.0**3, 1.2e11))),
    # comparisons per call -> comparisons per second
    _rate("sort", "float32", ((2048.0, 4e7), (229376.0, 4.5e7))),
))


def _kernel(pattern: str | None, size: float | None, **extra: Any) -> dict[str, Any]:
    return {"name": "fusion.1", "category": "data movement", "pattern": pattern,
            "pattern_size": size, **extra}


def test_transpose_between_two_sizes_by_hand() -> None:
    # 32768 elements lie halfway (in log size) between 4096 and 262144:
    # ln(32768/4096) / ln(262144/4096) = ln 8 / ln 64 = 1/2, so the rate is 1.5e9 elements/s.
    t = patterns.pattern_time(kernel_record(_kernel("transpose", 32768)), "float32", ROOFS)
    assert t is not None
    assert t.rate == pytest.approx(1.5e9)
    assert t.seconds == pytest.approx(32768 / 1.5e9)  # 21.845 us
    assert (t.pattern, t.unit, t.roof, t.kind) == ("transpose", "elements", "transpose float32",
                                                  Kind.MEASURED)


def test_sizes_beyond_the_measured_ones_take_the_nearest_rate() -> None:
    small = patterns.pattern_time(kernel_record(_kernel("transpose", 1000)), "float32", ROOFS)
    large = patterns.pattern_time(kernel_record(_kernel("transpose", 1 << 24)), "float32", ROOFS)
    assert small is not None and small.seconds == pytest.approx(1000 / 1e9)  # 1 us
    assert large is not None and large.seconds == pytest.approx((1 << 24) / 2e9)  # 8.39 ms


def test_each_dtype_has_its_roof_and_float32_stands_in() -> None:
    bf16 = patterns.pattern_time(kernel_record(_kernel("transpose", 262144)), "bfloat16", ROOFS)
    assert bf16 is not None and bf16.seconds == pytest.approx(262144 / 6e9)
    # No bfloat16 gather was measured: float32's rate, 2.5e8/s at a million elements.
    gather = patterns.pattern_time(kernel_record(_kernel("gather", 1048576)), "bfloat16", ROOFS)
    assert gather is not None and gather.roof == "gather float32"
    assert gather.seconds == pytest.approx(1048576 / 2.5e8)  # 4.19 ms
    # A transpose only moves bytes: where float32's roof stands in for a narrower or wider
    # dtype, its rate in elements scales with their widths (2e9/s at 262,144 in float32).
    float32_only = RoofSet("hand-made", Kind.MEASURED, (), (), (),
                           tuple(r for r in ROOFS.rates if r.dtype == "float32"))
    for dtype, width in (("bfloat16", 2), ("int8", 1), ("float64", 8), ("float32", 4)):
        found = patterns.pattern_time(kernel_record(_kernel("transpose", 262144)), dtype,
                                      float32_only)
        assert found is not None and found.roof == "transpose float32"
        assert found.seconds == pytest.approx(262144 / (2e9 * 4 / width)), dtype


def test_a_broadcast_transpose_reads_its_rate_at_the_square_of_the_rows_it_walks() -> None:
    """(x * 2).T of [n, n] measured at n = 256 and 1024; a kernel of 1 M elements whose output
    runs each read 128 rows (the Perceiver's [2, 1, 128, 4096] swap) takes the rate of the
    square of 128 rows (below the sizes measured: the nearest end's, 1.3e9/s), not its own
    size's (4e8/s); a record without its rows (written before them) keeps its size's."""
    walked = RoofSet("hand-made", Kind.MEASURED, (), (), (), (
        _rate("broadcast-transpose", "float32", ((65536.0, 1.3e9), (1048576.0, 4e8))),))
    size = 2 * 128 * 4096
    rows = patterns.pattern_time(kernel_record(_kernel("broadcast-transpose", size,
                                                       pattern_row=128)), "float32", walked)
    assert rows is not None and rows.seconds == pytest.approx(size / 1.3e9)  # 0.81 ms
    assert rows.size == size  # the time is its own elements' at that rate
    square = patterns.pattern_time(kernel_record(_kernel("broadcast-transpose", size,
                                                         pattern_row=1024)), "float32", walked)
    assert square is not None and square.seconds == pytest.approx(size / 4e8)  # 2.6 ms
    old = patterns.pattern_time(kernel_record(_kernel("broadcast-transpose", size)), "float32",
                                walked)
    assert old is not None and old.seconds == pytest.approx(size / 4e8)


def test_a_broadcast_transpose_takes_the_roof_of_its_rows_at_its_own_size() -> None:
    """With roofs by the rows each output run reads ((x * 2).T of [rows, n]), a kernel
    takes the one nearest its rows (in log) read at its own size, not the square's at its
    rows squared: the Perceiver's swap (1 M elements, 128 rows) at the 128 rows' 8e8/s
    (1.31 ms), where the square's roof would give 1.3e9/s; ResNet's (64 K elements reading 8
    rows) at the 8 rows' 3.8e9/s; rows of 200 take the 256 rows' roof."""
    def by_row(row: int, points: tuple[tuple[float, float], ...]) -> RateRoof:
        return replace(_rate("broadcast-transpose", "float32", points,
                             f"broadcast-transpose float32 ({row} rows)"), row=row)

    square = _rate("broadcast-transpose", "float32", ((65536.0, 1.3e9), (1048576.0, 4e8)))
    walked = RoofSet("hand-made", Kind.MEASURED, (), (), (), (
        square, by_row(8, ((65536.0, 3.8e9), (1048576.0, 1e10))),
        by_row(128, ((65536.0, 5e8), (1048576.0, 8e8))),
        by_row(256, ((65536.0, 9e8), (1048576.0, 9e8)))))
    size = 2 * 128 * 4096
    perceiver = patterns.pattern_time(kernel_record(_kernel("broadcast-transpose", size,
                                                            pattern_row=128)), "float32", walked)
    assert perceiver is not None and perceiver.roof == "broadcast-transpose float32 (128 rows)"
    assert perceiver.seconds == pytest.approx(size / 8e8)
    resnet = patterns.pattern_time(kernel_record(_kernel("broadcast-transpose", 65536,
                                                         pattern_row=8)), "float32", walked)
    assert resnet is not None and resnet.seconds == pytest.approx(65536 / 3.8e9)
    between = patterns.pattern_time(kernel_record(_kernel("broadcast-transpose", size,
                                                          pattern_row=200)), "float32", walked)
    assert between is not None and between.roof == "broadcast-transpose float32 (256 rows)"
    # A record without its rows (written before them) keeps the square's roof at its size.
    old = patterns.pattern_time(kernel_record(_kernel("broadcast-transpose", size)), "float32",
                                walked)
    assert old is not None and old.roof == "broadcast-transpose float32"
    assert old.seconds == pytest.approx(size / 4e8)


def test_a_sort_at_its_comparison_rate() -> None:
    # A stable argsort of 2048 int32 keys: 22528 comparisons, between the two sizes measured;
    # the float32 roof stands in for int32. ln(22528/2048) / ln(229376/2048) = ln 11 / ln 112.
    t = patterns.pattern_time(kernel_record(_kernel("sort", 22528)), "int32", ROOFS)
    w = math.log(11) / math.log(112)
    assert t is not None and t.unit == "comparisons"
    assert t.rate == pytest.approx(4e7 + w * 0.5e7)
    assert t.seconds == pytest.approx(22528 / t.rate)  # about 0.54 ms
    assert patterns.unit("sort") == "comparisons"


def test_a_top_k_at_its_rate_of_elements_searched() -> None:
    # A sampler's top-k over 8 rows of a 32768-word vocabulary: 262144 elements searched, the
    # larger size measured: 262144 / 2e8 per second = 1.31 ms.
    roofs_ = RoofSet("hand-made", Kind.MEASURED, (), (), (), (
        _rate("top-k", "float32", ((32768.0, 6e8), (262144.0, 2e8))),))
    t = patterns.pattern_time(kernel_record(_kernel("top-k", 262144)), "float32", roofs_)
    assert t is not None and (t.unit, t.roof) == ("elements", "top-k float32")
    assert t.seconds == pytest.approx(262144 / 2e8)
    # Without its roof, a top-k says so (it is not priced as a sort).
    assert patterns.missing(kernel_record(_kernel("top-k", 262144)),
                            "float32", ROOFS) == patterns.NO_ROOF


def test_a_top_k_takes_the_roof_measured_on_rows_nearest_its_own() -> None:
    from dataclasses import replace

    short = replace(_rate("top-k", "float32", ((65536.0, 1.9e8), (1048576.0, 1.9e8)),
                          "top-k float32 (top 16 of rows of 1024)"), row=1024)
    long = replace(_rate("top-k", "float32", ((65536.0, 3.9e8), (1048576.0, 3.9e8)),
                         "top-k float32 (top 16 of rows of 4096)"), row=4096)
    roofs_ = RoofSet("hand-made", Kind.MEASURED, (), (), (), (long, short))
    # A sampler's top 20 of 8 rows of 1024 words: the rows-of-1024 roof, not the first one.
    sampler = patterns.pattern_time(kernel_record(_kernel("top-k", 8192, pattern_row=1024)),
                                    "float32",
                                    roofs_)
    assert sampler is not None and sampler.roof == short.name
    assert sampler.seconds == pytest.approx(8192 / 1.9e8)
    # Rows of 32768 are nearer 4096 (in log); rows of 2048 lie as near both: the shorter's.
    for row, roof in ((32768, long), (256, short), (2048, short), (3000, long)):
        t = patterns.pattern_time(kernel_record(_kernel("top-k", 65536, pattern_row=row)),
                                  "float32", roofs_)
        assert t is not None and t.roof == roof.name, row
    # A record without its row (saved before it was kept): the first top-k roof, as before.
    t = patterns.pattern_time(kernel_record(_kernel("top-k", 65536)), "float32", roofs_)
    assert t is not None and t.roof == long.name


def test_a_scatter_of_single_elements_takes_the_single_elements_roof() -> None:
    from dataclasses import replace

    rows = replace(_rate("scatter", "float32", ((4096.0, 1e9), (1048576.0, 1e9)),
                         "scatter float32 (rows of 256)"), row=256)
    single = replace(_rate("scatter", "float32", ((4096.0, 2e8), (1048576.0, 2e8)),
                           "scatter float32 (scattered elements)"), row=1)
    roofs_ = RoofSet("hand-made", Kind.MEASURED, (), (), (), (rows, single))
    bloom = patterns.pattern_time(kernel_record(_kernel("scatter", 65536, pattern_row=1)),
                                  "float32", roofs_)
    assert bloom is not None and (bloom.roof, bloom.seconds) == (single.name,
                                                                 pytest.approx(65536 / 2e8))
    embedding = patterns.pattern_time(kernel_record(_kernel("scatter", 65536, pattern_row=128)),
                                      "float32",
                                      roofs_)
    assert embedding is not None and embedding.roof == rows.name


def test_a_fused_transpose_without_its_own_roof_takes_the_transposes() -> None:
    # 32768 output elements at the float32 transpose roof's 1.5e9 (see the test above).
    t = patterns.pattern_time(kernel_record(_kernel("fused-transpose", 32768)), "float32", ROOFS)
    assert t is not None and (t.pattern, t.roof) == ("fused-transpose", "transpose float32")
    assert t.seconds == pytest.approx(32768 / 1.5e9)
    own = RoofSet("hand-made", Kind.MEASURED, (), (), (), (
        *ROOFS.rates, _rate("fused-transpose", "float32", ((4096.0, 5e8), (262144.0, 5e8)))))
    t = patterns.pattern_time(kernel_record(_kernel("fused-transpose", 32768)), "float32", own)
    assert t is not None and t.roof == "fused-transpose float32"
    assert t.seconds == pytest.approx(32768 / 5e8)


def test_an_interleaved_reduction_is_priced_by_its_runs() -> None:
    # A group norm's sum over (1, 2, 4) of [4, 32, 32, 32, 2]: 131,072 runs of 2 elements at
    # 2.3e8 runs a second, about 0.57 ms; without its roof it says so.
    kernel = _kernel("interleaved-reduction", 131072)
    own = RoofSet("hand-made", Kind.MEASURED, (), (), (), (
        *ROOFS.rates, _rate("interleaved-reduction", "float32",
                            ((8192.0, 2.3e8), (524288.0, 2.3e8)))))
    t = patterns.pattern_time(kernel_record(kernel), "float32", own)
    assert t is not None and (t.unit, t.roof) == ("runs", "interleaved-reduction float32")
    assert t.seconds == pytest.approx(131072 / 2.3e8)
    assert patterns.missing(kernel_record(kernel), "float32", ROOFS) == patterns.NO_ROOF


def test_loop_dot_in_flops() -> None:
    # 2·128³ flops lie halfway between 2·64³ and 2·256³ in log size: 7.5e10 FLOP/s.
    flops = 2 * 128**3
    t = patterns.pattern_time(kernel_record(_kernel("loop-dot", flops, category="matmul")),
                              "float32", ROOFS)
    assert t is not None and t.unit == "FLOP"
    assert t.rate == pytest.approx(7.5e10)
    assert t.seconds == pytest.approx(flops / 7.5e10)  # 55.9 us


def test_a_lone_conversion_at_its_own_roof() -> None:
    """A CPU's conversion alone in its kernel (1 M elements) at the lone-convert roof's
    5e9 elements/s: 210 us, not the 30 us the conversion rate of a fused loop gives."""
    lone = RoofSet("hand-made", Kind.MEASURED, (), (), (), (
        _rate("lone-convert", "float32", ((32768.0, 4e9), (2097152.0, 5e9))),))
    t = patterns.pattern_time(kernel_record(_kernel("lone-convert", 1 << 20)), "bfloat16",
                              lone)
    assert t is not None and (t.unit, t.roof) == ("elements", "lone-convert float32")
    assert t.seconds == pytest.approx((1 << 20) / (4e9 + (5e9 - 4e9) * 5 / 6))


def test_one_operation_alone_at_its_own_roof() -> None:
    """A CPU's add alone in its kernel (48 K elements a launch, an accumulator's in a loop)
    at the lone-op roof's rate there: 12.3 us at 4e9 elements/s, where its bytes at a
    cache's rate give a few microseconds."""
    lone = RoofSet("hand-made", Kind.MEASURED, (), (), (), (
        _rate("lone-op", "float32", ((49152.0, 4e9), (2097152.0, 6e9))),))
    t = patterns.pattern_time(kernel_record(_kernel("lone-op", 49152)), "float32", lone)
    assert t is not None and (t.unit, t.roof) == ("elements", "lone-op float32")
    assert t.seconds == pytest.approx(49152 / 4e9)


def test_a_layer_norm_in_one_library_kernel_at_its_own_roof() -> None:
    """A CPU's layer norm of 1 M elements fused whole into one library kernel at the
    normalization roof's 3.3e9 elements/s: 318 us, where its terms at the row reduction's
    and the streaming roofs give about 50."""
    norm = RoofSet("hand-made", Kind.MEASURED, (), (), (), (
        _rate("normalization", "float32", ((262144.0, 3.4e9), (2097152.0, 3.2e9))),))
    t = patterns.pattern_time(kernel_record(_kernel("normalization", 1 << 20)), "float32",
                              norm)
    assert t is not None and (t.unit, t.roof) == ("elements", "normalization float32")
    assert 3.2e9 < t.rate < 3.4e9
    assert t.seconds == pytest.approx((1 << 20) / t.rate)


def test_a_batched_loop_dot_reads_its_rate_at_one_products_flops() -> None:
    """64 products of 2·128³ flops: each at the 128³ product's 7.5e10 FLOP/s, not at the
    rate of one product of their summed flops (2·512³, past the largest measured: 1.2e11)."""
    flops = 64 * 2 * 128**3
    batched = patterns.pattern_time(kernel_record(_kernel(
        "transposed-dot", flops, category="matmul", matmul_products=64)), "float32",
        RoofSet("hand-made", Kind.MEASURED, (), (), (), (_rate(
            "transposed-dot", "float32", ((2 * 64.0**3, 3e10), (2 * 256.0**3, 1.2e11))),)))
    assert batched is not None and batched.rate == pytest.approx(7.5e10)
    assert batched.seconds == pytest.approx(flops / 7.5e10)  # 3.58 ms
    single = patterns.pattern_time(kernel_record(_kernel("loop-dot", flops,
                                                         category="matmul")), "float32", ROOFS)
    assert single is not None and single.rate == pytest.approx(1.2e11)


@pytest.mark.parametrize("kernel", [_kernel(None, 4096), {"name": "fusion"}])
def test_no_pattern_no_time(kernel: dict[str, Any]) -> None:
    assert patterns.pattern_time(kernel_record(kernel), "float32", ROOFS) is None
    assert patterns.missing(kernel_record(kernel), "float32", ROOFS) is None


def test_a_pattern_without_a_roof_says_so() -> None:
    scatter = _kernel("scatter", 4096)
    assert patterns.pattern_time(kernel_record(scatter), "float32", ROOFS) is None
    assert patterns.missing(kernel_record(scatter), "float32", ROOFS) == patterns.NO_ROOF
    empty = RoofSet("none", Kind.MEASURED, (), ())
    assert patterns.missing(kernel_record(_kernel("transpose", 4096)),
                            "float32", empty) == patterns.NO_ROOF


def test_a_pattern_without_a_size_gets_no_time() -> None:
    kernel = _kernel("transpose", 0)
    assert patterns.pattern_time(kernel_record(kernel), "float32", ROOFS) is None
    assert patterns.missing(kernel_record(kernel), "float32", ROOFS) == patterns.NO_SIZE


@pytest.mark.parametrize("size", [None, -5, math.nan, math.inf, True, "4096"])
def test_a_record_keeps_no_size_that_is_not_a_count(size: object) -> None:
    """What the model is spared: the kernel record refuses a size that is not a count."""
    with pytest.raises(ValueError, match="pattern_size"):
        schema.KernelRecord.model_validate({**EMPTY_KERNEL, **_kernel("transpose", size)})


def _pattern_entry(op: str, points: list[tuple[int, float]], *, roof: bool = True,
                   dtype: str = "float32", variant: str = "v") -> dict[str, Any]:
    """A ceilings rate entry as measured: (operations per call, seconds per call with
    dispatch)."""
    by_size = [{"elements": n, "bytes": 8 * n, "seconds": s, "value": n / s, "shape": [n],
                "kernel": "fusion"} for n, s in points]
    best = max(by_size, key=lambda p: p["value"])
    return {"name": f"{op} {dtype} ({variant})", "op": op, "dtype": dtype,
            "unit": "FLOP/s" if op == "loop-dot" else "elements/s", "kind": "measured",
            "available": True, "reason": "", "value": best["value"],
            "elements": best["elements"], "reps": 1, "ops_per_call": best["elements"],
            "timing": None, "by_size": by_size, "variant": variant, "roof": roof}


def test_an_integer_kernel_takes_its_patterns_int32_rate() -> None:
    entries = [_pattern_entry("variadic-reduction", [(1 << 20, 4e-3)]),
               _pattern_entry("variadic-reduction", [(1 << 20, 1e-3)], dtype="int32")]
    ceilings = {"available": True, "backend": "cpu", "compute": [], "bandwidth": [],
                "dispatch": {"available": True, "value": 6e-6, "enqueued": None},
                "rates": entries}
    m = roofs.measured(typed_ceilings(ceilings))
    assert m is not None
    floats = {**_kernel("variadic-reduction", 1 << 20), "read_by_dtype": {"f32": 4 << 20}}
    ints = {**floats, "read_by_dtype": {"u32": 4 << 20, "f32": 1024}}
    t_float = patterns.pattern_time(kernel_record(floats), "float32", m)
    t_int = patterns.pattern_time(kernel_record(ints), "float32", m)
    assert t_float is not None and t_int is not None
    assert t_float.seconds == pytest.approx(4e-3) and t_int.seconds == pytest.approx(1e-3)
    assert t_int.roof == "variadic-reduction int32 (v)"
    # Without an int32 roof, the integer kernel takes the float32 one.
    only_float = roofs.measured(typed_ceilings({**ceilings, "rates": entries[:1]}))
    assert only_float is not None
    t = patterns.pattern_time(kernel_record(ints), "float32", only_float)
    assert t is not None and t.seconds == pytest.approx(4e-3)


def test_an_fft_takes_the_complex_fft_rate() -> None:
    entries = [_pattern_entry("fft", [(1 << 24, 50e-6), (1 << 27, 400e-6)], dtype="complex64")]
    ceilings = {"available": True, "backend": "cpu", "compute": [], "bandwidth": [],
                "dispatch": {"available": True, "value": 6e-6, "enqueued": None},
                "rates": entries}
    m = roofs.measured(typed_ceilings(ceilings))
    assert m is not None
    kernel = {**_kernel("fft", 1 << 27), "read_by_dtype": {"c64": 1 << 21}}
    t = patterns.pattern_time(kernel_record(kernel), "float32", m)
    assert t is not None and t.seconds == pytest.approx(400e-6) and t.unit == "FLOP"
    # Its operands' type, not the program's float type, picks the roof; none for floats.
    assert patterns.pattern_time(kernel_record({**kernel, "read_by_dtype": {"f32": 1 << 21}}),
                                 "float32",
                                 m) is None


def test_a_complex_dot_takes_the_complex_loop_dot_rate() -> None:
    # A complex dot stays a plain dot, each complex multiply-add four real ones: its operands'
    # type picks the complex64 loop-dot roof over the float32 one.
    entries = [_pattern_entry("loop-dot", [(1 << 20, 10e-6), (1 << 24, 100e-6)]),
               _pattern_entry("loop-dot", [(1 << 20, 60e-6), (1 << 24, 600e-6)],
                              dtype="complex64")]
    ceilings = {"available": True, "backend": "cpu", "compute": [], "bandwidth": [],
                "dispatch": {"available": True, "value": 6e-6, "enqueued": None},
                "rates": entries}
    m = roofs.measured(typed_ceilings(ceilings))
    assert m is not None
    kernel = {**_kernel("loop-dot", 1 << 24), "read_by_dtype": {"c64": 1 << 20}}
    t = patterns.pattern_time(kernel_record(kernel), "float32", m)
    assert t is not None and t.seconds == pytest.approx(600e-6)
    assert t.roof == "loop-dot complex64 (v)"
    floats = patterns.pattern_time(kernel_record({**kernel, "read_by_dtype": {"f32": 1 << 20}}),
                                   "float32", m)
    assert floats is not None and floats.seconds == pytest.approx(100e-6)
    # Without a complex64 roof (ceilings measured before it was), the float32 one.
    only_float = roofs.measured(typed_ceilings({**ceilings, "rates": entries[:1]}))
    assert only_float is not None
    t = patterns.pattern_time(kernel_record(kernel), "float32", only_float)
    assert t is not None and t.seconds == pytest.approx(100e-6)


def test_roofs_from_ceilings_take_dispatch_off_and_skip_variants() -> None:
    entries = [
        _pattern_entry("transpose", [(4096, 14e-6), (262144, 135e-6)], variant="2-D swap"),
        _pattern_entry("transpose", [(4096, 10e-6), (262144, 60e-6)], roof=False,
                       variant="3-D"),
    ]
    for e in entries:
        schema.RateCeiling.model_validate_json(json.dumps(e))  # a valid results record
    ceilings = {"available": True, "backend": "cpu", "compute": [], "bandwidth": [],
                "dispatch": {"available": True, "value": 6e-6, "enqueued": 4e-6},
                "rates": entries}
    m = roofs.measured(typed_ceilings(ceilings))
    assert m is not None
    assert [r.name for r in m.rates] == ["transpose float32 (2-D swap)"]  # the variant is not
    roof = m.rate_for("transpose", "float32")
    assert roof is not None
    # The enqueued dispatch (4 us) taken off each call: 4096 / 10 us, 262144 / 131 us.
    assert [n for n, _ in roof.by_size] == [4096, 262144]
    assert [r for _, r in roof.by_size] == pytest.approx([4096 / 10e-6, 262144 / 131e-6])
    t = patterns.pattern_time(kernel_record(_kernel("transpose", 262144)), "float32", m)
    assert t is not None and t.seconds == pytest.approx(131e-6)


# ------------------------------------------------------------------------ measuring (jax)


def test_plans_are_small_and_ascending() -> None:
    from roofline_report.observe.ceilings import pattern_plans

    full = pattern_plans.pattern_plan("cpu", quick=False)
    quick = pattern_plans.pattern_plan("cpu", quick=True)
    assert list(full.sizes) == sorted(full.sizes) and full.sizes[0] == 1 << 12
    assert len(quick.sizes) < len(full.sizes) and not quick.variant_sizes
    # Sorts run at tens of millions of comparisons a second on a CPU: fewer, smaller keys.
    assert full.sort_sizes == (256, 1024, 4096, 16384) and len(quick.sort_sizes) == 2
    assert set(full.variant_sizes) <= set(full.sizes)
    names = [(k.pattern, k.dtype, k.roof) for k in pattern_plans.kernels(full)]
    # every pattern has a float32 roof, an FFT a complex one; a TPU's own pattern is planned
    # on a TPU only
    for pattern in patterns.PATTERNS:
        if pattern in ("reduce-window-lane", "on-chip", "update-slice"):
            assert (pattern, "float32", True) not in names
            continue
        assert (pattern, "complex64" if pattern == "fft" else "float32", True) in names
    # one roof per pattern and dtype (a top-k's, per row length, a scatter's and a gather's of
    # single elements per table, an FFT's per operand, an argument or computed, a
    # transpose's with its operand in main memory, too: chosen by the kernel's): rate_for
    # must not have to choose otherwise
    roofs_only = [(k.pattern, k.dtype, k.row, k.table, k.computed, k.from_memory)
                  for k in pattern_plans.kernels(full) if k.roof]
    assert len(roofs_only) == len(set(roofs_only))
    rows = sorted((k.pattern, k.row) for k in pattern_plans.kernels(full) if k.row)
    assert rows == [("block-transpose", 64), ("block-transpose", 1024),
                    *[("broadcast-transpose", row) for row in (8, 16, 64, 128, 256, 1024)],
                    ("fft", 256),
                    ("fft", 400), ("fft", 400), ("fft", 512), ("fft", 512), ("fft", 2048),
                    ("gather", 1), ("gather", 1), ("gather", 1),
                    ("gather", 64), ("gather", 256), ("mat-vec", 1), ("mat-vec", 1),
                    ("mat-vec", 16), ("normalization", 64), ("reduce-window", 1),
                    ("reduce-window", 5),
                    ("scatter", 1), ("scatter", 1), ("scatter", 1),
                    ("scatter", 16), ("scatter", 64),
                    ("scatter", 256), ("top-k", 1024), ("top-k", 4096), ("vec-mat", 16)]


def test_compiled_programs_are_checked_for_their_pattern() -> None:
    jax = pytest.importorskip("jax")
    if jax.default_backend() != "cpu":  # a TPU runs every dot on its matrix unit
        pytest.skip("XLA:CPU's loop dots and library products; test_tpu_hlo checks a TPU's")
    jnp = jax.numpy
    from roofline_report.observe.ceilings.pattern_check import pattern_kernel

    def text(fn: Any, *args: Any) -> str:
        return str(jax.jit(fn).lower(*args).compile().as_text())

    a = jnp.ones((64, 64), jnp.float32)
    loop_dot = text(lambda x, y: jnp.einsum("km,nk->mn", x, y), a, a)
    library_dot = text(lambda x, y: x @ y, a, a)
    assert pattern_kernel(loop_dot, "loop-dot")[0] is not None
    name, described = pattern_kernel(library_dot, "loop-dot")
    assert name is None and "ynn" in described  # handed to the matmul library
    assert pattern_kernel(text(lambda x: x.T, a), "transpose")[0] is not None
    assert pattern_kernel(text(lambda x: x * 2, a), "transpose")[0] is None
    columns = text(lambda x: jnp.sum(x, axis=0), a)
    rows = text(lambda x: jnp.sum(x, axis=1), a)
    assert pattern_kernel(columns, "strided-reduction")[0] is not None
    assert pattern_kernel(rows, "strided-reduction")[0] is None
    assert pattern_kernel(text(lambda x: jnp.argmax(x, axis=1), a),
                          "variadic-reduction")[0] is not None
    assert pattern_kernel(rows, "variadic-reduction")[0] is None
    v = jnp.ones((256,), jnp.float32)
    assert pattern_kernel(text(lambda x: jnp.argsort(x, stable=True), v), "sort")[0]
    assert pattern_kernel(text(lambda x: x * 2, v), "sort")[0] is None
    top = text(lambda x: jax.lax.top_k(x, 4), a)
    assert pattern_kernel(top, "top-k")[0] is not None
    assert pattern_kernel(top, "sort")[0] is None  # a custom call of its own
    assert pattern_kernel(text(lambda x: x * 2, a), "top-k")[0] is None
    fused = text(lambda x, y: x.T * y, a, a)
    assert pattern_kernel(fused, "fused-transpose")[0] is not None
    assert pattern_kernel(fused, "transpose")[0] is None  # its root is the multiply
    assert pattern_kernel(text(lambda x: x.T, a), "fused-transpose")[0] is None
    assert pattern_kernel(text(lambda x: x.astype(jnp.bfloat16), a), "lone-convert")[0]
    assert pattern_kernel(text(lambda x: (x * 2).astype(jnp.bfloat16), a),
                          "lone-convert")[0] is None
    assert pattern_kernel(text(lambda x, y: x + y, a, a), "lone-op")[0]
    assert pattern_kernel(text(lambda x, y: x * 2 + y, a, a), "lone-op")[0] is None
    rows = jnp.ones((4096, 64), jnp.float32)
    norm = text(lambda x: (x - x.mean(-1, keepdims=True))
                * jax.lax.rsqrt(jnp.square(x - x.mean(-1, keepdims=True)).mean(-1, keepdims=True)
                                + 1e-6), rows)
    assert pattern_kernel(norm, "normalization")[0] is not None
    assert pattern_kernel(text(lambda x: x.sum(-1), rows), "normalization")[0] is None


def test_a_top_k_roof_turns_through_operands_of_other_values() -> None:
    """A branch predictor learns a top-k's operand met again: the roof's calls take operands of
    other values in turn, TOP_K_DISTINCT elements in all, and one operand once that many."""
    jax = pytest.importorskip("jax")
    import numpy as np

    from roofline_report.observe.ceilings import pattern_programs as programs

    small = programs.top_k("float32", 1024)(16 * 1024)
    operands = [small.args, *small.rotate]
    assert len(operands) * small.ops == programs.TOP_K_DISTINCT
    assert {tuple(np.shape(a)) for (a,) in operands} == {(16, 1024)}
    firsts = {float(np.asarray(a)[0, 0]) for (a,) in operands}
    assert len(firsts) == len(operands)  # other values, not copies of one array
    out = jax.jit(small.fn)(*small.rotate[-1])[0]
    assert out.shape == (16, programs.TOP_K)
    large = programs.top_k("float32", 1024)(programs.TOP_K_DISTINCT)
    assert large.rotate == () and large.ops == programs.TOP_K_DISTINCT
    tiny = programs.top_k("float32", 1024)(1)  # one row: at most TOP_K_TURNS operands
    assert len(tiny.rotate) + 1 == programs.TOP_K_TURNS


@pytest.mark.slow
def test_tiny_measurement_and_an_unavailable_pattern() -> None:
    pytest.importorskip("jax")
    from roofline_report.observe.ceilings import patterns as measure
    from roofline_report.observe.ceilings.pattern_plans import (
        GATHER_ELEMENT_SIZES,
        Kernel,
        PatternPlan,
    )

    plan = PatternPlan(sizes=(1 << 12,), dot_sides=(32,), variant_sizes=(1 << 12,),
                       bfloat16_sizes=(), samples=2, min_sample_s=1e-3, sort_sizes=(256,))
    entries = measure.measure_patterns(plan)
    # The gathers' permutations are not kept in device memory past the measurement.
    from roofline_report.observe.ceilings.pattern_programs import _permutation

    assert _permutation.cache_info().currsize == 0
    for e in entries:  # on every backend: measured, or unavailable with the reason
        schema.RateCeiling.model_validate_json(json.dumps(e))
        assert bool(e["by_size"]) if e["available"] else e["reason"], e["name"]
    import jax

    if jax.default_backend() != "cpu":
        # What follows are XLA:CPU's forms (a TopK call, copy_multiply fusions, a CPU's own
        # kinds); a TPU compiles many of these patterns to other forms, which its own
        # fixtures check.
        return
    # A CPU's own kinds come last, each a roof of its row: a narrow product by its width and
    # side, the transposed dot, a block transpose by its run, a real FFT by its length, a row
    # gather and a row scatter by their widths, a scatter of single elements by its table, a
    # reduce-window by the arrays it reduces together, a conversion alone, a layer norm of
    # short rows.
    own = entries[21:]
    # Single elements gathered from fixed tables, after the sort (roofs on every backend), at
    # their own sizes of output whatever the plan's (a random element of a large table is
    # slow: a call must outlast its launch).
    tables = entries[9:12]
    assert [(e["op"], e.get("row"), e.get("table")) for e in tables] == [
        ("gather", 1, 1 << 14), ("gather", 1, 1 << 20), ("gather", 1, 1 << 26)]
    for e in tables:
        assert e["available"] and e["roof"], e["reason"]
        assert [p["elements"] for p in e["by_size"]] == list(GATHER_ELEMENT_SIZES)
    del entries[9:12]
    assert [(e["op"], e.get("row")) for e in own] == [
        ("mat-vec", 1), ("mat-vec", 16), ("mat-vec", 1), ("vec-mat", 16),
        ("transposed-dot", None),
        ("block-transpose", 64),
        ("block-transpose", 1024), ("fft", 256), ("fft", 400), ("fft", 512), ("fft", 2048),
        ("fft", 400), ("fft", 512), ("fft", None), ("transpose", None), ("gather", 64),
        ("scatter", 16), ("scatter", 64), ("scatter", 1), ("scatter", 1),
        ("reduce-window", 1), ("reduce-window", 5), ("sum-window", None),
        ("lone-convert", None), ("lone-op", None),
        *[("broadcast-transpose", row) for row in (8, 16, 64, 128, 256, 1024)],
        ("normalization", 64)]
    for e in own:
        schema.RateCeiling.model_validate_json(json.dumps(e))
        assert e["roof"]
    # The product of one column with its matrix computed before it, and the FFTs of an
    # operand computed before them: each point the call less its baseline (the same call
    # without the product or the FFT), so below the whole call's time.
    assert [e.get("computed") for e in own] == [None] * 2 + [True] + [None] * 8 + [True] * 3 \
        + [None] * 18
    # (A plan's matrix too small for a matrix-vector product measures neither product.)
    product = own.pop(2)
    assert product["available"] == own[0]["available"], product["reason"]
    computed = [*own[10:13], *([product] if product["available"] else [])]
    for e in computed:
        assert e["available"], e["reason"]
        for point in e["by_size"]:
            assert point["seconds"] > 0
            assert point["value"] == pytest.approx(point["elements"] / point["seconds"])
        # The best size's point against its whole call.
        best = max(e["by_size"], key=lambda point: point["value"])
        assert best["seconds"] < min(e["timing"]["per_call_s"])
    del own[10:13]
    # The 2-D swap with its operand from main memory: 4 MiB operands taken in turn, slower
    # per element than the same swap with its operand in the cache.
    cold = own.pop(10)
    assert cold["from_memory"] and cold["op"] == "transpose" and cold["available"], cold
    assert cold["by_size"][0]["shape"] == [1024, 1024]
    assert "from_memory" not in entries[0]
    # 64 x 64 is no matrix beside a few vectors (a small product: both sides narrow); the others
    # ran at their smallest sizes; a layer norm of 64 rows is split into several kernels
    assert [e["available"] for e in own] == [False, False, False] + [True] * 23 + [False]
    # The pools of one image [1, 32, 32, 32] (the size asked is smaller): a 3 x 3 max pool's
    # 70,688 window elements on the input; 5 arrays' 2 x 2 windows, 5 x 32,768; a cumulative
    # sum's windows of 16 over 8 rows of 512, 136 elements each.
    # The layer norm of short rows: asked 4,096 elements, 64 rows of 64, which XLA:CPU splits
    # into several kernels: unavailable, with the kernels it ran.
    norm = own.pop()
    assert not norm["available"] and "has no normalization kernel" in norm["reason"]
    # The broadcast transposes by the rows each output run reads: [row, n] swapped, n = 4,096
    # / row columns but at least 256 (rows of 1 KiB, which share cache sets).
    by_row = own[-6:]
    del own[-6:]
    assert [e["by_size"][0]["shape"] for e in by_row] == [
        [row, max(256, 4096 // row)] for row in (8, 16, 64, 128, 256, 1024)]
    assert [e["by_size"][0]["elements"] for e in by_row] == [
        row * max(256, 4096 // row) for row in (8, 16, 64, 128, 256, 1024)]
    # The add alone: float32 [R, 256] and [R, 256] to their sum, its elements and bytes.
    lone = own.pop()
    assert lone["by_size"][0]["shape"][1] == 256 and lone["unit"] == "elements/s"
    assert lone["by_size"][0]["bytes"] == 12 * lone["by_size"][0]["elements"]
    windows = own[-4:-1]
    assert [e["by_size"][0]["elements"] for e in windows] == [70688, 5 * 32768, 8 * 32 * 136]
    assert [e["by_size"][0]["shape"] for e in windows] == [[1, 32, 32, 32]] * 2 + [[8, 32, 16]]
    # The conversion alone: float32 [R, 256] to bfloat16, its elements and bytes.
    convert = own[-1]
    assert convert["by_size"][0]["shape"][1] == 256 and convert["unit"] == "elements/s"
    assert convert["by_size"][0]["bytes"] == 6 * convert["by_size"][0]["elements"]
    del own[-4:]
    # single elements scattered into tables of 16 KiB and 1 MiB, each a roof of its table
    assert [e["table"] for e in own[-2:]] == [1 << 14, 1 << 20]
    assert "has no mat-vec kernel" in own[0]["reason"]
    assert own[3]["by_size"][0]["elements"] == 2 * 32**3 and own[3]["unit"] == "FLOP/s"
    assert own[6]["by_size"][0]["shape"] == [16, 256] and own[6]["unit"] == "FLOP/s"
    del entries[18:]
    assert [e["op"] for e in entries] == ["transpose", "strided-reduction",
                                          "variadic-reduction", "variadic-reduction", "gather",
                                          "scatter", "loop-dot", "loop-dot", "sort",
                                          "top-k", "top-k", "fused-transpose",
                                          "broadcast-transpose",
                                          "interleaved-reduction", "fft", "transpose",
                                          "gather", "scatter"]
    # The argmax roof in float32 and in int32 (an integer argmax has no NaN tests).
    assert [e["dtype"] for e in entries[2:4]] == ["float32", "int32"]
    # The loop dot in float32 and complex64, each 2 n^3 of XLA's flops per call.
    assert [e["dtype"] for e in entries[6:8]] == ["float32", "complex64"]
    assert entries[7]["by_size"][0]["elements"] == 2 * 32**3
    assert entries[7]["by_size"][0]["kernel"]  # the complex product is a plain dot too
    # A 2-D FFT of 8 complex [16, 16] planes (4096 elements asked: 8 x 22 x 22, down to a
    # power of two), in XLA's flops: 8 per element per log2 of each length.
    fft = entries[14]
    assert (fft["dtype"], fft["unit"]) == ("complex64", "FLOP/s")
    assert fft["by_size"][0]["shape"] == [8, 16, 16]
    assert fft["by_size"][0]["elements"] == 8 * 4 * 4 * (8 * 16 * 16)
    del entries[14]
    del entries[7]
    del entries[3]  # the indices below are the float32 roofs'

    for e in entries:
        schema.RateCeiling.model_validate_json(json.dumps(e))
        assert e["available"], e["reason"]
        (point,) = e["by_size"]
        assert point["value"] == pytest.approx(point["elements"] / point["seconds"])
        assert e["value"] == point["value"] and point["kernel"]
    assert entries[5]["unit"] == "FLOP/s" and entries[5]["by_size"][0]["elements"] == 2 * 32**3
    # The FFT's is a roof too; beside the roofs, the 3-D transpose and the gather of scattered
    # elements; the scatter of scattered elements is a roof of its own row (1 an index).
    assert [e["roof"] for e in entries] == [True] * 12 + [False, False, True]
    assert [e.get("row") for e in (entries[3], entries[4], entries[13], entries[14])] == \
        [256, 256, None, 1]
    # (x * 2).T of a 256 x 256 square (rows of a power of two bytes, 1 KiB at least): the
    # output's elements, the broadcast in the copy's loop.
    assert entries[10]["by_size"][0]["elements"] == 256 * 256
    assert entries[10]["by_size"][0]["shape"] == [256, 256]
    # The sum over axes (1, 3) of [2, 32, 32, 2]: 2 x 32 x 32 runs of 2 elements a call.
    interleaved = entries[11]
    assert (interleaved["op"], interleaved["unit"]) == ("interleaved-reduction", "runs/s")
    assert interleaved["by_size"][0]["shape"] == [2, 32, 32, 2]
    assert interleaved["by_size"][0]["elements"] == 2 * 32 * 32
    # x.T * y of a 64 x 64 square: the output's elements, the copy fused into the multiply.
    assert entries[9]["by_size"][0]["elements"] == 64 * 64
    assert entries[9]["by_size"][0]["kernel"].startswith("copy_multiply")
    # The top 16 of rows of 1024 (four of them) and of one row of 4096: the elements searched
    # a call, the TopK custom call, a roof for each row length.
    assert [e["row"] for e in entries[7:9]] == [1024, 4096]
    assert [e["by_size"][0]["shape"] for e in entries[7:9]] == [[4, 1024], [1, 4096]]
    assert entries[8]["by_size"][0]["elements"] == 4096
    assert entries[8]["by_size"][0]["kernel"] == "custom-call"
    # 256 keys: 256 x 8 comparisons a call.
    assert entries[6]["unit"] == "comparisons/s"
    assert entries[6]["by_size"][0]["elements"] == 256 * 8
    assert entries[2]["by_size"][0]["shape"] == [4, 1024]  # argmax over 4 rows of 1024
    assert entries[3]["variant"] == entries[4]["variant"][-len("rows of 256"):] == "rows of 256"
    assert entries[4]["by_size"][0]["shape"] == [16, 256]  # 4096 elements in rows of 256

    # A "loop dot" that the compiler hands to its matmul library is not measured.
    library = Kernel("loop-dot", "a @ b", True, "float32", (32,), _library_dot("float32"))
    ready, why = measure._prepare([library])[0]
    assert not ready and "has no loop-dot kernel" in why[0]
    entry = measure._entry(library, ready, why)
    assert not entry["available"] and "ynn" in entry["reason"]


def _library_dot(dtype: str) -> Any:
    from roofline_report.observe.ceilings.pattern_programs import Point, _array

    def build(n: int) -> Any:
        a = _array((n, n), dtype)
        return Point(lambda x, y: x @ y, (a, a), 2 * n**3, 12 * n * n, (n, n, n))

    return build
