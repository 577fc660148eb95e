# ruff: noqa: E501
"""The one walk of the compiled call graph (roofline_report.hlo.walk): loops with their trip
counts, conditionals by one rule, calls, async pairs and fusions; the compiled kernel count and
the kernel inventory read it and agree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax import lax

from roofline_report.hlo.compiled import inspect_compiled, loop_context, while_loops
from roofline_report.hlo.ir import parse_module
from roofline_report.hlo.kernels import kernel_inventory, program_walk
from roofline_report.hlo.stablehlo_count import count_stablehlo
from roofline_report.hlo.walk import walk
from roofline_report.results.schema import KernelInventory

FIXTURES = Path(__file__).parent / "fixtures"

# A conditional whose branch 0 launches three cheap kernels and branch 1 one matmul fusion; the
# conditional sits in a loop of 4 trips, beside a call and a loop with no known trip count.
CONDITIONAL = """HloModule jit_step

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%neg_comp (p: f32[64,64]) -> f32[64,64] {
  %p = f32[64,64]{1,0} parameter(0)
  ROOT %n = f32[64,64]{1,0} negate(%p)
}

%dot_comp (p0: f32[64,64], p1: f32[64,64]) -> f32[64,64] {
  %p0 = f32[64,64]{1,0} parameter(0)
  %p1 = f32[64,64]{1,0} parameter(1)
  ROOT %d = f32[64,64]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

%cheap (t: (f32[64,64])) -> (f32[64,64]) {
  %t = (f32[64,64]{1,0}) parameter(0)
  %x = f32[64,64]{1,0} get-tuple-element(%t), index=0
  %n1 = f32[64,64]{1,0} fusion(%x), kind=kLoop, calls=%neg_comp
  %n2 = f32[64,64]{1,0} fusion(%n1), kind=kLoop, calls=%neg_comp
  %n3 = f32[64,64]{1,0} fusion(%n2), kind=kLoop, calls=%neg_comp
  ROOT %r = (f32[64,64]{1,0}) tuple(%n3)
}

%costly (t: (f32[64,64])) -> (f32[64,64]) {
  %t = (f32[64,64]{1,0}) parameter(0)
  %x = f32[64,64]{1,0} get-tuple-element(%t), index=0
  %mm = f32[64,64]{1,0} fusion(%x, %x), kind=kOutput, calls=%dot_comp
  ROOT %r = (f32[64,64]{1,0}) tuple(%mm)
}

%body (q: (s32[], f32[64,64])) -> (s32[], f32[64,64]) {
  %q = (s32[], f32[64,64]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%q), index=0
  %x = f32[64,64]{1,0} get-tuple-element(%q), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %pick = s32[] and(%i, %one)
  %arg = (f32[64,64]{1,0}) tuple(%x)
  %c = (f32[64,64]{1,0}) conditional(%pick, %arg, %arg), branch_computations={%cheap, %costly}
  %y = f32[64,64]{1,0} get-tuple-element(%c), index=0
  ROOT %out = (s32[], f32[64,64]{1,0}) tuple(%next, %y)
}

%cond (q: (s32[], f32[64,64])) -> pred[] {
  %q = (s32[], f32[64,64]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%q), index=0
  %n = s32[] constant(4)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%open_body (r: (s32[], f32[64])) -> (s32[], f32[64]) {
  %r = (s32[], f32[64]{0}) parameter(0)
  %i = s32[] get-tuple-element(%r), index=0
  %v = f32[64]{0} get-tuple-element(%r), index=1
  %w = f32[64]{0} exponential(%v)
  ROOT %t = (s32[], f32[64]{0}) tuple(%i, %w)
}

%open_cond (r: (s32[], f32[64])) -> pred[] {
  %r = (s32[], f32[64]{0}) parameter(0)
  ROOT %c = pred[] constant(true)
}

%helper (h: f32[64,64]) -> f32[64] {
  %h = f32[64,64]{1,0} parameter(0)
  %zero = f32[] constant(0)
  ROOT %sum = f32[64]{0} reduce(%h, %zero), dimensions={1}, to_apply=%add
}

ENTRY %main (x: f32[64,64]) -> (f32[64,64], f32[64]) {
  %x = f32[64,64]{1,0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[64,64]{1,0}) tuple(%zero, %x)
  %loop = (s32[], f32[64,64]{1,0}) while(%init), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"4"}}
  %res = f32[64,64]{1,0} get-tuple-element(%loop), index=1
  %rows = f32[64]{0} call(%res), to_apply=%helper
  %init2 = (s32[], f32[64]{0}) tuple(%zero, %rows)
  %open = (s32[], f32[64]{0}) while(%init2), condition=%open_cond, body=%open_body
  %v = f32[64]{0} get-tuple-element(%open), index=1
  ROOT %o = (f32[64,64]{1,0}, f32[64]{0}) tuple(%res, %v)
}
"""


def test_walk_lists_every_branch_and_charges_the_most_expensive() -> None:
    module = parse_module(CONDITIONAL)
    walked = program_walk(module)
    sites = {s.instruction.name: s for s in walked.sites}
    assert list(sites) == ["lt", "next", "pick", "n1", "n2", "n3", "mm", "sum", "w"]
    # Branch 1 (one 2 x 64^3 matmul) outweighs branch 0 (three negates of 64 x 64).
    assert [sites[n].context.charged for n in ("n1", "n2", "n3", "mm")] == [False] * 3 + [True]
    branch = sites["mm"].context.branch
    assert branch is not None and branch.text() == "c branch 1 of 2"
    assert sites["n1"].context.branch is not None and sites["n1"].context.branch.index == 0
    # Inside the loop: 4 trips; the loop without a known trip count counts once, flagged.
    assert sites["mm"].trips == 4 and sites["lt"].trips == 4 and sites["lt"].context.trips_known
    assert sites["w"].trips == 1 and not sites["w"].context.trips_known
    assert sites["sum"].context.loops == () and sites["sum"].trips == 1  # through the call
    # Launches: loop body (next, pick, mm) + condition (lt), 4 trips; sum; w; the open loop's
    # constant condition launches nothing.
    assert walked.launches == 4 * 4 + 1 + 1 + 0
    assert walked.launches_static == 4 + 2
    assert [loop.name for loop in walked.loops] == ["loop", "open"]
    assert any("no known_trip_count" in n for n in walked.notes)
    assert any("charge branch 1" in n for n in walked.notes)
    # The default weight is one launch per kernel: then the three cheap kernels outweigh.
    by_launches = {s.instruction.name: s.context.charged for s in walk(module).sites}
    assert by_launches["n1"] and not by_launches["mm"]


def test_compiled_count_and_inventory_read_the_same_walk() -> None:
    info = inspect_compiled(CONDITIONAL)
    inv = kernel_inventory(CONDITIONAL)
    KernelInventory.model_validate(inv)
    assert info["kernels"] == inv["launches"] == 18
    assert info["kernels_static"] == 6 and inv["count"] == 9  # every branch listed
    by_name = {k["name"]: k for k in inv["kernels"]}
    assert by_name["n1"]["branch"] == "c branch 0 of 2" and by_name["n1"]["charged"] is False
    assert by_name["mm"]["charged"] is True and by_name["mm"]["trips"] == 4
    assert by_name["w"]["trips_known"] is False and by_name["sum"]["trips_known"] is True
    # The totals charge branch 1 only: 4 x the matmul, and the scalar add and and of the body.
    assert inv["flops"] == 4 * (2 * 64**3 + 1 + 1 + 1) + 64 * 63
    assert inv["transcendentals"] == 64  # the exponential in the open loop, counted once
    assert [loop["name"] for loop in info["while_loops"]] == ["loop", "open"]
    assert while_loops(CONDITIONAL) == info["while_loops"]
    context = loop_context(parse_module(CONDITIONAL))
    assert context["costly"] == (("loop", 4),) and context["dot_comp"] == (("loop", 4),)
    assert context["helper"] == () and context["open_body"] == (("open", None),)


def _cond(p: jax.Array, a: jax.Array, b: jax.Array) -> Any:
    return lax.cond(p > 0, lambda: jnp.tanh(a @ b), lambda: a * 2.0 + 1.0)


def _scan(xs: jax.Array, h0: jax.Array, w: jax.Array) -> Any:
    return lax.scan(lambda h, x: (jnp.tanh(x @ w + h),) * 2, h0, xs)[1]


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (_cond, (jnp.float32(1), jnp.ones((64, 64)), jnp.ones((64, 64)))),
        (_scan, (jnp.ones((8, 16, 32)), jnp.ones((16, 32)), jnp.ones((32, 32)))),
    ],
)
@pytest.mark.cpu_backend(
    "XLA:CPU's kernels sum to the program's flops exactly; a TPU folds and duplicates work "
    "across its fusions")
def test_real_programs_agree_with_each_other_and_the_program_count(fn: Any, args: Any) -> None:
    lowered = jax.jit(fn).lower(*args)
    text = lowered.compile().as_text()
    info = inspect_compiled(text)
    inv = kernel_inventory(text)
    assert info["kernels"] == inv["launches"]
    program = count_stablehlo(lowered.compiler_ir("stablehlo"),
                              compiled_loops=info["while_loops"])
    # The charged branch is the one with the most work, as the StableHLO count charges.
    assert inv["flops"] == program["flops"]
    assert inv["transcendentals"] == program["transcendentals"]


def test_fixture_programs_agree() -> None:
    for name in ("cpu_scan_hlo.txt", "gpu_step_hlo.txt"):
        text = (FIXTURES / name).read_text()
        assert inspect_compiled(text)["kernels"] == kernel_inventory(text)["launches"]
