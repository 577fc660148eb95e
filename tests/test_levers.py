"""Two numbers where there was one, and what to fix first (no jax but the last test).

* The share of the hardware roof is a row's achieved rate against the roofline at its own
  intensity (its work at the peaks of its roofs, its bytes at its level's roof), apart from the
  model's miss; a row above its roof names it.
* The levers: each saving from the numbers its record holds, ranked, the summary opening with
  the biggest in words built from those numbers, under any budgets.
* The defects that came with one number: shares on assumed budgets said to be no headroom, a
  trivial program that made the page doubt the ceilings, a roofline drawing every roof of the
  machine in one colour, a setup function's traceback that --debug did not show, a README that
  numbered the sections otherwise than the report.

Every document here is the committed fixture (a real quiet CPU run), doctored where a case
needs it.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline_report.analysis.analyse import Assumptions, analyse
from roofline_report.analysis.kernel_records import (
    BelowRoof,
    ExcessTraffic,
    FreshPages,
    Overhead,
)
from roofline_report.analysis.levers import FUSIBLE, LAUNCH_TERMS
from roofline_report.analysis.records import Analysis, Program
from roofline_report.kinds import Kind
from roofline_report.report import figures as figs
from roofline_report.report import views
from roofline_report.report.format import KIND_MARKERS, miss_text, n, percent
from roofline_report.report.lever_words import lever_kind
from roofline_report.results import io as results_io
from roofline_report.roofline import attainable

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "cpu_results.json"
MARKER = {Kind(k): v for k, v in KIND_MARKERS.items()}


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return results_io.load(FIXTURE)


@pytest.fixture(scope="module")
def an(doc: dict[str, Any]) -> Analysis:
    return analyse(doc)


def _program(an: Analysis, name: str) -> Program:
    p = an.program(name)
    assert p is not None
    return p


def _users(doc: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """The fixture as a report about programs: ``names`` the user's, no teaching sections."""
    out = copy.deepcopy(doc)
    out["options"]["teaching"] = False
    out["workloads"] = [{**w, "user": True} for w in out["workloads"] if w["name"] in names]
    results_io.validate(out)
    return out


def _md(text: str) -> str:
    """Text as the Markdown page escapes it."""
    return text.replace("_", "\\_")


def _section(md: str, anchor: str) -> str:
    start = md.index(f'<a id="{anchor}"></a>')
    end = md.find("\n## ", start)
    return md[start:end if end >= 0 else len(md)]


# --- the share of the hardware roof: the roofline at the row's own intensity ---------------------


def test_a_kernels_roof_is_the_roofline_at_its_intensity(an: Analysis) -> None:
    """A matrix product's roof is min(its dtype's matmul roof, its level's bandwidth × its
    intensity) (roofline.attainable), whatever the size the model reads its rate at; an
    elementwise kernel's, its bandwidth × its intensity below the ridge."""
    roofs = an.roofs.kernels
    matmul = _program(an, "matmul")
    assert matmul.kernels is not None
    (k,) = [r for r in matmul.kernels.rows if r.category == "matmul"]
    h = k.hardware
    assert h is not None and h.rate is not None and k.intensity is not None
    peak = roofs.compute_for("float32")
    assert peak is not None
    (memory,) = [x for x in h.parts if x.group == "memory"]
    assert h.rate[0] == pytest.approx(attainable(k.intensity, peak.value, memory.value),
                                      rel=1e-12)
    assert h.names == "matmul float32" and h.binding == "compute"
    assert k.share_of_hardware_roof == pytest.approx(k.achieved / h.rate[0], rel=1e-12)
    # The model reads a product's rate at its size: below the peak, so the two numbers differ.
    assert k.prediction is not None and k.miss is not None
    assert k.share_of_hardware_roof != pytest.approx(1 / k.miss.ratio, rel=0.05)

    scale = _program(an, "scale")
    assert scale.kernels is not None
    e = scale.kernels.rows[0]
    assert e.hardware is not None and e.hardware.binding == "memory" and e.intensity
    (bw,) = [x for x in e.hardware.parts if x.group == "memory"]
    assert e.hardware.rate == pytest.approx((bw.value * e.intensity, "FLOP/s"))


