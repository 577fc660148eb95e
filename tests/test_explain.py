"""Why a prediction missed (roofline_report.analysis.explain), on hand-made evidence."""

from __future__ import annotations

from dataclasses import replace

from roofline_report.analysis.explain import Evidence, kernel_reason, program_reason
from roofline_report.analysis.kernel_records import KernelRow
from roofline_report.analysis.miss import Miss
from roofline_report.analysis.predict import Prediction, Term
from roofline_report.analysis.stats import Stats
from roofline_report.backends import describe
from roofline_report.kinds import Kind
from tests.kernel_records import kernel_record, kernel_records

MiB = 1 << 20
M = Kind.MEASURED
CPU, GPU = describe("cpu"), describe("cuda")


def _prediction(seconds: float, *, level: str = "L3", compute: float | None = None,
                memory: float | None = None, overhead: float = 5e-6) -> Prediction:
    terms = (Term("elementwise", "compute", seconds / 2 if compute is None else compute,
                  "multiply-add float32", M),
             Term("memory", "memory", seconds if memory is None else memory, f"{level} read",
                  M, level),
             Term("dispatch", "overhead", overhead, "dispatch enqueued", M))
    binding = max(terms, key=lambda t: t.seconds)
    return Prediction(seconds, terms, binding, 1e6, 4 * MiB, "the kernels' touched bytes", level)


def _evidence(**over: object) -> Evidence:
    base: dict[str, object] = {"backend": CPU, "dtype": "float32",
                               "timing": Stats([1.0, 1.01, 1.02, 0.99, 1.0])}
    base.update(over)
    return Evidence(**base)  # type: ignore[arg-type]


def _why(p: Prediction, measured: float, **over: object) -> str:
    return program_reason(p, Miss(p.seconds, measured), _evidence(**over))


def test_within_a_factor_of_two_and_under_its_roof_says_nothing() -> None:
    assert _why(_prediction(100e-6), 140e-6) == ""
    assert _why(_prediction(100e-6), 199e-6) == ""
    # Twice as slow is off, as twice as fast is (their errors against the measured time, 0.5
    # and 1.0, are not alike).
    assert _why(_prediction(100e-6), 200e-6).startswith("unknown: slower")
    # 10% faster than predicted: above the rates its prediction used.
    assert _why(_prediction(100e-6), 90e-6).startswith("above its prediction: ")


def test_each_reason_follows_from_its_evidence() -> None:
    noisy = Stats([1.0, 1.5, 2.0, 0.7, 1.2])
    assert _why(_prediction(100e-6), 300e-6, timing=noisy).startswith("unstable: ")
    dram = _prediction(100e-6, level="DRAM")
    assert "cache level: " in _why(dram, 30e-6, cache_bytes=32 * MiB)
    assert "unfused intermediates: the compiled program accesses 3×" in _why(
        _prediction(100e-6), 300e-6, xla_bytes=12.0 * MiB)
    launches = _prediction(10e-6, compute=1e-6, memory=2e-6, overhead=10e-6)
    assert "launch-bound: 40 kernels" in _why(launches, 40e-6, kernels=40)
    assert "conversions: the CPU computes" in _why(_prediction(100e-6), 300e-6,
                                                   dtype="bfloat16")
    assert "conversions: " not in _why(_prediction(100e-6), 300e-6, dtype="bfloat16",
                                       backend=GPU)
    assert "loop: " in _why(_prediction(100e-6), 300e-6, loops=True)
    assert _why(_prediction(100e-6), 300e-6) == (
        "unknown: slower than predicted, with no evidence of a cause here")


def test_page_faults_counted_while_timed_explain_a_slow_program() -> None:
    p = _prediction(100e-6)
    # 200 faults a call at 1 us each: 200 us of a 300 us call predicted at 100 us.
    why = _why(p, 300e-6, page_faults=200.0, fault_s=1e-6)
    assert why.startswith("fresh pages: while it was timed the process took 200 page faults "
                          "a call (counted), 200 µs at the measured cost")
    assert "none predicted" in why
    # A few faults do not explain the miss; nor do any without a measured cost of one.
    assert "fresh pages" not in _why(p, 300e-6, page_faults=10.0, fault_s=1e-6)
    assert "fresh pages" not in _why(p, 300e-6, page_faults=200.0)
    # Faster than predicted: faults are no reason for that.
    assert "fresh pages" not in _why(_prediction(300e-6), 100e-6, page_faults=200.0,
                                     fault_s=1e-6)


