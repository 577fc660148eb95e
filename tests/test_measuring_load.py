"""The load the ceilings were measured under: readings, the rule that says "under load", a round
under load taken again within a budget, and each ceiling's record of it.

Every reading is injected (``load.PROBE`` replaced): no test depends on the machine's real load
or on timing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from roofline_report.analysis.measuring_load import (
    LOADED_SHARE,
    Conditions,
    Load,
    best_round,
    ceiling_load,
    conditions,
)
from roofline_report.observe.ceilings import load
from roofline_report.results import schema
from tests.ceilings_records import typed_ceilings


class Script:
    """Readings of a two-core machine, one per call: each a second after the last; this
    process takes one core-second a second; others take ``shares[i]`` of both cores during the
    i-th span (a span is two consecutive readings: before and after one round)."""

    def __init__(self, shares: list[float]) -> None:
        self.shares = list(shares)
        self.t = self.busy = self.own = 0.0
        self.calls = 0

    def __call__(self) -> load.Sample:
        if self.calls % 2 == 1:  # the end of a span
            self.busy += 1.0 + 2.0 * self.shares.pop(0)
            self.own += 1.0
            self.t += 1.0
        self.calls += 1
        return load.Sample(wall=self.t, busy_s=self.busy, cores=2, own_s=self.own,
                           loadavg=1.5)


def reading(share: float | None, wall: float = 1.0) -> dict[str, Any]:
    return {"wall_s": wall, "others_cpu_s": None if share is None else 2.0 * wall * share,
            "cores": 2, "loadavg": [1.0, 1.2]}


#: The keys of a ceiling entry that record its rounds and their load.
ROUND_KEYS = ("name", "available", "value", "rounds", "round_loads", "repeated")


def _rounds_of(entry: dict[str, Any]) -> dict[str, Any]:
    """A ceiling entry's record of its rounds (a measured entry's other keys left out: a
    test's stand-in timing is not a timing record)."""
    return {k: entry[k] for k in ROUND_KEYS if k in entry}


def compute_entry(entry: dict[str, Any]) -> schema.ComputeCeiling:
    """A compute ceiling holding ``entry``'s rounds, as the typed record."""
    return schema.ComputeCeiling.model_validate(
        {"name": "matmul float32", "dtype": "float32", **_rounds_of(entry)})


def measured_under(compute: Sequence[dict[str, Any]] = (),
                   bandwidth: Sequence[dict[str, Any]] = (),
                   whole: dict[str, Any] | None = None) -> Conditions:
    """The conditions of a ceilings record of these compute and streaming entries' rounds and
    the load over the whole measurement (``whole``)."""
    return conditions(typed_ceilings({
        "compute": [{"name": "matmul float32", "dtype": "float32", **_rounds_of(e)}
                    for e in compute],
        "bandwidth": [{"name": "scale", **_rounds_of(e)} for e in bandwidth],
        "conditions": whole}))


# --------------------------------------------------------------------------- the rule


def test_the_share_of_other_processes_and_the_rule() -> None:
    assert Load(2.0, 1.0, 2).others_share == 0.25  # 1 core-second of 4
    assert Load(1.0, 0.5, 2).others_share == 0.25
    assert Load(1.0, 5.0, 2).others_share == 1.0  # clamped
    assert Load(1.0, None, 2).others_share is None and not Load(1.0, None, 2).loaded
    assert Load(0.0, 1.0, 2).others_share is None
    assert Load(1.0, 2 * LOADED_SHARE, 2).loaded
    assert not Load(1.0, 2 * LOADED_SHARE * 0.99, 2).loaded
    assert Load.from_json(reading(0.3)) == Load(1.0, 0.6, 2, (1.0, 1.2))
    assert Load.from_json(None) is None and Load.from_json({"cores": 2}) is None


def test_a_ceiling_is_under_load_when_its_best_round_was() -> None:
    entry = {"name": "matmul float32", "available": True, "value": 9.0, "rounds": [5.0, 9.0],
             "round_loads": [reading(0.9), reading(0.0)], "repeated": 1}
    assert best_round(compute_entry(entry)) == 1
    assert ceiling_load(compute_entry(entry)) == Load.from_json(reading(0.0))
    quiet = measured_under([entry], [])
    assert not quiet.loaded and quiet.repeated == 1 and quiet.rounds_recorded == 2
    # The best round under load: the ceiling is.
    loaded = {**entry, "round_loads": [reading(0.0), reading(0.5)]}
    c = measured_under([loaded], [{**loaded, "name": "triad"}], reading(0.1))
    assert c.loaded and c.loaded_ceilings == ("matmul float32", "triad")
    # The whole measurement under load, its rounds not recorded (None: unknown).
    c = measured_under([{**entry, "round_loads": [None, None]}], whole=reading(0.4))
    assert c.loaded and c.loaded_ceilings == () and c.rounds_recorded == 0
    # Nothing recorded (a run saved before the load was): not judged.
    c = measured_under([{**entry, "round_loads": []}])
    assert not c.loaded and not c.recorded


