"""A run's roofs checked against its own programs: most programs faster than the roofs allow
(by more than their timings' spread) is said at the top of the summary, with how many, by how
much and the likely reason; the ceilings' measuring conditions are shown beside their origin.

Every document here is the committed fixture (a real quiet CPU run) doctored: its roofs
divided by ten (ceilings measured under load), its rounds marked as under load, its origin set
to the cache, its device changed.
"""

from __future__ import annotations

import copy
import gzip
from pathlib import Path
from typing import Any

import pytest

from roofline_report.analysis.analyse import analyse
from roofline_report.analysis.measuring_load import LOADED_SHARE
from roofline_report.analysis.roof_check_records import (
    SUSPECT_SHARE,
    Above,
    Cause,
    RoofCheck,
    RoofTally,
    above,
)
from roofline_report.report import views
from roofline_report.results import io as results_io

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "cpu_results.json"

WARNING = "Check these ceilings: "


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return results_io.load(FIXTURE)


def _roofs_divided(doc: dict[str, Any], by: float) -> dict[str, Any]:
    """The fixture with every compute and streaming roof (and its rounds, and the rates by
    size) ``by`` times lower: as if measured while other work held the cores."""
    out = copy.deepcopy(doc)
    for group in ("compute", "bandwidth"):
        for entry in out["ceilings"][group]:
            if entry.get("value"):
                entry["value"] /= by
            entry["rounds"] = [r / by if r else r for r in entry.get("rounds", [])]
            for point in entry.get("by_size", []):
                point["value"] /= by
    return out


def _loaded(doc: dict[str, Any], share: float) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    reading = {"wall_s": 2.0, "others_cpu_s": 4.0 * share, "cores": 2, "loadavg": [1.5, 2.25]}
    for group in ("compute", "bandwidth"):
        for entry in out["ceilings"][group]:
            entry["round_loads"] = [reading for _ in entry["rounds"]]
            entry["repeated"] = 1
    out["ceilings"]["conditions"] = {**reading, "wall_s": 40.0,
                                     "others_cpu_s": 80.0 * share}
    results_io.validate(out)
    return out