def test_faster_than_the_dispatch_floor_is_said_so() -> None:
    tiny = _prediction(9e-6, compute=1e-7, memory=1e-6, overhead=8e-6)
    why = _why(tiny, 5.5e-6)
    assert "dispatch-bound: the call took 5.5 µs, under the 8 µs of dispatch" in why
    # Faster than predicted but above the overhead: no such claim.
    assert "dispatch-bound" not in _why(_prediction(100e-6), 30e-6)


def _row(name: str, category: str, seconds: float | None, predicted: float) -> KernelRow:
    p = _prediction(predicted)
    m = Miss(predicted, seconds) if seconds else None
    return KernelRow(name, category, None, None, None, 1, 1.0, seconds, seconds, "busy",
                     None, None, 1e6, 0, 4 * MiB, p, m)


def test_the_kernels_behind_most_of_a_miss_are_named() -> None:
    rows = [_row("wrapped_reduce-window", "reduction", 2.7e-3, 0.2e-3),
            _row("copy_fusion", "data movement", 0.8e-3, 0.01e-3),
            _row("ynn_fusion", "matmul", 0.3e-3, 0.3e-3),
            _row("untimed", "elementwise", None, 1e-6)]
    why = _why(_prediction(1e-3), 4e-3, rows=rows)
    assert why.startswith("slow kernels: wrapped_reduce-window (reduction, 2.7 ms against "
                          "200 µs predicted), copy_fusion (data movement, 800 µs against "
                          "10 µs predicted) account for 100% of the time")
    # Spread over many kernels of several kinds, none a few of which, nor one kind of which,
    # explains half: not named.
    kinds = ("elementwise", "reduction", "data movement", "matmul", "other")
    even = [_row(f"k{i}", kinds[i % 5], 2e-4, 1e-4) for i in range(10)]
    assert "slow kernels" not in _why(_prediction(1e-3), 4e-3, rows=even)
    # Many of one kind (a decode step's eight transposing copies of its caches, each a few
    # times its price): the kind is named, counted, with the spread of their times.
    copies = [replace(_row(f"copy_bitcast_fusion.{i}", "data movement", (1.0 + 0.05 * i) * 1e-3,
                           0.23e-3), pattern="transpose") for i in range(8)]
    why = _why(_prediction(2e-3), 12e-3, rows=[*copies, *even])
    assert why == ("slow kernels: 8 transpose kernels (copy_bitcast_fusion.7 and 7 more), 1 ms "
                   "to 1.35 ms each against 230 µs predicted, account for 88% of the time the "
                   "kernels took beyond their predictions: they run far below their roofs"), why
    # Said only where nothing more specific is: not beside another reason.
    assert _why(_prediction(2e-3), 12e-3, rows=copies, loops=True).startswith("loop: ")
    # Faster than predicted: the kernels are not blamed.
    assert "slow kernels" not in _why(_prediction(4e-3), 1e-3, rows=rows)


