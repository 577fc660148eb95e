"""The report's building blocks, each rendered by both renderers, and the number formats.

Hand-checked values: what a block must become in HTML and in Markdown, and what a percentage or
a counted noun must read. No jax, no figures drawn.
"""

from __future__ import annotations

import pytest

from roofline_report.analysis.miss import Miss
from roofline_report.report import html, markdown
from roofline_report.report.blocks import (
    Aside,
    Banner,
    Break,
    BulletList,
    Cell,
    Code,
    CodeBlock,
    Details,
    Document,
    Emph,
    Figure,
    Group,
    Link,
    Marker,
    Note,
    Paragraph,
    Section,
    Status,
    Strong,
    Table,
    count_tables,
)
from roofline_report.report.figures import FigureOut
from roofline_report.report.figures import Table as FigureTable
from roofline_report.report.format import Num, count, miss_text, percent, percent_text, plural
from roofline_report.report.section_parts import MissingFigure, figure_of

M = Num("2.5 ms", "measured")


# --- format ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("fraction", "expected"), [
    (2.2, "220%"), (2.2449, "224%"), (1.0, "100%"), (0.999, "100%"), (0.58, "58%"),
    (0.1, "10%"), (0.0996, "10%"), (0.091, "9.1%"), (0.05, "5%"), (0.005, "0.5%"),
    (0.0123, "1.2%"), (0.000123, "0.012%"), (1e-9, "0.0000001%"), (0.0, "0%"),
    (-0.25, "-25%"), (-0.005, "-0.5%"), (None, "unknown"), (float("nan"), "unknown"),
    (float("inf"), "unknown"),
])
def test_percent_never_uses_exponents(fraction: float | None, expected: str) -> None:
    assert percent_text(fraction) == expected
    assert "e" not in percent_text(fraction).replace("unknown", "")


def test_percent_carries_its_kind() -> None:
    assert percent(2.2, "measured") == Num("220%", "measured")
    assert percent(0.5) == Num("50%", "")


@pytest.mark.parametrize(("predicted", "measured", "expected"), [
    (1.0, 2.345, "2.3× slower"), (1.0, 340.0, "340× slower"), (1.0, 12345.0, "12345× slower"),
    (2.0e6, 1.0, "2×10⁶× faster"), (1.0, 1.01, "as predicted"),
])
def test_a_miss_reads_as_a_plain_factor(predicted: float, measured: float,
                                        expected: str) -> None:
    assert miss_text(Miss(predicted, measured)) == Num(expected, "predicted")


@pytest.mark.parametrize(("value", "expected"), [
    (1234567.0, "1,234,567"), (2.5, "2.5"), (1234567.5, "1.23457×10⁶"), (0.0001234, "1.234×10⁻⁴"),
])
def test_counts_never_use_exponent_notation(value: float, expected: str) -> None:
    assert count(value, "analytic").text == expected


@pytest.mark.parametrize(("number", "expected"), [
    (1, "1 device"), (0, "0 devices"), (8, "8 devices"), ("1", "1 device"),
    ("8", "8 devices"), ("1,000", "1,000 devices"), (3000, "3,000 devices"),
    (1000000, "1,000,000 devices"),
])
def test_plural_agrees_with_the_number(number: object, expected: str) -> None:
    assert plural(number, "device", "devices") == expected


# --- inline parts ---------------------------------------------------------------------------

def test_numbers_carry_their_kind_marker() -> None:
    assert html.inline(M) == ('<span class="v">2.5 ms</span><abbr class="kind k-measured" '
                              'title="measured">M</abbr>')
    assert markdown.inline(M) == "2.5 ms `M`"
    assert html.inline(Num("3")) == '<span class="v">3</span>'
    assert markdown.inline(Num("3")) == "3"
    assert markdown.inline(Marker("compiler_estimate")) == "`C`"
    assert html.inline(Marker("compiler_estimate")).startswith('<abbr class="kind k-compiler')


def test_user_text_is_escaped() -> None:
    hostile = "<b>x</b> *a* _b_ [c](d) `e` | f ~g~ & \\"
    assert html.inline(hostile) == ("&lt;b&gt;x&lt;/b&gt; *a* _b_ [c](d) `e` | f ~g~ &amp; \\")
    assert markdown.inline(hostile) == ("&lt;b>x&lt;/b> \\*a\\* \\_b\\_ \\[c\\](d) \\`e\\` \\| f "
                                       "&#126;g&#126; &amp; \\\\")
    assert markdown.escape("two\nlines") == "two lines"