# ------------------------------------------------------------------------------ readings


def test_load_between_two_readings() -> None:
    start = load.Sample(wall=10.0, busy_s=100.0, cores=4, own_s=3.0, loadavg=0.5)
    end = load.Sample(wall=12.0, busy_s=106.0, cores=4, own_s=5.5, loadavg=1.25)
    assert load.load_between(start, end) == {"wall_s": 2.0, "others_cpu_s": 3.5, "cores": 4,
                                             "loadavg": [0.5, 1.25]}
    unknown = load.Sample(wall=12.0, busy_s=None, cores=None, own_s=5.5, loadavg=None)
    assert load.load_between(start, unknown) == {"wall_s": 2.0, "others_cpu_s": None,
                                                 "cores": None, "loadavg": [0.5]}


def test_proc_stat_is_read_as_busy_seconds_and_cores(tmp_path: Path) -> None:
    import os

    ticks = os.sysconf("SC_CLK_TCK")
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal guest guest_nice
    stat.write_text(f"cpu  {ticks * 10} {ticks} {ticks * 2} {ticks * 99} {ticks * 7} 0 "
                    f"{ticks} 0 0 0\ncpu0 1 2 3\ncpu1 4 5 6\nintr 1 2\n", encoding="ascii")
    assert load.read_proc_stat(stat) == (14.0, 2)  # idle and iowait are not busy
    stat.write_text("nonsense\n", encoding="ascii")
    assert load.read_proc_stat(stat) is None
    assert load.read_proc_stat(tmp_path / "missing") is None


# --------------------------------------------------------------------- taking rounds again


def _rounds(rates: list[float]) -> Any:
    calls = iter(rates)
    return lambda: next(calls)


def test_a_round_under_load_is_taken_again_and_the_quiet_one_kept(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load, "PROBE", Script([0.8, 0.0]))
    budget = load.Budget(10.0)
    rate, kept, repeats = load.quiet_round(_rounds([50.0, 40.0]), float, budget)
    # The quiet round is kept, though the loaded one read faster.
    assert (rate, repeats) == (40.0, 1)
    assert kept == {"wall_s": 1.0, "others_cpu_s": 0.0, "cores": 2, "loadavg": [1.5, 1.5]}
    assert budget.repeated == 1 and budget.spent == 1.0


def test_rounds_all_under_load_stop_after_the_repeats_and_keep_the_fastest(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load, "PROBE", Script([0.5] * (1 + load.MAX_REPEATS)))
    rate, kept, repeats = load.quiet_round(_rounds([10.0, 30.0, 20.0]), float,
                                           load.Budget(100.0))
    assert (rate, repeats) == (30.0, load.MAX_REPEATS)
    assert load.is_loaded(kept)


@pytest.mark.parametrize("budget", [None, load.Budget(0.0)])
def test_without_a_budget_a_round_is_taken_once(budget: load.Budget | None,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load, "PROBE", Script([0.9]))
    rate, kept, repeats = load.quiet_round(_rounds([10.0]), float, budget)
    assert (rate, repeats) == (10.0, 0) and load.is_loaded(kept)


def test_the_budget_is_shared_and_spent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load, "PROBE", Script([0.9, 0.9, 0.9, 0.9]))
    budget = load.Budget(1.5)  # one repeat of a second leaves half a second: one more
    load.quiet_round(_rounds([1.0, 2.0, 3.0]), float, budget)
    assert budget.repeated == 2 and budget.left() < 0
    _, _, repeats = load.quiet_round(_rounds([4.0]), float, budget)
    assert repeats == 0  # nothing left


def test_a_repeat_that_fails_leaves_the_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load, "PROBE", Script([0.9]))
    attempts = iter([lambda: 7.0, lambda: (_ for _ in ()).throw(MemoryError("x"))])
    rate, _, repeats = load.quiet_round(lambda: next(attempts)(), float, load.Budget(9.0))
    assert (rate, repeats) == (7.0, 0)


# --------------------------------------------------------------- in a compute ceiling


