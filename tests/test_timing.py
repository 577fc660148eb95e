"""The timing harness: Stats against hand-computed values, the harness on a synthetic clock."""

from __future__ import annotations

import json
import math
import mmap
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline_report.analysis.stats import Stats, Timing
from roofline_report.errors import InputError
from roofline_report.observe import timer as timing

# ----------------------------------------------------------------------------------- Stats


def test_stats_odd_count_by_hand() -> None:
    s = Stats([5.0, 1.0, 4.0, 2.0, 3.0])
    assert (s.n, s.min, s.max) == (5, 1.0, 5.0)
    # sorted 1..5: median at position 2; q1 at (n-1)/4 = 1, q3 at 3.
    assert (s.median, s.q1, s.q3, s.iqr) == (3.0, 2.0, 4.0, 2.0)
    assert s.mean == 3.0
    assert s.outliers == 0
    assert s.spread == pytest.approx(2 / 3)
    assert s.unstable  # spread 0.67 > 0.10


def test_stats_even_count_interpolates() -> None:
    s = Stats([4.0, 1.0, 3.0, 2.0])
    # positions: median 1.5 -> 2.5; q1 0.75 -> 1 + 0.75 = 1.75; q3 2.25 -> 3 + 0.25 = 3.25.
    assert s.median == 2.5
    assert s.q1 == 1.75
    assert s.q3 == 3.25
    assert s.iqr == 1.5
    assert s.mean == 2.5


def test_stats_counts_outliers_beyond_fences() -> None:
    s = Stats([1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 5.0])
    # q1 at 2.25 -> 1.225, q3 at 6.75 -> 1.675, iqr 0.45: fences 0.55 and 2.35.
    assert s.q1 == pytest.approx(1.225)
    assert s.q3 == pytest.approx(1.675)
    assert s.median == pytest.approx(1.45)
    assert s.outliers == 1
    low = Stats([0.01, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    assert low.iqr == 0.0 and low.outliers == 1


def test_stats_stable_and_unstable_rules() -> None:
    stable = Stats([1.00, 1.01, 1.02, 1.03, 1.04, 1.05])
    assert stable.spread == pytest.approx(0.025 / 1.025)
    assert not stable.unstable
    # Exactly 0.10 is not above the threshold (binary-exact values: iqr 1, median 10).
    edge = Stats([9.0, 9.5, 10.0, 10.5, 11.0])
    assert edge.spread == 0.1
    assert not edge.unstable
    # Too few samples is unstable even with no spread at all.
    few = Stats([1.0, 1.0, 1.0, 1.0])
    assert few.spread == 0.0
    assert few.unstable
    assert not Stats([1.0] * 5).unstable


def test_stats_keeps_sample_order_and_is_frozen() -> None:
    s = Stats([3.0, 1.0, 2.0])
    assert s.samples == (3.0, 1.0, 2.0)
    with pytest.raises(AttributeError):
        s.samples = (1.0,)  # type: ignore[misc]
    assert Stats([1.0, 2.0]) == Stats((1.0, 2.0))


@pytest.mark.parametrize("bad", [[], [0.0], [-1.0], [math.nan], [math.inf], [1.0, 0.0]])
def test_stats_rejects_bad_values(bad: list[float]) -> None:
    with pytest.raises(ValueError):
        Stats(bad)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=1e-9, max_value=1e3), min_size=1, max_size=40))
def test_stats_quartiles_match_numpy_linear(values: list[float]) -> None:
    s = Stats(values)
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    assert s.q1 == pytest.approx(q1, rel=1e-12, abs=1e-15)
    assert s.median == pytest.approx(median, rel=1e-12, abs=1e-15)
    assert s.q3 == pytest.approx(q3, rel=1e-12, abs=1e-15)


# ---------------------------------------------------------------------------------- Timing


def _timing() -> Timing:
    return Timing(Stats([1e-3, 2e-3, 3e-3]), 8, 1e-7, 0.03, "test")


def test_timing_json_shape_and_round_trip() -> None:
    t = _timing()
    data = t.to_json()
    # Samples and how they were taken; no statistic (those are derived when rendering).
    assert set(data) == {"per_call_s", "inner_reps", "resolution_s", "min_sample_s", "method"}
    assert data["per_call_s"] == [1e-3, 2e-3, 3e-3] and data["inner_reps"] == 8
    assert t.seconds == t.per_call.own == 1.5e-3  # the first quartile: the one time per call
    assert Timing.from_json(json.loads(json.dumps(data, allow_nan=False))) == t


