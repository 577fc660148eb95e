"""The report's building blocks: a document is a tree of frozen dataclasses, with no markup.

Inline parts (:data:`Inline`) make up paragraphs, table cells and summaries; blocks
(:data:`Block`) make up sections. A :class:`Document` groups top-level sections; its
:meth:`Document.check` states the tree's contract (unique, well-formed ids; internal links that
resolve; every figure placed once). The renderers in ``html.py`` and ``markdown.py`` walk the
same tree, so the two formats cannot drift apart. Plain ``str`` inline parts are text; all text
is escaped by the renderer, never by the section code.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from roofline_report.report.format import Num

if TYPE_CHECKING:
    from roofline_report.report.figures import FigureOut

# --- inline parts ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Code:
    """Inline code: an operation name, a shape, an expression."""

    text: str


@dataclass(frozen=True, slots=True)
class Emph:
    """Emphasised text (<em>, *x*)."""

    text: str


@dataclass(frozen=True, slots=True)
class Strong:
    """Strong text (<strong>, **x**)."""

    text: str


@dataclass(frozen=True, slots=True)
class Marker:
    """A kind marker on its own, not attached to a number (e.g. after a heading)."""

    kind: str


@dataclass(frozen=True, slots=True)
class Link:
    """A link; ``href`` is a URL or '#id' of an anchor in the same document."""

    text: str
    href: str


@dataclass(frozen=True, slots=True)
class Status:
    """A verdict word: tone 'ok' (passed, yes), 'bad' (failed, no) or 'warn' (a caution)."""

    text: str
    tone: str

    def __post_init__(self) -> None:
        if self.tone not in ("ok", "bad", "warn"):
            raise ValueError(f"unknown tone {self.tone!r}")


@dataclass(frozen=True, slots=True)
class Break:
    """A line break inside a table cell."""


Inline = str | Code | Emph | Strong | Num | Marker | Link | Status | Break
Text = tuple[Inline, ...]


def text(*parts: Inline | None) -> Text:
    """Inline parts as a tuple, dropping None and empty strings."""
    return tuple(p for p in parts if p is not None and p != "")


# --- blocks ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Paragraph:
    parts: Text


@dataclass(frozen=True, slots=True)
class Note:
    """A paragraph set apart: tone 'warn' (a caution about the numbers) or 'bad' (a failure)."""

    parts: Text
    tone: str = "warn"

    def __post_init__(self) -> None:
        if self.tone not in ("warn", "bad"):
            raise ValueError(f"unknown tone {self.tone!r}")


@dataclass(frozen=True, slots=True)
class Banner:
    """The line that says which kind of numbers a section holds: '<label>: <text>'."""

    kind: str
    label: str
    text: str


@dataclass(frozen=True, slots=True)
class Cell:
    """A table cell; ``numeric`` cells align their digits, ``span`` > 1 spans columns,
    ``css_class`` is a style hint for HTML (Markdown has none), and ``id`` anchors the cell."""

    parts: Text
    numeric: bool = False
    span: int = 1
    css_class: str = ""
    id: str = ""  # an anchor on the cell (a workload's row), for links from elsewhere


@dataclass(frozen=True, slots=True)
class Table:
    """A table; ``header`` None means no header row (Markdown then writes an empty one);
    ``row_headers`` marks each row's first cell as the row's header."""

    header: tuple[str, ...] | None
    rows: tuple[tuple[Cell, ...], ...]
    caption: str = ""
    row_headers: bool = False

    @property
    def columns(self) -> int:
        if self.header is not None:
            return len(self.header)
        return max((sum(c.span for c in r) for r in self.rows), default=0)


@dataclass(frozen=True, slots=True)
class Figure:
    """A figure: the inline SVG (HTML) or an image link (Markdown), its caption, and a folded
    table of the numbers behind it."""

    figure: FigureOut

    @property
    def id(self) -> str:
        return f"fig-{self.figure.name}"

    @property
    def table(self) -> Table:
        t = self.figure.table
        return Table(tuple(t.headers),
                     tuple(tuple(Cell((c,), numeric=True) for c in row) for row in t.rows))


@dataclass(frozen=True, slots=True)
class CodeBlock:
    """Preformatted program text (StableHLO, HLO); ``language`` names it for Markdown."""

    text: str
    language: str = ""


@dataclass(frozen=True, slots=True)
class BulletList:
    items: tuple[Text, ...]
    ordered: bool = False


@dataclass(frozen=True, slots=True)
class Details:
    """Folded content (a solution, a long program text); ``open`` shows it unfolded."""

    summary: Text
    children: tuple[Block, ...]
    open: bool = False


@dataclass(frozen=True, slots=True)
class Aside:
    """A group of blocks set apart with a CSS class (an exercise)."""

    css_class: str
    children: tuple[Block, ...]


@dataclass(frozen=True, slots=True)
class Section:
    """A titled section. Top-level sections need an ``id``; a nested one has an id when it
    should be linked from the contents. ``kind`` ('hypothetical', 'measured' or '') marks a
    section whose numbers are all of one kind."""

    title: Text | str
    children: tuple[Block, ...]
    id: str | None = None
    kind: str = ""

    @property
    def title_parts(self) -> Text:
        return (self.title,) if isinstance(self.title, str) else self.title


Block = (Paragraph | Note | Banner | Table | Figure | CodeBlock | BulletList | Details | Aside
         | Section)


@dataclass(frozen=True, slots=True)
class Group:
    """Top-level sections listed together in the contents; ``numbered`` groups number their
    sections 1, 2, ... in the headings and the contents alike."""

    title: str
    sections: tuple[Section, ...]
    numbered: bool = False


@dataclass(frozen=True, slots=True)
class Document:
    """The report body: groups of top-level sections, in order."""

    groups: tuple[Group, ...]
    figures: tuple[str, ...] = field(default=())
    """Names of every figure the document must place (each exactly once)."""

    def sections(self) -> Iterator[tuple[str, Section]]:
        """Top-level sections with their heading number ('' when unnumbered)."""
        for g in self.groups:
            for i, s in enumerate(g.sections, start=1):
                yield (f"{i}." if g.numbered else ""), s

    def blocks(self) -> Iterator[Block]:
        """Every block in document order, depth first."""
        for _, s in self.sections():
            yield from walk(s)

    def check(self) -> None:
        """Raise ValueError unless ids are well formed and unique, every '#id' link resolves,
        every top-level section has an id, and each figure in ``figures`` is placed once."""
        ids: list[str] = []
        links: list[str] = []
        placed: list[str] = []
        for _, s in self.sections():
            if not s.id:
                raise ValueError(f"the top-level section {s.title_parts!r} has no id")
        for b in self.blocks():
            if isinstance(b, Section) and b.id:
                ids.append(b.id)
            elif isinstance(b, Figure):
                ids.append(b.id)
                placed.append(b.figure.name)
            elif isinstance(b, Table):
                ids += cell_ids(b)
            links += [p.href[1:] for p in inline_parts(b)
                      if isinstance(p, Link) and p.href.startswith("#")]
        bad = [i for i in ids if not _ID.fullmatch(i)]
        if bad:
            raise ValueError(f"ids must match {_ID.pattern}: {bad}")
        dups = sorted({i for i in ids if ids.count(i) > 1})
        if dups:
            raise ValueError(f"ids used more than once: {dups}")
        missing = sorted(set(links) - set(ids))
        if missing:
            raise ValueError(f"links to ids that are not in the document: {missing}")
        unplaced = sorted(set(self.figures) - set(placed))
        unknown = sorted(set(placed) - set(self.figures))
        twice = sorted({f for f in placed if placed.count(f) > 1})
        if unplaced or unknown or twice:
            raise ValueError(f"figures not placed: {unplaced}; placed but not produced: "
                             f"{unknown}; placed twice: {twice}")


# An id starts with a letter of any script, then letters, digits, "_" and "-" (HTML allows any
# character but whitespace; anchors keep the letters of names in other scripts).
_ID = re.compile(r"[^\W\d_][\w-]*")


def cell_ids(t: Table) -> list[str]:
    """The anchors on the cells of ``t``."""
    return [c.id for row in t.rows for c in row if c.id]


def walk(block: Block) -> Iterator[Block]:
    """``block`` and every block inside it, depth first."""
    yield block
    if isinstance(block, Section | Details | Aside):
        for child in block.children:
            yield from walk(child)


def inline_parts(block: Block) -> Iterator[Inline]:
    """The inline parts held directly by ``block`` (not by blocks nested in it)."""
    texts: Sequence[Text]
    if isinstance(block, Paragraph | Note):
        texts = [block.parts]
    elif isinstance(block, Table):
        texts = [c.parts for row in block.rows for c in row]
    elif isinstance(block, BulletList):
        texts = list(block.items)
    elif isinstance(block, Details):
        texts = [block.summary]
    elif isinstance(block, Section):
        texts = [block.title_parts]
    else:
        texts = []
    for t in texts:
        yield from t


def linked_subsections(s: Section) -> list[Section]:
    """The sections with an id nested in ``s`` (through details and asides, not through one
    another): what the contents lists under ``s``."""
    found: list[Section] = []

    def visit(children: tuple[Block, ...]) -> None:
        for c in children:
            if isinstance(c, Section) and c.id:
                found.append(c)
            elif isinstance(c, Section | Details | Aside):
                visit(c.children)

    visit(s.children)
    return found


def count_tables(doc: Document) -> int:
    """How many tables the document renders to: Table blocks and each figure's number table."""
    return sum(1 for b in doc.blocks() if isinstance(b, Table | Figure))
