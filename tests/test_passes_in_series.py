"""A kernel that reads its input in several passes over data no cache holds: its terms add up.

On a 2-core CPU a softmax that XLA:CPU fused into one kernel over [4096, 1024] float32 (16 MiB
in, 16 MiB out, a 32 MiB last-level cache) took 1.8 to 2.3 ms in three runs, where its
exponentials alone were priced at 1.1 ms and its traffic at 0.57 ms; over [1024, 1024] it took
no more than its largest term."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from roofline_report import presets
from roofline_report.analysis import predict, prediction_facts, roofs
from roofline_report.analysis import terms as terms_mod
from roofline_report.results import schema
from tests.ceilings_records import typed_ceilings
from tests.kernel_records import kernel_record
from tests.test_levels import CACHES, POINTS, _ceilings, _plan


def _softmax(rows: int, width: int = 1024) -> schema.KernelRecord:
    """The one fused kernel of softmax(x, axis=-1) over [rows, width] float32, as XLA:CPU's
    inventory records it: a maximum and a sum per row (two reductions of the input), the
    exponentials, and an output as large as the input."""
    n = rows * width
    record: dict[str, Any] = {
        "name": "ynn_fusion", "opcode": "fusion", "kind": "__ynn_fusion",
        "fusion_kind": "kCustom", "category": "reduction", "computation": "main",
        "flops": 4 * n, "transcendentals": n,
        "flops_by_op": {"stablehlo.reduce": 2 * n, "stablehlo.subtract": n,
                        "stablehlo.multiply": n},
        "transcendentals_by_op": {"stablehlo.exponential": n},
        "bytes_read": 4 * n, "bytes_written": 4 * n, "argument_bytes_read": 4 * n,
        "boundary_bytes_read": 4 * n, "boundary_bytes_written": 4 * n,
        "read_by_dtype": {"f32": 4 * n}, "written_by_dtype": {"f32": 4 * n},
        "reduced_elements": 2 * n, "ops": {"reduce": 2, "exponential": 1, "fusion": 1},
        "trips": 1, "trips_known": True, "charged": True,
    }
    return kernel_record(record)


def _points(rates: dict[int, float]) -> list[dict[str, Any]]:
    return [{"bytes": b, "reps": 1, "bytes_per_call": b, "available": True, "reason": "",
             "value": v, "timing": None} for b, v in sorted(rates.items())]


@pytest.fixture(scope="module")
def machine() -> roofs.RoofSet:
    """A host with a 32 MiB last-level cache whose working-set sweep read and wrote, and read,
    past it (main memory's read roof: what :meth:`RoofSet.cold_read` needs)."""
    reads = {b: v / 2 for b, v in POINTS.items()}
    sweep = {"available": True, "plan": _plan(POINTS, ["read-write", "read"]),
             "kernels": [{"name": "read-write", "points": _points(POINTS)},
                         {"name": "read", "points": _points(reads)}]}
    rates = [{"name": "exp float32", "op": "exp", "dtype": "float32", "available": True,
              "value": 2e9, "elements": 1 << 20, "reps": 1, "ops_per_call": 1 << 20}]
    found = roofs.measured(typed_ceilings({**_ceilings(), "caches": CACHES,
                                           "working_set": sweep, "rates": rates}))
    assert found is not None and found.last_cache_bytes() == 32 * 1024 * 1024
    return found


def _work(p: predict.Prediction) -> tuple[float, float]:
    """(the sum of its work terms, the largest of its groups' combined as they overlap)."""
    work = [t for t in p.terms if t.group != "overhead"]
    compute = sum(t.seconds for t in work if t.group == "compute")
    memory = max((t.seconds for t in work if t.group == "memory"), default=0.0)
    return sum(t.seconds for t in work), max(compute, memory)


def test_passes_over_data_no_cache_holds_are_charged_one_after_another(
        machine: roofs.RoofSet) -> None:
    cache = machine.last_cache_bytes()
    assert cache is not None
    rows = int(cache // (8 * 1024)) * 2  # input and output together twice the cache
    big = predict.predict_kernel(_softmax(rows), "float32", machine)
    assert big is not None and prediction_facts.read_passes(_softmax(rows)) == 3
    overhead = sum(t.seconds for t in big.terms if t.group == "overhead")
    in_series, overlapped = _work(big)
    assert in_series > overlapped
    assert big.seconds == pytest.approx(in_series + overhead, rel=1e-12)
    assert predict.IN_SERIES.format(passes=3) in big.notes


def test_traffic_priced_twice_is_charged_once_in_series() -> None:
    """Arguments from main memory add a second memory term for the same bytes (the traffic at
    the slower rate): one after another, the slower of the two is charged, never both."""
    from roofline_report.kinds import Kind

    def term(name: str, group: str, seconds: float, detail: str = "") -> predict.Term:
        return predict.Term(name, group, seconds, "roof", Kind.MEASURED, detail)

    terms = (term("transcendental", "compute", 2.0), term("elementwise", "compute", 0.25),
             term("memory", "memory", 1.0), term("memory", "memory", 1.5, predict.COLD),
             term("reduction", "memory", 0.5), term("launch", "overhead", 0.125))
    assert terms_mod.combine(terms)[0] == 2.25 + 0.125
    assert terms_mod.combine(terms, in_series=True)[0] == 2.25 + 1.5 + 0.5 + 0.125


def test_passes_over_data_the_cache_holds_overlap(machine: roofs.RoofSet) -> None:
    cache = machine.last_cache_bytes()
    assert cache is not None
    rows = max(1, int(cache // (8 * 1024)) // 8)  # an eighth of the cache
    small = predict.predict_kernel(_softmax(rows), "float32", machine)
    assert small is not None
    overhead = sum(t.seconds for t in small.terms if t.group == "overhead")
    _, overlapped = _work(small)
    assert small.seconds == pytest.approx(overlapped + overhead, rel=1e-12)
    assert not any("passes over data no cache holds" in n for n in small.notes)


def test_an_accelerator_or_a_single_pass_is_not_charged_in_series(
        machine: roofs.RoofSet) -> None:
    chip = roofs.spec_sheet(presets.get_preset("TPU v5e"))
    facts = predict.kernel_facts(_softmax(1 << 16), "float32")
    assert facts.passes == 3
    assert not predict.passes_in_series(facts, chip)  # no host caches known there
    one_pass = predict.Facts(**{**{f: getattr(facts, f) for f in facts.__dataclass_fields__},
                                "passes": 1})
    assert not predict.passes_in_series(one_pass, machine)
    assert predict.passes_in_series(facts, machine)
    # Main memory's read roof is not needed: an unsteady one leaves the capacity known.
    unsteady = replace(machine, bandwidth=tuple(
        replace(r, unstable="spread") if r.name.endswith(" read") else r
        for r in machine.bandwidth))
    assert unsteady.cold_read() is None and predict.passes_in_series(facts, unsteady)


def test_the_reasons_last_cache_is_where_the_models_rules_switch() -> None:
    """The miss reasons ("passes over DRAM", cold arguments, "fits in the cache") speak of
    the last-level cache where the model's own rules switch, where main memory's measured
    level starts, not the operating system's figure when the two differ; that figure only
    where no level was measured."""
    from roofline_report.analysis import analyse
    from roofline_report.analysis.records import Roofs

    reported = typed_ceilings({**_ceilings(), "caches": CACHES, "cache_bytes": 8 * 1024 * 1024,
                               "working_set": {"available": True,
                                               "plan": _plan(POINTS, ["read-write"]),
                                               "kernels": [{"name": "read-write",
                                                            "points": _points(POINTS)}]}})
    measured = roofs.measured(reported)
    assert measured is not None and measured.last_cache_bytes() == 32 * 1024 * 1024
    hypothetical = roofs.hypothetical(100e9, 20e9, "test")
    both = Roofs(hypothetical=hypothetical, measured=measured, spec_sheet=None)
    assert analyse._last_cache(both, reported) == 32 * 1024 * 1024
    unmeasured = Roofs(hypothetical=hypothetical, measured=None, spec_sheet=None)
    assert analyse._last_cache(unmeasured, reported) == 8 * 1024 * 1024
    assert analyse._last_cache(unmeasured, None) is None


def test_passes_over_data_the_sweep_found_still_cached_overlap_and_read_again() -> None:
    """Past the last cache's capacity, where this run's sweep still read at least 1.5 times
    main memory's roof (a shared cache the machine's other work left mostly free): the passes
    overlap their arithmetic, each reading the input again at the sweep's rate at that size.
    On a 2-core CPU with a 32 MiB cache a layer norm over 16 MiB (64 MiB in three passes and
    its output) ran in 0.55 to 0.71 ms, a softmax in 0.86 to 0.99 ms (its exponentials'
    time), where the passes in series priced them at 0.7 to 0.93 and 1.5 to 1.75."""
    mib = 1024 * 1024
    cached = {**POINTS, 64 * mib: 100e9}  # 3.2 times main memory's 31 GB/s at 128 MiB
    sweep = {"available": True, "plan": _plan(cached, ["read-write"]),
             "kernels": [{"name": "read-write", "points": _points(cached)}]}
    rates = [{"name": "exp float32", "op": "exp", "dtype": "float32", "available": True,
              "value": 2e9, "elements": 1 << 20, "reps": 1, "ops_per_call": 1 << 20}]
    host = roofs.measured(typed_ceilings({**_ceilings(), "caches": CACHES,
                                          "working_set": sweep, "rates": rates}))
    assert host is not None and host.last_cache_bytes() == 32 * mib
    rows = 4096  # 16 MiB in, 16 MiB out: the cache's capacity
    kernel = _softmax(rows)
    facts = predict.kernel_facts(kernel, "float32")
    assert host.past_the_cache(facts.bytes) and not host.spilled(facts.bytes)
    assert not predict.passes_in_series(facts, host)
    p = predict.predict_kernel(kernel, "float32", host)
    assert p is not None and predict.IN_SERIES.format(passes=3) not in p.notes
    memory = next(t for t in p.terms if t.name == "memory")
    rate = host.bandwidth_for(facts.bytes, facts.written, program=True, passes=3)
    assert rate is not None and rate.value > 2 * 31e9  # the sweep's rate at 32 MiB
    # its 32 MiB, and the 16 MiB input twice more
    assert memory.seconds == pytest.approx(64 * mib / rate.value)
    _, overlapped = _work(p)
    overhead = sum(t.seconds for t in p.terms if t.group == "overhead")
    assert p.seconds == pytest.approx(overlapped + overhead, rel=1e-12)
