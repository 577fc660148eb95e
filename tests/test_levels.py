"""Memory levels, transcendental and conversion ceilings: the rule on hand-made sweeps, the roofs
they give, and the measuring kernels on tiny plans."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest

from roofline_report.analysis import levels, roofs
from roofline_report.observe.ceilings import rates as rate_ceilings
from roofline_report.observe.ceilings import working_set as cache_sweep
from roofline_report.results import schema
from roofline_report.units import format_binary
from tests.ceilings_records import typed_ceilings

KiB, MiB = 1 << 10, 1 << 20
CACHES = [{"level": 1, "type": "Data", "size": 32 * KiB},
          {"level": 2, "type": "Unified", "size": 512 * KiB},
          {"level": 3, "type": "Unified", "size": 32 * MiB}]


def _plan(sizes: Iterable[int], kernels: Iterable[str]) -> dict[str, Any]:
    """A sweep's plan record of these working sets and kernels."""
    return {"sizes": sorted(set(sizes)), "bytes_per_call": MiB, "samples": 1,
            "min_sample_s": 1e-3, "kernels": list(kernels)}


def find_levels(sweep: Mapping[str, Any] | None, caches: Sequence[Mapping[str, Any]],
                backend: str, dispatch: float | None = None) -> list[levels.Level]:
    """The levels of a plain sweep and caches (as results.json holds them), read as the typed
    records the level finder takes."""
    typed = None if sweep is None else typed_ceilings({"working_set": sweep}).working_set
    return levels.find_levels(typed, [schema.CacheLevel.model_validate(c) for c in caches],
                              backend, dispatch)


def _sweep(points: dict[int, float], name: str = "read-write") -> dict[str, Any]:
    return {"available": True, "plan": _plan(points, [name]),
            "kernels": [{"name": name, "points": [
        {"bytes": b, "reps": 1, "bytes_per_call": b, "available": True, "reason": "",
         "value": v, "timing": None} for b, v in sorted(points.items())]}]}


# Rates in GB/s by working set: L1 fast, L2 a little slower, L3 slower, DRAM slowest, with the
# transitions (the upper half of each cache) in between.
POINTS = {4 * KiB: 150e9, 16 * KiB: 160e9, 32 * KiB: 120e9, 64 * KiB: 110e9, 256 * KiB: 100e9,
          512 * KiB: 80e9, 1 * MiB: 70e9, 8 * MiB: 65e9, 16 * MiB: 60e9, 64 * MiB: 40e9,
          128 * MiB: 31e9, 256 * MiB: 30e9}


def test_levels_follow_the_cache_windows() -> None:
    found = find_levels(_sweep(POINTS), CACHES, "cpu")
    by_name = {lv.name: lv for lv in found}
    assert list(by_name) == ["L1", "L2", "L3", "DRAM"]
    # L1: working sets up to half its 32 KiB: the 4 and 16 KiB points; the fastest wins.
    assert by_name["L1"].value == 160e9 and by_name["L1"].points == 2
    assert by_name["L1"].min_bytes is None and by_name["L1"].max_bytes == 32 * KiB
    # L2: (32 KiB, 256 KiB]: 64 and 256 KiB.
    assert by_name["L2"].value == 110e9 and by_name["L2"].points == 2
    # L3: (512 KiB, 16 MiB]: 1, 8 and 16 MiB.
    assert by_name["L3"].value == 70e9 and by_name["L3"].points == 3
    # DRAM: at least 4 x 32 MiB = 128 MiB.
    assert by_name["DRAM"].value == 31e9 and by_name["DRAM"].min_bytes == 32 * MiB
    assert by_name["DRAM"].max_bytes is None


def test_levels_without_cache_sizes_follow_the_drops() -> None:
    pts = {1 * MiB: 9e12, 4 * MiB: 9.5e12, 16 * MiB: 8.8e12, 256 * MiB: 3e12, 1024 * MiB: 3.3e12,
           4096 * MiB: 3.2e12}
    found = find_levels(_sweep(pts), [], "gpu")
    assert [(lv.name, lv.value) for lv in found] == [("level 1", 9.5e12), ("HBM", 3.3e12)]
    assert found[0].max_bytes == 256 * MiB and found[1].min_bytes == 256 * MiB
    # One slow point alone is noise, not a new level.
    noisy = {**pts, 4 * MiB: 4e12}
    assert [lv.name for lv in find_levels(_sweep(noisy), [], "gpu")] == ["level 1", "HBM"]


@pytest.mark.parametrize("sweep", [None, {"available": False, "reason": "out of memory"}])
def test_no_sweep_no_levels(sweep: dict[str, Any] | None) -> None:
    assert find_levels(sweep, CACHES, "cpu") == []


def _ceilings() -> dict[str, Any]:
    return {
        "available": True, "backend": "cpu", "cache_bytes": 32 * MiB, "caches": CACHES,
        "compute": [{"name": "matmul float32", "dtype": "float32", "available": True,
                     "value": 2e11}],
        "bandwidth": [{"name": "scale", "available": True, "value": 35e9,
                       "array_bytes": 512 * MiB}],
        "dispatch": {"available": True, "value": 8e-6},
        "working_set": _sweep(POINTS),
        "rates": [{"name": "tanh float32", "op": "tanh", "dtype": "float32", "available": True,
                   "value": 2.5e9, "elements": 1 << 20, "reps": 1, "ops_per_call": 1 << 20},
                  {"name": "exp float32", "op": "exp", "dtype": "float32", "available": False,
                   "value": None, "elements": 1 << 20, "reps": 1, "ops_per_call": 1 << 20}],
    }


