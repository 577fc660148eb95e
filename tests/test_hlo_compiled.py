"""The compiled program read from its optimized HLO: fusions, custom calls, collectives, loops,
kernels, and the text fit to publish (:mod:`roofline_report.hlo.compiled`)."""

from __future__ import annotations

import re
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax import lax

from roofline_report.errors import InputError
from roofline_report.hlo import compiled as hlo_compiled

ON_CPU = jax.default_backend() == "cpu"
cpu_only = pytest.mark.skipif(not ON_CPU, reason="the CPU backend's programs are checked")


def _lower(fn: Any, *args: Any) -> Any:
    return jax.jit(fn).lower(*args)


def _f32(*shape: int) -> jax.Array:
    return jnp.ones(shape, jnp.float32)


def seed(a: jax.Array, b: jax.Array) -> Any:
    return jnp.tanh(a @ b)


def fori_tanh(c: jax.Array, x: jax.Array) -> Any:
    return lax.fori_loop(0, 10, lambda i, v: jnp.tanh(c @ v), x)


# ---- the compiled HLO ----------------------------------------------------------------------

GPU_STYLE_HLO = r"""HloModule jit_step, is_scheduled=true, entry_computation_layout={(f32[1024]{0}, bf16[256,256]{1,0})->(f32[1024]{0}, bf16[256,256]{1,0})}, num_partitions=4

FileNames
1 "/home/someone/project/step.py"

FunctionNames
1 "step"

FileLocations
1 {file_name_id=1 function_name_id=1 line=10 end_line=10 column=4 end_column=20}

StackFrames
1 {file_location_id=1 parent_frame_id=1}


%add.clone (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %add.1 = f32[] add(f32[] %x, f32[] %y)
}

%fused_tanh (param_0: bf16[256,256]) -> bf16[256,256] {
  %param_0 = bf16[256,256]{1,0} parameter(0)
  ROOT %tanh.1 = bf16[256,256]{1,0} tanh(bf16[256,256]{1,0} %param_0), metadata={op_name="jit(step)/tanh" source_file="/home/someone/project/step.py" source_line=12}
}

%body (loop_param: (s32[], bf16[256,256])) -> (s32[], bf16[256,256]) {
  %loop_param = (s32[], bf16[256,256]{1,0}) parameter(0)
  %gte.0 = s32[] get-tuple-element((s32[], bf16[256,256]{1,0}) %loop_param), index=0
  %gte.1 = bf16[256,256]{1,0} get-tuple-element((s32[], bf16[256,256]{1,0}) %loop_param), index=1
  %constant.1 = s32[] constant(1)
  %add.2 = s32[] add(s32[] %gte.0, s32[] %constant.1)
  %custom-call.1 = (bf16[256,256]{1,0}, s8[4194304]{0}) custom-call(bf16[256,256]{1,0} %gte.1, bf16[256,256]{1,0} %gte.1), custom_call_target="__cublas$gemm", backend_config={"operation_queue_id":"0","gemm_backend_config":{"alpha_real":1,"beta":0,"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["0"]}}}
  %get-tuple-element.5 = bf16[256,256]{1,0} get-tuple-element((bf16[256,256]{1,0}, s8[4194304]{0}) %custom-call.1), index=0
  %loop_tanh_fusion = bf16[256,256]{1,0} fusion(bf16[256,256]{1,0} %get-tuple-element.5), kind=kLoop, calls=%fused_tanh, metadata={op_name="jit(step)/tanh" source_file="/home/someone/project/step.py" source_line=12}
  ROOT %tuple.2 = (s32[], bf16[256,256]{1,0}) tuple(s32[] %add.2, bf16[256,256]{1,0} %loop_tanh_fusion)
}

%cond (cond_param: (s32[], bf16[256,256])) -> pred[] {
  %cond_param = (s32[], bf16[256,256]{1,0}) parameter(0)
  %gte.2 = s32[] get-tuple-element((s32[], bf16[256,256]{1,0}) %cond_param), index=0
  %constant.2 = s32[] constant(10)
  ROOT %compare.1 = pred[] compare(s32[] %gte.2, s32[] %constant.2), direction=LT
}

%reduce_scatter_computation (p: f32[1024]) -> f32[256] {
  %p = f32[1024]{0} parameter(0)
  ROOT %reduce-scatter.1 = f32[256]{0} reduce-scatter(f32[1024]{0} %p), channel_id=3, replica_groups={{0,1,2,3}}, dimensions={0}, to_apply=%add.clone
}

ENTRY %main.10 (p0: f32[1024], p1: bf16[256,256]) -> (f32[1024], bf16[256,256], f32[4096], f32[256], f32[1024]) {
  %p0 = f32[1024]{0} parameter(0)
  %p1 = bf16[256,256]{1,0} parameter(1)
  %all-reduce-start = f32[1024]{0} all-reduce-start(f32[1024]{0} %p0), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%add.clone, backend_config={"operation_queue_id":"0","collective_backend_config":{"is_sync":false}}
  %all-gather-start = (f32[1024]{0}, f32[4096]{0}) all-gather-start(f32[1024]{0} %p0), channel_id=2, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true
  %reduce-scatter-start = ((f32[1024]{0}), f32[256]{0}) async-start(f32[1024]{0} %p0), calls=%reduce_scatter_computation
  %constant.3 = s32[] constant(0)
  %tuple.1 = (s32[], bf16[256,256]{1,0}) tuple(s32[] %constant.3, bf16[256,256]{1,0} %p1)
  %while.1 = (s32[], bf16[256,256]{1,0}) while((s32[], bf16[256,256]{1,0}) %tuple.1), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"10"},"known_init_step":{"init":"0","step":"1"},"known_induction_variable":{"tuple_index":"0"}}
  %all-reduce-done = f32[1024]{0} all-reduce-done(f32[1024]{0} %all-reduce-start)
  %all-gather-done = f32[4096]{0} all-gather-done((f32[1024]{0}, f32[4096]{0}) %all-gather-start)
  %reduce-scatter-done = f32[256]{0} async-done(((f32[1024]{0}), f32[256]{0}) %reduce-scatter-start)
  %collective-permute = f32[1024]{0} collective-permute(f32[1024]{0} %p0), channel_id=4, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  %all-reduce.7 = f32[16]{0} all-reduce(f32[16]{0} %p0), channel_id=5, replica_groups=mesh['axis_0'=1,'axis_1'=4] {'axis_1'}, use_global_device_ids=true, to_apply=%add.clone
  %gte.3 = bf16[256,256]{1,0} get-tuple-element((s32[], bf16[256,256]{1,0}) %while.1), index=1
  ROOT %tuple.3 = (f32[1024]{0}, bf16[256,256]{1,0}, f32[4096]{0}, f32[256]{0}, f32[1024]{0}) tuple(%all-reduce-done, %gte.3, %all-gather-done, %reduce-scatter-done, %collective-permute)
}
"""  # noqa: E501


