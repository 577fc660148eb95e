"""The IR of the optimized HLO (:mod:`roofline_report.hlo.ir`) on text that jax 0.10.2 printed.

SEED, SCAN, the fori_loop while, CHOL, RED and COLL are ``jax.jit(f).lower(*a).compile()
.as_text()`` of small functions on CPU (COLL and the GSPMD line on 8 host devices), trimmed and
with the source path replaced. jax 0.10.2 on CPU prints only kLoop and kCustom fusions and mesh
or explicit replica groups, so GPU_ASYNC is written by hand in the GPU spelling: async
``-start``/``-done`` pairs, iota replica groups, kInput and kOutput fusions.
"""

from __future__ import annotations

import pytest

from roofline_report.hlo.compiled import collective_records, inspect_compiled, while_loops
from roofline_report.hlo.ir import SourceLocation, parse_module
from roofline_report.hlo.replica_groups import parse_replica_groups
from roofline_report.hlo.shapes import Array, dtype_bits, parse_shape

# jax.jit(lambda a, b: jnp.tanh(a @ b)) on f32[32,16], f32[16,8]
SEED = r"""HloModule jit_seed, is_scheduled=true, entry_computation_layout={(f32[32,16]{1,0}, f32[16,8]{1,0})->f32[32,8]{1,0}}, allow_spmd_sharding_propagation_to_parameters={true,true}, allow_spmd_sharding_propagation_to_output={true}

FileNames
1 "/src/model.py"

FunctionNames
1 "<module>"
2 "seed"

FileLocations
1 {file_name_id=1 function_name_id=1 line=12 end_line=12 column=8 end_column=32}
2 {file_name_id=1 function_name_id=2 line=3 end_line=3 column=32 end_column=37}
3 {file_name_id=1 function_name_id=2 line=3 end_line=3 column=23 end_column=38}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=2}
3 {file_location_id=3 parent_frame_id=2}

%fused_computation (param_0: f32[32,16], param_1: f32[16,8]) -> f32[32,8] {
  %param_0 = f32[32,16]{1,0} parameter(0)
  %param_1 = f32[16,8]{1,0} parameter(1)
  ROOT %dot_general.0 = f32[32,8]{1,0} dot(%param_0, %param_1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(seed)/dot_general" stack_frame_id=2}
}

%wrapped_tanh_computation (param_0.1: f32[32,8]) -> f32[32,8] {
  %param_0.1 = f32[32,8]{1,0} parameter(0)
  ROOT %tanh.0 = f32[32,8]{1,0} tanh(%param_0.1), metadata={op_name="jit(seed)/tanh" stack_frame_id=3}
}

ENTRY %main.1 (a.1: f32[32,16], b.1: f32[16,8]) -> f32[32,8] {
  %a.1 = f32[32,16]{1,0} parameter(0), metadata={op_name="a"}
  %b.1 = f32[16,8]{1,0} parameter(1), metadata={op_name="b"}
  %ynn_fusion = f32[32,8]{1,0} fusion(%a.1, %b.1), kind=kCustom, calls=%fused_computation, metadata={op_name="jit(seed)/dot_general" stack_frame_id=2}, backend_config={"fusion_config":{"kind":"__ynn_fusion"},"outer_dimension_partitions":[]}
  ROOT %wrapped_tanh = f32[32,8]{1,0} fusion(%ynn_fusion), kind=kLoop, calls=%wrapped_tanh_computation, metadata={op_name="jit(seed)/tanh" stack_frame_id=3}
}
"""  # noqa: E501