def test_measured_roofs_pick_the_level_that_holds_the_working_set() -> None:
    m = roofs.measured(typed_ceilings(_ceilings()))
    assert m is not None
    assert m.levels() == ["L1", "L2", "L3", "DRAM"]
    l1, l3, dram = (m.bandwidth_for(ws) for ws in (8 * KiB, 4 * MiB, 1 << 30))
    assert l1 is not None and l1.level == "L1" and l1.value == 160e9
    assert l3 is not None and l3.level == "L3" and l3.value == 70e9
    # Main memory: the faster of the sweep's DRAM level (31 GB/s) and the 512 MiB stream.
    assert dram is not None and dram.level == "DRAM" and dram.value == 35e9
    # With no working set, main memory: never a cache just because it is faster.
    default = m.bandwidth_for(None)
    assert default is not None and default.level == "DRAM"
    assert m.memory_bandwidth == 35e9
    tanh = m.rate_for("tanh", "bfloat16")  # falls back on float32's rate
    assert tanh is not None and tanh.value == 2.5e9
    assert m.rate_for("exp", "float32") is None  # not available: no roof


def test_without_a_sweep_the_streams_hold_from_the_last_level_cache() -> None:
    c = _ceilings()
    del c["working_set"]
    m = roofs.measured(typed_ceilings(c))
    assert m is not None and m.levels() == ["DRAM"]
    only = m.bandwidth_for(4 * KiB)  # nothing holds it: main memory, as before levels existed
    assert only is not None and only.level == "DRAM"


def test_binary_sizes() -> None:
    assert [format_binary(x) for x in (4096, 32 * KiB, 512 * KiB, 32 * MiB, 1536, 1000, None)] \
        == ["4 KiB", "32 KiB", "512 KiB", "32 MiB", "1.5 KiB", "1000 B", "unknown"]


def test_sweep_plans() -> None:
    cpu = cache_sweep.sweep_plan("cpu", quick=False, cache_bytes=32 * MiB, free_bytes=None)
    assert cpu.sizes[0] == 4 * KiB and cpu.sizes[-1] == 256 * MiB
    assert all(b == 2 * a for a, b in zip(cpu.sizes, cpu.sizes[1:], strict=False))
    assert cpu.kernels == ("read-write", "read", "write-new")
    quick = cache_sweep.sweep_plan("cpu", quick=True, cache_bytes=32 * MiB, free_bytes=None)
    assert quick.kernels == ("read-write", "write-new")
    assert quick.bytes_per_call < cpu.bytes_per_call
    small = cache_sweep.sweep_plan("cpu", quick=False, cache_bytes=None, free_bytes=64 * MiB)
    assert small.sizes[-1] <= 8 * MiB  # an eighth of the free memory
    gpu = cache_sweep.sweep_plan("gpu", quick=False, cache_bytes=None, free_bytes=None)
    assert gpu.sizes[0] == MiB