def test_page_faults_counted_while_timed_round_trip_and_are_checked() -> None:
    t = Timing(Stats([1e-3, 2e-3]), 4, 1e-9, 1e-3, "m", page_faults=12.5)
    data = t.to_json()
    assert data["page_faults_per_call"] == 12.5
    assert Timing.from_json(json.loads(json.dumps(data))) == t
    for bad in (-1, True, "many", float("nan")):
        with pytest.raises(InputError, match="page_faults_per_call"):
            Timing.from_json({**data, "page_faults_per_call": bad})


@pytest.mark.skipif(timing.minor_faults() is None, reason="the system counts no page faults")
@pytest.mark.cpu_backend("a CPU backend's page faults")
def test_measure_counts_the_page_faults_of_the_timed_calls_only() -> None:
    pages = 2048

    def allocating(n: int) -> None:  # n fresh mappings, each page written once
        for _ in range(n):
            with mmap.mmap(-1, pages * mmap.PAGESIZE) as fresh:
                if hasattr(mmap, "MADV_NOHUGEPAGE"):  # 4 KiB pages, one fault each
                    fresh.madvise(mmap.MADV_NOHUGEPAGE)
                for at in range(0, pages * mmap.PAGESIZE, mmap.PAGESIZE):
                    fresh[at] = 1

    counted = timing.measure(allocating, samples=3, min_sample_seconds=1e-4, max_inner=2,
                             count_faults=True)
    assert counted.page_faults is not None and counted.page_faults >= 0.9 * pages
    # Work outside the timed calls (fresh inputs made before each sample) is not counted.
    quiet = timing.measure(lambda n: None, samples=3, min_sample_seconds=1e-4, max_inner=2,
                           count_faults=True, prepare=allocating)
    assert quiet.page_faults is not None and quiet.page_faults < 0.1 * pages
    assert timing.measure(lambda n: None, samples=2, min_sample_seconds=1e-4,
                          max_inner=2).page_faults is None


@pytest.mark.parametrize(
    ("key", "value"),
    [("inner_reps", 0), ("inner_reps", 1.5), ("per_call_s", []), ("per_call_s", [1.0, "x"]),
     ("per_call_s", [True]), ("method", 3), ("per_call_s", None)],
)
def test_timing_from_json_rejects_malformed(key: str, value: object) -> None:
    data = _timing().to_json()
    data[key] = value
    with pytest.raises(InputError, match="malformed"):
        Timing.from_json(data)
    del data[key]
    with pytest.raises(InputError):
        Timing.from_json(data)


# ----------------------------------------------------------------------- synthetic clock


class Clock:
    """A clock that advances ``tick`` on every read and ``cost`` seconds per workload call."""

    def __init__(self, tick: float = 1e-9) -> None:
        self.now = 0.0
        self.tick = tick
        self.reads = 0

    def __call__(self) -> float:
        self.now += self.tick
        self.reads += 1
        return self.now


class Workload:
    """run(n) advances the clock by n * cost (or a scripted cost per call to run)."""

    def __init__(self, clock: Clock, cost: float, first_call_cost: float | None = None) -> None:
        self.clock = clock
        self.cost = cost
        self.first_call_cost = first_call_cost
        self.calls: list[int] = []

    def __call__(self, n: int) -> None:
        if not self.calls and self.first_call_cost is not None:
            self.clock.now += self.first_call_cost
        else:
            self.clock.now += n * self.cost
        self.calls.append(n)


def test_timer_resolution_on_synthetic_clock() -> None:
    assert timing.timer_resolution(Clock(tick=1e-6), reads=100) == pytest.approx(1e-6)
    frozen = lambda: 1.0  # noqa: E731
    assert timing.timer_resolution(frozen, reads=10) > 0


def test_timer_resolution_of_perf_counter_is_small() -> None:
    assert 0 < timing.timer_resolution() < 1e-3