# lax.scan(lambda v, _: (jnp.tanh(c @ v), None), x, None, length=10) on f32[8,8]
SCAN = r"""HloModule jit_scan_tanh, is_scheduled=true, entry_computation_layout={(f32[8,8]{1,0}, f32[8,8]{1,0})->f32[8,8]{1,0}}, allow_spmd_sharding_propagation_to_parameters={true,true}, allow_spmd_sharding_propagation_to_output={true}

FileNames
1 "/src/model.py"

FunctionNames
1 "scan_tanh.<locals>.<lambda>"
2 "<module>"
3 "scan_tanh"

FileLocations
1 {file_name_id=1 function_name_id=1 line=4 end_line=4 column=60 end_column=65}
2 {file_name_id=1 function_name_id=1 line=4 end_line=4 column=51 end_column=66}
3 {file_name_id=1 function_name_id=2 line=12 end_line=12 column=8 end_column=32}
4 {file_name_id=1 function_name_id=3 line=4 end_line=4 column=28 end_column=94}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=1}
3 {file_location_id=3 parent_frame_id=1}
4 {file_location_id=4 parent_frame_id=4}
5 {file_location_id=4 parent_frame_id=5}
6 {file_location_id=4 parent_frame_id=6}
7 {file_location_id=1 parent_frame_id=7}
8 {file_location_id=2 parent_frame_id=7}

%fused_computation (param_0: f32[8,8], param_1: f32[8,8]) -> f32[8,8] {
  %param_0 = f32[8,8]{1,0} parameter(0)
  %param_1 = f32[8,8]{1,0} parameter(1)
  ROOT %dot_general.2 = f32[8,8]{1,0} dot(%param_0, %param_1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(scan_tanh)/while/body/closed_call/dot_general" stack_frame_id=7}
}

%wrapped_add_computation (param_0.1: s32[], param_1.1: s32[]) -> s32[] {
  %param_0.1 = s32[] parameter(0)
  %param_1.1 = s32[] parameter(1)
  ROOT %add.0 = s32[] add(%param_0.1, %param_1.1), metadata={op_name="jit(scan_tanh)/while/body/add" stack_frame_id=6}
}

%wrapped_tanh_computation (param_0.2: f32[8,8]) -> f32[8,8] {
  %param_0.2 = f32[8,8]{1,0} parameter(0)
  ROOT %tanh.2 = f32[8,8]{1,0} tanh(%param_0.2), metadata={op_name="jit(scan_tanh)/while/body/closed_call/tanh" stack_frame_id=8}
}

%region_0.2 (arg_tuple.1: (s32[], f32[8,8], f32[8,8])) -> (s32[], f32[8,8], f32[8,8]) {
  %arg_tuple.1 = (s32[], f32[8,8]{1,0}, f32[8,8]{1,0}) parameter(0)
  %constant.2 = s32[] constant(1)
  %get-tuple-element.14 = f32[8,8]{1,0} get-tuple-element(%arg_tuple.1), index=2
  %get-tuple-element.7 = f32[8,8]{1,0} get-tuple-element(%arg_tuple.1), index=1
  %get-tuple-element.6 = s32[] get-tuple-element(%arg_tuple.1), index=0
  %ynn_fusion = f32[8,8]{1,0} fusion(%get-tuple-element.14, %get-tuple-element.7), kind=kCustom, calls=%fused_computation, metadata={op_name="jit(scan_tanh)/while/body/closed_call/dot_general" stack_frame_id=7}, backend_config={"fusion_config":{"kind":"__ynn_fusion"},"outer_dimension_partitions":[]}
  %wrapped_add = s32[] fusion(%get-tuple-element.6, %constant.2), kind=kLoop, calls=%wrapped_add_computation, metadata={op_name="jit(scan_tanh)/while/body/add" stack_frame_id=6}
  %wrapped_tanh = f32[8,8]{1,0} fusion(%ynn_fusion), kind=kLoop, calls=%wrapped_tanh_computation, metadata={op_name="jit(scan_tanh)/while/body/closed_call/tanh" stack_frame_id=8}
  ROOT %tuple.3 = (s32[], f32[8,8]{1,0}, f32[8,8]{1,0}) tuple(%wrapped_add, %wrapped_tanh, %get-tuple-element.14)
}

%wrapped_compare_computation (param_0.3: s32[], param_1.2: s32[]) -> pred[] {
  %param_0.3 = s32[] parameter(0)
  %param_1.2 = s32[] parameter(1)
  ROOT %lt.0 = pred[] compare(%param_0.3, %param_1.2), direction=LT, metadata={op_name="jit(scan_tanh)/while/cond/lt" stack_frame_id=6}
}

%region_1.3 (arg_tuple.3: (s32[], f32[8,8], f32[8,8])) -> pred[] {
  %arg_tuple.3 = (s32[], f32[8,8]{1,0}, f32[8,8]{1,0}) parameter(0)
  %constant.4 = s32[] constant(10)
  %get-tuple-element.9 = s32[] get-tuple-element(%arg_tuple.3), index=0
  ROOT %wrapped_compare = pred[] fusion(%get-tuple-element.9, %constant.4), kind=kLoop, calls=%wrapped_compare_computation, metadata={op_name="jit(scan_tanh)/while/cond/lt" stack_frame_id=6}
}

ENTRY %main.4 (c.1: f32[8,8], x.1: f32[8,8]) -> f32[8,8] {
  %c.1 = f32[8,8]{1,0} parameter(0), metadata={op_name="c"}
  %x.1 = f32[8,8]{1,0} parameter(1), metadata={op_name="x"}
  %constant.5 = s32[] constant(0)
  %copy.6 = f32[8,8]{1,0} copy(%x.1)
  %copy.7 = s32[] copy(%constant.5)
  %tuple = (s32[], f32[8,8]{1,0}, f32[8,8]{1,0}) tuple(%copy.7, %copy.6, %c.1)
  %while.5 = (s32[], f32[8,8]{1,0}, f32[8,8]{1,0}) while(%tuple), condition=%region_1.3, body=%region_0.2, metadata={op_name="jit(scan_tanh)/while" stack_frame_id=5}, backend_config={"dynamic_variables":[],"known_induction_variable":{"tuple_index":"0"},"known_init_step":{"init":"0","step":"1"},"known_trip_count":{"n":"10"}}
  ROOT %while.7 = f32[8,8]{1,0} get-tuple-element(%while.5), index=1, metadata={op_name="jit(scan_tanh)/while" stack_frame_id=5}
}
"""  # noqa: E501

# lax.fori_loop(0, 10, lambda i, v: jnp.tanh(c @ v), x): the while instruction
FORI_WHILE = r"""%while.5 = (s32[], f32[8,8]{1,0}, f32[8,8]{1,0}) while(%tuple), condition=%region_1.3, body=%region_0.2, metadata={op_name="jit(fori_tanh)/while" stack_frame_id=5}, backend_config={"dynamic_variables":[],"known_induction_variable":{"tuple_index":"0"},"known_init_step":{"init":"0","step":"1"},"known_trip_count":{"n":"10"}}"""  # noqa: E501