def _cached(doc: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["generator"]["measured_at"] = "2026-12-04T14:00:00Z"
    out["ceilings"]["origin"] = {"cached": True, "measured_at": "2026-12-01T13:59:19Z",
                                 "key": "0123456789abcdef", "notes": []}
    return out


def _paragraph(md: str, start: str) -> str:
    i = md.index(start)
    return md[i:md.index("\n", i)]


# ------------------------------------------------------------------------------ the rule


def test_above_by_hand() -> None:
    assert above("p", 1.0, 0.5, 0.1) == Above("p", 2.0, 0.1)
    assert above("p", 1.2, 1.0, 0.25) is None  # within its spread
    assert above("p", 1.04, 1.0, 0.0) is None  # within AS_PREDICTED
    assert above("p", 1.0, 2.0, 0.0) is None  # slower: under its roof
    assert above("p", 0.0, 1.0, 0.0) is None


@pytest.mark.slow
def test_the_quiet_fixture_is_not_suspect_and_the_page_says_nothing(doc: dict[str, Any]
                                                                    ) -> None:
    rc = analyse(doc).roof_check
    assert rc is not None and not rc.suspect
    # A few programs beat the model (its own error), far from half of them.
    assert 0 < len(rc.programs) < SUSPECT_SHARE * rc.programs_checked
    md = views.render(doc).markdown
    assert WARNING not in md
    assert "They were measured over" not in md  # the fixture records no load


@pytest.mark.slow
def test_roofs_ten_times_too_low_are_suspect_with_counts_from_the_analysis(
        doc: dict[str, Any]) -> None:
    low = _roofs_divided(doc, 10.0)
    rc = analyse(low).roof_check
    assert rc is not None and rc.suspect and rc.causes == ()
    assert len(rc.programs) >= SUSPECT_SHARE * rc.programs_checked
    for a in rc.programs:
        p = next(p for p in analyse(low).programs if p.name == a.name)
        assert p.prediction is not None and p.seconds is not None
        assert a.factor == pytest.approx(p.prediction.seconds / p.seconds)
        assert a.factor > 1 + a.spread
    md = views.render(low).markdown
    warning = _paragraph(md, "> " + WARNING)
    assert (f"{len(rc.programs)} of {rc.programs_checked} programs and {len(rc.kernels)} of "
            f"{rc.kernels_checked} kernels ran faster than their roofs allow") in warning
    assert "--remeasure measures them again" in warning
    # Measured in the run, nothing recorded: the likely reason is the machine's load then.
    assert "the machine was likely busier while they were measured" in warning
    # It stands at the top of the ceilings' section, before their origin.
    section = md[md.index("### Ceilings of this machine"):]
    assert section.split("\n\n")[1].startswith("> " + WARNING)


@pytest.mark.slow
def test_the_likely_reasons_come_from_the_run_s_record(doc: dict[str, Any]) -> None:
    low = _cached(_loaded(_roofs_divided(doc, 10.0), 0.6))
    rc = analyse(low).roof_check
    assert rc is not None and rc.causes == (Cause.LOADED, Cause.CACHED) and rc.age_days == 3
    warning = _paragraph(views.render(low).markdown, "> " + WARNING)
    assert ("likely too low: they were measured while other work held the cores (see the "
            "ceilings' measuring conditions); or they were reused from the ceilings cache, "
            "measured 3 days before this run.") in warning
    other = copy.deepcopy(_roofs_divided(doc, 10.0))
    other["ceilings"]["device_kind"] = "NVIDIA H200"
    rc = analyse(other).roof_check
    assert rc is not None and rc.causes == (Cause.OTHER_DEVICE,)
    assert "they were measured on another device (NVIDIA H200, not cpu)" in \
        _paragraph(views.render(other).markdown, "> " + WARNING)


@pytest.mark.slow
def test_python_users_are_told_their_own_way_to_remeasure(doc: dict[str, Any]) -> None:
    low = _roofs_divided(doc, 10.0)
    low["options"]["origin"] = "python"
    warning = _paragraph(views.render(low).markdown, "> " + WARNING)
    assert "analyze(..., remeasure=True) measures them again" in warning


@pytest.mark.slow
def test_the_warning_heads_the_summary_of_a_report_on_the_user_s_programs(
        doc: dict[str, Any]) -> None:
    low = _roofs_divided(doc, 10.0)
    low["options"]["teaching"] = False
    for w in low["workloads"]:
        w["user"] = True
    md = views.render(low).markdown
    summary = md[md.index("1. Summary\n"):]
    assert summary.split("\n\n")[1].startswith("> " + WARNING)
    quiet = copy.deepcopy(doc)
    quiet["options"]["teaching"] = False
    for w in quiet["workloads"]:
        w["user"] = True
    assert WARNING not in views.render(quiet).markdown


@pytest.mark.slow
def test_no_measured_roofs_nothing_to_check(doc: dict[str, Any]) -> None:
    none = copy.deepcopy(doc)
    none["ceilings"] = {"available": False, "reason": "skipped with --no-ceilings"}
    assert analyse(none).roof_check is None
    assert WARNING not in views.render(none).markdown


# ------------------------------------------------------------------ measuring conditions


@pytest.mark.slow
def test_the_measuring_conditions_stand_beside_the_origin(doc: dict[str, Any]) -> None:
    quiet = _loaded(doc, 0.05)
    md = views.render(quiet).markdown
    sentence = _paragraph(md, "They were measured over")
    assert sentence == (
        "They were measured over 40 s `M` while other processes took 5% `M` of this "
        "machine's 2 `M` cores (1-minute load average 1.5 `M` at the start, 2.25 `M` at the "
        "end). 6 rounds of the compute and streaming ceilings ran while other work held the "
        "cores and were taken again.")
    origin = md.index("These ceilings were measured in this run.")
    assert origin < md.index(sentence) < md.index("| ceiling | kernel | value |")


@pytest.mark.slow
def test_ceilings_measured_under_load_are_named(doc: dict[str, Any]) -> None:
    md = views.render(_loaded(doc, 0.5)).markdown
    sentence = _paragraph(md, "They were measured over")
    assert "other processes took 50% `M`" in sentence
    threshold = f"{round(100 * LOADED_SHARE)}% `H`"
    assert (f"Measured under load (other processes holding {threshold} of the cores or more): "
            "matmul float32, matmul bfloat16, convolution float32, reduce, scale and triad, "
            "whose best round ran while other work held the cores") in sentence
    # The whole measurement under load, each roof's best round quiet: said of the rest.
    mixed = _loaded(doc, 0.5)
    for group in ("compute", "bandwidth"):
        for entry in mixed["ceilings"][group]:
            entry["round_loads"] = [{**r, "others_cpu_s": 0.0} for r in entry["round_loads"]]
    sentence = _paragraph(views.render(mixed).markdown, "They were measured over")
    assert "Measured under load" not in sentence
    assert "That is under load" in sentence and "may be too low" in sentence


@pytest.mark.slow
def test_a_system_without_cpu_times_says_the_load_is_not_known(doc: dict[str, Any]) -> None:
    out = copy.deepcopy(doc)
    out["ceilings"]["conditions"] = {"wall_s": 12.5, "others_cpu_s": None, "cores": None,
                                     "loadavg": []}
    sentence = _paragraph(views.render(out).markdown, "They were measured over")
    assert sentence == ("They were measured over 12.5 s `M`, the CPU time other processes "
                        "took not known on this system.")


@pytest.mark.slow
def test_roofs_measured_quietly_in_the_run_are_not_called_too_low(doc: dict[str, Any]) -> None:
    """Programs beat roofs measured in this run on a quiet machine (its load recorded): no
    record makes the roofs suspect, so the warning says the model may price them high and does
    not claim the machine was busier."""
    quiet = _loaded(_roofs_divided(doc, 10.0), 0.01)
    rc = analyse(quiet).roof_check
    assert rc is not None and rc.suspect and rc.causes == () and rc.measured_quietly
    warning = _paragraph(views.render(quiet).markdown, "> " + WARNING)
    assert "measured in this run while the machine was quiet" in warning
    assert "busier" not in warning and "likely too low" not in warning
    assert "--remeasure measures them again" in warning
    # Without a record of the load, the roofs stay the likely cause.
    assert not analyse(_roofs_divided(doc, 10.0)).roof_check.measured_quietly  # type: ignore[union-attr]


# ------------------------------------------------------------------------------ by kind


def _tally_check(roofs: tuple[RoofTally, ...]) -> RoofCheck:
    above_ = tuple(Above(f"p: k{i}", 3.0, 0.0) for i in range(sum(t.above for t in roofs)))
    return RoofCheck(programs=(), programs_checked=0, kernels=above_,
                     kernels_checked=sum(t.checked for t in roofs), causes=(), roofs=roofs)


def test_kernels_above_the_roofs_of_some_kinds_while_the_commonest_held() -> None:
    """On a TPU v5e every gather ran above the gather roofs while none of 31 kernels held to
    the triad stream did: the roofs of those kinds, not the ceilings, are what they beat."""
    gather = RoofTally("gather float32 (rows of 256)", 6, 6)
    triad = RoofTally("triad stream", 31, 0)
    reduce = RoofTally("reduce stream", 4, 0)  # too few kernels to say it held
    rc = _tally_check((gather, triad, reduce))
    assert rc.beaten == (gather,) and rc.held == (triad,) and rc.by_kind
    # The commonest roof beaten too: the ceilings as a whole may be low.
    low = _tally_check((gather, RoofTally("triad stream", 31, 20)))
    assert not low.by_kind
    # A commonest roof checked by too few kernels to hold says nothing.
    assert not _tally_check((RoofTally("gather", 3, 3), RoofTally("triad stream", 4, 0))).by_kind
    # Nothing above: nothing to say.
    assert not _tally_check((triad,)).by_kind


TPU_PART_A = FIXTURE.parent / "tpu_v5e_results" / "heldout_part_a.json.gz"


@pytest.mark.slow
def test_a_tpu_run_names_the_roofs_beaten_and_the_roofs_that_held() -> None:
    """A real TPU v5e run (fifteen held-out programs, its ceilings quick, measured in the run):
    its gathers beat the gather roofs (measured on a table as large as the output) while no
    kernel beat the streaming roofs. The warning names the roofs with their counts, gives no
    advice to measure the ceilings again, and --remeasure-if-suspect does not."""
    from roofline_report.observe import suspect_ceilings

    doc = results_io.loads(gzip.decompress(TPU_PART_A.read_bytes()).decode("utf-8"))
    rc = analyse(doc).roof_check
    assert rc is not None and rc.suspect and rc.by_kind
    tallies = {t.roof: t for t in rc.roofs}
    gather = tallies["gather float32 (rows of 256)"]
    assert gather.above == gather.checked > 0
    assert tallies["triad stream"].held and tallies["reduce stream"].held
    warning = _paragraph(views.render(doc).markdown, "> Check these roofs: ")
    assert f"gather float32 (rows of 256) ({gather.above} of {gather.checked} kernels held to " \
           "it)" in warning
    held = sum(t.checked for t in rc.held)
    names = [t.roof for t in rc.held]
    assert names[:2] == ["triad stream", "reduce stream"]
    listed = ", ".join(names[:-1]) + " and " + names[-1]
    assert f"none of the {held} kernels held to {listed} ran above them" in warning
    assert "--remeasure" not in warning and "likely too low" not in warning
    assert suspect_ceilings.suspect(doc) is None