@pytest.mark.slow
def test_the_share_and_the_miss_are_two_columns_of_their_own(an: Analysis,
                                                            doc: dict[str, Any]) -> None:
    md = views.render(doc).markdown
    table = md[md.index("| program | intensity | achieved |"):]
    header = [c.strip() for c in table.splitlines()[0].strip("|").split("|")]
    share, miss = header.index("of hardware roof"), header.index("miss")
    rows = []
    for line in table.splitlines()[2:]:
        if not line.startswith("| "):
            break
        rows.append(line)
    assert len(rows) == len(an.programs)
    for p, line in zip(an.programs, rows, strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[share] == f"{percent(p.share_of_hardware_roof).text} `M`", p.name
        assert cells[miss] == f"{miss_text(p.miss).text} `P`", p.name


@pytest.mark.slow
def test_a_row_above_its_roof_names_the_roof(an: Analysis, doc: dict[str, Any]) -> None:
    conv = _program(an, "conv2d")
    share = conv.share_of_hardware_roof
    assert share is not None and share > 1.0
    assert conv.above_roof == "convolution float32"
    md = views.render(doc).markdown
    row = next(line for line in md.splitlines() if line.startswith('| <a id="w-conv2d-roofline">'))
    assert "above its roof at its intensity (convolution float32): that roof is lower than " \
           "what ran" in row
    below = _program(an, "matmul")
    assert below.share_of_hardware_roof is not None and below.share_of_hardware_roof < 1.0
    assert below.above_roof is None


# --- the levers: each saving from its own numbers -----------------------------------------------


def _check_levers(p: Program) -> None:
    seconds = p.seconds
    assert seconds is not None and p.kernels is not None and p.prediction is not None
    rows = [r for r in p.kernels.rows if r.charged]
    savings = [x.saving for x in p.levers]
    assert savings == sorted(savings, reverse=True), p.name
    assert all(0 < x.saving <= seconds for x in p.levers), p.name
    for x in p.levers:
        assert x.share == pytest.approx(x.saving / seconds, rel=1e-12)
        if isinstance(x, BelowRoof):
            r = next(r for r in rows if r.name == x.kernel)
            assert r.hardware is x.roof and r.seconds == x.seconds
            assert r.prediction is not None
            faults = sum(t.seconds for t in r.prediction.terms if t.name == "page faults")
            assert x.faults == pytest.approx(faults, rel=1e-12)
            assert x.saving == pytest.approx(
                min(x.seconds - faults, seconds) - x.roof.seconds, rel=1e-12)
            assert x.capped == (x.seconds - faults > seconds)
        elif isinstance(x, FreshPages):
            assert p.kernels.fresh_pages == x.pages > 0
            charged = {r.name: sum(t.seconds for t in r.prediction.terms
                                   if t.name == "page faults")
                       for r in rows if r.prediction is not None}
            assert set(x.kernels) == {k for k, v in charged.items() if v > 0}
            assert [charged[k] for k in x.kernels] == sorted(
                [charged[k] for k in x.kernels], reverse=True)
            assert x.saving == pytest.approx(min(seconds, sum(charged.values())), rel=1e-12)
            assert x.saving <= x.pages * x.fault * (1 + 1e-12)
        elif isinstance(x, ExcessTraffic):
            group = [r for r in rows if r.name in x.kernels]
            assert all(r.category in FUSIBLE for r in group) and group
            assert x.total_bytes == pytest.approx(sum(r.bytes for r in rows), rel=1e-12)
            assert x.minimum_bytes == p.minimum_bytes
            assert x.excess == pytest.approx(min(x.bytes, x.total_bytes - x.minimum_bytes))
            assert x.saving == pytest.approx(
                min(x.seconds, x.excess / x.bandwidth, seconds), rel=1e-12)
        else:
            assert isinstance(x, Overhead)
            dispatch = sum(t.seconds for t in p.prediction.terms if t.name == "dispatch")
            launch = sum(t.seconds for r in rows if r.prediction is not None
                         for t in r.prediction.terms if t.name in LAUNCH_TERMS)
            assert (x.dispatch, x.launch) == pytest.approx((dispatch, launch), rel=1e-12)
            assert x.saving == pytest.approx(min(seconds, dispatch + launch - x.floor))


def test_each_lever_saves_what_its_numbers_say_largest_first(an: Analysis) -> None:
    kinds = set()
    for p in an.programs:
        _check_levers(p)
        kinds |= {x.what for x in p.levers}
    assert kinds == {BelowRoof.what, ExcessTraffic.what, Overhead.what}  # no faults here


def test_the_lever_check_catches_a_saving_that_is_not_its_own(an: Analysis) -> None:
    from dataclasses import replace

    p = _program(an, "attention")
    _check_levers(p)  # sound
    first = p.levers[0]
    with pytest.raises(AssertionError):
        _check_levers(replace(p, levers=(replace(first, saving=first.saving / 2),
                                         *p.levers[1:])))


def _faulting(doc: dict[str, Any], name: str, share: float) -> dict[str, Any]:
    """The fixture with a page fault measured at 1 µs and ``name``'s timing counting the
    faults that take ``share`` of its call, as a process whose allocator hands back its
    buffers between calls counts them."""
    out = copy.deepcopy(doc)
    out["ceilings"]["page_fault"] = {"available": True, "value": 1e-6, "page_bytes": 4096,
                                     "bytes": 64 << 20, "faults_per_call": 16384.0}
    w = next(w for w in out["workloads"] if w["name"] == name)
    seconds = sorted(w["timing"]["per_call_s"])[len(w["timing"]["per_call_s"]) // 2]
    w["timing"]["page_faults_per_call"] = share * seconds / 1e-6
    results_io.validate(out)
    return out


def test_fresh_pages_are_a_lever_and_a_kernels_own_headroom_leaves_them_out(
        doc: dict[str, Any]) -> None:
    """Page faults the timing counted are charged to the kernels that write first: the fresh
    pages lever saves what those terms cost, and each of those kernels' below-roof saving is
    its headroom less its own faults (the two would otherwise count the same time twice)."""
    before = _program(analyse(doc), "attention")
    assert not [x for x in before.levers if isinstance(x, FreshPages)]
    data = _faulting(doc, "attention", 0.6)
    p = _program(analyse(data), "attention")
    _check_levers(p)
    (pages,) = [x for x in p.levers if isinstance(x, FreshPages)]
    assert p.kernels is not None and p.kernels.counted_pages is not None
    assert pages.counted == p.kernels.counted_pages and pages.fault == 1e-6
    assert pages.saving == pytest.approx(p.kernels.fault_seconds, rel=1e-12)
    after = {x.kernel: x for x in p.levers if isinstance(x, BelowRoof)}
    old = {x.kernel: x for x in before.levers if isinstance(x, BelowRoof)}
    netted = [x for x in after.values() if x.faults > 0]
    assert netted
    for x in netted:
        if x.kernel in old and not old[x.kernel].capped and not x.capped:
            # The same measured time and roof: the saving is smaller by the faults exactly.
            assert x.saving == pytest.approx(old[x.kernel].saving - x.faults, rel=1e-9)
    # A kernel whose headroom is all faults is no below-roof lever.
    dropped = set(old) - set(after)
    assert dropped
    for name in dropped:
        r = next(r for r in p.kernels.rows if r.name == name)
        assert r.headroom is not None and r.prediction is not None
        assert sum(t.seconds for t in r.prediction.terms
                   if t.name == "page faults") >= r.headroom
    # The API's plain form carries the lever's numbers.
    from roofline_report.api import AnalyzeResult

    plain = AnalyzeResult(p, analyse(data)).to_dict()["levers"][0]
    assert plain["kind"] == "fresh pages" and plain["pages"] == pages.pages
    assert plain["page_fault_s"] == 1e-6 and plain["kernels"] == list(pages.kernels)
    assert plain["counted_page_faults"] == pages.counted


def test_the_fresh_pages_sentence_says_why_the_pages_are_fresh_and_what_keeps_them() -> None:
    from dataclasses import replace

    from roofline_report.report.lever_words import lever_long, lever_short

    f = FreshPages(pages=51036.0, fault=925e-9, kernels=("a", "b"), counted=55834.2,
                   temp_bytes=None, saving=47.2e-3, share=0.57, call=82.3e-3)
    said = _words(lever_long(f))
    assert said.startswith("Fresh pages: while it was timed, the process took 55834.2 page "
                           "faults a call: the C allocator gave its buffers back between "
                           "calls and mapped them anew; the first writes of 2 kernels fault "
                           "on 51,036 pages a call, 47.2 ms at the measured 925 ns a page, "
                           "57% of the call.")
    assert "MALLOC_ARENA_MAX=1 MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=4294967295" in said
    assert _words(lever_short(f)) == "fresh pages: 47.2 ms (57%)"
    temp = _words(lever_long(replace(f, counted=None, temp_bytes=40 << 20)))
    assert "its temporary buffers (41.9 MB) reach 33.6 MB (glibc's largest mmap threshold" \
        in temp and "while it was timed" not in temp
    held = _words(lever_long(replace(f, saving=40e-3, share=1.0, call=40e-3)))
    assert "47.2 ms at the measured 925 ns a page, more than the timed call's 40 ms: up to " \
        "all of it, 100% of the call." in held


@pytest.mark.slow
def test_a_program_paying_mostly_for_fresh_pages_opens_the_summary_with_them(
        doc: dict[str, Any]) -> None:
    data = _users(_faulting(doc, "attention", 0.6), ("attention",))
    (p,) = analyse(data).programs
    assert isinstance(p.levers[0], FreshPages)
    summary = _section(views.render(data).markdown, "summary")
    assert f"- {_md(p.title)}: the biggest lever (fresh pages). Fresh pages: while it was " \
           "timed, the process took" in summary


@pytest.mark.slow
def test_the_summary_opens_with_the_biggest_lever_in_words_from_its_numbers(
        doc: dict[str, Any]) -> None:
    users = _users(doc, ("attention", "seed_tanh_matmul"))
    an = analyse(users)
    md = views.render(users).markdown
    summary = _section(md, "summary")
    top = summary[:summary.index("| program |")]
    assert "What to fix first" in top
    bullets = [line for line in top.splitlines() if line.startswith("- ")]
    assert len(bullets) == 2
    for p, line in zip(an.programs, bullets, strict=True):
        first = p.levers[0]
        kind = lever_kind(first)
        assert line.startswith(f"- {_md(p.title)}: the biggest lever ({first.what}).")
        assert f"{n(first.saving, 's', kind).text} `{MARKER[kind]}`" in line
        assert "Next: " in line  # the next levers in a few words
    # The table's levers cell lists the same ranking.
    row = next(x for x in summary.splitlines() if "attention-summary" in x)
    cell = row.strip("|").split("|")[-1]
    p = an.programs[[q.name for q in an.programs].index("attention")]
    names = [x.kernel if isinstance(x, BelowRoof) else "" for x in p.levers[:3]]
    positions = [cell.index(_md(name)) for name in names if name]
    assert positions == sorted(positions)


@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(peak=st.floats(min_value=1e6, max_value=1e15),
       bandwidth=st.floats(min_value=1e6, max_value=1e13))
def test_on_assumed_budgets_shares_and_savings_say_so_under_any_budgets(
        peak: float, bandwidth: float) -> None:
    doc = _users(results_io.load(FIXTURE), ("attention", "softmax", "matmul"))
    doc["ceilings"] = {"available": False, "reason": "not asked for"}
    a = Assumptions(peak=peak, bandwidth=bandwidth)
    an = analyse(doc, a)
    md = views.render(doc, a).markdown
    summary = _section(md, "summary")
    assert "These are assumed budgets, not this machine's roofs: a share of them is no " \
           "headroom" in summary
    for p in an.programs:
        assert p.share_of_hardware_roof is None and p.share_of_assumed_roof is not None
        assert p.hardware is not None and p.hardware.kind is Kind.HYPOTHETICAL
        row = next(x for x in summary.splitlines() if f"{p.name}-summary" in x)
        assert f"{percent(p.share_of_assumed_roof).text} of an assumed roof `H`" in row
        savings = [x.saving for x in p.levers]
        assert savings == sorted(savings, reverse=True)
        for x in p.levers:
            if not isinstance(x, Overhead):
                assert lever_kind(x) is Kind.HYPOTHETICAL
        if p.levers:
            kind = lever_kind(p.levers[0])
            assert f"{n(p.levers[0].saving, 's', kind).text} `{MARKER[kind]}`" in summary


def _words(parts: tuple[Any, ...]) -> str:
    return "".join(x if isinstance(x, str) else x.text for x in parts)


def test_each_lever_sentence_reads_right_where_its_saving_is_held() -> None:
    """A saving held to the time the kernels took, or to the call's, says so; one kernel is
    one; a dispatch priced above the call's time is all of the call."""
    from dataclasses import replace

    from roofline_report.report.lever_words import lever_long

    e = ExcessTraffic(kernels=("a", "b"), categories=(("elementwise", 2),), seconds=1e-3,
                      bytes=8e6, total_bytes=10e6, minimum_bytes=2e6,
                      minimum_basis="argument + result bytes", excess=8e6, bandwidth=1e9,
                      roof="DRAM read-write", roof_kind=Kind.MEASURED, saving=1e-3, share=0.5,
                      call=2e-3)
    said = _words(lever_long(e))
    assert said.startswith("Fusion: the kernels move 10 MB a call, 5× the program's minimum "
                           "of 2 MB (argument + result bytes); the 2 kernels other than matrix "
                           "products and convolutions (2 elementwise) move 8 MB of them in "
                           "1 ms. Fused together, they could move up to 8 MB less")
    assert said.endswith("take 8 ms, more than the 1 ms they took: up to all of it, 50% of "
                         "the call.")
    call = _words(lever_long(replace(e, seconds=5e-3, saving=2e-3, share=1.0)))
    assert call.endswith("take 8 ms, more than the timed call's 2 ms: up to all of it, 100% "
                         "of the call.")
    free = _words(lever_long(replace(e, bandwidth=1e10, saving=0.8e-3, share=0.4)))
    assert free.endswith("take 800 µs, 40% of the call.") and "more than" not in free
    one = _words(lever_long(replace(e, kernels=("a",), categories=(("elementwise", 1),))))
    assert "the 1 kernel other than a matrix product or convolution (1 elementwise) moves" \
        in one and "Fused with its neighbours, it could" in one and "it took" in one

    o = Overhead(dispatch=10e-6, launch=5e-6, launches=5, floor=1e-6, seconds=100e-6,
                 saving=14e-6, share=0.14, roof_kind=Kind.MEASURED)
    assert _words(lever_long(o)) == (
        "Dispatch and launches: the model charges a call 10 µs of dispatch and 5 launches "
        "(5 µs), 15% of the call's 100 µs; more work per call (steps looped inside one) and "
        "fewer kernels could save up to 14 µs (all of it but one launch), 14% of the call.")
    over = _words(lever_long(replace(o, seconds=8e-6, saving=8e-6, share=1.0)))
    assert "could save up to all of the call's 8 µs, 100% of the call." in over
    assert "but one launch" not in over


def test_a_kernel_bound_by_on_chip_bytes_alone_reads_its_roofs_rate_not_an_intensity() -> None:
    """A TPU kernel whose memory part is its vector-memory traffic has flops and no HBM bytes:
    its sentence gives the on-chip roof's rate (re-rendering a v5e run divided by zero)."""
    from roofline_report.analysis.hardware_roof import HardwareRoof, RoofPart
    from roofline_report.analysis.kernel_records import BelowRoof
    from roofline_report.report.lever_words import lever_long

    roof = HardwareRoof(flops=2e6, bytes=0.0, kind=Kind.MEASURED,
                        parts=(RoofPart("memory", "on-chip", 4e9, 1e-3, "B/s"),
                               RoofPart("compute", "vector float32", 2e6, 1e-6, "FLOP/s")))
    below = BelowRoof(kernel="while.3", category="loop", seconds=4e-3, roof=roof,
                      saving=3e-3, share=0.5, call=6e-3)
    said = _words(lever_long(below))
    assert "(on-chip: 4 TB/s)" in said and "×" not in said


def test_an_update_of_part_of_its_tiles_says_what_a_program_can_change() -> None:
    """A TPU's in-place update below its roof (the update-slice pattern) says why, and what
    would write whole tiles; a kernel of another pattern says nothing of it."""
    from dataclasses import replace

    from roofline_report.analysis.hardware_roof import HardwareRoof, RoofPart
    from roofline_report.analysis.kernel_records import BelowRoof
    from roofline_report.report.lever_words import lever_long

    roof = HardwareRoof(flops=0.0, bytes=2e6, kind=Kind.MEASURED,
                        parts=(RoofPart("memory", "HBM", 7e11, 3e-6, "B/s"),))
    below = BelowRoof(kernel="dynamic_update_slice.8", category="data movement",
                      seconds=10e-6, roof=roof, saving=7e-6, share=0.1, call=70e-6,
                      pattern="update-slice")
    said = _words(lever_long(below))
    assert "writes part of each tile it crosses" in said and "major axis" in said
    assert "tile" not in _words(lever_long(replace(below, pattern="transpose")))


# --- the defects ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_trivial_program_faster_than_its_floors_casts_no_doubt_on_the_ceilings(
        doc: dict[str, Any]) -> None:
    """A program whose prediction is its dispatch and launches (the seed's tiny tanh(a @ b))
    timed faster than that: the floors moved, not the roofs; no banner on its account."""
    users = _users(doc, ("seed_tanh_matmul",))
    (w,) = users["workloads"]
    w["timing"]["per_call_s"] = [x / 4 for x in w["timing"]["per_call_s"]]
    an = analyse(users)
    (p,) = an.programs
    assert p.prediction is not None and p.prediction.binding.group == "overhead"
    assert p.seconds is not None and p.seconds * 1.5 < p.prediction.seconds
    assert an.roof_check is not None and not an.roof_check.suspect
    md = views.render(users).markdown
    assert "Check these ceilings" not in md
    assert "a floor measured higher than this call took: the floors moved, not the roofs" in md
    # A program bound by a roof that ran as fast still does.
    roofed = _users(doc, ("matmul",))
    roofed["workloads"][0]["timing"]["per_call_s"] = [
        x / 4 for x in roofed["workloads"][0]["timing"]["per_call_s"]]
    assert "Check these ceilings" in views.render(roofed).markdown


def _with_other_roofs(doc: dict[str, Any]) -> dict[str, Any]:
    """The fixture with an int8 product's and a depthwise convolution's ceilings added, as a
    machine measures them, which no float32 program runs under."""
    out = copy.deepcopy(doc)
    base = next(e for e in out["ceilings"]["compute"] if e["name"] == "matmul float32")
    out["ceilings"]["compute"] += [
        {**copy.deepcopy(base), "name": "matmul int8 (int32 sums)", "dtype": "int8",
         "value": 3.1e11, "by_size": []},
        {**copy.deepcopy(base), "name": "grouped convolution float32 (3x3 depthwise)",
         "op": "grouped-convolution", "value": 6.9e8, "by_size": [], "window": 3}]
    results_io.validate(out)
    return out


@pytest.mark.slow
def test_the_measured_roofline_draws_the_roofs_its_programs_run_each_family_its_colour(
        doc: dict[str, Any]) -> None:
    users = _with_other_roofs(_users(doc, ("matmul", "conv2d")))
    out = views.render(users)
    svg = out.figures["measured_roofline"]
    fig = next(f for f in views.view_model(users).figures.values()
               if f.name == "measured_roofline")
    drawn = [row[0] for row in fig.table.rows if row[2] and not row[0].startswith("point")]
    assert "this machine: matmul float32" in drawn and "this machine: convolution float32" in drawn
    assert not [x for x in drawn if "int8" in x or "grouped" in x or "bfloat16" in x]
    assert "int8" not in svg and "depthwise" not in svg
    assert ("compute roofs of other dtypes or operations than these programs run not drawn"
            in fig.description)
    # Each family its own colour: the matmul roof, the convolution roof and the memory slopes.
    matmul, conv = figs.FAMILY_COLOURS["matmul"][0], figs.FAMILY_COLOURS["convolution"][0]
    main = figs.MEMORY_SHADES[0]
    for colour in (matmul, conv, main):
        assert f"stroke: {colour}" in svg, colour
    assert len({matmul, conv, main}) == 3
    # A program that runs an int8 product gets its roof drawn.
    int8 = copy.deepcopy(users)
    for w in int8["workloads"]:
        if w["name"] == "matmul":
            for k in w["kernels"]["kernels"]:
                k["matmul_dtype"] = "int8"
    fig = next(f for f in views.view_model(int8).figures.values()
               if f.name == "measured_roofline")
    assert "this machine: matmul int8 (int32 sums)" in [row[0] for row in fig.table.rows]
    # The same document gives the same SVG.
    assert views.render(users).figures["measured_roofline"] == svg


def _numbered(md: str) -> list[tuple[int, str]]:
    return [(int(m.group(1)), m.group(2).replace("\\", "")) for m in re.finditer(
        r'^## <a id="[^"]+"></a>(\d+)\. (.+)$', md, flags=re.M)]


def _readme_orders() -> list[list[tuple[int, str]]]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    part = readme[readme.index("## How to read the report"):]
    part = part[:part.index("\n## ", 3)]
    orders: list[list[tuple[int, str]]] = []
    for m in re.finditer(r"\*\*(\d+)\.\s+([^*]+?)\*\*", part):
        number, title = int(m.group(1)), " ".join(m.group(2).split())
        if number == 1:
            orders.append([])
        orders[-1].append((number, title))
    return orders


@pytest.mark.slow
def test_the_readme_numbers_the_sections_as_the_report_does(doc: dict[str, Any]) -> None:
    user_order, full_order = _readme_orders()
    for said, md in ((full_order, views.render(doc).markdown),
                     (user_order, views.render(_users(doc, ("matmul",))).markdown)):
        shown = _numbered(md)
        assert [x for x, _ in said] == [x for x, _ in shown]
        for (_, title), (_, heading) in zip(said, shown, strict=True):
            assert heading.startswith(title), (title, heading)


def test_the_readme_check_catches_a_section_numbered_otherwise() -> None:
    shown = [(1, "Summary"), (2, "Your programs"), (3, "Per-kernel roofline")]
    said = [(1, "Summary"), (2, "Per-kernel roofline")]
    assert [x for x, _ in said] != [x for x, _ in shown]


def test_debug_shows_the_traceback_of_a_setup_that_raises(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("jax")
    import sys

    from roofline_report import cli
    from roofline_report.errors import EXIT_INPUT

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    name = f"raising_setup_{abs(hash(str(tmp_path))) % 10**8}"
    (tmp_path / f"{name}.py").write_text(
        "def weights():\n    raise RuntimeError('no weights file')\n\n\n"
        "def setup():\n    return weights()\n", encoding="utf-8")
    config = tmp_path / "mine.toml"
    config.write_text(f'[[workload]]\nname = "mine"\nsetup = "{name}:setup"\n',
                      encoding="utf-8")
    args = ["--config", str(config), "--only-config", "--quick", "--no-ceilings",
            "--progress", "none", "--out", "report"]
    assert cli.main(args) == EXIT_INPUT
    plain = capsys.readouterr().err
    assert plain.count("\n") == 1 and plain.startswith("error: ")
    assert "raised RuntimeError: no weights file" in plain
    assert cli.main([*args, "--debug"]) == EXIT_INPUT
    debug = capsys.readouterr().err
    assert "Traceback (most recent call last)" in debug
    assert f'{name}.py", line 2, in weights' in debug  # the user's own frame
    assert debug.rstrip().splitlines()[-1] == plain.strip()
    assert not Path("report").exists()
