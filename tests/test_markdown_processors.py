"""report.md as the two Markdown processors people use read it: GitHub's (cmark-gfm with the
GFM table extension) and MkDocs' (Python-Markdown with tables, md_in_html, attr_list and
fenced_code). Every table of the section tree must come out as a <table>, no table may be left
as raw ``| a | b |`` text, every figure shown must be one render() produced, and the contents
must link every section id of the tree exactly once, in report.md and in report.html.
"""

from __future__ import annotations

import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from roofline_report.report import sections
from roofline_report.report import views as render
from roofline_report.report.blocks import Document, Section, count_tables
from roofline_report.results import io as results

cmarkgfm = pytest.importorskip("cmarkgfm")
markdown_pkg = pytest.importorskip("markdown")

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "cpu_results.json"


@pytest.fixture(scope="module")
def data() -> dict[str, object]:
    return results.load(FIXTURE)


@pytest.fixture(scope="module")
def rendered(data: dict[str, object]) -> render.Rendered:
    return render.render(data)


@pytest.fixture(scope="module")
def tree(data: dict[str, object]) -> Document:
    return sections.document(render.view_model(data))


def _gfm(md: str) -> str:
    from cmarkgfm.cmark import Options  # type: ignore[import-untyped]

    return str(cmarkgfm.github_flavored_markdown_to_html(md, options=Options.CMARK_OPT_UNSAFE))


def _mkdocs(md: str) -> str:
    return str(markdown_pkg.markdown(
        md, extensions=["tables", "md_in_html", "attr_list", "fenced_code"]))


PROCESSORS = {"cmark-gfm": _gfm, "Python-Markdown": _mkdocs}


class _Page(HTMLParser):
    """Text lines, element ids and figure images of an HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.ids: list[str] = []
        self.images: list[str] = []
        self.tables = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.append(str(a["id"]))
        if tag == "img":
            self.images.append(str(a.get("src")))
        if tag == "table":
            self.tables += 1

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(page: str) -> _Page:
    p = _Page()
    p.feed(page)
    return p


def _section_ids(doc: Document) -> list[str]:
    return [b.id for b in doc.blocks() if isinstance(b, Section) and b.id]


@pytest.mark.parametrize("processor", sorted(PROCESSORS))
def test_every_table_becomes_a_table(rendered: render.Rendered, tree: Document,
                                     processor: str) -> None:
    page = _parse(PROCESSORS[processor](rendered.markdown))
    assert page.tables == count_tables(tree) > 10
    raw = [line for line in "".join(page.text).splitlines() if line.lstrip().startswith("|")]
    assert raw == [], f"{processor} left table rows as text: {raw[:5]}"


@pytest.mark.parametrize("processor", sorted(PROCESSORS))
def test_figures_shown_are_the_figures_rendered(rendered: render.Rendered,
                                                processor: str) -> None:
    page = _parse(PROCESSORS[processor](rendered.markdown))
    assert sorted(page.images) == sorted(f"figures/{name}.svg" for name in rendered.figures)


@pytest.mark.parametrize("processor", sorted(PROCESSORS))
def test_every_section_anchor_exists_once(rendered: render.Rendered, tree: Document,
                                          processor: str) -> None:
    ids = Counter(_parse(PROCESSORS[processor](rendered.markdown)).ids)
    assert all(ids[i] == 1 for i in _section_ids(tree)), ids


def test_markdown_contents_link_every_section_once(rendered: render.Rendered,
                                                   tree: Document) -> None:
    contents = rendered.markdown.split("## Contents\n", 1)[1].split("\n## ", 1)[0]
    links = re.findall(r"\]\(#([^)]+)\)", contents)
    assert Counter(links) == Counter(_section_ids(tree))
    assert len(links) == len(set(links)) >= 12


def test_html_contents_link_every_section_once(rendered: render.Rendered,
                                               tree: Document) -> None:
    nav = rendered.html.split('<nav class="toc"', 1)[1].split("</nav>", 1)[0]
    links = re.findall(r'href="#([^"]+)"', nav)
    assert Counter(links) == Counter(_section_ids(tree))
    page = _parse(rendered.html)
    assert all(Counter(page.ids)[i] == 1 for i in links)


def test_no_paragraph_runs_into_a_block(rendered: render.Rendered) -> None:
    """Outside code, a table, list, details or heading line follows a blank line."""
    lines = rendered.markdown.splitlines()
    fence = False
    for i, line in enumerate(lines[1:], start=1):
        opening = line.startswith("```") and not fence
        if line.startswith("```"):
            fence = not fence
        if not opening and (fence or line.startswith("```")):
            continue  # code, or the fence that closes it
        if not lines[i - 1].strip():
            continue
        prev = lines[i - 1]
        starts_block = line.startswith(("<details", "#", "```")) or (
            line.startswith("|") and not prev.startswith("|")) or (
            line.startswith(("- ", "1. ")) and not re.match(r"\s*(- |\d+\. )", prev))
        assert not starts_block, f"line {i + 1} follows text without a blank line: {line[:60]}"


@pytest.mark.slow
def test_a_failed_check_shows_its_errors_and_tolerance(data: dict[str, object]) -> None:
    import copy

    doc = copy.deepcopy(data)
    w = doc["workloads"][1]  # type: ignore[index]
    w["check"].update(passed=False, note="ran on a shared machine")
    out = render.render(doc)
    for page in (out.html, out.markdown):
        assert "failed" in page
        assert "max absolute error 2.3×10⁻⁶" in page.replace('<span class="v">', "") \
            .replace("</span>", "")
        assert "rtol = 1×10⁻⁴, atol = 1×10⁻⁴" in page
        assert "ran on a shared machine." in page


@pytest.mark.parametrize("processor", sorted(PROCESSORS))
def test_comparison_tables_survive_both_processors(data: dict[str, object],
                                                   processor: str) -> None:
    from roofline_report.report import compare

    html_page, md, _, _ = compare.render_comparison([("1: a (cpu, x)", data),
                                                     ("2: b (cpu, y)", data)])
    page = _parse(PROCESSORS[processor](md))
    assert page.tables == html_page.count("<table>") >= 4
    assert not [t for t in "".join(page.text).splitlines() if t.lstrip().startswith("|")]