# jnp.linalg.cholesky(x @ x.T + 4 * jnp.eye(4)) on f32[4,4]: the ENTRY computation
CHOL = r"""ENTRY %main.2 (x.1: f32[4,4]) -> f32[4,4] {
  %x.1 = f32[4,4]{1,0} parameter(0), metadata={op_name="x"}
  %dot_general.1 = f32[4,4]{1,0} dot(%x.1, %x.1), lhs_contracting_dims={1}, rhs_contracting_dims={1}, metadata={op_name="jit(chol)/dot_general" stack_frame_id=3}
  %multiply_copy_fusion = f32[4,4]{0,1} fusion(%dot_general.1), kind=kLoop, calls=%fused_computation.1, metadata={op_name="jit(chol)/jit(cholesky)/div" stack_frame_id=6}
  %cholesky.0 = (f32[4,4]{0,1}, s32[]) custom-call(%multiply_copy_fusion), custom_call_target="lapack_spotrf_ffi", operand_layout_constraints={f32[4,4]{0,1}}, output_to_operand_aliasing={{0}: (0, {})}, api_version=API_VERSION_TYPED_FFI, frontend_attributes={num_batch_dims="0",xla.sdy.sharding_rule="#sdy.op_sharding_rule<([i, j])->([k, l], []) {i=4, j=4, k=4, l=4}, custom>"}, metadata={op_name="jit(chol)/jit(cholesky)/cholesky" stack_frame_id=6}, backend_config={uplo = 76 : ui8}
  %cholesky.1 = s32[] get-tuple-element(%cholesky.0), index=1, frontend_attributes={num_batch_dims="0",xla.sdy.sharding_rule="#sdy.op_sharding_rule<([i, j])->([k, l], []) {i=4, j=4, k=4, l=4}, custom>"}, metadata={op_name="jit(chol)/jit(cholesky)/cholesky" stack_frame_id=6}
  %cholesky.7 = f32[4,4]{0,1} get-tuple-element(%cholesky.0), index=0, frontend_attributes={num_batch_dims="0",xla.sdy.sharding_rule="#sdy.op_sharding_rule<([i, j])->([k, l], []) {i=4, j=4, k=4, l=4}, custom>"}, metadata={op_name="jit(chol)/jit(cholesky)/cholesky" stack_frame_id=6}
  ROOT %copy_select_fusion = f32[4,4]{1,0} fusion(%cholesky.7, %cholesky.1), kind=kLoop, calls=%fused_computation, metadata={op_name="jit(chol)/jit(cholesky)/select_n" stack_frame_id=6}
}
"""  # noqa: E501

# jnp.sum(jnp.exp(x), axis=1) + 1.0 on f32[8,32]
RED = r"""HloModule jit_red, is_scheduled=true, entry_computation_layout={(f32[8,32]{1,0})->f32[8]{0}}, allow_spmd_sharding_propagation_to_parameters={true}, allow_spmd_sharding_propagation_to_output={true}

FileNames
1 "/src/model.py"

FunctionNames
1 "<module>"
2 "red"

FileLocations
1 {file_name_id=1 function_name_id=1 line=12 end_line=12 column=8 end_column=32}
2 {file_name_id=1 function_name_id=2 line=6 end_line=6 column=19 end_column=52}
3 {file_name_id=1 function_name_id=2 line=6 end_line=6 column=27 end_column=37}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=2}
3 {file_location_id=3 parent_frame_id=2}

%region_0.1 (reduce_sum.3: f32[], reduce_sum.4: f32[]) -> f32[] {
  %reduce_sum.3 = f32[] parameter(0), metadata={op_name="reduce_sum"}
  %reduce_sum.4 = f32[] parameter(1), metadata={op_name="reduce_sum"}
  ROOT %reduce_sum.5 = f32[] add(%reduce_sum.3, %reduce_sum.4), metadata={op_name="jit(red)/reduce_sum" stack_frame_id=2}
}

%fused_computation (param_0.2: f32[8,32]) -> f32[8] {
  %param_0.2 = f32[8,32]{1,0} parameter(0)
  %exp.0 = f32[8,32]{1,0} exponential(%param_0.2), metadata={op_name="jit(red)/exp" stack_frame_id=3}
  %constant.1 = f32[] constant(0)
  %reduce_sum.0 = f32[8]{0} reduce(%exp.0, %constant.1), dimensions={1}, to_apply=%region_0.1, metadata={op_name="jit(red)/reduce_sum" stack_frame_id=2}
  %constant.0 = f32[] constant(1)
  %broadcast.0 = f32[8]{0} broadcast(%constant.0), dimensions={}
  ROOT %add.0 = f32[8]{0} add(%reduce_sum.0, %broadcast.0), metadata={op_name="jit(red)/add" stack_frame_id=2}
}

ENTRY %main.2 (x.1: f32[8,32]) -> f32[8] {
  %x.1 = f32[8,32]{1,0} parameter(0), metadata={op_name="x"}
  ROOT %broadcast_add_fusion = f32[8]{0} fusion(%x.1), kind=kLoop, calls=%fused_computation, metadata={op_name="jit(red)/add" stack_frame_id=2}
}
"""  # noqa: E501

