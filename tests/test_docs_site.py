"""The docs site includes the report: rendered from the committed run as ``make docs`` does it,
copied into a copy of ``docs/``, built with ``mkdocs build --strict`` (every link, anchor and
image must resolve), then read back: every figure the page shows exists in the site, every table
of the section tree is an HTML table, and every contents link finds its anchor."""

from __future__ import annotations

import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from roofline_report import cli
from roofline_report.report import sections
from roofline_report.report import views as render
from roofline_report.report.blocks import count_tables
from roofline_report.results import io as results

#: Each test here builds a whole report: left out by -m "not slow".
pytestmark = pytest.mark.slow

pytest.importorskip("mkdocs", reason="mkdocs is in the test extra; the docs site is not built")

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "cpu_results.json"


class _Page(HTMLParser):
    """Ids of the whole page; images, links, tables and text of its main content (the
    theme's own navigation and dialogs left out)."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.images: list[str] = []
        self.links: list[str] = []
        self.tables = 0
        self.text: list[str] = []
        self._skip = 0
        self._main = 0  # depth of open <div>s inside the main content; 0 outside it

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        if tag == "div" and (self._main or a.get("role") == "main"):
            self._main += 1
        if not self._main:
            return
        if tag == "img":
            self.images.append(str(a.get("src", "")))
        if tag == "a" and a.get("href"):
            self.links.append(str(a["href"]))
        if tag == "table":
            self.tables += 1
        if tag in ("script", "style", "pre", "code"):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if not self._main:
            return
        if tag == "div":
            self._main -= 1
        if tag in ("script", "style", "pre", "code"):
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if self._main and not self._skip:
            self.text.append(data)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("docs-site")
    shutil.copy(REPO / "mkdocs.yml", root / "mkdocs.yml")
    shutil.copytree(REPO / "docs", root / "docs", ignore=shutil.ignore_patterns("report"))
    staged = root / "staged"
    assert cli.main(["--from-json", str(FIXTURE), "--out", str(staged),
                     "--title", "Example report"]) in (0, 3)
    (root / "docs" / "report").mkdir()
    shutil.copy(staged / "report.md", root / "docs" / "report" / "report.md")
    shutil.copytree(staged / "figures", root / "docs" / "report" / "figures")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(root / "mkdocs.yml"), "--site-dir", str(root / "site")],
                          cwd=root, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stderr[-3000:]}"
    return root / "site"


def _read(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def test_every_figure_of_the_report_resolves(site: Path) -> None:
    report = site / "report" / "report.html"
    page = _read(report)
    figures = [src for src in page.images if "figures/" in src]
    expected = sorted(render.render(results.load(FIXTURE)).figures)
    assert sorted(Path(src).stem for src in figures) == expected
    for src in figures:
        target = (report.parent / src).resolve()
        assert target.is_file(), f"{src} does not resolve in the built site"
        assert target.read_text(encoding="utf-8").lstrip().startswith(("<?xml", "<svg"))


def test_every_table_renders_as_a_table(site: Path) -> None:
    page = _read(site / "report" / "report.html")
    doc = sections.document(render.view_model(results.load(FIXTURE)))
    assert page.tables == count_tables(doc)
    raw = [line for line in "".join(page.text).splitlines() if line.lstrip().startswith("|")]
    assert not raw, f"table rows left as text: {raw[:3]}"


def test_every_anchor_link_resolves(site: Path) -> None:
    page = _read(site / "report" / "report.html")
    anchors = [h[1:] for h in page.links if h.startswith("#")]
    assert {"lowered", "measured", "catalog", "w-matmul"} <= page.ids
    assert len(anchors) > 10
    missing = sorted({a for a in anchors if a not in page.ids})
    assert not missing, f"links to anchors that are not on the page: {missing}"


def test_the_site_links_to_the_report(site: Path) -> None:
    home = _read(site / "index.html")
    assert any(h.endswith("report/report.html") for h in home.links)
    assert "Example report" in (site / "report" / "report.html").read_text(encoding="utf-8")


def _css_rule(css: str, selector: str) -> str:
    import re

    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", re.sub(r"/\*.*?\*/", "", css,
                                                                       flags=re.S)):
        if selector in [" ".join(s.split()) for s in selectors.split(",")]:
            return " ".join(body.split())
    raise AssertionError(f"no rule for {selector}")


def test_the_report_page_pads_its_cells_and_scrolls_wide_tables(site: Path) -> None:
    """The theme styles only tables of its own class: the site's stylesheet gives the report's
    tables cell padding and lets a wide one (the per-kernel table's 16 columns) scroll inside
    itself rather than run off the page."""
    import re

    report = site / "report" / "report.html"
    html = report.read_text(encoding="utf-8")
    hrefs = [h for tag in re.findall(r"<link\b[^>]*>", html) if 'rel="stylesheet"' in tag
             for h in re.findall(r'href="([^"]*report\.css)"', tag)]
    assert len(hrefs) == 1, "the report page does not link the report stylesheet"
    css_file = (report.parent / hrefs[0]).resolve()
    assert css_file.is_file()
    css = css_file.read_text(encoding="utf-8")
    table = _css_rule(css, 'div[role="main"] table')
    assert "overflow-x: auto" in table and "display: block" in table
    assert "max-width: 100%" in table
    assert "padding: 0.3rem 0.6rem" in _css_rule(css, 'div[role="main"] td')
    assert "padding: 0.3rem 0.6rem" in _css_rule(css, 'div[role="main"] th')
    # The page's content is inside the element the rules select.
    assert 'role="main"' in html
    widest = max(len(re.findall(r"<th[ >]", t)) for t in re.findall(r"<thead>.*?</thead>",
                                                                     html, re.S))
    assert widest >= 16
