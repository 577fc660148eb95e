"""The per-kernel roofline rendered from recorded observations: the CPU fixture's scan workload
given the inventory and trace recorded in tests/fixtures (cpu_scan_*), and the GPU-shaped trace,
so both paths render without measuring."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from roofline_report.analysis.analyse import analyse
from roofline_report.analysis.kernels import trace_summary
from roofline_report.hlo.kernels import kernel_inventory
from roofline_report.report import views as render
from roofline_report.results import io as results
from roofline_report.results import schema
from roofline_report.traces.events import kernel_times

FIXTURES = Path(__file__).parent / "fixtures"


def _profile(name: str) -> Any:
    from jax.profiler import ProfileData

    return ProfileData.from_text_proto((FIXTURES / name).read_text())


@pytest.fixture(scope="module")
def with_kernels() -> dict[str, Any]:
    data = results.load(FIXTURES / "cpu_results.json")
    inv = kernel_inventory((FIXTURES / "cpu_scan_hlo.txt").read_text())
    names = [k["name"] for k in inv["kernels"]]
    for w in data["workloads"]:  # type: ignore[attr-defined]
        if w["name"] == "scan":
            w["kernels"] = inv
            w["kernel_timing"] = kernel_times(_profile("cpu_scan_trace.pbtxt"),
                                              module=inv["module"], kernels=names)
            w["jax_roofline"] = {"available": True, "flops": 33554432.0,
                                 "unfused_flops": 33554432.0, "hbm_bytes": 786432.0,
                                 "unfused_hbm_bytes": 786432.0}
    results.validate(data)
    return data


@pytest.mark.slow
def test_per_kernel_section_table_and_accounting_columns(with_kernels: dict[str, Any]) -> None:
    md = render.render(with_kernels).markdown
    assert "Per-kernel roofline" in md
    section = md[md.index("Per-kernel roofline"):]
    assert "ynn_fusion" in section and "wrapped_tanh" in section
    assert "Where the time goes" in section and "coverage" in section
    assert "| kernel sum | jax roofline |" in md
    assert "estimator_loop_counted_once" in md.replace("\\_", "_")  # JAX: scan body once
    assert not re.search(r"(?<![\w<])/(home|root|tmp|usr)/", md)


@pytest.mark.slow
def test_trace_not_available_keeps_the_inventory(with_kernels: dict[str, Any]) -> None:
    data = copy.deepcopy(with_kernels)
    for w in data["workloads"]:
        if w["name"] == "scan":
            w["kernel_timing"] = {"available": False,
                                  "reason": "the trace holds no kernel event"}
    md = render.render(data).markdown
    assert "Per-kernel times not available: the trace holds no kernel event." in md
    assert "ynn_fusion" in md[md.index("Per-kernel roofline"):]


@pytest.mark.slow
def test_gpu_shaped_trace_renders(with_kernels: dict[str, Any]) -> None:
    data = copy.deepcopy(with_kernels)
    inv = kernel_inventory((FIXTURES / "gpu_step_hlo.txt").read_text(), cwd="/home/someone/project")
    timing = kernel_times(_profile("gpu_step_trace.pbtxt"), module="jit_step",
                          kernels=[k["name"] for k in inv["kernels"]])
    seed = next(w for w in data["workloads"] if w["name"] == "seed_tanh_matmul")
    seed["kernels"], seed["kernel_timing"] = inv, timing
    results.validate(data)
    out = render.render(data)
    assert "custom-call.1" in out.markdown and "model.py:12" in out.markdown
    assert any(name.startswith("kernels_") for name in out.figures)


@pytest.mark.slow
def test_kernels_held_to_assumed_budgets_are_marked_hypothetical(
        with_kernels: dict[str, Any]) -> None:
    import copy

    data = copy.deepcopy(with_kernels)
    data["ceilings"] = {"available": False, "reason": "not asked for"}
    md = render.render(data).markdown
    section = md[md.index('<a id="kernels">'):]
    section = section[:section.index("\n## ")]
    assert "This run measured no ceilings of this machine" in section
    assert "predicted on assumed budgets (hypothetical)" in section
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert rows
    for row in rows:  # predicted and miss: predicted, never measured
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        for i in (13, 14):
            assert cells[i].endswith("`P`"), (i, row)
        # The roof at its intensity and the share of it: of the assumed budgets, said so.
        assert cells[10].endswith("`H`") or cells[10] == "—", row
        assert cells[11] == "—" or (cells[11].endswith("of an assumed roof `H`")), row
    measured = render.render(with_kernels).markdown
    assert "This run measured no ceilings of this machine" not in measured


@pytest.mark.slow
def test_the_trace_shows_the_launch_cost_beside_the_ceiling(with_kernels: dict[str, Any]) -> None:
    md = render.render(with_kernels).markdown
    scan = next(w for w in with_kernels["workloads"] if w["name"] == "scan")
    t = trace_summary(schema.KernelTiming.model_validate(scan["kernel_timing"]))
    assert t is not None
    per = t.gaps_s / (t.launches - 1)
    from roofline_report.kinds import Kind
    from roofline_report.report.format import n

    assert f"That is {n(per, 's', Kind.MEASURED).text} `M` of gap per launch after the first" in md
    launch = analyse(with_kernels).roofs.kernels.floor("launch")
    assert launch is not None and launch.kind is Kind.MEASURED
    assert (f"(the launch ceiling measured on a chain of kernels: "
            f"{n(launch.seconds, 's', Kind.MEASURED).text} `M`)") in md


@pytest.mark.slow
def test_kernels_that_ran_side_by_side_are_said_to(with_kernels: dict[str, Any]) -> None:
    import copy

    data = copy.deepcopy(with_kernels)
    scan = next(w for w in data["workloads"] if w["name"] == "scan")
    timing = scan["kernel_timing"]
    # One kernel at a time: the kernels' times sum to the time at least one ran.
    for call in timing["calls"]:
        call["busy_s"] = 1e-3
    for k in timing["kernels"]:
        k["span_s"] = k["busy_s"] = [1e-3 / len(timing["kernels"])] * len(k["span_s"])
        k.pop("share_s", None)  # a trace read before shares were kept: times can overlap
    alone = render.render(data).markdown
    alone = alone[alone.index('<a id="kernels">'):]
    section = alone[alone.index("w-scan-kernels\"></a>lax.scan"):]
    assert "Kernels ran side by side" not in section[:section.index("\n### ")]
    for k in timing["kernels"]:
        k["span_s"] = k["busy_s"] = [2e-3 / len(timing["kernels"])] * len(k["span_s"])
        k.pop("share_s", None)
    shared = render.render(data).markdown
    shared = shared[shared.index('<a id="kernels">'):]
    section = shared[shared.index("w-scan-kernels\"></a>lax.scan"):]
    assert "Kernels ran side by side: their times sum to 2 `M`× the time at least one ran" \
        in section[:section.index("\n### ")]


@pytest.mark.slow
@pytest.mark.parametrize(("traced", "said"), [
    ([1.1e-3, 1.2e-3, 1.3e-3], "(1.2 `M`×): within the untraced calls' own range"),
    ([2.0e-3, 2.1e-3, 2.2e-3], "(2.1 `M`×): slower than any untraced call"),
    ([0.4e-3, 0.5e-3, 0.6e-3], "(0.5 `M`×): faster than any untraced call"),
])
def test_the_trace_cost_shows_both_times_it_compares(with_kernels: dict[str, Any],
                                                      traced: list[float], said: str) -> None:
    data = copy.deepcopy(with_kernels)
    scan = next(w for w in data["workloads"] if w["name"] == "scan")
    scan["kernel_timing"]["untraced_s"] = [0.8e-3, 1.0e-3, 1.5e-3]
    scan["kernel_timing"]["traced_s"] = traced
    md = render.render(data).markdown
    section = md[md.index("w-scan-kernels\"></a>lax.scan"):]
    section = section[:section.index("\n### ")]
    from roofline_report.kinds import Kind
    from roofline_report.report.format import n

    median = n(traced[1], "s", Kind.MEASURED).text
    assert (f"The 3 traced calls took {median} `M` at the median and as many untraced just "
            "before them 1 ms `M`") in section
    assert said in section


@pytest.mark.slow
def test_the_kernel_figure_says_which_kernels_it_leaves_out(
        with_kernels: dict[str, Any]) -> None:
    data = copy.deepcopy(with_kernels)
    scan = next(w for w in data["workloads"] if w["name"] == "scan")
    scan["user"] = True  # a user's program gets the figure
    timed = {k["name"] for k in scan["kernel_timing"]["kernels"]}
    placed = [k for k in scan["kernels"]["kernels"] if k["flops"] > 0 and k["name"] in timed]
    md = render.render(data).markdown
    caption = next(line for line in md.splitlines()
                   if line.startswith("*Kernels of lax.scan"))
    left = len(scan["kernels"]["kernels"]) - len(placed)
    assert left > 0  # copies: no flops; a kernel the trace missed: no time
    assert (f"Of all {len(scan['kernels']['kernels'])} kernels, the {len(placed)} with "
            f"floating-point work and a measured time (the other {left} lack one or both: see the "
            "table)") in caption


@pytest.mark.slow
def test_a_program_with_large_temporaries_pays_its_page_faults(
        with_kernels: dict[str, Any]) -> None:
    from roofline_report.analysis.analyse import analyse
    from roofline_report.analysis.fresh_pages import FRESH_ABOVE_BYTES

    data = copy.deepcopy(with_kernels)
    data["ceilings"]["page_fault"] = {"available": True, "value": 1e-6, "page_bytes": 4096,
                                      "bytes": 64 << 20, "faults_per_call": 16384.0}
    scan = next(w for w in data["workloads"] if w["name"] == "scan")
    before = analyse(data).program("scan")
    written = sum(k["bytes_written"] for k in scan["kernels"]["kernels"]
                  if not k.get("in_place"))
    temp = max(FRESH_ABOVE_BYTES, written // 2)  # past the threshold, under the fresh writes
    scan["memory"] = {"available": True, "reason": "",
                      "values": {"temp_size_in_bytes": temp}}
    results.validate(data)
    after = analyse(data).program("scan")
    assert before is not None and after is not None
    assert before.prediction is not None and after.prediction is not None
    assert after.kernels is not None and after.kernels.fresh_pages > 0
    pages = after.kernels.fresh_pages
    kernels = len(scan["kernels"]["kernels"])  # each kernel's pages rounded up
    assert min(temp, written) / 4096 <= pages <= min(temp, written) / 4096 + kernels
    # The program's prediction is its kernels': the faults appear once, at 1 µs a page.
    assert after.prediction.seconds - before.prediction.seconds == pytest.approx(pages * 1e-6)
    md = render.render(data).markdown
    assert "Its temporary buffers (" in md and "pages a call" in md
    # Under the threshold nothing is charged and nothing said.
    scan["memory"]["values"]["temp_size_in_bytes"] = FRESH_ABOVE_BYTES - 1
    assert "Its temporary buffers (" not in render.render(data).markdown
    # Under it, but with faults its timing counted: those are charged, and the page says so.
    scan["timing"]["page_faults_per_call"] = 300.4
    counted = analyse(data).program("scan")
    assert counted is not None and counted.kernels is not None
    assert counted.kernels.counted_pages == pytest.approx(300.4)
    assert counted.kernels.fresh_pages == pytest.approx(min(301, written / 4096), abs=kernels)
    md = render.render(data).markdown
    assert "While it was timed, the process took 300.4 `M` page faults a call (counted" in md
    assert "Its temporary buffers (" not in md


@pytest.mark.slow
def test_a_loop_that_stops_on_data_is_priced_at_the_trips_its_trace_observed(
        with_kernels: dict[str, Any]) -> None:
    """The scan fixture with its loop's known trip count taken out, as a loop that stops on
    data compiles: the trace's 10 launches per call price every trip; untraced, the summary
    says the prediction is a lower bound."""
    from roofline_report.analysis.analyse import analyse

    text = (FIXTURES / "cpu_scan_hlo.txt").read_text()
    text = text.replace(',"known_trip_count":{"n":"10"}', "")
    inv = kernel_inventory(text)
    body = [k for k in inv["kernels"] if k["loop"] == "while.5"]
    assert body and all(k["trips"] == 1 and not k["trips_known"] for k in body)
    data = copy.deepcopy(with_kernels)
    scan = next(w for w in data["workloads"] if w["name"] == "scan")
    known = analyse(data).program("scan")
    scan["kernels"] = inv
    scan["compiled"] = {**scan.get("compiled", {}), "while_loops": [
        {"name": "while.5", "known_trip_count": None, "condition": None, "body": None,
         "op_name": None, "source_file": None, "source_line": None, "source_column": None}]}
    observed = analyse(data).program("scan")
    assert known is not None and observed is not None
    assert observed.kernels is not None and observed.prediction is not None
    assert known.prediction is not None and known.kernels is not None
    # Every kernel of the loop, the condition the trace does not show too, runs 10 times.
    rows = {r.name: r for r in observed.kernels.rows}
    assert all(rows[k["name"]].trips == 10 and rows[k["name"]].trips_observed
               and rows[k["name"]].static_trips == 1 for k in body)
    assert observed.kernels.launches == known.kernels.launches
    assert observed.flops == pytest.approx(known.flops)
    assert observed.prediction.seconds == pytest.approx(known.prediction.seconds)
    assert not observed.prediction.lower_bound
    md = render.render(data).markdown
    assert "Loop while.5 stops on data" in md and "observed in the trace" in md
    assert "at least" not in md[:md.index("Per-kernel roofline")]
    # Untraced: the loop counts once and the summary row says it is a lower bound.
    scan["kernel_timing"] = {"available": False, "reason": "not traced"}
    scan["user"] = True  # the summary lists the user's programs
    untraced = analyse(data).program("scan")
    assert untraced is not None and untraced.prediction is not None
    assert untraced.prediction.lower_bound
    assert untraced.prediction.seconds < known.prediction.seconds
    assert untraced.kernels is not None and untraced.seconds is not None
    [loop] = untraced.kernels.loops
    assert loop.lower_bound and loop.per_trip_s is not None and loop.implied is not None
    assert loop.implied == pytest.approx(
        1 + (untraced.seconds - untraced.prediction.seconds) / loop.per_trip_s)
    from roofline_report.report.summary_view import summary

    row = next(r for r in summary(analyse(data)).rows if r.title == scan["title"])
    assert row.lower_bound and row.predicted.text.startswith("at least ")
    md = render.render(data).markdown
    placed = md[md.index("Programs on the roofline"):]
    assert f"| at least {row.predicted.text.removeprefix('at least ')}" in placed
    assert "no trace observed its trips" in md
    assert f"would hold about {round(loop.implied):,} `P` trips" in md
    # A report about the user's program: its summary row and the note beneath it.
    data["options"]["teaching"] = False
    data["workloads"] = [scan]
    md = render.render(data).markdown
    summary_md = md[md.index('id="summary"'):md.index('id="programs"')]
    assert f"| {row.predicted.text} `P` |" in summary_md
    assert "is neither known to the compiler nor observed in a profiler trace" in summary_md


def test_a_programs_paragraph_names_how_the_model_priced_it() -> None:
    """The model's notes on a program's prediction (a rate it lacked, work it charged beyond
    the count, kernels on fewer threads than its rates) are named on its paragraph, the first
    four in order and the rest counted."""
    from roofline_report.report.program_view import MODEL_NOTES, model_notes

    assert model_notes(()) == ""
    assert model_notes(("a", "b")) == "a; b"
    many = tuple(f"note {i}" for i in range(MODEL_NOTES + 2))
    assert model_notes(many) == "; ".join(many[:MODEL_NOTES]) + "; and 2 more notes"
    assert model_notes(many[:MODEL_NOTES + 1]).endswith("; and 1 more note")