# shard_map over a (2, 4) mesh ("x", "y"): psum over y, all_gather, psum_scatter over x,
# ppermute and all_to_all over y (three of the four slice fusions' bodies left out)
COLL = r"""HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[8,8]{1,0}, f32[8,16]{1,0})->f32[8,16]{1,0}}, allow_spmd_sharding_propagation_to_parameters={true,true}, allow_spmd_sharding_propagation_to_output={true}, num_partitions=8

FileNames
1 "/src/shard.py"

FunctionNames
1 "<module>"
2 "f"

FileLocations
1 {file_name_id=1 function_name_id=1 line=17 end_line=17 column=4 end_column=4}
2 {file_name_id=1 function_name_id=2 line=11 end_line=11 column=21 end_column=21}
3 {file_name_id=1 function_name_id=2 line=11 end_line=11 column=8 end_column=8}
4 {file_name_id=1 function_name_id=2 line=12 end_line=12 column=8 end_column=8}
5 {file_name_id=1 function_name_id=2 line=13 end_line=13 column=8 end_column=8}
6 {file_name_id=1 function_name_id=2 line=14 end_line=14 column=8 end_column=8}
7 {file_name_id=1 function_name_id=2 line=15 end_line=15 column=8 end_column=8}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=1}
3 {file_location_id=3 parent_frame_id=1}
4 {file_location_id=3 parent_frame_id=4}
5 {file_location_id=4 parent_frame_id=1}
6 {file_location_id=5 parent_frame_id=1}
7 {file_location_id=5 parent_frame_id=7}
8 {file_location_id=6 parent_frame_id=1}
9 {file_location_id=7 parent_frame_id=1}
10 {file_location_id=2 parent_frame_id=2}
11 {file_location_id=3 parent_frame_id=2}
12 {file_location_id=4 parent_frame_id=2}
13 {file_location_id=5 parent_frame_id=2}
14 {file_location_id=6 parent_frame_id=2}
15 {file_location_id=7 parent_frame_id=2}

%region_0.0 (psum_invariant.0: f32[], psum_invariant.1: f32[]) -> f32[] {
  %psum_invariant.0 = f32[] parameter(0), metadata={op_name="psum_invariant"}
  %psum_invariant.1 = f32[] parameter(1), metadata={op_name="psum_invariant"}
  ROOT %add.0 = f32[] add(%psum_invariant.0, %psum_invariant.1), metadata={op_name="add" stack_frame_id=4}
}

%region_1.0 (reduce_scatter.0: f32[], reduce_scatter.1: f32[]) -> f32[] {
  %reduce_scatter.0 = f32[] parameter(0), metadata={op_name="reduce_scatter"}
  %reduce_scatter.1 = f32[] parameter(1), metadata={op_name="reduce_scatter"}
  ROOT %add.2 = f32[] add(%reduce_scatter.0, %reduce_scatter.1), metadata={op_name="add" stack_frame_id=7}
}

%fused_computation (param_0: f32[8,8], param_1: f32[8,16]) -> f32[8,16] {
  %param_0 = f32[8,8]{1,0} parameter(0)
  %param_1 = f32[8,16]{1,0} parameter(1)
  ROOT %dot_general.4 = f32[8,16]{1,0} dot(%param_0, %param_1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(f)/shard_map/dot_general" stack_frame_id=10}
}

%wrapped_slice_computation (param_0.1: f32[8,16]) -> f32[8,4] {
  %param_0.1 = f32[8,16]{1,0} parameter(0)
  ROOT %slice.4 = f32[8,4]{1,0} slice(%param_0.1), slice={[0:8], [0:4]}, metadata={op_name="jit(f)/shard_map/all_to_all" stack_frame_id=15}
}

ENTRY %main.0_spmd (param.2: f32[8,8], param.3: f32[8,16]) -> f32[8,16] {
  %param.2 = f32[8,8]{1,0} parameter(0), sharding={devices=[2,4]<=[8]}, metadata={op_name="a"}
  %param.3 = f32[8,16]{1,0} parameter(1), sharding={replicated}, metadata={op_name="b"}
  %ynn_fusion = f32[8,16]{1,0} fusion(%param.2, %param.3), kind=kCustom, calls=%fused_computation, metadata={op_name="jit(f)/shard_map/dot_general" stack_frame_id=10}, backend_config={"fusion_config":{"kind":"__ynn_fusion"},"outer_dimension_partitions":[]}
  %psum_invariant.7 = f32[8,16]{1,0} all-reduce(%ynn_fusion), channel_id=1, replica_groups={{0,1,2,3},{4,5,6,7}}, use_global_device_ids=true, to_apply=%region_0.0, metadata={op_name="jit(f)/shard_map/psum_invariant" stack_frame_id=11}
  %all_gather.3 = f32[16,16]{1,0} all-gather(%psum_invariant.7), channel_id=1, replica_groups={{0,4},{1,5},{2,6},{3,7}}, dimensions={0}, use_global_device_ids=true, metadata={op_name="jit(f)/shard_map/all_gather" stack_frame_id=12}
  %reduce_scatter.7 = f32[8,16]{1,0} reduce-scatter(%all_gather.3), channel_id=1, replica_groups={{0,4},{1,5},{2,6},{3,7}}, use_global_device_ids=true, dimensions={0}, to_apply=%region_1.0, metadata={op_name="jit(f)/shard_map/reduce_scatter" stack_frame_id=13}
  %ppermute.3 = f32[8,16]{1,0} collective-permute(%reduce_scatter.7), channel_id=1, source_target_pairs={{0,1},{1,2},{2,3},{3,0},{4,5},{5,6},{6,7},{7,4}}, metadata={op_name="jit(f)/shard_map/ppermute" stack_frame_id=14}
  %wrapped_slice.3 = f32[8,4]{1,0} fusion(%ppermute.3), kind=kLoop, calls=%wrapped_slice_computation.3, metadata={op_name="jit(f)/shard_map/all_to_all" stack_frame_id=15}
  %wrapped_slice = f32[8,4]{1,0} fusion(%ppermute.3), kind=kLoop, calls=%wrapped_slice_computation, metadata={op_name="jit(f)/shard_map/all_to_all" stack_frame_id=15}
  %wrapped_slice.1 = f32[8,4]{1,0} fusion(%ppermute.3), kind=kLoop, calls=%wrapped_slice_computation.1, metadata={op_name="jit(f)/shard_map/all_to_all" stack_frame_id=15}
  %wrapped_slice.2 = f32[8,4]{1,0} fusion(%ppermute.3), kind=kLoop, calls=%wrapped_slice_computation.2, metadata={op_name="jit(f)/shard_map/all_to_all" stack_frame_id=15}
  %all-to-all = (f32[8,4]{1,0}, f32[8,4]{1,0}, f32[8,4]{1,0}, f32[8,4]{1,0}) all-to-all(%wrapped_slice, %wrapped_slice.1, %wrapped_slice.2, %wrapped_slice.3), channel_id=1, replica_groups={{0,1,2,3},{4,5,6,7}}, metadata={op_name="jit(f)/shard_map/all_to_all" stack_frame_id=15}
  %get-tuple-element = f32[8,4]{1,0} get-tuple-element(%all-to-all), index=0
  %get-tuple-element.2 = f32[8,4]{1,0} get-tuple-element(%all-to-all), index=1
  %get-tuple-element.4 = f32[8,4]{1,0} get-tuple-element(%all-to-all), index=2
  %get-tuple-element.5 = f32[8,4]{1,0} get-tuple-element(%all-to-all), index=3
  ROOT %concatenate = f32[8,16]{1,0} concatenate(%get-tuple-element, %get-tuple-element.2, %get-tuple-element.4, %get-tuple-element.5), dimensions={1}, metadata={op_name="jit(f)/shard_map/all_to_all" stack_frame_id=15}
}
"""  # noqa: E501