def test_the_kernels_behind_most_of_a_fast_program_are_named_with_their_roofs() -> None:
    """A program faster than predicted by 2× or more names the few kernels whose predictions
    overshoot most (a TPU's gathers of a table held on chip, held to a gather roof measured
    from main memory) rather than 'unknown'."""
    rows = [_row("gather_fusion", "data movement", 0.1e-3, 2.85e-3),
            _row("fusion.4", "reduction", 0.02e-3, 0.14e-3),
            _row("dot", "matmul", 0.5e-3, 0.45e-3),
            _row("untimed", "elementwise", None, 1e-3)]
    why = _why(_prediction(4e-3), 0.93e-3, rows=rows)
    label = _prediction(1.0).binding
    assert why.startswith("above its prediction: ")
    assert (f"; fast kernels: gather_fusion (data movement, 100 µs against 2.85 ms predicted "
            f"at its {label.label} roof, {label.roof}), fusion.4 (reduction, 20 µs against "
            f"140 µs predicted at its {label.label} roof, {label.roof}) account for 100% of "
            "the time the kernels' predictions exceed their measured times") in why
    assert "unknown" not in why and "slow kernels" not in why
    # Spread over many kernels, none a few of which explains half: not named.
    even = [_row(f"k{i}", "elementwise", 1e-4, 4e-4) for i in range(10)]
    assert "fast kernels" not in _why(_prediction(4e-3), 1e-3, rows=even)
    # Slower than predicted: these kernels are not the reason.
    assert "fast kernels" not in _why(_prediction(1e-3), 4e-3, rows=rows)


def test_a_point_above_its_prediction_says_so_first() -> None:
    why = _why(_prediction(100e-6), 90e-6)
    assert why.startswith("above its prediction: ") and "unknown" not in why  # within 50%
    off = _why(_prediction(300e-6), 100e-6)
    assert off.startswith("above its prediction: ") and "; unknown: faster" in off


def test_a_kernel_reason_names_its_roof_and_a_kind_without_one() -> None:
    slow = _row("copy_bitcast_fusion", "data movement", 11e-3, 0.3e-3)
    assert kernel_reason(slow) == "37× slower than predicted at its memory: L3 roof (L3 read)"
    transpose = KernelRow(**{**{f: getattr(slow, f) for f in slow.__slots__},
                             "pattern": "transpose"})
    assert kernel_reason(transpose).endswith(
        "; no roof measured for this kind (a transposing copy)")
    # A max pool's gradient's window, priced by its bytes under ceilings measured before the
    # window roofs were.
    window = replace(slow, pattern="reduce-window")
    assert kernel_reason(window).endswith(
        "; no roof measured for this kind (a windowed maximum outside the library (a max "
        "pool, or its gradient keeping indices))")
    assert kernel_reason(_row("ok", "elementwise", 1.1e-3, 1e-3)) == ""
    assert kernel_reason(_row("twice", "elementwise", 2e-3, 1e-3)).startswith(
        "2× slower than predicted at its memory: L3 roof")
    assert kernel_reason(_row("nearly", "elementwise", 1.9e-3, 1e-3)) == ""
    # Above its roof yet within 5% of its prediction: "as predicted", never "as predicted
    # than predicted".
    edge = kernel_reason(_row("edge", "elementwise", 0.951e-3, 1e-3))
    assert edge == "as predicted at its memory: L3 roof (L3 read)"


def test_a_kernel_whose_work_is_not_counted_says_it_has_no_roof() -> None:
    from dataclasses import replace

    top_k = replace(_row("custom-call", "other", 150e-6, 1.3e-6), uncosted=("TopK",))
    assert kernel_reason(top_k) == (
        "115× slower than predicted at its dispatch roof (dispatch enqueued); no roof measured "
        "for this kind (TopK: its work is not counted, only its bytes and its launch)")
    # Faster than predicted, or counted: nothing to say of its kind.
    assert "no roof" not in kernel_reason(replace(top_k, seconds=0.1e-6,
                                                  miss=Miss(1.3e-6, 0.1e-6)))
    assert "no roof" not in kernel_reason(replace(top_k, uncosted=()))
    # Priced at the top-k pattern's measured rate: it has a roof, whatever its flops.
    assert top_k.prediction is not None
    priced = replace(top_k.prediction, terms=(*top_k.prediction.terms, Term(
        "pattern", "pattern", 1e-6, "top-k float32", M, "top-k")))
    assert "no roof" not in kernel_reason(replace(top_k, pattern="top-k", prediction=priced))