def test_a_compute_ceiling_records_each_round_s_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """The full timing of matmul float32 under load the first time (taken again, quiet), then
    quiet in the second round: both rounds' loads recorded, the repeat counted."""
    from roofline_report.observe.ceilings import compute
    from roofline_report.observe.ceilings.plan import Plan

    full = iter([2e-3, 1e-3, 1.5e-3])  # per-call minimum of each full timing, in order

    def fake_time(compiled: Any, args: Any, **kw: Any) -> Any:
        seconds = next(full)
        return SimpleNamespace(per_call=SimpleNamespace(min=seconds),
                               to_json=lambda s=seconds: {"s": s})

    monkeypatch.setattr(compute.timing, "time_jitted", fake_time)
    monkeypatch.setattr(load, "PROBE", Script([0.6, 0.0, 0.1]))
    plan = Plan(matmul_sizes=(32,), matmul_max_call_s=1.0, matmul_dtypes=("float32",),
                array_bytes=1 << 20, samples=2, min_sample_s=1e-3, sweep_samples=2,
                sweep_min_sample_s=5e-4, budget_s=0.1)
    again: list[Any] = []
    budget = load.Budget(30.0)
    entry = compute.matmul_entry("float32", "cpu", plan, lambda _m: None, again=again,
                                 budget=budget)
    for closure in again:
        closure()
    flops = 2 * 32**3
    assert entry["rounds"] == [flops / 1e-3, flops / 1.5e-3]
    assert entry["value"] == flops / 1e-3 and entry["timing"] == {"s": 1e-3}
    assert [r["others_cpu_s"] for r in entry["round_loads"]] == pytest.approx([0.0, 0.2])
    assert entry["repeated"] == 1 and budget.repeated == 1
    assert not measured_under([entry]).loaded


# ------------------------------------------------------------- a round under load discarded


def test_the_round_kept_is_the_fastest_quiet_one() -> None:
    quiet, busy = reading(0.0), reading(0.9)
    assert load.preferred([5.0, 9.0], [quiet, busy]) == 0  # the faster one ran under load
    assert load.preferred([5.0, 9.0], [quiet, quiet]) == 1
    assert load.preferred([5.0, 9.0], [busy, busy]) == 1  # all under load: the fastest
    assert load.preferred([5.0, 9.0], [None, None]) == 1  # unknown load: not judged
    assert load.preferred([7.0, 7.0], [quiet, quiet]) == 0  # the first of equal ones
    # The analysis finds the kept round by its rate, not by being the fastest.
    entry = {"available": True, "value": 5.0, "rounds": [5.0, 9.0],
             "round_loads": [quiet, busy]}
    assert best_round(compute_entry(entry)) == 0 and not measured_under([entry]).loaded


def test_a_stream_s_round_under_load_is_discarded_for_a_quiet_one() -> None:
    from roofline_report.observe.ceilings import streams

    def stream(value: float, share: float) -> dict[str, Any]:
        return {"name": "scale", "available": True, "value": value, "reason": "",
                "round_loads": [reading(share)], "repeated": 1}

    best = streams.best_streams([[stream(30e9, 0.0)], [stream(45e9, 0.8)]])
    assert best[0]["value"] == 30e9 and best[0]["rounds"] == [30e9, 45e9]
    assert best[0]["round_loads"] == [reading(0.0), reading(0.8)]
    assert best[0]["repeated"] == 2
    assert not measured_under(bandwidth=best).loaded


def test_a_compute_ceiling_keeps_its_quiet_round(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first full round ran under load (and again under load: no budget), the second
    quiet but slower: the quiet one is the value."""
    from roofline_report.observe.ceilings import compute
    from roofline_report.observe.ceilings.plan import Plan

    full = iter([1e-3, 2e-3])

    def fake_time(compiled: Any, args: Any, **kw: Any) -> Any:
        seconds = next(full)
        return SimpleNamespace(per_call=SimpleNamespace(min=seconds),
                               to_json=lambda s=seconds: {"s": s})

    monkeypatch.setattr(compute.timing, "time_jitted", fake_time)
    monkeypatch.setattr(load, "PROBE", Script([0.7, 0.0]))
    plan = Plan(matmul_sizes=(32,), matmul_max_call_s=1.0, matmul_dtypes=("float32",),
                array_bytes=1 << 20, samples=2, min_sample_s=1e-3, sweep_samples=2,
                sweep_min_sample_s=5e-4, budget_s=0.1)
    again: list[Any] = []
    entry = compute.matmul_entry("float32", "cpu", plan, lambda _m: None, again=again)
    for closure in again:
        closure()
    flops = 2 * 32**3
    assert entry["rounds"] == [flops / 1e-3, flops / 2e-3]
    assert entry["value"] == flops / 2e-3 and entry["timing"] == {"s": 2e-3}
    assert not measured_under([entry]).loaded