# x @ w with the contracting axis sharded over "y" of a (2, 4) mesh, GSPMD (shardy off)
GSPMD_LINE = r"""%all-reduce = f32[16,8]{1,0} all-reduce(%ynn_fusion), channel_id=1, replica_groups=mesh['axis_0'=1,'axis_1'=4,'axis_2'=2], device_ids=([2,4]T(1,0)) {'axis_1'}, use_global_device_ids=true, to_apply=%add.clone, metadata={op_name="jit(mm)/dot_general" stack_frame_id=2}"""  # noqa: E501

# written by hand in the GPU spelling
GPU_ASYNC = r"""HloModule jit_step, is_scheduled=true, num_partitions=8

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %sum = f32[] add(f32[] %x, f32[] %y)
}

%fused_reduce (param_0: f32[64,256]) -> f32[64] {
  %param_0 = f32[64,256]{1,0} parameter(0)
  %zero = f32[] constant(0)
  ROOT %r = f32[64]{0} reduce(f32[64,256]{1,0} %param_0, f32[] %zero), dimensions={1}, to_apply=%add
}

%fused_bias (param_0.1: f32[64,256], param_1.1: f32[64,256]) -> f32[64,256] {
  %param_0.1 = f32[64,256]{1,0} parameter(0)
  %param_1.1 = f32[64,256]{1,0} parameter(1)
  ROOT %a = f32[64,256]{1,0} add(f32[64,256]{1,0} %param_0.1, f32[64,256]{1,0} %param_1.1)
}

%fused_neg (param_0.2: f32[64]) -> f32[64] {
  %param_0.2 = f32[64]{0} parameter(0)
  ROOT %n = f32[64]{0} negate(f32[64]{0} %param_0.2)
}

ENTRY %main (p0: f32[8,256], p1: f32[64,256]) -> (f32[64], f32[64,256]) {
  %p0 = f32[8,256]{1,0} parameter(0)
  %p1 = f32[64,256]{1,0} parameter(1)
  %all-gather-start = (f32[8,256]{1,0}, f32[64,256]{1,0}) all-gather-start(f32[8,256]{1,0} %p0), channel_id=1, replica_groups=[1,8]<=[8], dimensions={0}, use_global_device_ids=true
  %all-reduce-start = f32[64,256]{1,0} all-reduce-start(f32[64,256]{1,0} %p1), channel_id=2, replica_groups=[4,2]<=[2,4]T(1,0), use_global_device_ids=true, to_apply=%add, backend_config={"operation_queue_id":"0","collective_backend_config":{"is_sync":false}}
  %all-gather-done = f32[64,256]{1,0} all-gather-done((f32[8,256]{1,0}, f32[64,256]{1,0}) %all-gather-start)
  %all-reduce-done = f32[64,256]{1,0} all-reduce-done(f32[64,256]{1,0} %all-reduce-start)
  %input_reduce_fusion = f32[64]{0} fusion(f32[64,256]{1,0} %all-gather-done), kind=kInput, calls=%fused_reduce
  %output_fusion = f32[64,256]{1,0} fusion(f32[64,256]{1,0} %all-reduce-done, f32[64,256]{1,0} %all-gather-done), kind=kOutput, calls=%fused_bias
  %loop_fusion = f32[64]{0} fusion(f32[64]{0} %input_reduce_fusion), kind=kLoop, calls=%fused_neg
  ROOT %tuple = (f32[64]{0}, f32[64,256]{1,0}) tuple(f32[64]{0} %loop_fusion, f32[64,256]{1,0} %output_fusion)
}
"""  # noqa: E501


