"""The HTML renderer: a :class:`~roofline_report.report.blocks.Document` to HTML fragments.

All text is escaped here; the only markup that passes through unescaped is a figure's SVG,
which the figures module produced. Kind markers are ``<abbr class="kind k-KIND">``, the look
that style.css gives its classes.
"""

from __future__ import annotations

from html import escape

from roofline_report.kinds import Kind
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
from roofline_report.report.format import KIND_MARKERS, Num


def marker(kind: str) -> str:
    """The kind marker of ``kind`` (a Kind value)."""
    k = Kind(kind)
    return (f'<abbr class="kind k-{escape(k.value)}" title="{escape(k.label)}">'
            f"{KIND_MARKERS[k.value]}</abbr>")


def inline(part: Inline) -> str:
    """One inline part as HTML."""
    if isinstance(part, str):
        return escape(part, quote=False)
    if isinstance(part, Num):
        value = f'<span class="v">{escape(part.text, quote=False)}</span>'
        return value + (marker(part.kind) if part.kind else "")
    if isinstance(part, Code):
        return f"<code>{escape(part.text, quote=False)}</code>"
    if isinstance(part, Emph):
        return f"<em>{escape(part.text, quote=False)}</em>"
    if isinstance(part, Strong):
        return f"<strong>{escape(part.text, quote=False)}</strong>"
    if isinstance(part, Marker):
        return marker(part.kind)
    if isinstance(part, Link):
        return f'<a href="{escape(part.href)}">{escape(part.text, quote=False)}</a>'
    if isinstance(part, Status):
        return f'<span class="{part.tone}">{escape(part.text, quote=False)}</span>'
    if isinstance(part, Break):
        return "<br>"
    raise TypeError(f"not an inline part: {part!r}")


def inlines(parts: Text) -> str:
    """Inline parts joined as HTML."""
    return "".join(inline(p) for p in parts)


def _cell(c: Cell, tag: str = "td", scope: str = "") -> str:
    classes = " ".join(x for x in ("num" if c.numeric and tag == "td" else "", c.css_class) if x)
    attrs = f' id="{escape(c.id)}"' if c.id else ""
    attrs += f' class="{escape(classes)}"' if classes else ""
    attrs += f' colspan="{c.span}"' if c.span > 1 else ""
    attrs += f' scope="{scope}"' if scope else ""
    return f"<{tag}{attrs}>{inlines(c.parts)}</{tag}>"


def table(t: Table) -> str:
    """A table; a header row of column headers, or row headers when ``row_headers``."""
    out = ["<table>"]
    if t.caption:
        out.append(f"<caption>{escape(t.caption, quote=False)}</caption>")
    if t.header is not None:
        heads = "".join(f'<th scope="col">{escape(h, quote=False)}</th>' for h in t.header)
        out.append(f"<thead><tr>{heads}</tr></thead>")
    out.append("<tbody>")
    for row in t.rows:
        cells = [_cell(c, "th", "row") if t.row_headers and i == 0 else _cell(c)
                 for i, c in enumerate(row)]
        out.append(f"<tr>{''.join(cells)}</tr>")
    out.append("</tbody>\n</table>")
    return "\n".join(out)


def figure(f: Figure) -> str:
    """The inline SVG with its caption, then its numbers folded below it."""
    fig = f.figure
    return (f'<figure id="{escape(f.id)}">\n{fig.svg.strip()}\n'
            f"<figcaption>{escape(fig.title, quote=False)}. "
            f"{escape(fig.description, quote=False)}</figcaption>\n</figure>\n"
            f"<details>\n<summary>Numbers behind “{escape(fig.title, quote=False)}”</summary>\n"
            f"{table(f.table)}\n</details>")


def block(b: Block, depth: int = 2, number: str = "") -> str:
    """One block as HTML; ``depth`` is the heading level of a section met here."""
    if isinstance(b, Paragraph):
        return f"<p>{inlines(b.parts)}</p>"
    if isinstance(b, Note):
        return f'<p class="{b.tone}">{inlines(b.parts)}</p>'
    if isinstance(b, Banner):
        return (f'<p class="banner k-{escape(b.kind)}">{escape(b.label, quote=False)}: '
                f"{escape(b.text, quote=False)}</p>")
    if isinstance(b, Table):
        return table(b)
    if isinstance(b, Figure):
        return figure(b)
    if isinstance(b, CodeBlock):
        return f"<pre><code>{escape(b.text, quote=False)}</code></pre>"
    if isinstance(b, BulletList):
        tag = "ol" if b.ordered else "ul"
        items = "\n".join(f"<li>{inlines(i)}</li>" for i in b.items)
        return f"<{tag}>\n{items}\n</{tag}>"
    if isinstance(b, Details):
        opened = " open" if b.open else ""
        body = "\n".join(block(c, depth) for c in b.children)
        return f"<details{opened}>\n<summary>{inlines(b.summary)}</summary>\n{body}\n</details>"
    if isinstance(b, Aside):
        body = "\n".join(block(c, depth) for c in b.children)
        return f'<div class="{escape(b.css_class)}">\n{body}\n</div>'
    if isinstance(b, Section):
        return section(b, depth, number)
    raise TypeError(f"not a block: {b!r}")


def section(s: Section, depth: int = 2, number: str = "") -> str:
    """A section element with its heading at level ``depth`` (h2 for top level)."""
    attrs = f' id="{escape(s.id)}"' if s.id else ""
    attrs += f' class="kind-{escape(s.kind)}"' if s.kind else ""
    title = (f"{number} " if number else "") + inlines(s.title_parts)
    h = f"h{min(depth, 6)}"
    body = "\n".join(block(c, depth + 1) for c in s.children)
    return f"<section{attrs}>\n<{h}>{title}</{h}>\n{body}\n</section>"


def contents(doc: Document) -> str:
    """The contents list: one list per group (numbered groups as <ol>), and under a section
    the sections nested in it that have an id, as a <ul>."""
    out = ['<nav class="toc" aria-label="Contents">', "<strong>Contents</strong>"]
    for g in doc.groups:
        if g.title:
            out.append(f"<strong>{escape(g.title, quote=False)}</strong>")
        tag = "ol" if g.numbered else "ul"
        out.append(f"<{tag}>")
        out += [f"<li>{_entry(s)}</li>" for s in g.sections]
        out.append(f"</{tag}>")
    out.append("</nav>")
    return "\n".join(out)


def _entry(s: Section) -> str:
    link = f'<a href="#{escape(s.id or "")}">{inlines(s.title_parts)}</a>'
    subs = linked_subsections(s)
    if not subs:
        return link
    return f"{link}<ul>{''.join(f'<li>{_entry(c)}</li>' for c in subs)}</ul>"


def body(doc: Document) -> str:
    """Every top-level section, in order, with its number."""
    return "\n".join(section(s, 2, number) for number, s in doc.sections())
