"""Our own HLO count against hand-computed values, and against XLA's cost analysis on CPU.

Conventions (see roofline_report/hlo/stablehlo_count.py): a dot is 2 x output elements x
contracted size; elementwise ops and compares are 1 flop per output element; tanh/exp/... are
transcendentals, not flops; a reduce costs (input elements - output elements) combines; a while
loop costs (condition + body) x trip count.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax import lax

from roofline_report.analysis import reconcile
from roofline_report.errors import InputError
from roofline_report.hlo import stablehlo_count, stablehlo_mlir, stablehlo_ops
from roofline_report.observe.lower import count_workload
from roofline_report.report.reconcile_words import flag_text, plain
from tests.reconcile_inputs import (
    analytic_record,
    compiled_record,
    hlo_count_record,
    xla_record,
)

ON_CPU = jax.default_backend() == "cpu"
cpu_only = pytest.mark.skipif(not ON_CPU, reason="XLA's CPU numbers are recorded for CPU")


def _lower(fn: Callable[..., Any], *args: Any) -> Any:
    return jax.jit(fn).lower(*args)


def _count(fn: Callable[..., Any], *args: Any) -> dict[str, Any]:
    return stablehlo_count.count_stablehlo(_lower(fn, *args).compiler_ir("stablehlo"))


def _xla(fn: Callable[..., Any], *args: Any) -> dict[str, float]:
    cost = _lower(fn, *args).compile().cost_analysis()
    assert isinstance(cost, dict)
    return cost


def _f32(*shape: int) -> jax.Array:
    return jnp.ones(shape, jnp.float32)


def seed(a: jax.Array, b: jax.Array) -> Any:
    return jnp.tanh(a @ b)


def scan_tanh(c: jax.Array, x: jax.Array) -> jax.Array:
    return lax.scan(lambda v, _: (jnp.tanh(c @ v), None), x, None, length=10)[0]


def fori_tanh(c: jax.Array, x: jax.Array) -> Any:
    return lax.fori_loop(0, 10, lambda i, v: jnp.tanh(c @ v), x)


LOOP_LINES = {  # where each loop is written in this file
    name: fn.__code__.co_firstlineno + 1 for name, fn in (("scan_tanh", scan_tanh),
                                                          ("fori_tanh", fori_tanh))
}


# ---- the seed ------------------------------------------------------------------------------


def test_seed_counts() -> None:
    count = _count(seed, _f32(32, 16), _f32(16, 8))
    assert count["flops"] == 2 * 32 * 16 * 8 == 8192
    assert count["transcendentals"] == 32 * 8 == 256
    assert count["argument_bytes"] == 4 * (32 * 16 + 16 * 8)
    assert count["result_bytes"] == 4 * 32 * 8
    assert count["minimum_bytes"] == 3584
    assert count["bytes_by_dtype"] == {"f32": 3584}
    assert count["ops"] == {"stablehlo.dot_general": 1, "stablehlo.tanh": 1}
    assert count["flops_by_op"] == {"stablehlo.dot_general": 8192}
    assert count["loops"] == [] and count["notes"] == []


@cpu_only
def test_seed_against_xla_on_cpu_flags_the_unfused_intermediate() -> None:
    args = (_f32(32, 16), _f32(16, 8))
    both = count_workload(seed, *args)
    xla = _xla(seed, *args)
    assert xla["flops"] == 8192 and xla["transcendentals"] == 256
    assert xla["bytes accessed"] == 5632  # the 1 KiB tanh input is written and read back
    assert both["compiled"]["kernels"] == 2
    result = reconcile.reconcile(
        analytic=analytic_record({"flops": 8192, "minimum_bytes": 3584}),
        ours=hlo_count_record(both["stablehlo"]),
        xla=xla_record(xla),
        compiled=compiled_record(both["compiled"]),
        measured_seconds=None,
        backend="cpu",
    )
    flops, _, traffic = result.rows
    assert flops.agree and flops.ours == 8192
    assert [f.cause for f in traffic.flags] == ["unfused_intermediate"]
    text = plain(flag_text(traffic.flags[0]))
    assert "5,632" in text and "3,584" in text and "2 kernels" in text
    assert result.traffic_efficiency == pytest.approx(5632 / 3584)


# ---- loops -----------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [scan_tanh, fori_tanh], ids=["scan", "fori_loop"])
def test_loop_body_times_trip_count(fn: Callable[..., Any]) -> None:
    count = _count(fn, _f32(64, 64), _f32(64, 64))
    # One iteration: the 64^3 matmul (2*64^3), the induction add and the condition's compare.
    body = 2 * 64**3 + 1 + 1
    assert count["loops"] == [
        {
            "index": 0,
            "trip_count": 10,
            "source": "cond",
            "body_flops": body,
            "body_transcendentals": 64 * 64,
            "op_name": f"jit({fn.__name__})/while",
            "location": f"test_stablehlo_count.py:{LOOP_LINES[fn.__name__]}",
            "compiled_while": None,  # no compiled program given
            "matched_by": None,
        }
    ]
    assert count["flops"] == 10 * body
    assert count["transcendentals"] == 10 * 64 * 64
    assert count["ops"]["stablehlo.dot_general"] == 10
    assert count["ops_static"]["stablehlo.dot_general"] == 1
    assert count["ops"]["func.call"] == 10  # the outlined body, followed into


@cpu_only
@pytest.mark.parametrize("fn", [scan_tanh, fori_tanh], ids=["scan", "fori_loop"])
def test_xla_costs_one_iteration_and_reconcile_says_so(fn: Callable[..., Any]) -> None:
    args = (_f32(64, 64), _f32(64, 64))
    both = count_workload(fn, *args)
    ours, compiled = both["stablehlo"], both["compiled"]
    xla = _xla(fn, *args)
    assert xla["flops"] == ours["loops"][0]["body_flops"]  # 1 x body
    assert ours["flops"] == 10 * xla["flops"]
    assert [loop["known_trip_count"] for loop in compiled["while_loops"]] == [10]
    result = reconcile.reconcile(
        analytic=None,
        ours=hlo_count_record(ours),
        xla=xla_record(xla),
        compiled=compiled_record(compiled),
        measured_seconds=None,
        backend="cpu",
    )
    flops_row = result.rows[0]
    assert not flops_row.agree
    assert "loop_counted_once" in [f.cause for f in flops_row.flags]
    assert "10× as much" in plain(flag_text(flops_row.flags[0]))


def test_data_dependent_loop_is_counted_once_and_said() -> None:
    def doubling(x: jax.Array) -> jax.Array:
        return lax.while_loop(lambda v: v.sum() < 100.0, lambda v: v * 2.0, x)

    module = _lower(doubling, _f32(8)).compiler_ir("stablehlo")
    once = stablehlo_count.count_stablehlo(module)
    # cond: reduce of 8 elements (7 adds) + compare (1); body: multiply of 8 elements.
    assert once["loops"][0]["trip_count"] is None
    assert once["loops"][0]["source"] == "unknown"
    assert once["unknown_trip_counts"] == 1
    assert once["flops"] == 7 + 1 + 8
    assert any("trip count not found" in note for note in once["notes"])

    given = stablehlo_count.count_stablehlo(module, trip_counts={0: 7})
    assert given["loops"][0]["trip_count"] == 7
    assert given["loops"][0]["source"] == "known_trip_count"
    assert given["flops"] == 7 * 16

    # Compiled loops without metadata pair by position, only when the counts agree.
    listed = stablehlo_count.count_stablehlo(
        module, compiled_loops=[{"name": "while.3", "known_trip_count": 5}]
    )
    assert listed["flops"] == 5 * 16
    assert listed["loops"][0]["compiled_while"] == "while.3"
    assert listed["loops"][0]["matched_by"] == "position"
    assert any("by position" in note for note in listed["notes"])
    mismatched = stablehlo_count.count_stablehlo(
        module, compiled_loops=[{"known_trip_count": 5}, {"known_trip_count": 6}]
    )
    assert mismatched["flops"] == 16
    assert any("do not pair up" in note for note in mismatched["notes"])
    # The compiled while of the same source line pairs whatever the order and the count.
    line = once["loops"][0]["location"].rsplit(":", 1)[1]
    other = {"name": "while.9", "known_trip_count": 99, "op_name": "jit(other)/while"}
    same = {"name": "while.4", "known_trip_count": 3, "op_name": "elsewhere",
            "source_file": "<path>/test_stablehlo_count.py", "source_line": int(line)}
    by_line = stablehlo_count.count_stablehlo(module, compiled_loops=[other, same])
    assert by_line["flops"] == 3 * 16
    assert (by_line["loops"][0]["compiled_while"], by_line["loops"][0]["matched_by"]) == (
        "while.4", "source line")
    with pytest.raises(InputError, match="compiled_loops"):
        stablehlo_count.count_stablehlo(module, trip_counts=[5])  # type: ignore[arg-type]


def test_nested_loops_multiply_and_pair_with_the_compiled_order() -> None:
    def nested(c: jax.Array, x: jax.Array) -> Any:
        def inner(j: int, w: jax.Array) -> jax.Array:
            return c @ w

        return lax.fori_loop(0, 3, lambda i, v: lax.fori_loop(0, 4, inner, v), x)

    both = count_workload(nested, _f32(8, 8), _f32(8, 8))
    ours = both["stablehlo"]
    inner_body = 2 * 8**3 + 2
    outer_body = 4 * inner_body + 2
    assert ours["flops"] == 3 * outer_body
    assert [loop["trip_count"] for loop in ours["loops"]] == [4, 3]  # post-order: inner first
    compiled = both["compiled"]["while_loops"]
    assert [loop["known_trip_count"] for loop in compiled] == [4, 3]
    # Paired by where they are written: the inner loop's op_name differs between the programs.
    assert [loop["matched_by"] for loop in ours["loops"]] == ["source location"] * 2
    assert [loop["compiled_while"] for loop in ours["loops"]] == [w["name"] for w in compiled]
    assert ours["loops"][0]["op_name"] == "while"
    assert compiled[0]["op_name"].endswith("/while/body/closed_call/while")
    assert not any("position" in note for note in ours["notes"])


# ---- hand-computed flops for common ops ----------------------------------------------------


def test_sum_and_cumsum() -> None:
    x = _f32(8, 32)
    # sum: 256 inputs reduced to 1 output: 255 adds.
    assert _count(jnp.sum, x)["flops"] == 8 * 32 - 1
    # cumsum along 32 is a reduce_window (window 32, padded 31 low): each of the 8*32 outputs
    # combines its 32-wide window, 31 adds; padding taps count (the op's semantics, and XLA's).
    cumsum = _count(lambda v: jnp.cumsum(v, axis=1), x)
    assert "stablehlo.reduce_window" in cumsum["ops"]
    assert cumsum["flops"] == 8 * 32 * (32 - 1) == 7936


def test_batched_matmul() -> None:
    a, b = _f32(4, 8, 16), _f32(4, 16, 32)
    count = _count(lambda p, q: jnp.einsum("bij,bjk->bik", p, q), a, b)
    assert count["flops"] == 2 * 4 * 8 * 32 * 16  # 2 x batch x M x N x K
    assert count["minimum_bytes"] == 4 * (4 * 8 * 16 + 4 * 16 * 32 + 4 * 8 * 32)


def test_convolution_valid_nhwc() -> None:
    def conv(x: jax.Array, k: jax.Array) -> jax.Array:
        return lax.conv_general_dilated(
            x, k, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )

    count = _count(conv, _f32(2, 10, 10, 3), _f32(3, 3, 3, 8))
    output_elements = 2 * 8 * 8 * 8
    assert count["flops"] == 2 * output_elements * (3 * 3) * 3  # x kernel taps x in-features


def test_convolution_same_nchw_counts_only_taps_on_the_input() -> None:
    def conv(x: jax.Array, k: jax.Array) -> jax.Array:
        return lax.conv_general_dilated(
            x, k, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW")
        )

    count = _count(conv, _f32(2, 3, 10, 10), _f32(8, 3, 3, 3))
    # Along each spatial dim, 10 outputs x 3 taps, less the 2 taps that fall on padding.
    taps = (10 * 3 - 2) ** 2
    assert count["flops"] == 2 * 2 * 3 * 8 * taps  # 2 x batch x in x out x taps


@cpu_only
def test_grouped_strided_dilated_convolution_matches_xla() -> None:
    def conv(x: jax.Array, k: jax.Array) -> jax.Array:
        return lax.conv_general_dilated(
            x,
            k,
            (2, 2),
            "SAME",
            rhs_dilation=(2, 1),
            feature_group_count=3,
            dimension_numbers=("NHWC", "HWIO", "NHWC"),
        )

    args = (_f32(2, 11, 10, 6), _f32(3, 3, 2, 9))
    assert _count(conv, *args)["flops"] == _xla(conv, *args)["flops"]


def test_softmax() -> None:
    count = _count(lambda v: jax.nn.softmax(v, axis=-1), _f32(8, 32))
    rows, cols = 8, 32
    flops = (
        rows * (cols - 1)  # max reduce
        + rows  # maximum with -inf (jax's guard)
        + rows * cols  # subtract the max
        + rows * (cols - 1)  # sum reduce
        + rows * cols  # divide
    )
    assert count["flops"] == flops == 1016
    assert count["transcendentals"] == rows * cols  # exp


@cpu_only
@pytest.mark.parametrize(
    "name",
    ["sum", "softmax", "bmm", "maxpool", "window", "sort", "argmax", "cond", "erf"],
)
def test_our_flops_match_xla_where_the_conventions_align(name: str) -> None:
    cases: dict[str, tuple[Callable[..., Any], tuple[Any, ...]]] = {
        "sum": (jnp.sum, (_f32(8, 32),)),
        "softmax": (lambda v: jax.nn.softmax(v, axis=-1), (_f32(8, 32),)),
        "bmm": (lambda a, b: jnp.einsum("bij,bjk->bik", a, b), (_f32(4, 8, 16), _f32(4, 16, 32))),
        "maxpool": (
            lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME"),
            (_f32(2, 9, 9, 4),),
        ),
        "window": (
            lambda x: lax.reduce_window(x, 0.0, lax.add, (1, 3), (1, 2), ((0, 0), (1, 1))),
            (_f32(8, 32),),
        ),
        "sort": (lambda x: jnp.sort(x, axis=1), (_f32(8, 32),)),
        "argmax": (lambda x: jnp.argmax(x, axis=1), (_f32(8, 32),)),
        "cond": (lambda x: lax.cond(x[0] > 0, jnp.exp, lambda v: v * 2, x), (_f32(8),)),
        "erf": (lambda x: lax.erf(x) + jnp.sqrt(x), (_f32(8, 32),)),
    }
    fn, args = cases[name]
    ours = _count(fn, *args)
    xla = _xla(fn, *args)
    assert ours["flops"] == xla.get("flops", 0.0)
    assert ours["transcendentals"] == xla.get("transcendentals", 0.0)


def test_sort_uses_n_log_n() -> None:
    n = 8 * 32
    assert _count(lambda x: jnp.sort(x, axis=1), _f32(8, 32))["flops"] == n * math.ceil(
        math.log2(n)
    )


def test_bytes_by_dtype_and_narrow_types() -> None:
    def mixed(a: jax.Array, i: jax.Array, m: jax.Array) -> jax.Array:
        return jnp.where(m, a.astype(jnp.float32), i.astype(jnp.float32))

    a = jnp.ones((32, 16), jnp.bfloat16)
    i = jnp.ones((32, 16), jnp.int32)
    m = jnp.ones((32, 16), jnp.bool_)
    count = _count(mixed, a, i, m)
    n = 32 * 16
    assert count["bytes_by_dtype"] == {"bf16": 2 * n, "f32": 4 * n, "i1": n, "i32": 4 * n}
    assert count["argument_bytes"] == (2 + 4 + 1) * n
    assert count["result_bytes"] == 4 * n
    # two converts and one select, each 1 flop per element
    assert count["flops"] == 3 * n


@pytest.mark.cpu_backend("XLA:CPU's LAPACK custom calls")
def test_custom_calls_are_listed_not_costed() -> None:
    count = _count(lambda x: jnp.linalg.cholesky(x @ x.T + 4 * jnp.eye(4)), _f32(4, 4))
    assert count["custom_calls"], "the CPU cholesky is a LAPACK custom call"
    assert any("not costed" in note for note in count["notes"])


def test_result_is_plain_deterministic_json() -> None:
    first = _count(scan_tanh, _f32(8, 8), _f32(8, 8))
    second = _count(scan_tanh, _f32(8, 8), _f32(8, 8))
    text = json.dumps(first, sort_keys=True, allow_nan=False)
    assert json.loads(text) == first
    assert text == json.dumps(second, sort_keys=True, allow_nan=False)


def test_dimension_number_fallback_parsers() -> None:
    dot = (
        "#stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], "
        "lhs_contracting_dimensions = [2, 3], rhs_contracting_dimensions = [1, 2]>"
    )
    assert stablehlo_mlir.parse_dot_contracting(dot) == [2, 3]
    assert stablehlo_mlir.parse_dot_contracting("#stablehlo.dot<>") is None
    conv = stablehlo_mlir.parse_conv_dims(
        "#stablehlo.conv<[b, f, 0, 1]x[o, i, 0, 1]->[b, 0, 1, f]>"
    )
    assert conv is not None
    assert (conv.input_batch, conv.input_feature, conv.input_spatial) == (0, 1, [2, 3])
    assert (conv.kernel_input_feature, conv.kernel_spatial) == (1, [2, 3])
    assert (conv.output_feature, conv.output_spatial) == (3, [1, 2])


def test_bad_inputs_raise_input_error() -> None:
    with pytest.raises(InputError, match="StableHLO MLIR module"):
        stablehlo_count.count_stablehlo("module {}")
    with pytest.raises(InputError, match="callable"):
        count_workload(42)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="cannot be lowered"):
        count_workload(seed, _f32(3, 4), _f32(5, 6))


SHARD_MAP_SCRIPT = """
import json, os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
os.environ["JAX_PLATFORMS"] = "cpu"  # four host devices, whatever accelerator is present
from functools import partial
import jax, jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P
from roofline_report.observe.lower import count_workload
from roofline_report.report.reconcile_words import flag_text, plain
mesh = jax.make_mesh((4,), ("x",), axis_types=(AxisType.Auto,))