def test_module_tables_and_entry() -> None:
    module = parse_module(SEED)
    assert (module.name, module.entry) == ("jit_seed", "main.1")
    assert list(module.computations) == ["fused_computation", "wrapped_tanh_computation", "main.1"]
    assert module.file_names == {1: "/src/model.py"}
    assert module.function_names == {1: "<module>", 2: "seed"}
    assert module.file_locations[2]["line"] == 3 and module.file_locations[2]["column"] == 32
    assert module.stack_frames[3] == {"file_location_id": 3, "parent_frame_id": 2}
    assert module.device_count == 1
    assert module.attributes["is_scheduled"] == "true"


def test_fusions_operands_metadata_and_source_lines() -> None:
    module = parse_module(SEED)
    entry = module.entry_computation
    assert entry is not None and entry.is_entry
    dot = entry.instruction("ynn_fusion")
    tanh = entry.instruction("wrapped_tanh")
    assert dot is not None and tanh is not None
    assert (dot.opcode, dot.fusion_kind, tanh.fusion_kind) == ("fusion", "kCustom", "kLoop")
    assert dot.called() == ["fused_computation"] and dot.callees[0].role == "calls"
    assert dot.backend_config is not None
    assert dot.backend_config["fusion_config"] == {"kind": "__ynn_fusion"}
    assert dot.operands == ("a.1", "b.1")  # printed without types: resolved from the parameters
    assert [s.text for s in dot.operand_shapes if s] == ["f32[32,16]{1,0}", "f32[16,8]{1,0}"]
    assert dot.operand_bytes == 4 * (32 * 16 + 16 * 8)
    assert dot.shape.nbytes == 4 * 32 * 8 and dot.shape.bytes_by_dtype() == {"f32": 1024}
    assert dot.op_name == "jit(seed)/dot_general"
    assert dot.source == SourceLocation("/src/model.py", 3, 32, "seed")  # stack frame 2
    assert tanh.source == SourceLocation("/src/model.py", 3, 23, "seed")
    assert tanh.is_root and entry.root is tanh
    body = module.computations["fused_computation"]
    assert body.is_fusion_body and not body.is_loop_body
    assert body.root is not None and body.root.opcode == "dot"
    assert body.instructions[0].parameter_number == 0


def test_scan_while_loop_bodies_and_trip_count() -> None:
    module = parse_module(SCAN)
    entry = module.entry_computation
    assert entry is not None
    loop = entry.instruction("while.5")
    assert loop is not None and loop.known_trip_count == 10
    assert loop.called("body") == ["region_0.2"] and loop.called("condition") == ["region_1.3"]
    assert module.computations["region_0.2"].is_loop_body
    assert module.computations["region_1.3"].is_loop_condition
    assert loop.op_name == "jit(scan_tanh)/while"
    assert loop.source == SourceLocation("/src/model.py", 4, 28, "scan_tanh")
    assert loop.shape.is_tuple and [a.dtype for a in loop.shape.arrays()] == ["s32", "f32", "f32"]
    assert loop.shape.nbytes == 4 + 2 * 4 * 64
    gte = entry.instruction("while.7")
    assert gte is not None and gte.operand_shapes[0] == loop.shape
    body = module.computations["region_0.2"]
    tanh = body.instruction("wrapped_tanh")
    assert tanh is not None and tanh.source is not None
    assert (tanh.source.line, tanh.source.column) == (4, 51)  # the lambda inside the scan
    assert while_loops(module) == [
        {"name": "while.5", "known_trip_count": 10, "condition": "region_1.3",
         "body": "region_0.2", "op_name": "jit(scan_tanh)/while",
         "source_file": "<path>/model.py", "source_line": 4, "source_column": 28}
    ]  # fmt: skip


def test_fori_loop_while_line() -> None:
    text = "\n".join(["ENTRY %main.4 (c.1: f32[8,8], x.1: f32[8,8]) -> f32[8,8] {",
                      "  %tuple = (s32[], f32[8,8]{1,0}, f32[8,8]{1,0}) parameter(0)",
                      "  ROOT " + FORI_WHILE, "}"])  # fmt: skip
    module = parse_module(text)
    [loop] = [i for _, i in module.instructions() if i.opcode == "while"]
    assert loop.known_trip_count == 10 and loop.op_name == "jit(fori_tanh)/while"
    assert loop.source is None  # its stack frame is in tables this snippet left out
    info = inspect_compiled(text)
    assert info["kernels"] == 0 and info["while_loops"][0]["known_trip_count"] == 10
    assert info["notes"] == ["kernels: each while loop counts (condition + body) x its trip count"]