@pytest.mark.parametrize(("part", "as_html", "as_md"), [
    (Code("a | b"), "<code>a | b</code>", "`a | b`"),
    (Code("x`y"), "<code>x`y</code>", "``x`y``"),
    (Emph("Hypothesis."), "<em>Hypothesis.</em>", "*Hypothesis.*"),
    (Strong("a_b"), "<strong>a_b</strong>", "**a\\_b**"),
    (Link("three-way accounting", "#reconciliation"),
     '<a href="#reconciliation">three-way accounting</a>',
     "[three-way accounting](#reconciliation)"),
    (Link("sheet (pdf)", "https://e.org/a b(1)"), '<a href="https://e.org/a b(1)">sheet (pdf)</a>',
     "[sheet (pdf)](https://e.org/a%20b%281%29)"),
    (Status("yes", "ok"), '<span class="ok">yes</span>', "yes"),
    (Status("no", "bad"), '<span class="bad">no</span>', "**no**"),
    (Status("(may be unstable)", "warn"), '<span class="warn">(may be unstable)</span>',
     "(may be unstable)"),
    (Break(), "<br>", "<br>"),
])
def test_inline_parts(part: object, as_html: str, as_md: str) -> None:
    assert html.inline(part) == as_html  # type: ignore[arg-type]
    assert markdown.inline(part) == as_md  # type: ignore[arg-type]


def test_code_in_a_table_cell_escapes_its_pipe() -> None:
    assert markdown.inline(Code("a | b"), in_table=True) == "`a \\| b`"


# --- blocks ---------------------------------------------------------------------------------

def test_paragraph() -> None:
    b = Paragraph(("Took ", M, "."))
    assert html.block(b) == ('<p>Took <span class="v">2.5 ms</span><abbr class="kind '
                             'k-measured" title="measured">M</abbr>.</p>')
    assert markdown.block(b) == "Took 2.5 ms `M`."


@pytest.mark.parametrize(("start", "guarded"), [
    ("1. first", "1\\. first"), ("- item", "\\- item"), ("> quote", "\\> quote"),
    ("+ x", "\\+ x"), ("=", "\\="), ("12) x", "12\\) x"), ("plain", "plain"),
])
def test_paragraph_text_cannot_start_another_block(start: str, guarded: str) -> None:
    assert markdown.block(Paragraph((start,))) == guarded


def test_note_and_banner() -> None:
    assert html.block(Note(("Careful.",))) == '<p class="warn">Careful.</p>'
    assert html.block(Note(("Failed.",), "bad")) == '<p class="bad">Failed.</p>'
    assert markdown.block(Note(("Careful.",))) == "> Careful."
    b = Banner("measured", "Measured", "this machine, this run")
    assert html.block(b) == '<p class="banner k-measured">Measured: this machine, this run</p>'
    assert markdown.block(b) == "> **Measured**: this machine, this run."
    with pytest.raises(ValueError, match="tone"):
        Note(("x",), "loud")


def test_table() -> None:
    t = Table(("name", "time"), ((Cell(("a|b",)), Cell((M,), numeric=True)),
                                 (Cell(("c",), span=2),)), caption="Times")
    h = html.block(t)
    assert h.startswith("<table>\n<caption>Times</caption>\n<thead><tr><th scope=\"col\">name")
    assert '<td class="num"><span class="v">2.5 ms</span>' in h
    assert '<td colspan="2">c</td>' in h
    assert markdown.block(t) == ("*Times*\n\n| name | time |\n| --- | --- |\n"
                                 "| a\\|b | 2.5 ms `M` |\n| c |  |")


def test_table_without_header_and_with_row_headers() -> None:
    t = Table(None, ((Cell(("backend",)), Cell(("cpu",))),), row_headers=True)
    h = html.block(t)
    assert "<thead>" not in h
    assert '<tr><th scope="row">backend</th><td>cpu</td></tr>' in h
    assert markdown.block(t) == "|  |  |\n| --- | --- |\n| backend | cpu |"


def _figure_out(name: str = "seed_roofline") -> FigureOut:
    return FigureOut(name, "A title", "What it shows.", '<svg id="x"><title>t</title></svg>',
                     FigureTable(("n", "x"), (("1", "2"),)))


def test_figure() -> None:
    f = Figure(_figure_out())
    h = html.block(f)
    assert h.startswith('<figure id="fig-seed_roofline">\n<svg id="x">')
    assert "<figcaption>A title. What it shows.</figcaption>" in h
    assert "<summary>Numbers behind “A title”</summary>" in h and h.count("<table>") == 1
    m = markdown.block(f)
    assert m.startswith("![A title: What it shows.](figures/seed_roofline.svg)\n\n"
                        "*A title.* What it shows.\n\n<details markdown=\"1\">")
    assert "| n | x |\n| --- | --- |\n| 1 | 2 |" in m


def test_code_block_fence_outlasts_the_text() -> None:
    b = CodeBlock("a <b> ```c```\n", "mlir")
    assert html.block(b) == "<pre><code>a &lt;b&gt; ```c```\n</code></pre>"
    assert markdown.block(b) == "````mlir\na <b> ```c```\n````"


