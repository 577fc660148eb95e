"""Rendering from a fixed results file: structure, key numbers, gold Markdown, no jax.

A small gold file, tests/gold/teaching.md, pins the Markdown format of the seed's teaching
sections; when a change to the templates is intended, refresh it with
``REFRESH_GOLD=1 pytest tests/test_render.py``; on a mismatch the actual output is saved under
.test-artifacts/ and the diff printed. What the numbers mean is checked by invariants
(tests/test_invariants.py).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from html.parser import HTMLParser
from pathlib import Path

import pytest

from roofline_report.report import readme_figures
from roofline_report.report import views as render
from roofline_report.report.sharding_view import ShardingView
from roofline_report.results import io as results

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "cpu_results.json"
GOLD = REPO / "tests" / "gold" / "teaching.md"
ARTIFACTS = REPO / ".test-artifacts"
SVG_NS = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def data() -> dict[str, object]:
    return results.load(FIXTURE)


@pytest.fixture(scope="module")
def rendered(data: dict[str, object]) -> render.Rendered:
    return render.render(data)


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.section_ids: list[str] = []
        self.kind_markers: list[str] = []
        self.details_open: list[bool] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        if tag == "section" and a.get("id"):
            self.section_ids.append(str(a["id"]))
        if tag == "abbr" and "kind" in (a.get("class") or ""):
            self.kind_markers.append(str(a.get("class")))
        if tag == "details":
            self.details_open.append("open" in a)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_sections_of_the_seed_are_present_in_order(rendered: render.Rendered) -> None:
    c = _Collector()
    c.feed(rendered.html)
    seed_steps = ["lowered", "compiled", "model", "experiment", "exercise", "measured"]
    assert [s for s in c.section_ids if s in seed_steps] == seed_steps
    for extra in ("reconciliation", "catalog", "lab", "sweeps", "sharding"):
        assert extra in c.section_ids


def test_every_kind_has_a_marker_and_a_legend(rendered: render.Rendered) -> None:
    c = _Collector()
    c.feed(rendered.html)
    classes = " ".join(c.kind_markers)
    for kind in ("analytic", "hypothetical", "compiler_estimate", "measured"):
        assert f"k-{kind}" in classes
    assert 'id="legend"' in rendered.html
    for label in ("analytic", "hypothetical", "spec sheet", "compiler estimate", "measured"):
        assert f"<strong>{label}</strong>" in rendered.html


def test_key_numbers_of_the_seed(rendered: render.Rendered) -> None:
    html, md = rendered.html, rendered.markdown
    for text in ("8,192", "3,584", "5,632", "256", "27,648", "8,064", "24/7", "5 FLOP/B",
                 "26.7 GFLOP/s", "53.3 GFLOP/s", "100 GFLOP/s", "20 GB/s", "68.6 GFLOP/s",
                 "memory-bound", "stablehlo.dot_general", "stablehlo.tanh"):
        assert text in html, text
        assert text in md, text


def test_solutions_are_folded_and_stablehlo_is_shown(rendered: render.Rendered) -> None:
    assert "Reference solution (try the exercise before reading this)" in rendered.html
    c = _Collector()
    c.feed(rendered.html)
    # The StableHLO text is the only block open by default.
    assert c.details_open.count(True) == 1
    assert "func.func public @main" in rendered.html


def test_hypothetical_and_measured_are_visibly_apart(rendered: render.Rendered) -> None:
    html = rendered.html
    assert 'section id="model" class="kind-hypothetical"' in html
    assert 'section id="measured" class="kind-measured"' in html
    assert "Hypothetical: assumed budgets, not a device" in html
    assert "Measured: this machine, this run" in html


def test_svgs_parse_and_label_their_series(rendered: render.Rendered) -> None:
    assert {"seed_roofline", "doubled_traffic", "measured_roofline"} <= set(rendered.figures)
    for name, svg in rendered.figures.items():
        root = ET.fromstring(svg)
        assert root.tag == f"{SVG_NS}svg", name
        assert root.find(f"{SVG_NS}title") is not None, name
        assert root.find(f"{SVG_NS}desc") is not None, name
        ids = [e.get("id") for e in root.iter() if e.get("id")]
        assert all(str(i).startswith(f"{name}-") for i in ids), name
    seed = rendered.figures["seed_roofline"]
    for label in ("bandwidth budget (hypothetical)", "compute budget (hypothetical)",
                  "combined ceiling (hypothetical)", "ridge 5 FLOP/B"):
        assert label in seed
    measured = rendered.figures["measured_roofline"]
    # Every roof of each set is drawn and labelled with its value.
    assert "this machine: matmul float32" in measured
    assert "this machine: DRAM (" in measured  # one slope per level: its fastest roof
    assert "this machine: L1 (L1 read-write)" in measured
    assert "assumed budgets: assumed compute budget 100 GFLOP/s" in measured


def test_every_figure_with_points_names_them_on_hover(rendered: render.Rendered) -> None:
    """Each plotted point of the seed's, the lab's, the working-set, the prediction and the
    roofline figures carries a <title> inside its own group, which browsers show on hover."""
    kinds = ("seed_roofline", "doubled_traffic", "working_set", "sweep_prediction",
             "measured_roofline", "lab_")
    checked = 0
    for name, svg in rendered.figures.items():
        if not name.startswith(kinds):
            continue
        root = ET.fromstring(svg)
        tips = [g for g in root.iter(f"{SVG_NS}g")
                if g.find(f"{SVG_NS}title") is not None]
        assert tips, name
        assert all((g.findtext(f"{SVG_NS}title") or "").strip() for g in tips), name
        checked += 1
    assert checked >= 6
    seed = ET.fromstring(rendered.figures["seed_roofline"])
    texts = [g.findtext(f"{SVG_NS}title") for g in seed.iter(f"{SVG_NS}g")
             if g.find(f"{SVG_NS}title") is not None]
    assert any(t and t.startswith("n=8: intensity") and "memory-bound" in t for t in texts)


def test_markdown_links_figures_relatively(rendered: render.Rendered) -> None:
    for name in rendered.figures:
        assert f"](figures/{name}.svg)" in rendered.markdown


def _pinned(markdown: str) -> str:
    """The part of the page the format pin holds: the seed's hypothetical model, experiment
    and exercise (tables, kind markers, figure links and folds, in Markdown)."""
    start = markdown.index('## <a id="model"></a>')
    return markdown[start:markdown.index('## <a id="measured"></a>')]


def test_markdown_format_pin(rendered: render.Rendered) -> None:
    """A small pin of the Markdown format; what the numbers mean is checked by invariants
    (tests/test_invariants.py), not by pinning whole pages."""
    actual = _pinned(rendered.markdown)
    if os.environ.get("REFRESH_GOLD"):
        GOLD.parent.mkdir(exist_ok=True)
        GOLD.write_text(actual, encoding="utf-8")
    expected = GOLD.read_text(encoding="utf-8")
    if actual != expected:
        ARTIFACTS.mkdir(exist_ok=True)
        (ARTIFACTS / "teaching.md").write_text(actual, encoding="utf-8")
        diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                            "gold/teaching.md", "actual", n=2))
        pytest.fail(f"the pinned Markdown differs (REFRESH_GOLD=1 to accept):\n{diff[:6000]}")


@pytest.mark.slow
def test_readme_figures_are_up_to_date() -> None:
    assert readme_figures.main(["--check"]) == 0


@pytest.mark.slow
def test_rendering_does_not_import_jax(tmp_path: Path) -> None:
    code = (
        "import sys, json\n"
        "from roofline_report import cli\n"
        f"rc = cli.main(['--from-json', {str(FIXTURE)!r}, '--out', {str(tmp_path / 'r')!r}])\n"
        "print(json.dumps({'rc': rc, 'jax': 'jax' in sys.modules}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["jax"] is False
    assert got["rc"] in (0, 3)
    assert (tmp_path / "r" / "report.html").is_file()


def test_view_model_holds_display_strings_only(data: dict[str, object]) -> None:
    vm = render.view_model(data)

    def walk(x: object) -> None:
        if isinstance(x, float):
            raise AssertionError(f"unformatted float in the view model: {x!r}")
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            for f in dataclasses.fields(x):
                if f.name != "figures":
                    walk(getattr(x, f.name))
        elif isinstance(x, Mapping):
            for v in x.values():
                walk(v)
        elif isinstance(x, list | tuple):
            for v in x:
                walk(v)

    walk(vm)


def test_each_sharded_row_shows_its_own_bounds(data: dict[str, object]) -> None:
    import copy


    doc = copy.deepcopy(data)
    sharding = doc["sharding"]
    assert isinstance(sharding, dict)
    for name, flops in (("first mine", 2e9), ("second mine", 8e9)):
        sharding["workloads"].append({
            "name": name, "sharding": "user", "description": f"{name} (my:fn)",
            "collectives": [], "per_device": {"flops": flops, "hbm_bytes": 1e6,
                                              "comm_bytes": 0, "comm_bytes_hlo": 0}})
    sharding["workloads"].append({"name": "broken", "sharding": "user",
                                  "description": "broken: not analysed", "collectives": [],
                                  "error": "ImportError: no module"})
    vm = render.view_model(doc)  # the communication model is computed at render time
    assert isinstance(vm.sharding, ShardingView)
    rows = {r.name: r for r in vm.sharding.rows}
    assert rows["first mine"].t_math.text == "20 ms"  # 2e9 / 100 GFLOP/s
    assert rows["second mine"].t_math.text == "80 ms"
    assert rows["broken"].t_math.text == "unknown"
    assert "first mine" in vm.figures["comm_times"].svg


def _rule(css: str, selector: str) -> str:
    """The declarations of the first rule whose selector list holds ``selector``."""
    import re

    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        if selector in [s.strip() for s in selectors.split(",")]:
            return " ".join(body.split())
    raise AssertionError(f"no rule for {selector}")


def test_report_tables_are_padded_and_scroll_inside_themselves(
        rendered: render.Rendered) -> None:
    """Cells never touch ('our HLO countXLA'), and a wide table (the per-kernel one has 16
    columns) scrolls sideways in its own box instead of running off the page."""
    import re

    style = re.search(r"<style>(.*?)</style>", rendered.html, re.S)
    assert style is not None
    css = style.group(1)
    table = _rule(css, "table")
    assert "display: block" in table and "overflow-x: auto" in table
    assert "max-width: 100%" in table
    assert re.search(r"padding: \.3rem \.6rem", _rule(css, "td"))
    assert _rule(css, "th") == _rule(css, "td")
    widest = max(len(re.findall(r"<th[ >]", t)) for t in re.findall(r"<thead>.*?</thead>",
                                                                     rendered.html, re.S))
    assert widest >= 16


def test_the_rates_by_product_size_are_printed(rendered: render.Rendered) -> None:
    from roofline_report.kinds import Kind
    from roofline_report.report.format import n

    data = results.load(FIXTURE)
    md = rendered.markdown
    section = md[md.index("A product's rate grows"):md.index("### Memory levels")]
    enqueued = data["ceilings"]["dispatch"]["enqueued"]  # type: ignore[index]
    for roof in data["ceilings"]["compute"]:  # type: ignore[index]
        sizes = roof.get("by_size") or []
        assert sizes and f"| {roof['name']} |" in section
        for s in sizes:
            # One product a call, its dispatch taken off: the rate a product in a program meets.
            seconds = s["flops"] / s["value"] - enqueued
            assert seconds > 0
            assert (f"| {n(s['flops'], 'FLOP', Kind.MEASURED).text} `M` | "
                    f"{n(s['flops'] / seconds, 'FLOP/s', Kind.MEASURED).text} `M` |") in section


def test_rates_by_size_show_the_rate_each_size_is_held_to() -> None:
    """A rough rate measured above the roof (a size timed roughly can read faster than the
    roof's full timing) is shown as measured and beside it the rate the model holds a product
    of that size to: never above the roof printed above the table."""
    from roofline_report.analysis.roofs import ComputeRoof, RoofSet
    from roofline_report.kinds import Kind
    from roofline_report.report.views import _by_size

    roof = ComputeRoof("matmul float32", 350e9, "float32", Kind.MEASURED, "test",
                       by_flops=((8.19e3, 76.5e9), (2.68e8, 450e9), (2.15e9, 301e9)))
    rows = _by_size(RoofSet("this machine", Kind.MEASURED, (roof,), ()))
    points = rows[0].points
    assert [(v.text, held.text) for _, v, held in points] == [
        ("76.5 GFLOP/s", "76.5 GFLOP/s"), ("450 GFLOP/s", "350 GFLOP/s"),
        ("301 GFLOP/s", "301 GFLOP/s")]


def test_long_bar_labels_of_the_communication_figure_break_at_a_hyphen() -> None:
    """Side by side, "contracting-bfloat16" ran into its neighbours: past the characters that
    fit, a long label is broken at its middlemost hyphen; short ones stay whole."""
    from roofline_report.report import comm_figures

    assert comm_figures._two_lines("contracting-bfloat16") == "contracting-\nbfloat16"
    assert comm_figures._two_lines("fsdp-scan-step") == "fsdp-scan-\nstep"
    assert comm_figures._two_lines("fsdp-step") == "fsdp-step"
    assert comm_figures._two_lines("contracting") == "contracting"


def test_the_rates_section_says_what_a_rate_on_one_thread_and_from_main_memory_price(
        data: dict[str, object], rendered: render.Rendered) -> None:
    """Where the ceilings hold rates measured on one worker thread and the 2-D swap with its
    operand from main memory, the page says which kernels each prices; ceilings without them
    (this fixture's) say neither."""
    one_thread = "A rate marked (one thread) was measured again"
    from_memory = "The 2-D swap with its operand from main memory took"
    assert one_thread not in rendered.markdown and from_memory not in rendered.markdown
    grown = json.loads(json.dumps(data))
    rates = grown["ceilings"]["rates"]
    exp = next(r for r in rates if r["name"] == "exp float32")
    exp["threads"] = 2  # split across two cores, as a CPU's rate kernel runs
    swap = next(r for r in rates if r["name"] == "transpose float32 (2-D swap)")
    rates += [{**exp, "name": "exp float32 (one thread)", "threads": 1},
              {**swap, "name": "transpose float32 (2-D swap, its operand from main memory)",
               "variant": "2-D swap, its operand from main memory", "from_memory": True}]
    page = render.render(grown).markdown
    assert one_thread in page and from_memory in page
    assert "| exp float32 (one thread) |" in page