def test_custom_call_tuple_and_non_json_backend_config() -> None:
    module = parse_module(CHOL)
    entry = module.entry_computation
    assert entry is not None
    call = entry.instruction("cholesky.0")
    assert call is not None and call.custom_call_target == "lapack_spotrf_ffi"
    assert call.backend_config is None  # not JSON: kept raw
    assert call.attributes["backend_config"] == "{uplo = 76 : ui8}"
    assert call.shape.is_tuple and call.shape.nbytes == 4 * 16 + 4
    element = call.shape.element(1)
    assert element is not None and element.array == Array("s32", ())
    assert call.operand_shapes[0] is not None
    assert call.operand_shapes[0].text == "f32[4,4]{0,1}"
    assert "frontend_attributes" in call.attributes
    gte = entry.instruction("cholesky.1")
    assert gte is not None and gte.attributes["index"] == "1"
    info = inspect_compiled(CHOL)
    assert info["custom_calls"] == [
        {"name": "cholesky.0", "target": "lapack_spotrf_ffi", "shape": "(f32[4,4]{0,1}, s32[])",
         "bytes": 68, "op_name": "jit(chol)/jit(cholesky)/cholesky", "source": None}
    ]  # fmt: skip


def test_reducer_roles() -> None:
    module = parse_module(RED)
    assert module.computations["region_0.1"].is_reducer
    assert module.computations["fused_computation"].is_fusion_body
    reduce = module.computations["fused_computation"].instruction("reduce_sum.0")
    assert reduce is not None and reduce.called("to_apply") == ["region_0.1"]
    assert [s.text for s in reduce.operand_shapes if s] == ["f32[8,32]{1,0}", "f32[]"]


def test_collectives_on_eight_devices() -> None:
    module = parse_module(COLL)
    assert module.device_count == 8
    records = collective_records(module)
    assert [(r["op"], r["group_size"]) for r in records] == [
        ("all-reduce", 4), ("all-gather", 2), ("reduce-scatter", 2),
        ("collective-permute", 8), ("all-to-all", 4),
    ]  # fmt: skip
    reduce, gather, scatter, permute, to_all = records
    assert reduce == {
        "instruction": "psum_invariant.7",
        "computation": "main.0_spmd",
        "op": "all-reduce",
        "async": False,
        "shape": "f32[8,16]{1,0}",
        "dtype": "f32",
        "arrays": [{"dtype": "f32", "shape": [8, 16], "bytes": 512}],
        "result_bytes": 512,
        "operand_bytes": 512,
        "group_size": 4,
        "replica_groups": [[0, 1, 2, 3], [4, 5, 6, 7]],
        "source_target_pairs": None,
        "channel_id": 1,
        "bytes_per_device": 2 * 512 * 3 // 4,
        "op_name": "jit(f)/shard_map/psum_invariant",
        "source": "shard.py:11",
        "loops": [],
        "trip_count": 1,
    }
    assert gather["replica_groups"] == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert (gather["operand_bytes"], gather["result_bytes"]) == (512, 1024)
    assert scatter["bytes_per_device"] == 512 * (2 - 1)
    assert permute["source_target_pairs"][:2] == [[0, 1], [1, 2]]
    assert permute["bytes_per_device"] == 512
    assert to_all["dtype"] == "f32" and len(to_all["arrays"]) == 4
    assert to_all["result_bytes"] == 4 * 128 and to_all["operand_bytes"] == 4 * 128


def test_mesh_replica_groups_with_device_order() -> None:
    # jax 0.10.2 on CPU prints GSPMD groups over a mesh; device_ids holds the mesh's order.
    text = "\n".join(["HloModule m, num_partitions=8", "",
                      "ENTRY %main (ynn_fusion: f32[16,8]) -> f32[16,8] {",
                      "  %ynn_fusion = f32[16,8]{1,0} parameter(0)",
                      "  ROOT " + GSPMD_LINE, "}"])  # fmt: skip
    [instr] = [i for _, i in parse_module(text).instructions() if i.opcode == "all-reduce"]
    groups = instr.replica_groups
    assert groups is not None and groups.size == 4
    assert groups.groups == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert collective_records(text)[0]["group_size"] == 4


@pytest.mark.parametrize(
    ("text", "groups", "size"),
    [
        ("{{0,1,2,3},{4,5,6,7}}", ((0, 1, 2, 3), (4, 5, 6, 7)), 4),
        ("{{0,1},{2,3},{4,5},{6,7}}", ((0, 1), (2, 3), (4, 5), (6, 7)), 2),
        ("{}", (), 8),
        ("[2,4]<=[8]", ((0, 1, 2, 3), (4, 5, 6, 7)), 4),
        ("[4,2]<=[2,4]T(1,0)", ((0, 4), (1, 5), (2, 6), (3, 7)), 2),
        ("[1,4]<=[4]", ((0, 1, 2, 3),), 4),
        ("mesh['a'=2,'b'=4] {'a','b'}", (tuple(range(8)),), 8),
        ("mesh['x'=2,'y'=4] {'y'}", ((0, 1, 2, 3), (4, 5, 6, 7)), 4),
        ("mesh['x'=2,'y'=4] {'x'}", ((0, 4), (1, 5), (2, 6), (3, 7)), 2),
        ("mesh['x'=2,'y'=4] {'y':(1)2}", ((0, 2), (1, 3), (4, 6), (5, 7)), 2),
        ("mesh['axis_0'=4,'axis_1'=2], device_ids=([2,4]T(1,0)) {'axis_1'}",
         ((0, 4), (1, 5), (2, 6), (3, 7)), 2),
        ("mesh[x=8] {x}", (tuple(range(8)),), 8),
        ("maximal_mesh[device_id=3] {}", ((3,),), 1),
        ("mesh['x'=2] {'z'}", None, None),
        ("somethingnew", None, None),
    ],
)
def test_replica_group_spellings(
    text: str, groups: tuple[tuple[int, ...], ...] | None, size: int | None
) -> None:
    decoded = parse_replica_groups(text)
    assert decoded.groups == groups
    assert decoded.group_size(8) == size
    assert decoded.text == text


