"""The Markdown renderer: a :class:`~roofline_report.report.blocks.Document` to Markdown that
reads the same in GitHub (cmark-gfm) and MkDocs (Python-Markdown with ``tables``,
``md_in_html``, ``attr_list`` and ``fenced_code``).

Contracts: blocks are always separated by one blank line (so a table never follows a paragraph
directly); every piece of text is escaped with :func:`escape`; anchors are explicit
``<a id="..."></a>`` in headings, so contents links do not depend on either processor's
heading slugs; folded content is ``<details markdown="1">``, which Python-Markdown's
``md_in_html`` parses as Markdown and GFM passes through. Kind markers are `` `M` ``.
"""

from __future__ import annotations

import re

from roofline_report.report import html
from roofline_report.report.blocks import (
    Aside,
    Banner,
    Block,
    Break,
    BulletList,
    Cell,
    Code,
    CodeBlock,
    Details,
    Document,
    Emph,
    Figure,
    Inline,
    Link,
    Marker,
    Note,
    Paragraph,
    Section,
    Status,
    Strong,
    Table,
    Text,
    linked_subsections,
)
from roofline_report.report.format import Num

_BACKSLASHED = set("\\`*_{}[]#|")
_ENTITIES = {"<": "&lt;", "&": "&amp;", "~": "&#126;"}
# What makes a line start a block: a list item, a heading underline, a rule, a quote.
_BLOCK_START = re.compile(r"^(\d+)([.)])(\s|$)|^([-+=>])")


def escape(value: object) -> str:
    """Text safe anywhere inline, table cells included: Markdown punctuation is backslashed,
    HTML's and GFM strikethrough's characters become entities, newlines become spaces. ('>'
    only quotes at the start of a line, which the block renderer guards.)"""
    out = []
    for ch in str(value):
        if ch in _BACKSLASHED:
            out.append("\\" + ch)
        else:
            out.append(_ENTITIES.get(ch, ch))
    return "".join(out).replace("\r", "").replace("\n", " ")


def _guard_start(line: str) -> str:
    """Escape what would make ``line`` start a list, a heading underline or a rule."""
    m = _BLOCK_START.match(line)
    if m is None:
        return line
    if m.group(1) is not None:
        return f"{m.group(1)}\\{line[len(m.group(1)):]}"
    return "\\" + line