def test_inspect_gpu_style_hlo() -> None:
    info = hlo_compiled.inspect_compiled(GPU_STYLE_HLO)
    assert info["entry"] == "main.10"
    assert info["custom_calls"] == [
        {
            "name": "custom-call.1",
            "target": "__cublas$gemm",
            "shape": "(bf16[256,256]{1,0}, s8[4194304]{0})",
            "bytes": 2 * 256 * 256 + 4194304,
            "op_name": None,
            "source": None,
        }
    ]
    assert info["fusions"] == {"count": 1, "by_kind": {"kLoop": 1}, "by_backend_kind": {}}
    assert info["while_loops"] == [
        {
            "name": "while.1",
            "known_trip_count": 10,
            "condition": "cond",
            "body": "body",
            "op_name": None,
            "source_file": None,
            "source_line": None,
            "source_column": None,
        }
    ]
    ops = [(c["op"], c["async"], c["result_bytes"]) for c in info["collectives"]]
    assert ops == [
        ("all-reduce", True, 4 * 1024),
        ("all-gather", True, 4 * 4096),  # the -done's shape, not the start's tuple
        ("reduce-scatter", True, 4 * 256),  # an async-start wrapping a reduce-scatter
        ("collective-permute", False, 4 * 1024),
        ("all-reduce", False, 4 * 16),
    ]
    groups = [c["replica_groups"] for c in info["collectives"]]
    assert groups == [[[0, 1, 2, 3]], [[0, 1, 2, 3]], [[0, 1, 2, 3]], None, [[0, 1, 2, 3]]]
    assert [c["group_size"] for c in info["collectives"]] == [4, 4, 4, 4, 4]
    assert [c["channel_id"] for c in info["collectives"]] == [1, 2, 3, 4, 5]
    permute = info["collectives"][3]
    assert permute["source_target_pairs"] == [[0, 1], [1, 2], [2, 3], [3, 0]]
    assert permute["bytes_per_device"] == 4 * 1024
    gather = info["collectives"][1]
    assert gather["instruction"] == "all-gather-start" and gather["computation"] == "main.10"
    assert gather["operand_bytes"] == 4 * 1024
    assert gather["bytes_per_device"] == 4 * 4096 * 3 // 4
    assert gather["arrays"] == [{"dtype": "f32", "shape": [4096], "bytes": 4 * 4096}]
    # ENTRY: 3 async starts + permute + all-reduce = 5, and the loop: (body 3 + cond 1) x 10.
    assert info["kernels"] == 5 + (3 + 1) * 10
    assert info["kernels_static"] == 5 + 3 + 1
    assert any("trip count" in note for note in info["notes"])