def test_measure_calibrates_by_doubling_to_min_sample() -> None:
    clock = Clock()
    work = Workload(clock, cost=1e-4)
    t = timing.measure(work, samples=5, min_sample_seconds=0.01, timer=clock)
    # 1e-4 s per call: 64 calls give 6.4 ms, 128 give 12.8 ms >= 10 ms.
    assert t.inner_reps == 128
    assert work.calls[:1] == [1]  # the warm-up
    assert work.calls[1:9] == [1, 2, 4, 8, 16, 32, 64, 128]  # calibration
    assert work.calls[9:] == [128] * 5  # samples
    assert t.samples == 5
    assert t.min_sample_s == 0.01
    # Each sample is one run(128) plus one tick of the clock, divided by 128.
    assert t.per_call.median == pytest.approx(1e-4, rel=1e-6)
    assert all(v * 128 >= 0.01 for v in t.per_call.samples)
    assert t.resolution_s == pytest.approx(1e-9)


def test_measure_excludes_a_slow_warm_up() -> None:
    clock = Clock()
    work = Workload(clock, cost=1e-3, first_call_cost=5.0)
    t = timing.measure(work, samples=4, min_sample_seconds=0.004, timer=clock)
    assert work.calls[0] == 1
    assert t.inner_reps == 4
    assert t.per_call.max == pytest.approx(1e-3, rel=1e-6)


def test_measure_without_warm_up() -> None:
    clock = Clock()
    work = Workload(clock, cost=1e-3)
    timing.measure(work, samples=1, min_sample_seconds=0.002, timer=clock, warmup=0)
    assert work.calls == [1, 2, 2]


def test_measure_runs_untimed_until_the_warm_up_time_has_passed() -> None:
    clock = Clock()
    work = Workload(clock, cost=1e-4)
    t = timing.measure(work, samples=3, min_sample_seconds=0.01, timer=clock,
                       warmup_seconds=0.1)
    # Calibration ends at run(128) after 25.5 ms; 6 more untimed run(128) (12.8 ms each) bring
    # it past 100 ms; then the 3 samples.
    assert work.calls[1:9] == [1, 2, 4, 8, 16, 32, 64, 128]
    assert work.calls[9:] == [128] * 6 + [128] * 3
    assert t.samples == 3


def test_a_freshly_compiled_program_is_warmed_up_before_it_is_timed() -> None:
    # A program slow for its first 50 ms of calls (as a new executable on the CPU can be):
    # with the warm-up, no sample sees the slow phase; without it, the samples do.
    def program(clock: Clock) -> Callable[[int], None]:
        def run(n: int) -> None:
            clock.now += n * (3e-4 if clock.now < 0.05 else 2e-4)

        return run

    warm_clock, cold_clock = Clock(), Clock()
    warm = timing.measure(program(warm_clock), samples=5, min_sample_seconds=0.01,
                          timer=warm_clock, warmup_seconds=0.1)
    assert warm.per_call.max == pytest.approx(2e-4, rel=1e-3)
    cold = timing.measure(program(cold_clock), samples=5, min_sample_seconds=0.01,
                          timer=cold_clock)
    assert cold.per_call.max == pytest.approx(3e-4, rel=1e-3)


def test_measure_stops_calibrating_at_max_inner() -> None:
    clock = Clock()
    work = Workload(clock, cost=1e-6)
    t = timing.measure(work, samples=3, min_sample_seconds=1.0, max_inner=16, timer=clock)
    assert t.inner_reps == 16
    assert t.per_call.median == pytest.approx(1e-6, rel=1e-3)


def test_measure_target_follows_a_coarse_timer() -> None:
    clock = Clock(tick=1e-5)
    work = Workload(clock, cost=1e-4)
    t = timing.measure(work, samples=2, min_sample_seconds=1e-3, timer=clock)
    # 1000 ticks of 10 us = 10 ms, above the requested 1 ms.
    assert t.min_sample_s == pytest.approx(1e-2)
    assert t.inner_reps == 128


def test_measure_converts_each_sample_to_seconds_per_call() -> None:
    clock = Clock(tick=0.0)
    costs = iter([1.0, 1.0, 2.0, 3.0, 4.0])  # warm-up, calibration, three samples

    def run(n: int) -> None:
        clock.now += n * next(costs)

    t = timing.measure(run, samples=3, min_sample_seconds=0.5, timer=clock)
    assert t.inner_reps == 1
    assert t.per_call.samples == (2.0, 3.0, 4.0)


def test_measure_budget_stops_after_minimum_samples() -> None:
    clock = Clock()
    work = Workload(clock, cost=0.1)
    t = timing.measure(work, samples=50, min_sample_seconds=0.05, timer=clock, budget_seconds=0.25)
    assert t.samples == timing.MIN_BUDGET_SAMPLES