@jax.jit
@partial(jax.shard_map, mesh=mesh, in_specs=(P("x"), P()), out_specs=P())
def f(a, b):
    return jax.lax.psum(jnp.tanh(a @ b), "x")

print(json.dumps(count_workload(f, jnp.ones((64, 32)), jnp.ones((32, 16)))))
"""


def test_shard_map_counts_one_shard_and_the_all_reduce_group() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SHARD_MAP_SCRIPT],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
        timeout=120,
    )
    result = json.loads(done.stdout)
    ours, compiled = result["stablehlo"], result["compiled"]
    # Each device multiplies its 16x32 shard by 32x16; the psum over 4 devices adds 3 times.
    assert ours["flops_by_op"] == {
        "stablehlo.dot_general": 2 * 16 * 32 * 16,
        "stablehlo.all_reduce": 3 * 16 * 16,
    }
    assert ours["minimum_bytes"] == 4 * (64 * 32 + 32 * 16 + 16 * 16)  # global shapes
    assert any("shard_map" in note for note in ours["notes"])
    (collective,) = compiled["collectives"]
    assert (collective["op"], collective["result_bytes"]) == ("all-reduce", 4 * 16 * 16)
    assert (collective["group_size"], collective["replica_groups"]) == (4, [[0, 1, 2, 3]])


# ---- counting that always returns ----------------------------------------------------------

_VERY_LARGE = 512 * 1024  # JAX's own roofline tests use this size


def _conv1d(stride: int, pad: int, lhs_dilation: int) -> Callable[..., Any]:
    def conv(x: jax.Array, k: jax.Array) -> jax.Array:
        return lax.conv_general_dilated(x, k, (stride,), [(pad, pad)],
                                        lhs_dilation=(lhs_dilation,))

    return conv


@pytest.mark.parametrize(
    ("conv", "x", "k", "flops"),
    [
        # Two inputs 524,288 apart on the dilated grid, one tap each: 2 of 524,289 outputs work.
        (_conv1d(1, 0, _VERY_LARGE), (1, 1, 2), (1, 1, 1), 2 * 2),
        # One input padded by 524,287 on each side, a 524,288-tap kernel: one tap per output.
        (_conv1d(1, _VERY_LARGE - 1, 1), (1, 1, 1), (1, 1, _VERY_LARGE), 2 * _VERY_LARGE),
        # 524,288 inputs 524,288 apart, stride 524,287: each output meets one input.
        (_conv1d(_VERY_LARGE - 1, 0, _VERY_LARGE), (1, 1, _VERY_LARGE), (1, 1, _VERY_LARGE),
         2 * _VERY_LARGE),
    ],
)
def test_huge_dilations_and_windows_count_in_closed_form(
    conv: Callable[..., Any], x: tuple[int, ...], k: tuple[int, ...], flops: int
) -> None:
    import time

    from roofline_report.hlo.kernels import kernel_inventory

    lowered = _lower(conv, _f32(*x), _f32(*k))
    module = lowered.compiler_ir("stablehlo")
    start = time.perf_counter()
    count = stablehlo_count.count_stablehlo(module)
    assert time.perf_counter() - start < 1.0
    assert count["flops"] == flops
    compiled = lowered.compile()
    if ON_CPU:
        assert _xla_flops(compiled) == flops
    assert kernel_inventory(compiled.as_text())["flops"] == flops


def _xla_flops(compiled: Any) -> float:
    cost = compiled.cost_analysis()
    assert isinstance(cost, dict)
    return float(cost.get("flops", 0.0))


def test_square_counts_its_multiplies() -> None:
    count = _count(lax.square, _f32(8, 16))
    assert count["flops_by_op"] == {"chlo.square": 8 * 16}
    assert count["flops"] == 128 and count["transcendentals"] == 0
    if ON_CPU:
        assert _xla(lax.square, _f32(8, 16))["flops"] == 128


_CHLO_UNARY: dict[str, Callable[..., Any]] = {
    "square": lax.square, "erf": lax.erf, "erf_inv": lax.erf_inv, "erfc": lax.erfc,
    "lgamma": lax.lgamma, "digamma": lax.digamma, "bessel_i1e": lax.bessel_i1e,
    "sinh": lax.sinh, "cosh": lax.cosh, "asin": lax.asin, "acos": lax.acos, "atan": lax.atan,
    "asinh": lax.asinh, "acosh": lax.acosh, "atanh": lax.atanh,
}
_CHLO_BINARY: dict[str, Callable[..., Any]] = {
    "polygamma": lax.polygamma, "zeta": lax.zeta, "next_after": lax.nextafter,
}


@cpu_only
@pytest.mark.parametrize("name", [*_CHLO_UNARY, *_CHLO_BINARY])
def test_chlo_ops_are_charged_what_xla_compiles_them_into(name: str) -> None:
    from roofline_report.hlo.kernels import kernel_inventory

    fn = _CHLO_UNARY.get(name) or _CHLO_BINARY[name]
    n = 1024
    args = [_f32(n) * 1.5] * (1 if name in _CHLO_UNARY else 2)
    lowered = _lower(fn, *args)
    assert f"chlo.{name}" in lowered.as_text()
    count = stablehlo_count.count_stablehlo(lowered.compiler_ir("stablehlo"))
    flops, transcendentals = stablehlo_ops.CHLO_CHARGES[f"chlo.{name}"]
    assert (count["flops"], count["transcendentals"]) == (flops * n, transcendentals * n)
    # The compiled program's kernels, counted by the same rules, hold the same work.
    compiled = lowered.compile()
    inventory = kernel_inventory(compiled.as_text())
    assert (inventory["flops"], inventory["transcendentals"]) == (flops * n, transcendentals * n)
    if name != "next_after":  # XLA charges next_after's bitcast-converts a flop each
        xla = compiled.cost_analysis()
        assert xla.get("flops", 0.0) == flops * n
        assert xla.get("transcendentals", 0.0) == transcendentals * n


def test_float64_expansions_cost_more() -> None:
    jax.config.update("jax_enable_x64", True)
    try:
        count = _count(lax.erf_inv, jnp.ones((10,), jnp.float64))
    finally:
        jax.config.update("jax_enable_x64", False)
    assert count["flops"] == 100 * 10 and count["transcendentals"] == 2 * 10


def test_ragged_dot_counts_a_dot_per_group_row() -> None:
    jax.config.update("jax_ragged_dot_use_ragged_dot_instruction", True)
    try:
        lowered = jax.jit(lambda a, b, g: lax.ragged_dot(a, b, g)).trace(
            _f32(64, 32), _f32(4, 32, 16), jnp.array([16, 16, 16, 16], jnp.int32)
        ).lower(lowering_platforms=("tpu",))
    finally:
        jax.config.update("jax_ragged_dot_use_ragged_dot_instruction", False)
    assert "chlo.ragged_dot" in lowered.as_text()
    count = stablehlo_count.count_stablehlo(lowered.compiler_ir("stablehlo"))
    assert count["flops_by_op"] == {"chlo.ragged_dot": 2 * 64 * 16 * 32}


def test_top_k_is_listed_not_costed() -> None:
    count = _count(lambda x: lax.top_k(x, 3), _f32(8, 16))
    assert count["flops"] == 0 and count["custom_calls"] == ["chlo.top_k"]
    assert any("TopK" in note for note in count["notes"])


def test_a_count_past_its_time_limit_says_not_counted_and_why() -> None:
    module = _lower(scan_tanh, _f32(8, 8), _f32(8, 8)).compiler_ir("stablehlo")
    stopped = stablehlo_count.count_stablehlo(module, time_limit_s=1e-9)
    assert stopped["available"] is False
    assert stopped["reason"].startswith("not counted: the count passed its 1e-09 s time limit")
    assert "operations" in stopped["reason"]
    inspected = _lower(scan_tanh, _f32(8, 8), _f32(8, 8)).compile().as_text()
    from roofline_report.hlo.compiled import inspect_compiled

    loops = inspect_compiled(inspected)["while_loops"]
    assert stablehlo_count.count_stablehlo(module, compiled_loops=loops,
                                           time_limit_s=1e-9)["available"] is False
    full = stablehlo_count.count_stablehlo(module, time_limit_s=None)
    assert full["flops"] == 10 * (2 * 8**3 + 2)  # the dot, the counter's add and compare
    for bad in (0, -1.0, "10", True):
        with pytest.raises(InputError, match="time_limit_s"):
            stablehlo_count.count_stablehlo(module, time_limit_s=bad)  # type: ignore[arg-type]
