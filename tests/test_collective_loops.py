# ruff: noqa: E501
"""Collectives inside while loops: each record carries the loops around it and their trip
counts, so a per-step total counts a collective once per iteration."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from roofline_report.analysis.analyse import analyse
from roofline_report.analysis.comm_network import flat_network
from roofline_report.analysis.comm_step import step_bounds
from roofline_report.hlo.compiled import collective_records, loop_context
from roofline_report.hlo.ir import parse_module
from roofline_report.ingest.pipeline import read_profile
from roofline_report.ingest.records import results_document
from roofline_report.observe.sharded_collectives import comm_totals, parse_collectives
from roofline_report.report.trace_view import trace_view
from roofline_report.results.schema import CompiledCollective
from roofline_report.results.schema_sharding import ShardedCollective

GRU_SCAN = Path(__file__).resolve().parent / "fixtures" / "traces_real" / "tpu_v5e" / "gru_scan"

# Two nested loops (3 x 4 iterations) around an all-gather, a loop without a known trip count
# around a reduce-scatter, and an all-reduce outside any loop; the spelling of XLA's CPU HLO.
NESTED = """HloModule jit_step, num_partitions=8

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%inner_body (p: (s32[], f32[16,128])) -> (s32[], f32[16,128]) {
  %p = (s32[], f32[16,128]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %w = f32[16,128]{1,0} get-tuple-element(%p), index=1
  %ag = f32[128,128]{1,0} all-gather(%w), channel_id=1, replica_groups=[1,8]<=[8], dimensions={0}, use_global_device_ids=true
  %sl = f32[16,128]{1,0} slice(%ag), slice={[0:16], [0:128]}
  ROOT %t = (s32[], f32[16,128]{1,0}) tuple(%i, %sl)
}

%inner_cond (p: (s32[], f32[16,128])) -> pred[] {
  %p = (s32[], f32[16,128]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %n = s32[] constant(4)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%outer_body (q: (s32[], f32[16,128])) -> (s32[], f32[16,128]) {
  %q = (s32[], f32[16,128]{1,0}) parameter(0)
  ROOT %inner = (s32[], f32[16,128]{1,0}) while(%q), condition=%inner_cond, body=%inner_body, backend_config={"known_trip_count":{"n":"4"}}
}

%outer_cond (q: (s32[], f32[16,128])) -> pred[] {
  %q = (s32[], f32[16,128]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%q), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%open_body (r: (s32[], f32[128,128])) -> (s32[], f32[128,128]) {
  %r = (s32[], f32[128,128]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%r), index=0
  %g = f32[128,128]{1,0} get-tuple-element(%r), index=1
  %rs = f32[16,128]{1,0} reduce-scatter(%g), channel_id=2, replica_groups=[1,8]<=[8], dimensions={0}, to_apply=%add
  %pad = f32[128,128]{1,0} broadcast(%rs), dimensions={}
  ROOT %t = (s32[], f32[128,128]{1,0}) tuple(%i, %g)
}

%open_cond (r: (s32[], f32[128,128])) -> pred[] {
  %r = (s32[], f32[128,128]{1,0}) parameter(0)
  ROOT %c = pred[] constant(true)
}

ENTRY %main (x: f32[16,128], g: f32[128,128]) -> f32[128,128] {
  %x = f32[16,128]{1,0} parameter(0)
  %g = f32[128,128]{1,0} parameter(1)
  %zero = s32[] constant(0)
  %init = (s32[], f32[16,128]{1,0}) tuple(%zero, %x)
  %outer = (s32[], f32[16,128]{1,0}) while(%init), condition=%outer_cond, body=%outer_body, backend_config={"known_trip_count":{"n":"3"}}
  %init2 = (s32[], f32[128,128]{1,0}) tuple(%zero, %g)
  %open = (s32[], f32[128,128]{1,0}) while(%init2), condition=%open_cond, body=%open_body
  %grads = f32[128,128]{1,0} get-tuple-element(%open), index=1
  ROOT %ar = f32[128,128]{1,0} all-reduce(%grads), channel_id=3, replica_groups=[1,8]<=[8], to_apply=%add
}
"""


def test_loop_context_follows_the_call_graph() -> None:
    context = loop_context(parse_module(NESTED))
    assert context["main"] == ()
    assert context["outer_body"] == (("outer", 3),)
    assert context["inner_body"] == (("outer", 3), ("inner", 4))
    assert context["inner_cond"] == (("outer", 3), ("inner", 4))
    assert context["open_body"] == (("open", None),)
    assert "add" in context  # reducers are reached too, inside their caller's loops


def test_records_carry_loops_and_trip_counts() -> None:
    gather, scatter, reduce = collective_records(NESTED)
    assert gather["op"] == "all-gather" and gather["trip_count"] == 12
    assert gather["loops"] == [
        {"name": "outer", "known_trip_count": 3}, {"name": "inner", "known_trip_count": 4}
    ]  # fmt: skip
    assert scatter["op"] == "reduce-scatter" and scatter["trip_count"] is None
    assert reduce["op"] == "all-reduce" and (reduce["loops"], reduce["trip_count"]) == ([], 1)


def test_parse_collectives_keeps_per_execution_bytes_and_the_count() -> None:
    gather, scatter, reduce = parse_collectives(NESTED, 8)
    # all-gather result f32[128,128] = 65536 B; each device sends 7/8 of it, per execution
    assert gather["bytes_per_device"] == 65536 * 7 // 8 == 57344
    assert (gather["trip_count"], gather["loops"]) == (12, ["outer", "inner"])
    # reduce-scatter result f32[16,128] = 8192 B; each device sends (g-1) x result
    assert scatter["bytes_per_device"] == 8192 * 7 and scatter["trip_count"] is None
    assert reduce["replica_groups"] == [[0, 1, 2, 3, 4, 5, 6, 7]]
    assert reduce["trip_count"] == 1


def test_an_unknown_trip_count_makes_the_bytes_a_lower_bound() -> None:
    """Wherever bytes are returned: the totals of the records and the step's time say that the
    reduce-scatter in the loop without a known trip count was counted once."""
    records = parse_collectives(NESTED, 8)
    totals = comm_totals(records)
    assert totals["comm_bytes"] == 12 * 57344 + 8192 * 7 + 2 * 65536 * 7 // 8
    assert totals["unknown_trip_counts"] == 1 and totals["comm_bytes_complete"] is False
    assert any("lower bound" in note for note in totals["notes"])
    typed = [ShardedCollective.model_validate(r) for r in records]
    bounds = step_bounds(flops=1e9, hbm_bytes=0, collectives=typed, peak_flops=1e12,
                         hbm_bandwidth=1e12, network=flat_network(1e10, 1e-6))
    assert bounds.unknown_trips == 1 and bounds.comm_lower_bound is True
    known = [r for r in records if r["trip_count"] is not None]
    assert comm_totals(known)["comm_bytes_complete"] is True


def test_compiled_records_load_typed_and_dump_as_written() -> None:
    records = collective_records(NESTED)
    typed = [CompiledCollective.model_validate(r) for r in records]
    assert [t.model_dump() for t in typed] == records  # "async" written back under its name
    gather, scatter, reduce = typed
    assert gather.async_ is False and gather.trip_count == 12
    assert [(x.name, x.known_trip_count) for x in gather.loops] == [("outer", 3), ("inner", 4)]
    assert [(a.dtype, a.shape, a.bytes) for a in gather.arrays] == [("f32", [128, 128], 65536)]
    assert scatter.trip_count is None and reduce.trip_count == 1 and reduce.loops == []
    # A record saved before the loops were recorded loads with none and an unknown count.
    older = {k: v for k, v in records[2].items() if k not in ("loops", "trip_count")}
    loaded = CompiledCollective.model_validate(older)
    assert (loaded.loops, loaded.trip_count) == ([], None)
    with pytest.raises(ValidationError, match="bytes"):
        CompiledCollective.model_validate({**records[2], "bytes": 1})


def test_the_trace_section_lists_the_compiled_collectives_with_their_trips() -> None:
    doc = results_document(read_profile(GRU_SCAN))
    doc["workloads"][0]["compiled"]["collectives"] = collective_records(NESTED)
    view = trace_view(analyse(doc))
    assert view is not None
    rows = [(r.name, r.op, r.group, r.bytes.text) for r in view.collectives]
    # the all-gather's bytes counted 12 times; the reduce-scatter's unknown count taken as once
    assert rows == [("ag", "all-gather", "8", "688 kB"), ("rs", "reduce-scatter", "8", "57.3 kB"),
                    ("ar", "all-reduce", "8", "115 kB")]