@pytest.mark.parametrize(
    "kwargs",
    [
        {"samples": 0},
        {"samples": True},
        {"min_sample_seconds": 0.0},
        {"min_sample_seconds": math.nan},
        {"max_inner": 0},
        {"warmup": -1},
    ],
)
def test_measure_rejects_bad_settings(kwargs: dict[str, object]) -> None:
    settings_: dict[str, object] = {"samples": 3, "min_sample_seconds": 0.01} | kwargs
    with pytest.raises(InputError):
        timing.measure(lambda n: None, **settings_)  # type: ignore[arg-type]


def test_measure_propagates_workload_errors() -> None:
    def run(n: int) -> None:
        raise MemoryError("out of memory")

    with pytest.raises(MemoryError):
        timing.measure(run, samples=3, min_sample_seconds=0.01)


def test_quick_defaults_are_smaller() -> None:
    assert timing.QUICK_SAMPLES < timing.DEFAULT_SAMPLES
    assert timing.QUICK_MIN_SAMPLE_SECONDS < timing.DEFAULT_MIN_SAMPLE_SECONDS
    assert 0.02 <= timing.DEFAULT_MIN_SAMPLE_SECONDS <= 0.05


# -------------------------------------------------------------------------------------- jax


class CountingExecutable:
    """Stands in for a jax Compiled: counts calls and advances a synthetic clock."""

    def __init__(self, clock: Clock, cost: float) -> None:
        import jax.numpy as jnp

        self.clock = clock
        self.cost = cost
        self.calls = 0
        self.out = jnp.zeros((4,), dtype=jnp.float32)

    def __call__(self, *args: object) -> object:
        self.calls += 1
        self.clock.now += self.cost
        return self.out + 1


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.cpu_backend("a CPU's quick sample length")
def test_time_jitted_enqueues_and_counts_calls(keep: bool) -> None:
    clock = Clock()
    fake = CountingExecutable(clock, cost=1e-3)
    t = timing.time_jitted(fake, (), quick=True, timer=clock, keep_outputs=keep)
    # quick: 5 ms per sample -> 8 calls (8 ms) after 1, 2, 4 (too short).
    assert t.inner_reps == 8
    assert t.samples == timing.QUICK_SAMPLES
    # probe + warm-up + calibration (1+2+4+8) + samples.
    assert fake.calls == 1 + 1 + 15 + timing.QUICK_SAMPLES * 8
    assert t.per_call.median == pytest.approx(1e-3, rel=1e-5)
    assert "block_until_ready" in t.method
    assert ("all outputs" in t.method) == keep


def test_time_jitted_and_measure_compile_on_a_real_function() -> None:
    import jax
    import jax.numpy as jnp

    x = jnp.arange(16.0, dtype=jnp.float32)
    lowered, compiled, lower_s, compile_s = timing.measure_compile(jax.jit(lambda v: v * 2), (x,))
    assert "multiply" in lowered.as_text()
    assert lower_s >= 0 and compile_s >= 0
    assert float(compiled(x)[3]) == 6.0
    t = timing.time_jitted(compiled, (x,), quick=True, samples=3, min_sample_seconds=1e-3)
    assert t.samples == 3 and t.inner_reps >= 1
    assert t.per_call.min > 0
    json.dumps(t.to_json(), allow_nan=False)


class _Output:
    """A call's output, counted while alive."""

    alive = 0
    most = 0

    def __init__(self) -> None:
        _Output.alive += 1
        _Output.most = max(_Output.most, _Output.alive)

    def __del__(self) -> None:
        _Output.alive -= 1


@pytest.mark.parametrize(("n", "held", "most"), [(8, 8 * 16, 8), (512, 64 * 16, 2)])
def test_enqueue_holds_outputs_only_while_they_fit(
        n: int, held: int, most: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight outputs of 16 bytes fit in 128 and are all held till the wait; 512 do not fit in
    1,024, so each is dropped as the next is made (two alive at most: the last and the one
    being made), and only the last is waited on."""
    waited: list[object] = []

    def block(tree: object) -> object:
        waited.append(tree)
        return tree

    monkeypatch.setattr(timing, "block", block)
    _Output.alive = _Output.most = 0
    calls = 0

    def call() -> _Output:
        nonlocal calls
        calls += 1
        return _Output()

    timing.enqueue(call, n, 16, held_bytes=held)
    assert calls == n
    assert _Output.most == most
    assert len(waited) == 1
    assert isinstance(waited[0], list) == (n * 16 <= held)