@cpu_only
def test_inspect_cpu_seed_and_loop() -> None:
    seed_info = hlo_compiled.inspect_compiled(
        _lower(seed, _f32(32, 16), _f32(16, 8)).compile().as_text()
    )
    assert seed_info["kernels"] == 2
    assert seed_info["fusions"]["count"] == 2
    assert seed_info["custom_calls"] == [] and seed_info["collectives"] == []
    loop_info = hlo_compiled.inspect_compiled(
        _lower(fori_tanh, _f32(8, 8), _f32(8, 8)).compile().as_text()
    )
    assert [loop["known_trip_count"] for loop in loop_info["while_loops"]] == [10]
    assert loop_info["kernels"] > 10 * 2 > loop_info["kernels_static"]


# ---- publishing ----------------------------------------------------------------------------


def _paths_left(text: str) -> list[str]:
    without_comments = re.sub(r"/\*.*?\*/", "", text)
    return re.findall(r"\S*/\S*", without_comments)


def test_strip_metadata_on_real_compiled_text() -> None:
    raw = _lower(fori_tanh, _f32(8, 8), _f32(8, 8)).compile().as_text()
    assert "test_hlo_compiled" in raw or "metadata=" in raw
    clean = hlo_compiled.strip_metadata(raw)
    assert _paths_left(clean) == []
    for gone in ("test_hlo_compiled", ".py", "metadata=", "source_file", "FileNames",
                 "StackFrames"):
        assert gone not in clean
    assert "ENTRY" in clean and "while(" in clean
    # Only what the metadata gave (op_name, source lines) is gone from the inspection.
    stripped_info = hlo_compiled.inspect_compiled(clean)
    raw_info = hlo_compiled.inspect_compiled(raw)
    assert raw_info["while_loops"][0]["op_name"] == "jit(fori_tanh)/while"
    for loop in raw_info["while_loops"]:
        loop.update(op_name=None, source_file=None, source_line=None, source_column=None)
    assert stripped_info == raw_info


def test_strip_metadata_handles_nesting_quotes_and_stray_paths() -> None:
    text = (
        'HloModule m\n\nFileNames\n1 "/srv/a/b.py"\n\n'
        "ENTRY %main (p: f32[2]) -> f32[2] {\n"
        '  %p = f32[2]{0} parameter(0), metadata={op_name="x{y}/z \\" }" source_file="/u/me/w.py"'
        " source_line=3 deep={a={b}}}\n"
        '  ROOT %n = f32[2]{0} negate(%p), source_file="/u/me/w.py", '
        'custom_call_target="C:\\Users\\me\\lib.so", note="/opt/jax/lib/x"\n'
        "}\n"
    )
    clean = hlo_compiled.strip_metadata(text)
    assert _paths_left(clean) == []
    assert "w.py" not in clean and "b.py" not in clean and "Users" not in clean
    assert "%p = f32[2]{0} parameter(0)\n" in clean
    assert "negate(%p)" in clean
    assert clean.endswith("}\n")


def test_bad_inputs_raise_input_error() -> None:
    with pytest.raises(InputError, match="no computation"):
        hlo_compiled.inspect_compiled("not HLO at all")
    with pytest.raises(InputError, match="HLO text"):
        hlo_compiled.inspect_compiled(42)  # type: ignore[arg-type]