def test_a_kernel_faster_than_any_roof_says_its_time_is_not_all_its_work() -> None:
    # 1e6 flops in 0.5 us: 2 TFLOP/s, above a 200 GFLOP/s machine; 8x faster than predicted.
    fast = _row("dot.49", "matmul", 0.5e-6, 4e-6)
    assert kernel_reason(fast, peak=200e9).endswith(
        "; its 2 TFLOP/s is above the highest compute roof (200 GFLOP/s), so its traced time "
        "cannot hold all of its work: it ran beside other kernels and was given too small a "
        "share of that time")
    assert "highest compute roof" not in kernel_reason(fast, peak=3e12)
    assert "highest compute roof" not in kernel_reason(fast)


def test_a_kernel_whose_time_moved_between_calls_says_so() -> None:
    slow = _row("copy_bitcast_fusion", "data movement", 11e-3, 0.3e-3)
    fields = {f: getattr(slow, f) for f in slow.__slots__}
    steady = KernelRow(**{**fields, "spread": (11e-3, 12e-3)})
    assert kernel_reason(steady) == "37× slower than predicted at its memory: L3 roof (L3 read)"
    moving = KernelRow(**{**fields, "spread": (11e-3, 30e-3)})
    assert kernel_reason(moving).endswith(
        "; its time moved from 11 ms to 30 ms over the traced calls (first to third quartile), "
        "so this miss is uncertain by as much")


def test_a_lower_bound_slower_than_measured_says_its_loop_was_counted_once() -> None:
    from dataclasses import replace

    bound = replace(_prediction(100e-6), lower_bound=True)
    assert _why(bound, 2.4e-3).startswith("unknown trip count: a while loop that stops on data")
    assert "unknown trip count" not in _why(_prediction(100e-6), 2.4e-3)
    assert "unknown trip count" not in _why(bound, 110e-6)  # within its bound: nothing said


def test_a_prediction_that_left_work_unpriced_says_which_when_slower() -> None:
    from dataclasses import replace

    short = replace(_prediction(100e-6), unpriced=("elementwise flops (no multiply-add rate)",))
    assert _why(short, 2.4e-3).startswith(
        "work not priced: elementwise flops (no multiply-add rate): the roofs it was priced on "
        "hold no such rate, so the prediction leaves that work out")
    assert "not priced" not in _why(_prediction(100e-6), 2.4e-3)
    assert "not priced" not in _why(short, 40e-6)  # faster than predicted: not the cause


def test_above_its_prediction_names_the_kind_of_the_rate_it_is_held_to() -> None:
    measured = _why(_prediction(100e-6), 90e-6)
    assert "(a rate measured lower than this program met)" in measured
    for kind, words in ((Kind.HYPOTHETICAL, "a hypothetical rate"),
                        (Kind.SPEC_SHEET, "a spec sheet rate")):
        p = _prediction(100e-6)
        assumed = replace(p, binding=replace(p.binding, kind=kind))
        why = _why(assumed, 90e-6)
        assert f"({words} lower than this program met)" in why and "measured lower" not in why


def test_a_call_faster_than_its_floors_blames_the_floors_not_the_roofs() -> None:
    floors = _prediction(10e-6, compute=1e-7, memory=2e-7, overhead=10e-6)
    assert floors.binding.group == "overhead"
    why = _why(floors, 5e-6)
    assert why.startswith("above its prediction: it ran faster than its prediction allows "
                          "(a floor measured higher than this call took: the floors moved, "
                          "not the roofs)")
    assert "rate measured lower" not in why