def test_lists() -> None:
    b = BulletList((("one",), (Strong("two"), ": 2")))
    assert html.block(b) == "<ul>\n<li>one</li>\n<li><strong>two</strong>: 2</li>\n</ul>"
    assert markdown.block(b) == "- one\n- **two**: 2"
    o = BulletList((("a",), ("b",)), ordered=True)
    assert html.block(o) == "<ol>\n<li>a</li>\n<li>b</li>\n</ol>"
    assert markdown.block(o) == "1. a\n2. b"


def test_details() -> None:
    b = Details(("Solution <1>",), (Paragraph(("x",)),), open=True)
    assert html.block(b) == ("<details open>\n<summary>Solution &lt;1&gt;</summary>\n<p>x</p>\n"
                             "</details>")
    assert markdown.block(b) == ('<details open markdown="1">\n<summary>Solution &lt;1&gt;'
                                 "</summary>\n\nx\n\n</details>")


def test_aside() -> None:
    b = Aside("exercise", (Paragraph(("q",)),))
    assert html.block(b) == '<div class="exercise">\n<p>q</p>\n</div>'
    assert markdown.block(b) == "q"


def test_sections_nest_with_their_heading_levels() -> None:
    s = Section("Top", (Paragraph(("a",)), Section("Sub", (Paragraph(("b",)),))), id="top",
                kind="measured")
    assert html.section(s, 2, "1.") == ('<section id="top" class="kind-measured">\n'
                                        "<h2>1. Top</h2>\n<p>a</p>\n<section>\n<h3>Sub</h3>\n"
                                        "<p>b</p>\n</section>\n</section>")
    assert markdown.section(s, 2, "1.") == '## <a id="top"></a>1. Top\n\na\n\n### Sub\n\nb'


# --- the document ---------------------------------------------------------------------------

def _doc(*, figures: tuple[str, ...] = ()) -> Document:
    exp = Section("One experiment", (Paragraph(("x",)),), id="exp-one")
    return Document((
        Group("", (Section("First", (Paragraph(("see ", Link("second", "#second"))),),
                           id="first"),
                   Section("Second", (Details(("folded",), (exp,)),), id="second")),
              numbered=True),
        Group("Beyond", (Section("Third", (Paragraph(("z",)),), id="third"),)),
    ), figures=figures)


def test_contents_are_generated_from_the_tree() -> None:
    doc = _doc()
    doc.check()
    h = html.contents(doc)
    assert ('<ol>\n<li><a href="#first">First</a></li>\n<li><a href="#second">Second</a>'
            '<ul><li><a href="#exp-one">One experiment</a></li></ul></li>\n</ol>') in h
    assert "<strong>Beyond</strong>\n<ul>\n<li><a href=\"#third\">Third</a></li>" in h
    assert markdown.contents(doc) == (
        "## Contents\n\n1. [First](#first)\n2. [Second](#second)\n"
        "    - [One experiment](#exp-one)\n\n**Beyond**\n\n- [Third](#third)")
    assert "<h2>2. Second</h2>" in html.body(doc)
    assert '## <a id="third"></a>Third' in markdown.body(doc)


def test_document_contract() -> None:
    def bad(*sections: Section, figures: tuple[str, ...] = ()) -> Document:
        return Document((Group("", sections),), figures=figures)

    with pytest.raises(ValueError, match="more than once"):
        bad(Section("a", (), id="x"), Section("b", (), id="x")).check()
    with pytest.raises(ValueError, match="must match"):
        bad(Section("a", (), id="1 bad")).check()
    with pytest.raises(ValueError, match="no id"):
        bad(Section("a", ())).check()
    with pytest.raises(ValueError, match="not in the document"):
        bad(Section("a", (Paragraph((Link("b", "#nowhere"),)),), id="a")).check()
    with pytest.raises(ValueError, match=r"figures not placed: \['lost'\]"):
        bad(Section("a", (), id="a"), figures=("lost",)).check()
    twice = Figure(_figure_out("f"))
    with pytest.raises(ValueError, match=r"more than once: \['fig-f'\]"):
        bad(Section("a", (twice, twice), id="a"), figures=("f",)).check()


def test_a_missing_figure_is_an_error() -> None:
    from dataclasses import replace
    from pathlib import Path

    from roofline_report.report import views
    from roofline_report.results import io as results

    fixture = Path(__file__).parent / "fixtures" / "cpu_results.json"
    vm = replace(views.view_model(results.load(fixture)), figures={})
    with pytest.raises(MissingFigure, match="seed_roofline"):
        figure_of(vm, "seed_roofline")


def test_count_tables_counts_figure_tables() -> None:
    doc = Document((Group("", (Section("a", (
        Table(("h",), ()), Figure(_figure_out("f")),
        Details(("d",), (Table(("h",), ()),))), id="a"),)),), figures=("f",))
    assert count_tables(doc) == 3