def code_span(text: str, *, in_table: bool = False) -> str:
    """``text`` as a code span, fenced with more backticks than it contains."""
    text = text.replace("\n", " ")
    longest = max((len(r) for r in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith(("`", " ")) or text.endswith(("`", " ")) else ""
    if in_table:
        text = text.replace("|", "\\|")
    return f"{fence}{pad}{text}{pad}{fence}"


def _href(href: str) -> str:
    return href.replace(" ", "%20").replace("(", "%28").replace(")", "%29")


def inline(part: Inline, *, in_table: bool = False) -> str:
    """One inline part as Markdown."""
    if isinstance(part, str):
        return escape(part)
    if isinstance(part, Num):
        return escape(part.text) + (f" `{part.marker}`" if part.kind else "")
    if isinstance(part, Code):
        return code_span(part.text, in_table=in_table)
    if isinstance(part, Emph):
        return f"*{escape(part.text.strip())}*"
    if isinstance(part, Strong):
        return f"**{escape(part.text.strip())}**"
    if isinstance(part, Marker):
        return f"`{Num('', part.kind).marker}`"
    if isinstance(part, Link):
        return f"[{escape(part.text)}]({_href(part.href)})"
    if isinstance(part, Status):
        return f"**{escape(part.text)}**" if part.tone == "bad" else escape(part.text)
    if isinstance(part, Break):
        return "<br>"
    raise TypeError(f"not an inline part: {part!r}")


def inlines(parts: Text, *, in_table: bool = False) -> str:
    """Inline parts joined as Markdown."""
    return "".join(inline(p, in_table=in_table) for p in parts)


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _cells(row: tuple[Cell, ...]) -> list[str]:
    out: list[str] = []
    for c in row:
        anchor = f'<a id="{c.id}"></a>' if c.id else ""
        out.append(anchor + inlines(c.parts, in_table=True))
        out += [""] * (c.span - 1)
    return out


def table(t: Table) -> str:
    """A GFM table (a caption, if any, as an emphasised line before it)."""
    header = [escape(h) for h in t.header] if t.header is not None else [""] * t.columns
    lines = [_row(header), _row(["---"] * len(header))]
    lines += [_row(_cells(r)) for r in t.rows]
    body = "\n".join(lines)
    return f"*{escape(t.caption)}*\n\n{body}" if t.caption else body


def figure(f: Figure) -> str:
    """The SVG file as an image, its caption, then its numbers folded."""
    fig = f.figure
    image = f"![{escape(fig.title)}: {escape(fig.description)}](figures/{_href(fig.name)}.svg)"
    caption = f"*{escape(fig.title)}.* {escape(fig.description)}"
    numbers = Details((f"Numbers behind “{fig.title}”",), (f.table,))
    return "\n\n".join([image, caption, block(numbers)])


def code_block(b: CodeBlock) -> str:
    """A fenced code block, fenced with more backticks than the text contains."""
    longest = max((len(r) for r in re.findall(r"`+", b.text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{b.language}\n{b.text.rstrip()}\n{fence}"


def block(b: Block, depth: int = 2, number: str = "") -> str:
    """One block as Markdown, without surrounding blank lines; ``depth`` is the heading level
    of a section met here."""
    if isinstance(b, Paragraph):
        return _guard_start(inlines(b.parts))
    if isinstance(b, Note):
        return "> " + inlines(b.parts)
    if isinstance(b, Banner):
        return f"> **{escape(b.label)}**: {escape(b.text)}."
    if isinstance(b, Table):
        return table(b)
    if isinstance(b, Figure):
        return figure(b)
    if isinstance(b, CodeBlock):
        return code_block(b)
    if isinstance(b, BulletList):
        return "\n".join(f"{f'{i}.' if b.ordered else '-'} {_guard_start(inlines(item))}"
                         for i, item in enumerate(b.items, start=1))
    if isinstance(b, Details):
        opened = " open" if b.open else ""
        parts = [f'<details{opened} markdown="1">\n<summary>{html.inlines(b.summary)}</summary>']
        parts += [block(c, depth) for c in b.children]
        parts.append("</details>")
        return "\n\n".join(parts)
    if isinstance(b, Aside):
        return "\n\n".join(block(c, depth) for c in b.children)
    if isinstance(b, Section):
        return section(b, depth, number)
    raise TypeError(f"not a block: {b!r}")


def section(s: Section, depth: int = 2, number: str = "") -> str:
    """A heading at level ``depth`` (an explicit anchor when the section has an id), then the
    section's blocks."""
    anchor = f'<a id="{s.id}"></a>' if s.id else ""
    title = (f"{number} " if number else "") + inlines(s.title_parts)
    parts = [f"{'#' * min(depth, 6)} {anchor}{title}"]
    parts += [block(c, depth + 1) for c in s.children]
    return "\n\n".join(parts)


def contents(doc: Document) -> str:
    """The contents: a heading, then one list per group (numbered groups as an ordered list),
    the sections nested in a section that have an id indented under it."""
    parts = ["## Contents"]
    for g in doc.groups:
        if g.title:
            parts.append(f"**{escape(g.title)}**")
        lines = []
        for i, s in enumerate(g.sections, start=1):
            lines += _entry(s, f"{i}." if g.numbered else "-", "")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _entry(s: Section, bullet: str, indent: str) -> list[str]:
    lines = [f"{indent}{bullet} [{inlines(s.title_parts)}](#{s.id})"]
    for c in linked_subsections(s):
        lines += _entry(c, "-", indent + "    ")
    return lines


def body(doc: Document) -> str:
    """Every top-level section, in order, with its number."""
    return "\n\n".join(section(s, 2, number) for number, s in doc.sections())