def test_kernels_priced_in_the_cache_that_ran_at_main_memory_s_rate_were_evicted() -> None:
    # Ten kernels of 8 MiB each, priced at the L3 roof (each 100 us), ran 300 us: 28 GB/s,
    # about main memory's 26 GB/s; the program's data at its peak, 12 MiB, past the 8 MiB
    # last-level cache.
    rows = [_row(f"broadcast_fusion.{i}", "elementwise", 300e-6, 100e-6) for i in range(10)]
    rows = [replace(r, bytes=8.0 * MiB) for r in rows]
    ok = {"rows": rows, "cache_bytes": 8 * MiB, "footprint": 12.0 * MiB,
          "main_roof": ("DRAM read-write", 26e9)}
    why = _why(_prediction(1e-3), 3e-3, **ok)
    assert why == (
        "evicted from the cache: 10 kernels priced at the L3 roof ran at 28 GB/s, about DRAM's "
        "rate (DRAM read-write: 26 GB/s), and the program's data at its peak (12 MiB) "
        "exceed the 8 MiB last-level cache, so their operands came back from DRAM: 100% of "
        "the time the kernels took beyond their predictions")
    # Each piece of evidence is needed: data that fit the cache, kernels well above main
    # memory's rate, kernels priced at main memory already, no main-memory roof, a program
    # faster than predicted.
    assert "evicted" not in _why(_prediction(1e-3), 3e-3, **{**ok, "footprint": 6.0 * MiB})
    assert "evicted" not in _why(_prediction(1e-3), 3e-3, **{**ok, "main_roof": ("DRAM", 9e9)})
    dram = [replace(r, prediction=_prediction(100e-6, level="DRAM")) for r in rows]
    assert "evicted" not in _why(_prediction(1e-3), 3e-3, **{**ok, "rows": dram})
    assert "evicted" not in _why(_prediction(1e-3), 3e-3, **{**ok, "main_roof": None})
    assert "evicted" not in _why(_prediction(3e-3), 1e-3, **ok)
    # They must hold at least half of the kernels' time beyond their predictions; a kernel
    # far below main memory's rate (1.4 GB/s) is slow for another reason.
    slow = _row("copy_fusion", "data movement", 6e-3, 0.1e-3)
    assert "evicted" not in _why(_prediction(1e-3), 9e-3, **{**ok, "rows": [*rows, slow]})
    one = _why(_prediction(1e-3), 3e-3, **{**ok, "rows": rows[:1]})
    assert "1 kernel priced at the L3 roof ran at 28 GB/s" in one and "so its operands" in one


def test_the_footprint_is_the_compilers_peak_else_its_parts() -> None:
    from roofline_report.analysis.fresh_pages import footprint_bytes
    from roofline_report.results.schema import MemoryStats

    values = {"argument_size_in_bytes": 8, "output_size_in_bytes": 4, "temp_size_in_bytes": 2}
    assert footprint_bytes(MemoryStats(available=True,
                                       values={**values, "peak_memory_in_bytes": 12})) == 12
    assert footprint_bytes(MemoryStats(available=True, values=values)) == 14
    assert footprint_bytes(MemoryStats(available=False, reason="no analysis", values={})) is None
    assert footprint_bytes(None) is None


def test_a_kernel_that_reads_its_input_from_main_memory_in_passes_is_named() -> None:
    from roofline_report.analysis.read_passes import MultiPass

    # A layer norm in one library kernel over a 16 MiB input: three reads and a write at
    # 28 GB/s take 2.4 ms, where 1.2 ms was predicted; the program took 2.7 ms.
    norm = MultiPass("ynn_fusion", 3, 16.0 * MiB, 16.0 * MiB, 16.0 * MiB, 1.2e-3)
    ok = {"multi_pass": [norm], "cache_bytes": 8 * MiB, "main_roof": ("DRAM read-write", 28e9)}
    why = _why(_prediction(1.25e-3), 2.7e-3, **ok)
    assert why == (
        "passes over DRAM: ynn_fusion reads its 16 MiB input 3 times, and 3 reads and a write "
        "at the DRAM read-write roof take 2.4 ms against the 1.2 ms predicted; its "
        "input exceeds the 8 MiB last-level cache, so each pass that reads it whole comes from "
        "DRAM (28 GB/s): 83% of the time the program took beyond its prediction")
    # Each piece of evidence is needed: an input that fits the cache, no main-memory roof or
    # cache size, a program faster than predicted, passes that would explain under half of
    # the miss, and passes that would take far longer than the program did (a kernel that
    # makes them a row at a time, from the cache).
    assert "passes" not in _why(_prediction(1.25e-3), 2.7e-3,
                                **{**ok, "cache_bytes": 32 * MiB})
    assert "passes" not in _why(_prediction(1.25e-3), 2.7e-3, **{**ok, "main_roof": None})
    assert "passes" not in _why(_prediction(1.25e-3), 2.7e-3, **{**ok, "cache_bytes": None})
    assert "passes" not in _why(_prediction(2.7e-3), 1.25e-3, **ok)
    assert "passes" not in _why(_prediction(1.25e-3), 4e-3, **ok)
    many = replace(norm, passes=9)  # 9 reads and a write: 6 ms against 2.7 ms measured
    assert "passes" not in _why(_prediction(1.25e-3), 2.7e-3, **{**ok, "multi_pass": [many]})