def test_groups_from_pairs_or_absent() -> None:
    text = "\n".join(["ENTRY %main (p: f32[4]) -> f32[4] {",
                      "  %p = f32[4]{0} parameter(0)",
                      "  %cp = f32[4]{0} collective-permute(%p), source_target_pairs={{0,1},{1,0}}",
                      "  ROOT %ar = f32[4]{0} all-reduce(%cp), channel_id=1, to_apply=%add",
                      "}"])  # fmt: skip
    permute, reduce = collective_records(text, num_devices=8)
    assert permute["group_size"] == 2 and reduce["group_size"] == 8  # no groups: every device
    assert reduce["channel_id"] == 1 and permute["channel_id"] is None


def test_gpu_style_async_pairs_and_fusion_kinds() -> None:
    module = parse_module(GPU_ASYNC)
    assert module.device_count == 8
    kinds = [i.fusion_kind for _, i in module.instructions() if i.opcode == "fusion"]
    assert kinds == ["kInput", "kOutput", "kLoop"]
    gather, reduce = collective_records(module)
    assert (gather["instruction"], gather["op"], gather["async"]) == (
        "all-gather-start", "all-gather", True)
    assert gather["shape"] == "f32[64,256]{1,0}"  # the -done's result, counted once
    assert gather["replica_groups"] == [list(range(8))]
    assert gather["operand_bytes"] == 4 * 8 * 256
    assert gather["bytes_per_device"] == 4 * 64 * 256 * 7 // 8
    assert reduce["replica_groups"] == [[0, 4], [1, 5], [2, 6], [3, 7]]  # iota, transposed
    assert reduce["bytes_per_device"] == 2 * 4 * 64 * 256 // 2
    start = module.computations["main"].instruction("all-gather-start")
    assert start is not None and start.operand_shapes[0] is not None
    assert start.operand_shapes[0].text == "f32[8,256]{1,0}"  # typed operand as printed
    info = inspect_compiled(module)
    assert info["kernels"] == 2 + 3  # two async pairs once each, three fusions
    assert info["fusions"]["by_kind"] == {"kInput": 1, "kLoop": 1, "kOutput": 1}


@pytest.mark.parametrize(
    ("text", "nbytes"),
    [
        ("f32[8,4]{1,0}", 128),
        ("bf16[3]", 6),
        ("f16[2]", 4),
        ("pred[10]", 10),
        ("s4[1024]{0}", 1024),  # one byte per element unless the layout packs it
        ("s4[1024]{0:E(4)}", 512),
        ("u4[3]{0:E(4)}", 2),
        ("s8[5]", 5), ("u8[5]", 5), ("s16[5]", 10), ("u16[5]", 10),
        ("s32[2,2]", 16), ("u32[]", 4), ("s64[2]", 16), ("u64[2]", 16), ("f64[2]", 16),
        ("c64[2]", 16), ("c128[2]", 32),
        ("f8e4m3fn[7]", 7), ("f8e5m2[7]", 7), ("f8e4m3fnuz[7]", 7), ("f8e5m2fnuz[7]", 7),
        ("token[]", 0),
        ("(f32[2]{0}, (s32[], bf16[4]{0}), token[])", 8 + 4 + 8),
        ("f32[<=8,4]", 128),
        ("opaque[]", None),
    ],
)
def test_shape_bytes(text: str, nbytes: int | None) -> None:
    shape = parse_shape(text)
    assert shape is not None and shape.nbytes == nbytes


def test_shape_structure_and_dtype_bits() -> None:
    shape = parse_shape("(f32[8,16]{1,0:T(8,128)}, u32[], /*index=2*/token[])")
    assert shape is not None and shape.is_tuple
    assert [(a.dtype, a.dims) for a in shape.arrays()] == [
        ("f32", (8, 16)), ("u32", ()), ("token", ())]  # fmt: skip
    dynamic = parse_shape("f32[<=8,4]")
    assert dynamic is not None and dynamic.array is not None and dynamic.array.dynamic
    assert parse_shape("not a shape") is None
    assert [dtype_bits(t) for t in ("pred", "s4", "bf16", "f8e4m3fn", "f32", "c128")] == [
        8, 4, 16, 8, 32, 128]  # fmt: skip
    assert dtype_bits("token") == 0 and dtype_bits("opaque") is None


def test_text_outside_computations_and_odd_lines() -> None:
    assert parse_module("not HLO at all").computations == {}
    text = "\n".join(["ENTRY %main () -> f32[] {", "  this line is not an instruction",
                      '  ROOT %c = f32[] constant(1), metadata={op_name="a, b=c" source_file='
                      '"/x/y.py" source_line=7}', "}"])  # fmt: skip
    [(_, constant)] = list(parse_module(text).instructions())
    assert constant.operands == () and constant.op_name == "a, b=c"
    assert constant.source == SourceLocation("/x/y.py", 7)
    with pytest.raises(TypeError):
        parse_module(42)  # type: ignore[arg-type]
