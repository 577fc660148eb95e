"""A matplotlib figure as SVG text to inline in the report (no jax): byte-deterministic (a
fixed ``svg.hashsalt`` per figure, text kept as text, no date or creator), every id prefixed
with the figure's name, a <title> and <desc>, and a <title> on each hover target."""

from __future__ import annotations

import html
import io
import re
import warnings
from collections.abc import Callable, Sequence

import matplotlib
from matplotlib.figure import Figure

from roofline_report.report import svg_sharing

__all__ = ["inlinable", "titled", "to_svg"]


def to_svg(draw: Callable[[], Figure], name: str, title: str, description: str) -> str:
    """The figure ``draw()`` builds, as SVG text, built and written here or by the copy of
    this process that shares the writing (:mod:`.svg_sharing`): the same text either way, and
    the figure is built only by the process that writes it."""
    return svg_sharing.written(name, lambda: _svg_text(draw(), name, title, description))


def _svg_text(fig: Figure, name: str, title: str, description: str) -> str:
    buf = io.StringIO()
    # Text is kept as text (svg.fonttype none) and drawn by the reader's fonts: a name in a
    # script matplotlib's own font lacks (CJK, emoji) is nothing to warn about.
    with matplotlib.rc_context({"svg.hashsalt": f"roofline-report-{name}",
                                "svg.fonttype": "none"}), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from font")
        # Fixed margins instead of bbox_inches="tight", which draws every figure twice.
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return inlinable(buf.getvalue(), name, title, description)


def inlinable(text: str, name: str, title: str, description: str) -> str:
    """Make matplotlib's SVG fit to inline in HTML: no XML prolog, DOCTYPE or RDF metadata,
    every id prefixed with the figure's name (matplotlib reuses ids such as ``axes_1`` in every
    figure) with the references to them, no fixed size, and a <title> and <desc>."""
    text = text[text.index("<svg"):]
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, flags=re.S)
    text = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{name}-{m.group(1)}"', text)
    text = re.sub(r'(href="#|url\(#)([^")]+)', lambda m: f"{m.group(1)}{name}-{m.group(2)}",
                  text)
    head_end = text.index(">") + 1
    head = text[:head_end]
    head = re.sub(r'\swidth="([\d.]+)pt"\s+height="([\d.]+)pt"', "", head, count=1)
    head = head.replace(
        "<svg", f'<svg role="img" aria-labelledby="{name}-title {name}-desc"', 1
    )
    extra = (f'<title id="{name}-title">{_text(title)}</title>'
             f'<desc id="{name}-desc">{_text(description)}</desc>')
    lines = [line.rstrip() for line in (head + extra + text[head_end:]).splitlines()]
    return "\n".join(lines).strip() + "\n"


def titled(svg: str, name: str, tips: Sequence[tuple[str, str]]) -> str:
    """Each hover target's group gets a <title>: browsers show it when pointing at it."""
    for gid, tip in tips:
        marker = f'<g id="{name}-{gid}">'
        svg = svg.replace(marker, f"{marker}<title>{_text(tip)}</title>", 1)
    return svg


def _text(value: str) -> str:
    """Text as SVG character data: &, < and > escaped, quotes kept (html.escape without them
    is the standard library's XML escape, without importing the XML package's URL and HTTP
    modules with it)."""
    return html.escape(value, quote=False)