def test_read_passes_count_each_reduction_and_the_output_made_from_the_input() -> None:
    from roofline_report.analysis.read_passes import multi_pass_kernels, read_passes

    norm = {"name": "ynn_fusion", "category": "reduction", "bytes_read": 16 * MiB,
            "bytes_written": 16 * MiB, "read_by_dtype": {"f32": 16 * MiB},
            "reduced_elements": 2 * 4 * MiB, "trips": 1}
    assert read_passes(kernel_record(norm)) == 3, \
        "the mean, the variance, then the normalised output"
    assert read_passes(kernel_record({**norm, "bytes_written": 4096})) == 2, \
        "two reductions, a small output"
    assert read_passes(kernel_record({**norm, "reduced_elements": 4 * MiB,
                                      "bytes_written": 4096})) == 1
    assert read_passes(kernel_record({**norm, "category": "elementwise"})) == 1
    assert read_passes(kernel_record({**norm, "reduced_elements": None})) == 1, \
        "written before it was kept"
    bf16 = {**norm, "bytes_read": 8 * MiB, "bytes_written": 8 * MiB,
            "read_by_dtype": {"bf16": 8 * MiB}}
    assert read_passes(kernel_record(bf16)) == 3, "elements, not bytes"
    from tests.test_experiments import ROOFS  # 100 GFLOP/s, DRAM at 20 GB/s past 1 MiB

    norm = {**norm, "flops": 5 * 4 * MiB, "transcendentals": 0, "trips": 2}
    (found,) = multi_pass_kernels(kernel_records([norm, {**norm, "reduced_elements": 4 * MiB,
                                                  "bytes_written": 0}]), "float32", ROOFS)
    assert (found.passes, found.read_per_launch, found.read, found.written) == (
        3, 16 * MiB, 32 * MiB, 32 * MiB), "per launch, and per call over its two trips"
    assert found.predicted > 2 * (32 * MiB) / 20e9, "one pass over 32 MiB, twice"
    assert multi_pass_kernels(kernel_records([{**norm, "charged": False}]), "float32", ROOFS) == ()


def test_a_gather_that_moves_no_main_memory_bytes_says_its_roof_is_a_fallback() -> None:
    """A TPU gather of a table held on chip (no HBM bytes, its on-chip bytes priced) is held
    to the gather roof, measured from a table in main memory: its reason says that roof is a
    fallback, not the rate of its case. A gather that moves main-memory bytes says nothing of
    the kind."""
    memory = Term("memory", "memory", 6.7e-6, "on chip", Kind.MEASURED)
    gather = Term("pattern", "pattern", 507e-6, "gather float32 (rows of 256)", Kind.MEASURED)
    on_chip = Prediction(seconds=507e-6, terms=(memory, gather), binding=gather, flops=0.0,
                         bytes=0.0, bytes_source="the kernels' touched bytes", level="HBM")
    row = KernelRow("gather_fusion", "data movement", None, None, None, 1, 1.0, 9.7e-6,
                    9.7e-6, "busy", None, None, 0.0, 0, 0.0, on_chip,
                    Miss(507e-6, 9.7e-6), pattern="gather")
    why = kernel_reason(row)
    assert why.startswith("52× faster than predicted at its ")
    assert ("it moves no main-memory bytes (its operands stay on chip), while the gather "
            "roofs were measured on arrays in main memory: no roof is measured for this "
            "case, so that roof is a fallback here") in why
    from_memory = replace(row, bytes=4 * MiB)
    assert "stay on chip" not in kernel_reason(from_memory)