@pytest.mark.slow
def test_tiny_sweep_and_rates_measure() -> None:
    pytest.importorskip("jax")
    plan = cache_sweep.SweepPlan((4 * KiB, 64 * KiB), bytes_per_call=1 * MiB, samples=3,
                                 min_sample_s=1e-3)
    data = cache_sweep.measure_sweep(plan)
    assert [k["name"] for k in data["kernels"]] == ["read-write", "read", "write-new"]
    for k in data["kernels"]:
        for p in k["points"]:
            assert p["available"], p["reason"]
            if k["name"] == "write-new":  # one application per call, into a fresh output
                assert p["reps"] == 1 and p["bytes_per_call"] == 2 * p["bytes"]
            else:
                assert p["value"] > 0 and p["bytes_per_call"] >= MiB // 2
    rates = rate_ceilings.measure_rates(rate_ceilings.RatePlan(
        ("tanh",), ("float32",), elements=1024, ops_per_call=1 << 16, samples=3,
        min_sample_s=1e-3))
    assert [r["name"] for r in rates] == ["tanh float32", "multiply-add float32",
                                          "convert float32<->bfloat16"]
    reduces = rate_ceilings.measure_rates(rate_ceilings.RatePlan(
        (), ("float32", "bfloat16"), elements=1024, ops_per_call=1 << 16, samples=3,
        min_sample_s=1e-3, reduce_sizes=(1 << 14, 1 << 16)))[-2:]
    # One row reduction per dtype of the plan, each over arrays of the plan's bytes.
    assert [r["name"] for r in reduces] == ["row reduction float32", "row reduction bfloat16"]
    for reduce, width in zip(reduces, (4, 2), strict=True):
        assert reduce["op"] == "reduce" and reduce["available"], reduce["reason"]
        assert [p["elements"] for p in reduce["by_size"]] == [(1 << 14) // width,
                                                              (1 << 16) // width]
        assert all(p["value"] == pytest.approx(p["elements"] / p["seconds"])
                   for p in reduce["by_size"])
    assert all(r["available"] and r["value"] > 0 for r in rates)
    assert rates[2]["ops_per_call"] == 2 * 1024 * rates[2]["reps"]
    # The multiply-add kernel chains FMA_CHAIN multiply-adds per element and pass.
    assert rates[1]["ops_per_call"] == 2 * rate_ceilings.FMA_CHAIN * 1024 * rates[1]["reps"]
    # Each records the worker threads its kernel ran on: XLA's split, at most the cores.
    import jax

    from roofline_report.observe.trace import cores
    if jax.default_backend() == "cpu":
        assert all(1 <= r["threads"] <= cores() for r in rates if r["op"] != "reduce")


def test_a_cpu_measures_its_rates_on_one_thread_too() -> None:
    """On a CPU the plan measures its functions, the multiply-add and the conversion a second
    time over a loop XLA leaves on one worker thread; an accelerator's plan has none."""
    jax = pytest.importorskip("jax")
    assert rate_ceilings.rate_plan("cpu", quick=True).one_thread == rate_ceilings.ONE_THREAD
    assert rate_ceilings.rate_plan("tpu", quick=False).one_thread == ()
    plan = rate_ceilings.RatePlan(("exp",), ("float32",), elements=1 << 16,
                                  ops_per_call=1 << 16, samples=3, min_sample_s=1e-3,
                                  one_thread=("exp", "multiply-add"))
    rates = rate_ceilings.measure_rates(plan)
    one = rates[-2:]
    assert [r["name"] for r in one] == ["exp float32 (one thread)",
                                        "multiply-add float32 (one thread)"]
    for r in one:
        assert r["elements"] == rate_ceilings.ONE_THREAD_ELEMENTS
        if jax.default_backend() == "cpu":
            assert r["available"] and r["threads"] == 1 and r["value"] > 0, r["reason"]
            schema.RateCeiling.model_validate(r)


def test_the_functions_xla_expands_are_measured_in_float32_at_a_fixed_point() -> None:
    jax = pytest.importorskip("jax")
    import numpy as np

    plan = rate_ceilings.RatePlan(("exp",), ("float32", "bfloat16"), elements=1024,
                                  ops_per_call=1 << 14, samples=3, min_sample_s=1e-3,
                                  functions=rate_ceilings.FUNCTIONS)
    rates = rate_ceilings.measure_rates(plan)
    functions = [r for r in rates if r["op"] in rate_ceilings.FUNCTIONS]
    # Each function once, in float32 only, whatever dtypes the plan measures the others in.
    assert [r["name"] for r in functions] == [f"{op} float32" for op in rate_ceilings.FUNCTIONS]
    for r in functions:
        assert r["available"] and r["value"] > 0, r["reason"]
        assert r["ops_per_call"] == 1024 * r["reps"]
    # Each step keeps its argument at a fixed point well inside the function's domain (no
    # drift into a small-argument shortcut, an overflow or a NaN), as the kernel applies it.
    for op in rate_ceilings.FUNCTIONS:
        step = rate_ceilings._step(op)
        x = jax.numpy.full((4,), 0.5, jax.numpy.float32)
        c = jax.numpy.float32(rate_ceilings.STEP_CONSTANT[op])
        for _ in range(300):
            x = step(x, c)
        value = float(np.asarray(x)[0])
        assert 0.3 < value < 2.4, (op, value)
        assert abs(float(np.asarray(step(x, c))[0]) - value) < 1e-3, op


def test_a_rate_kernel_split_across_threads_says_so() -> None:
    jax = pytest.importorskip("jax")
    from jax import lax

    from roofline_report.observe.trace import cores

    if jax.default_backend() != "cpu":
        pytest.skip("XLA splits loop kernels across threads on a CPU only")

    def loop(n: int) -> object:
        x = jax.numpy.full((n,), 0.5, jax.numpy.float32)
        return jax.jit(lambda v: lax.fori_loop(0, 4, lambda _i, y: jax.numpy.exp(-y), v)
                       ).lower(x).compile()

    # A few elements stay on one thread; 64 Ki of them are split across the cores (XLA:CPU
    # 0.10's loop emitter), never more than there are.
    assert rate_ceilings.kernel_threads(loop(8)) == 1
    big = rate_ceilings.kernel_threads(loop(1 << 16))
    assert big is not None and 1 <= big <= cores()
    if cores() > 1:
        assert big > 1


def test_multiply_add_kernel_computes_its_chain() -> None:
    jnp = pytest.importorskip("jax.numpy")
    step = rate_ceilings._step("multiply-add")
    x, c = jnp.asarray([0.5, 2.0], jnp.float32), jnp.float32(-0.5)
    expected = [0.5, 2.0]
    for _ in range(rate_ceilings.FMA_CHAIN):
        expected = [v * -0.5 + 0.25 for v in expected]
    assert [float(v) for v in step(x, c)] == pytest.approx(expected)


def test_write_new_runner_drops_each_output_as_a_program_loop_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[object] = []
    blocked: list[object] = []

    def compiled(x: object, c: object) -> object:
        out = object()
        made.append(out)
        return out

    monkeypatch.setattr(cache_sweep.timing, "block", lambda tree: blocked.append(tree) or tree)
    cache_sweep._runner("write-new", compiled, None, None)(4)
    # Four calls, and only the last output waited on: earlier ones are not held alive.
    assert len(made) == 4 and blocked == [made[-1]]


def test_write_new_calls_lose_their_dispatch_and_become_the_levels_roof() -> None:
    sweep = _sweep(POINTS)
    # One call each: 2 x size bytes in (size / 20 GB/s + 10 us): dispatch included.
    sweep["kernels"].append({"name": "write-new", "points": [
        {"bytes": b, "reps": 1, "bytes_per_call": 2 * b, "available": True, "reason": "",
         "value": 2 * b / (2 * b / 20e9 + 10e-6), "timing": None}
        for b in (4 * KiB, 64 * KiB, 8 * MiB, 256 * MiB)]})
    found = find_levels(sweep, CACHES, "cpu", dispatch=10e-6)
    fresh = {lv.name: lv for lv in found if lv.kernel == "write-new"}
    # The 4 KiB call (10.4 us) is mostly dispatch: left out; 64 KiB takes 16.6 us, past
    # 1.5 dispatches. Every level kept streams at 20 GB/s exactly once dispatch is taken off.
    assert sorted(fresh) == ["DRAM", "L2", "L3"]
    assert fresh["L3"].value == pytest.approx(20e9) and fresh["DRAM"].value == pytest.approx(20e9)
    assert not [lv for lv in find_levels(sweep, CACHES, "cpu") if lv.kernel == "write-new"]
    c = _ceilings()
    c["working_set"] = sweep
    c["dispatch"] = {"available": True, "value": 10e-6}
    m = roofs.measured(typed_ceilings(c))
    assert m is not None
    # 4 MiB moved, 2 MiB of it written to a fresh output: the write-new roof of L3.
    l3 = m.bandwidth_for(4 * MiB, written=2 * MiB)
    assert l3 is not None and l3.name == "L3 write-new" and l3.value == pytest.approx(20e9)
    # The same traffic writing almost nothing (a reduction): not the fresh-output roof.
    reduction = m.bandwidth_for(4 * MiB, written=4 * KiB)
    assert reduction is not None and reduction.name == "L3 read-write"
    assert m.bandwidth_for(4 * MiB) is reduction  # nothing said of writes: the same
    l1 = m.bandwidth_for(8 * KiB, written=4 * KiB)  # no write-new roof there: the fastest
    assert l1 is not None and l1.name == "L1 read-write"


def test_a_fresh_output_is_priced_at_the_write_new_rate_of_its_own_size() -> None:
    """Inside one cache level a fresh output's rate falls where the allocator starts mapping
    new pages for it: the level's write-new roof is its fastest point, but a kernel writing a
    large output is priced at the rate measured at its size."""
    sweep = _sweep(POINTS)
    rates = {1 * MiB: 50e9, 4 * MiB: 45e9, 8 * MiB: 8e9, 16 * MiB: 7e9}
    sweep["kernels"].append({"name": "write-new", "points": [
        {"bytes": b, "reps": 1, "bytes_per_call": b, "available": True, "reason": "",
         "value": v, "timing": None} for b, v in sorted(rates.items())]})
    c = _ceilings()
    c["working_set"] = sweep
    c["dispatch"] = {"available": True, "value": 1e-9}
    found = find_levels(sweep, CACHES, "cpu", dispatch=1e-9)
    l3 = next(lv for lv in found if lv.name == "L3" and lv.kernel == "write-new")
    assert l3.value == pytest.approx(50e9, rel=1e-3)  # the level's roof: its fastest point
    assert [b for b, _ in l3.by_size] == [1 * MiB, 4 * MiB, 8 * MiB, 16 * MiB]
    m = roofs.measured(typed_ceilings(c))
    assert m is not None
    # The sweep's sizes are its outputs' (x * c into a fresh array as large as x): a kernel's
    # fresh output is read at its own size.
    small = m.bandwidth_for(4 * MiB, written=2 * MiB)  # a 2 MiB output: between 1 and 4
    assert small is not None and small.name == "L3 write-new"
    assert 45e9 < small.value < 50e9
    large = m.bandwidth_for(16 * MiB, written=8 * MiB)  # an 8 MiB output: measured there
    assert large is not None and large.name == "L3 write-new"
    assert large.value == pytest.approx(8e9, rel=1e-3)
    # The other kernels keep no sizes: their roof is the level's.
    assert all(not lv.by_size for lv in found if lv.kernel != "write-new")


def test_a_fresh_output_smaller_than_any_told_apart_from_dispatch_meets_the_levels_roof(
        ) -> None:
    """The write-new calls of a 2-core CPU as one run measured them (64 and 128 KiB: their
    dispatch alone; 256 KiB on: told apart): an output under 256 KiB is priced at its level's
    other roof, not at the rate of a larger one; from 256 KiB, at the write-new rate."""
    sweep = _sweep(POINTS)
    calls = {64 * KiB: 4.85e-6, 128 * KiB: 4.56e-6, 256 * KiB: 12.0e-6, 512 * KiB: 18.14e-6,
             1 * MiB: 21.13e-6, 2 * MiB: 36.53e-6}
    sweep["kernels"].append({"name": "write-new", "points": [
        {"bytes": b, "reps": 1, "bytes_per_call": 2 * b, "available": True, "reason": "",
         "value": 2 * b / t, "timing": None} for b, t in sorted(calls.items())]})
    c = _ceilings()
    c["working_set"] = sweep
    c["dispatch"] = {"available": True, "value": 6.16e-6}
    m = roofs.measured(typed_ceilings(c))
    assert m is not None
    l2 = next(r for r in m.bandwidth if r.name == "L2 write-new")
    assert l2.by_size[0][0] == 256 * KiB  # the 64 and 128 KiB calls were left out
    assert not m.told_apart(128 * KiB) and m.told_apart(256 * KiB)
    # 3 x + y over 64 KiB arrays: 192 KiB touched, 64 KiB written fresh.
    small = m.bandwidth_for(192 * KiB, written=64 * KiB)
    assert small is not None and small.name == "L2 read-write"
    large = m.bandwidth_for(384 * KiB, written=256 * KiB)
    assert large is not None and large.name == "L2 write-new"
    assert large.value == pytest.approx(2 * 256 * KiB / (12.0e-6 - 6.16e-6), rel=1e-9)


def test_a_large_fresh_output_past_its_kernels_level_is_priced_at_its_own_size() -> None:
    """A kernel whose reads take it past the last cache (2 x of a 16 MiB array: 32 MiB) but
    whose fresh output a cache level's write-new sweep measured is priced at that rate, not
    at main memory's in-place pass; a small output beside large reads is not (a reduction),
    nor is a write-new roof marked implausible (tiny outputs measure dispatch)."""
    from roofline_report.analysis.roofs import BandwidthRoof, RoofSet
    from roofline_report.kinds import Kind

    m = Kind.MEASURED
    bandwidth = (
        BandwidthRoof("L1 read-write", 140e9, "L1", m, "", None, 32 * KiB),
        BandwidthRoof("L1 write-new", 1e9, "L1", m, "", None, 32 * KiB,
                      unstable="mostly dispatch", by_size=((4 * KiB, 1e9),)),
        BandwidthRoof("L3 read-write", 120e9, "L3", m, "", 32 * KiB, 32 * MiB),
        BandwidthRoof("L3 write-new", 70e9, "L3", m, "", 32 * KiB, 32 * MiB,
                      by_size=((1 * MiB, 70e9), (16 * MiB, 50e9))),
        BandwidthRoof("DRAM read-write", 68e9, "DRAM", m, "", 32 * MiB, None),
        BandwidthRoof("DRAM write-new", 5.5e9, "DRAM", m, "", 128 * MiB, None,
                      by_size=((128 * MiB, 5.5e9),)))
    r = RoofSet("this machine", m, (), bandwidth, (), ())
    fresh = r.bandwidth_for(32 * MiB, written=16 * MiB, program=True)
    assert fresh is not None and fresh.name == "L3 write-new"
    assert fresh.value == pytest.approx(50e9)
    reduction = r.bandwidth_for(32 * MiB, written=64 * KiB, program=True)
    assert reduction is not None and reduction.name == "DRAM read-write"
    # An output of the L1's size beside 48 KiB of reads: L1's write-new is not believed.
    small = r.bandwidth_for(48 * KiB, written=16 * KiB, program=True)
    assert small is not None and small.name == "L3 read-write"
    # Never faster than the working set's own level: where main memory streams at 30 GB/s, a
    # cache-sized output written from 32 MiB of reads is not priced at the cache's 50 GB/s
    # fresh-output rate (a layer norm's backward kernels, 4 MiB outputs from 8 MiB of reads,
    # ran at main memory's rate on an 8 MiB last-level cache).
    slow_dram = RoofSet("this machine", m, (), tuple(
        replace(b, value=30e9) if b.name == "DRAM read-write" else b for b in bandwidth), (), ())
    main = slow_dram.bandwidth_for(32 * MiB, written=16 * MiB, program=True)
    assert main is not None and main.name == "DRAM read-write" and main.value == 30e9


def test_rate_plan_sizes_the_reduction_by_backend() -> None:
    cpu = rate_ceilings.rate_plan("cpu", quick=False).reduce_sizes
    # 64 KiB .. 64 MiB by 2: a CPU's reduction runs on one core up to a size and split across
    # its cores past it, a step a sweep by 4 reads as one slope
    assert cpu == tuple(1 << b for b in range(16, 27))
    assert rate_ceilings.rate_plan("cpu", quick=True).reduce_sizes == (1 << 16, 1 << 20, 1 << 24)
    assert rate_ceilings.rate_plan("gpu", quick=False).reduce_sizes == tuple(
        1 << b for b in range(20, 31, 2))


def test_a_cpus_small_reductions_are_timed_without_their_reduction_too() -> None:
    cpu = rate_ceilings.rate_plan("cpu", quick=False)
    assert cpu.reduce_alone_bytes == 1 << 20
    assert rate_ceilings.rate_plan("gpu", quick=False).reduce_alone_bytes == 0
    # On this machine: the sizes up to the bound, and only those, have their call without
    # the reduction timed too
    plan = replace(cpu, reduce_sizes=(1 << 16, 1 << 21), reduce_alone_bytes=1 << 16,
                   samples=3, min_sample_s=0.001)
    entry = rate_ceilings._reduce_entry(plan)
    small, large = entry["by_size"]
    assert small["alone"] > 0 and "alone" not in large
    schema.RateCeiling.model_validate(entry)


def test_a_reduction_timed_without_its_kernel_keeps_its_small_sizes() -> None:
    """A size under one and a half dispatch floors is mostly dispatch and left out, unless the
    same call was timed without the reduction: that call's time comes off instead (the
    2-core CPU's row sum of 32 K floats: 5.1 us a call, 3.6 us of dispatch floor)."""
    def point(elements: int, seconds: float, alone: float | None = None) -> dict[str, Any]:
        return {"elements": elements, "bytes": 4 * elements, "seconds": seconds,
                "value": elements / seconds, **({"alone": alone} if alone else {})}

    c = _ceilings()
    c["dispatch"] = {"available": True, "value": 4.8e-6, "enqueued": 3.6e-6}
    c["rates"] = [{"name": "row reduction float32", "op": "reduce", "dtype": "float32",
                   "available": True, "value": 1e10, "elements": 1 << 16, "reps": 1,
                   "ops_per_call": 1 << 16, "by_size": [
                       point(1 << 14, 5.2e-6), point(1 << 15, 5.1e-6, alone=3.5e-6),
                       point(1 << 16, 9.2e-6, alone=3.6e-6)]}]
    m = roofs.measured(typed_ceilings(c))
    assert m is not None
    reduce = m.rate_for("reduce", "float32")
    assert reduce is not None
    # 16 K: no call without it, under 5.4 us: left out; 32 K and 64 K: less their own calls
    assert [e for e, _ in reduce.by_size] == [1 << 15, 1 << 16]
    assert reduce.rate_at(1 << 15) == pytest.approx((1 << 15) / 1.6e-6)
    assert reduce.rate_at(1 << 16) == pytest.approx((1 << 16) / 5.6e-6)


def test_each_rate_keeps_its_best_round() -> None:
    slow = {"name": "exp float32", "op": "exp", "available": True, "value": 1e9}
    fast = {**slow, "value": 3e9}
    assert rate_ceilings._best_round([slow, fast])["value"] == 3e9
    failed = {**slow, "available": False, "value": None}
    assert rate_ceilings._best_round([failed, slow]) == slow
    assert rate_ceilings._best_round([failed, failed]) == failed
    # A rate by size: each size from its fastest round.
    a = {"name": "row reduction float32", "op": "reduce", "available": True, "value": 2e9,
         "by_size": [{"elements": 1, "seconds": 5.0}, {"elements": 2, "seconds": 9.0}]}
    b = {**a, "value": 1e9,
         "by_size": [{"elements": 1, "seconds": 4.0}, {"elements": 2, "seconds": 12.0}]}
    assert rate_ceilings._best_round([a, b])["by_size"] == [{"elements": 1, "seconds": 4.0},
                                                            {"elements": 2, "seconds": 9.0}]


# ------------------------------------------------------------------------- plausibility


def _kernels(**points: dict[int, float]) -> dict[str, Any]:
    """A sweep of several kernels (name=points), every point one call of bytes_per_call = its
    working set (write-new: twice it, as measured)."""
    kernels = [{"name": name.replace("_", "-"), "points": [
        {"bytes": b, "reps": 1, "bytes_per_call": (2 if name == "write_new" else 1) * b,
         "available": True, "reason": "", "value": v, "timing": None}
        for b, v in sorted(pts.items())]} for name, pts in points.items()]
    sizes = (b for pts in points.values() for b in pts)
    return {"available": True, "plan": _plan(sizes, (k["name"] for k in kernels)),
            "kernels": kernels}


# The figures: L1 read 36 GB/s beside read-write 248 GB/s; L2 read at 50% of it.
RW = {4 * KiB: 240e9, 16 * KiB: 248e9, 64 * KiB: 200e9, 256 * KiB: 190e9}
READ = {4 * KiB: 30e9, 16 * KiB: 36e9, 64 * KiB: 100e9, 256 * KiB: 95e9}


def test_a_read_roof_far_below_read_write_is_unstable() -> None:
    found = {(lv.name, lv.kernel): lv
             for lv in find_levels(_kernels(read_write=RW, read=READ), CACHES, "cpu")}
    l1 = found[("L1", "read")]
    # 36 / 248 = 14.5%, under a quarter: the reason is built from those numbers.
    assert l1.value == 36e9
    assert l1.unstable is not None and "36 GB/s" in l1.unstable and "248 GB/s" in l1.unstable
    assert "15%" in l1.unstable
    assert found[("L1", "read-write")].unstable is None
    assert found[("L2", "read")].unstable is None  # 100 / 200 = 50%: plausible


def test_write_new_twenty_times_below_is_unstable_and_the_reason_names_the_retries() -> None:
    dispatch = 5e-6
    # write-new at 16 KiB: one call of 32 KiB of traffic in 10 us, 5 us of it dispatch:
    # 32768 B / 5 us = 6.55 GB/s, 37.8 times below 248 GB/s.
    sweep = _kernels(read_write=RW, write_new={16 * KiB: 32 * KiB / 10e-6,
                                               256 * KiB: 512 * KiB / 9e-6})
    sweep["kernels"][1]["points"][0]["remeasured"] = 2
    found = {(lv.name, lv.kernel): lv
             for lv in find_levels(sweep, CACHES, "cpu", dispatch)}
    l1 = found[("L1", "write-new")]
    assert l1.value == pytest.approx(32 * KiB / 5e-6)
    assert l1.unstable is not None and "37.8 times below" in l1.unstable
    assert l1.unstable.endswith("still so after 2 re-measurements")
    # L2: 524288 B / 4 us = 131 GB/s beside 200 GB/s: plausible.
    assert found[("L2", "write-new")].unstable is None


def test_implausible_by_hand() -> None:
    assert levels.implausible("read", 24.9e9, 100e9) is not None  # 24.9% < 25%
    assert levels.implausible("read", 25e9, 100e9) is None
    assert levels.implausible("write-new", 4.9e9, 100e9) is not None  # 20.4 times below
    assert levels.implausible("write-new", 5e9, 100e9) is None
    assert levels.implausible("read-write", 1e9, 100e9) is None  # the reference itself
    assert levels.implausible("read", 1e9, None) is None  # nothing to check against


def test_the_prediction_prefers_the_level_s_plausible_roof() -> None:
    c = _ceilings()
    c["dispatch"] = {"available": True, "value": 5e-6}
    c["working_set"] = _kernels(read_write=RW, write_new={16 * KiB: 32 * KiB / 10e-6})
    m = roofs.measured(typed_ceilings(c))
    assert m is not None
    l1 = [r for r in m.bandwidth if r.level == "L1"]
    assert {r.name: r.unstable is not None for r in l1} == {"L1 read-write": False,
                                                            "L1 write-new": True}
    # A kernel writing 8 KiB of fresh output in L1 would get the write-new roof; it is
    # implausible, so the level's read-write roof holds instead.
    roof = m.bandwidth_for(12 * KiB, written=8 * KiB, program=True)
    assert roof is not None and roof.name == "L1 read-write" and roof.value == 248e9


def test_the_sweep_measures_implausible_points_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each kernel's measurements in turn. read: 10 GB/s beside read-write 200 GB/s
    # (implausible), then 80 GB/s (plausible): one retry. write-new: 1 GB/s, then 1.01 GB/s
    # (a gain under 10%, a steady shortfall): one retry, still implausible.
    series: dict[str, list[float]] = {}

    def point(kind: str, size: int, plan: cache_sweep.SweepPlan) -> dict[str, Any]:
        return {"bytes": size, "reps": 1, "bytes_per_call": 2 * size,
                "value": series[kind].pop(0), "available": True, "reason": "",
                "timing": None}

    monkeypatch.setattr(cache_sweep, "measure_point", point)
    plan = cache_sweep.SweepPlan((64 * KiB,), bytes_per_call=MiB, samples=3, min_sample_s=1e-3)
    series.update({"read-write": [200e9], "read": [10e9, 80e9], "write-new": [1e9, 1.01e9]})
    data = cache_sweep.measure_sweep(plan, dispatch=1e-9)
    by_name = {k["name"]: k["points"][0] for k in data["kernels"]}
    assert by_name["read"]["value"] == 80e9 and by_name["read"]["remeasured"] == 1
    assert by_name["read"]["implausible"] == ""
    fresh = by_name["write-new"]
    assert fresh["remeasured"] == 1 and fresh["value"] == 1.01e9
    assert "times below" in fresh["implausible"]
    assert "remeasured" not in by_name["read-write"]
    # Without a dispatch floor a write-new call gives no rate to judge: not measured again.
    series.update({"read-write": [200e9], "read": [100e9], "write-new": [1e9]})
    data = cache_sweep.measure_sweep(plan, dispatch=None)
    assert all("remeasured" not in k["points"][0] for k in data["kernels"])
    # A point that keeps gaining is measured again at most REMEASURE times.
    series.update({"read-write": [200e9], "read": [1e9, 2e9, 4e9, 8e9], "write-new": [50e9]})
    data = cache_sweep.measure_sweep(plan, dispatch=1e-9)
    read = data["kernels"][1]["points"][0]
    assert read["remeasured"] == cache_sweep.REMEASURE == 2 and read["value"] == 4e9
    assert series["read"] == [8e9]


def test_a_steady_shortfall_ends_a_kernel_s_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    # The read kernel at a tenth of read-write at every size, whatever the retry: the first
    # two points are measured again once each (no gain), the rest are only marked.
    def point(kind: str, size: int, plan: cache_sweep.SweepPlan) -> dict[str, Any]:
        value = {"read-write": 200e9, "read": 20e9, "write-new": 150e9}[kind]
        return {"bytes": size, "reps": 1, "bytes_per_call": 2 * size, "value": value,
                "available": True, "reason": "", "timing": None}

    monkeypatch.setattr(cache_sweep, "measure_point", point)
    plan = cache_sweep.SweepPlan((4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB), bytes_per_call=MiB,
                                 samples=3, min_sample_s=1e-3)
    data = cache_sweep.measure_sweep(plan, dispatch=1e-9)
    read = data["kernels"][1]["points"]
    assert [p["remeasured"] for p in read] == [1, 1, 0, 0]
    assert all("10% of read-write" in p["implausible"] for p in read)
    found = {(lv.name, lv.kernel): lv for lv in find_levels(data, CACHES, "cpu", 1e-9)}
    assert found[("L1", "read")].unstable is not None
    assert found[("L1", "read")].unstable.endswith("still so after 1 re-measurement")
    assert found[("L2", "read")].unstable is not None
    assert "re-measurement" not in found[("L2", "read")].unstable  # never measured again


def test_the_tables_range_is_the_rules_range() -> None:
    """The rule says a cache level holds the working sets larger than the capacity of the
    level below and at most half its own; the table shows that range, from the same numbers
    (an L1 of 48 KiB holds up to 24 KiB, not "up to 48 KiB"), while a prediction applies the
    roof up to the capacity."""
    from roofline_report.report import figures as figs

    caches = [{"level": 1, "type": "Data", "size": 48 * KiB},
              {"level": 2, "type": "Unified", "size": 2 * MiB},
              {"level": 3, "type": "Unified", "size": 32 * MiB}]
    points = {4 * KiB: 150e9, 24 * KiB: 160e9, 32 * KiB: 120e9, 64 * KiB: 110e9,
              1 * MiB: 100e9, 2 * MiB: 80e9, 8 * MiB: 65e9, 128 * MiB: 31e9}
    by_name = {lv.name: lv for lv in find_levels(_sweep(points), caches, "cpu")}
    l1, l2, l3, dram = (by_name[k] for k in ("L1", "L2", "L3", "DRAM"))
    assert l1.window == (None, None, 24 * KiB) and l1.points == 2  # 4 and 24 KiB
    assert l2.window == (48 * KiB, None, 1 * MiB) and l2.points == 2  # 64 KiB and 1 MiB
    assert l3.window == (2 * MiB, None, 16 * MiB) and l3.points == 1  # 8 MiB
    assert dram.window == (None, 128 * MiB, None)
    shown = [figs.working_sets(*lv.window) for lv in (l1, l2, l3, dram)]
    assert shown == ["up to 24 KiB", "more than 48 KiB, up to 1 MiB",
                     "more than 2 MiB, up to 16 MiB", "at least 128 MiB"]
    assert ("larger than the capacity of the level below it and at most half its own "
            "capacity" in levels.RULE and "at least four times the last-level cache" in
            levels.RULE)
    # Predictions: the roof holds up to the capacity, as before.
    assert (l1.min_bytes, l1.max_bytes) == (None, 48 * KiB)


def test_without_cache_sizes_main_memory_is_priced_at_its_largest_working_sets() -> None:
    """An H200's read-write sweep (jax 0.11.2): the rate climbs with size while each call's
    launch dominates, peaks at 32 MiB in the 50-60 MB L2 (5.12 TB/s, above the chip's 4.8 TB/s
    of HBM) and settles at 3.8-4.0 TB/s; no drop of 40% separates the L2 from HBM, so HBM's
    roof comes from the last two octaves."""
    pts = {1 * MiB: 276e9, 2 * MiB: 659e9, 4 * MiB: 906e9, 8 * MiB: 1.56e12, 16 * MiB: 2.97e12,
           32 * MiB: 5.12e12, 64 * MiB: 3.78e12, 128 * MiB: 3.95e12, 256 * MiB: 3.96e12}
    (hbm,) = find_levels(_sweep(pts), [], "gpu")
    assert hbm.name == "HBM" and hbm.value == 3.96e12 and hbm.points == 9
    assert "its roof from the 3 of at least a quarter of the largest" in hbm.rule


def test_without_cache_sizes_the_window_is_the_plateau() -> None:
    pts = {1 * MiB: 9e12, 4 * MiB: 9.5e12, 16 * MiB: 8.8e12, 256 * MiB: 3e12,
           1024 * MiB: 3.3e12, 4096 * MiB: 3.2e12}
    first, hbm = find_levels(_sweep(pts), [], "gpu")
    assert first.window == (None, None, 16 * MiB)
    assert hbm.window == (None, 256 * MiB, None)


@pytest.mark.slow
def test_the_report_shows_the_rules_range() -> None:
    from pathlib import Path

    from roofline_report.report import views
    from roofline_report.results import io as results

    fixture = Path(__file__).resolve().parent / "fixtures" / "cpu_results.json"
    data = results.load(fixture)
    l1 = next(c["size"] for c in data["ceilings"]["caches"] if c["level"] == 1)
    rows = views.view_model(data).measured.levels
    assert {r.range for r in rows if r.level == "L1"} == \
        {f"up to {format_binary(l1 // 2)}"}
    assert not any(r.range == f"up to {format_binary(l1)}" for r in rows)


def test_between_the_last_cache_and_main_memory_a_kernel_is_priced_at_the_sweeps_rate() -> None:
    """The development machine's operating system reports an 8 MiB L3, yet a read-write pass
    ran at 56 GB/s over 8 MiB and 40 over 16 MiB before settling at 26-28 past 32 MiB (main
    memory's window starts at 4 x 8 MiB): a working set in between is priced at the sweep's
    rate at its size, or at its program's bytes per call where those are more, never below
    main memory's roof; a kernel that reads its input more than once is priced at main
    memory's roof where the sweep found such a working set gone from the cache."""
    caches = [*CACHES[:2], {"level": 3, "type": "Unified", "size": 8 * MiB}]
    pts = {1 * MiB: 44e9, 2 * MiB: 52.6e9, 4 * MiB: 50.6e9, 8 * MiB: 56.5e9, 16 * MiB: 39.9e9,
           32 * MiB: 26.2e9, 64 * MiB: 26.7e9, 128 * MiB: 28.1e9, 256 * MiB: 28.4e9}
    found = {lv.name: lv for lv in find_levels(_sweep(pts), caches, "cpu")}
    dram = found["DRAM"]
    assert dram.value == 28.4e9
    assert dram.transition == ((8 * MiB, 56.5e9), (16 * MiB, 39.9e9), (32 * MiB, 26.2e9))
    assert found["L3"].transition == ()
    rs = roofs.measured(typed_ceilings({**_ceilings(), "caches": caches,
                                        "working_set": _sweep(pts)}))
    assert rs is not None

    def at(ws: float, **kw: Any) -> float:
        roof = rs.bandwidth_for(ws, program=True, **kw)
        assert roof is not None
        return roof.value

    # 12 MiB: log-interpolated between 8 (56.5) and 16 MiB (39.9)
    assert at(12 * MiB) == pytest.approx(56.5e9 + (39.9e9 - 56.5e9) * 0.5849625, rel=1e-6)
    assert at(24 * MiB) > 28.4e9 and at(40 * MiB) == 28.4e9
    assert at(4 * MiB) == 52.6e9  # in the L3 as before: its fastest point
    # a program moving 64 MiB per call finds nothing left in the cache; a multi-pass kernel
    # over a working set the sweep found still cached (12 MiB: 46.8 GB/s, over 1.5 times main
    # memory's 28.4) reads it again at that rate, one it found spilled (24 MiB: 31) at main
    # memory's
    assert at(12 * MiB, traffic=64 * MiB) == 28.4e9
    assert at(12 * MiB, traffic=12 * MiB) == at(12 * MiB)
    assert not rs.spilled(12 * MiB) and rs.spilled(24 * MiB)
    assert at(12 * MiB, passes=3) == at(12 * MiB)
    assert at(24 * MiB, passes=3) == 28.4e9
