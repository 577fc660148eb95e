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
from roofline_report.hlo import stablehlo_count

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
    both = stablehlo_count.count_workload(seed, *args)
    xla = _xla(seed, *args)
    assert xla["flops"] == 8192 and xla["transcendentals"] == 256
    assert xla["bytes accessed"] == 5632  # the 1 KiB tanh input is written and read back
    assert both["compiled"]["kernels"] == 2
    result = reconcile.reconcile(
        analytic={"flops": 8192, "minimum_bytes": 3584},
        ours=both["stablehlo"],
        xla=xla,
        compiled=both["compiled"],
        measured_seconds=None,
        backend="cpu",
    )
    flops, _, traffic = result["rows"]
    assert flops["agree"] and flops["ours"] == 8192
    assert [f["cause"] for f in traffic["flags"]] == ["unfused_intermediate"]
    text = traffic["flags"][0]["explanation"]
    assert "5632" in text and "3584" in text and "2 kernels" in text
    assert result["traffic_efficiency"] == pytest.approx(5632 / 3584)


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
    both = stablehlo_count.count_workload(fn, *args)
    ours, compiled = both["stablehlo"], both["compiled"]
    xla = _xla(fn, *args)
    assert xla["flops"] == ours["loops"][0]["body_flops"]  # 1 x body
    assert ours["flops"] == 10 * xla["flops"]
    assert [loop["known_trip_count"] for loop in compiled["while_loops"]] == [10]
    result = reconcile.reconcile(
        analytic=None,
        ours=ours,
        xla=xla,
        compiled=compiled,
        measured_seconds=None,
        backend="cpu",
    )
    flops_row = result["rows"][0]
    assert not flops_row["agree"]
    assert "loop_counted_once" in [f["cause"] for f in flops_row["flags"]]
    assert "10.0x" in flops_row["flags"][0]["explanation"]


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

    both = stablehlo_count.count_workload(nested, _f32(8, 8), _f32(8, 8))
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
    assert stablehlo_count.parse_dot_contracting(dot) == [2, 3]
    assert stablehlo_count.parse_dot_contracting("#stablehlo.dot<>") is None
    conv = stablehlo_count.parse_conv_dims(
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
        stablehlo_count.count_workload(42)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="cannot be lowered"):
        stablehlo_count.count_workload(seed, _f32(3, 4), _f32(5, 6))


SHARD_MAP_SCRIPT = """
import json, os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
from functools import partial
import jax, jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P
from roofline_report.hlo import stablehlo_count
mesh = jax.make_mesh((4,), ("x",), axis_types=(AxisType.Auto,))

@jax.jit
@partial(jax.shard_map, mesh=mesh, in_specs=(P("x"), P()), out_specs=P())
def f(a, b):
    return jax.lax.psum(jnp.tanh(a @ b), "x")

print(json.dumps(stablehlo_count.count_workload(f, jnp.ones((64, 32)), jnp.ones((32, 16)))))
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
