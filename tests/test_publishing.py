"""What people who publish reports rely on: anchors that do not move between runs, a page title
of their choosing, and a footer with the measurement's date and machine that rendering the same
results.json keeps identical."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from roofline_report import cli
from roofline_report.report import meta
from roofline_report.report import views as render
from roofline_report.results import io as results

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "cpu_results.json"
WHEN = "2025-01-31T12:00:00Z"
CPU = json.loads(FIXTURE.read_text(encoding="utf-8"))["environment"]["cpu_model"]


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    d = results.load(FIXTURE)
    d["generator"]["measured_at"] = WHEN
    results.validate(d)
    return d


def _ids(page: str) -> list[str]:
    """Anchors of sections, figures and table cells (not the ids inside inline SVG)."""
    return re.findall(r'<(?:section|figure|td|a) id="([^"]+)"', page)


def test_workload_anchor_comes_from_the_name_alone() -> None:
    assert meta.workload_anchor("matmul_bf16") == "w-matmul_bf16"
    spaced = meta.workload_anchor("scaled matmul")
    assert re.fullmatch(r"w-scaled-matmul-[0-9a-f]{6}", spaced)
    assert spaced == meta.workload_anchor("scaled matmul")  # the same in every run
    # Names that lower to one slug keep apart anchors.
    assert len({meta.workload_anchor(x) for x in ("a-b", "a b", "A B", "a_b")}) == 4
    assert re.fullmatch(r"w-[0-9a-f]{6}", meta.workload_anchor("√"))


@pytest.mark.slow
def test_anchors_do_not_move_when_the_workload_set_changes(data: dict[str, Any]) -> None:
    full = render.render(data)
    fewer = copy.deepcopy(data)
    # Another run: the first workloads dropped, the rest in another order.
    fewer["workloads"] = list(reversed(fewer["workloads"][3:]))
    partial = render.render(fewer)
    for r in (full, partial):
        assert set(_ids(r.html)) >= {"lowered", "compiled", "model", "measured", "catalog"}
    kept = {meta.workload_anchor(w["name"]) for w in fewer["workloads"]}
    assert kept <= set(_ids(full.html)) and kept <= set(_ids(partial.html))
    assert kept <= set(_ids(partial.markdown))
    # Sections keep their ids; a workload's own figure (its kernels) comes and goes with it.
    own = ("w-", "fig-kernels_")
    section_ids = {i for i in _ids(full.html) if not i.startswith(own)}
    assert section_ids == {i for i in _ids(partial.html) if not i.startswith(own)}


@pytest.mark.slow
def test_title_and_footer(data: dict[str, Any]) -> None:
    r = render.render(data, title="Nightly: model v2 <on CI>")
    assert "<title>Nightly: model v2 &lt;on CI&gt;</title>" in r.html
    assert "<h1>Nightly: model v2 &lt;on CI&gt;</h1>" in r.html
    assert r.markdown.startswith("# Nightly: model v2 &lt;on CI>\n")
    for page in (r.html, r.markdown):
        assert f"Measured {WHEN} on cpu: {CPU}, jax 0.10.2." in page
    assert render.render(data, title="Nightly: model v2 <on CI>") == r
    default = render.render(data)
    assert f"<h1>{meta.DEFAULT_TITLE}</h1>" in default.html


@pytest.mark.slow
def test_footer_without_a_recorded_date() -> None:
    data = results.load(FIXTURE)
    data["generator"].pop("measured_at", None)  # a run saved before dates were recorded
    r = render.render(data)
    assert "the date of the measurement was not recorded" in r.markdown


@pytest.mark.slow
def test_from_json_takes_a_title(tmp_path: Path, data: dict[str, Any]) -> None:
    src = tmp_path / "results.json"
    src.write_text(results.dumps(data), encoding="utf-8")
    out = tmp_path / "report"
    assert cli.main(["--from-json", str(src), "--out", str(out), "--title", "Ours"]) == 0
    md = (out / "report.md").read_text(encoding="utf-8")
    assert md.startswith("# Ours\n") and WHEN in md
    # The title is a rendering option: results.json is written back unchanged.
    assert (out / "results.json").read_text(encoding="utf-8") == results.dumps(data)


@pytest.mark.parametrize("title", ["", "   ", "x" * 201])
def test_a_bad_title_is_refused(tmp_path: Path, title: str,
                                capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report"
    assert cli.main(["--from-json", str(FIXTURE), "--out", str(out), "--title", title]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not out.exists()


def test_a_malformed_date_is_refused(data: dict[str, Any]) -> None:
    bad = copy.deepcopy(data)
    bad["generator"]["measured_at"] = "yesterday"
    with pytest.raises(Exception, match="measured_at"):
        results.validate(bad)


def test_anchored_cells_render_and_are_checked() -> None:
    from roofline_report.report import html, markdown
    from roofline_report.report.blocks import Cell, Document, Group, Section, Table

    t = Table(("workload",), ((Cell(("a @ b",), id="w-matmul"),),))
    assert '<td id="w-matmul">a @ b</td>' in html.table(t)
    assert '| <a id="w-matmul"></a>a @ b |' in markdown.table(t)
    Document((Group("", (Section("S", (t,), id="s"),)),)).check()
    with pytest.raises(ValueError, match="more than once"):
        Document((Group("", (Section("S", (t, t), id="s"),)),)).check()


def test_measuring_records_the_date_in_the_schemas_form() -> None:
    from roofline_report.observe import run as measure
    from roofline_report.results import schema

    at = measure.measured_at()
    assert re.fullmatch(schema.MEASURED_AT_PATTERN, at)
    schema.Generator(name="roofline-report", version="0", measured_at=at)
