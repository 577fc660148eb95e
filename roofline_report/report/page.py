"""The page skeleton: a Jinja2 template per page and format (head, inline CSS, the kind
legend) around a document rendered by ``html.py`` or ``markdown.py``.

The templates run with StrictUndefined; HTML templates autoescape, and the rendered document
arrives as markup that has already been escaped. Output is normalised: no trailing spaces, no
runs of blank lines, one final newline.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from roofline_report.report import html, markdown
from roofline_report.report.blocks import Document

TEMPLATE_DIR = Path(__file__).resolve().parent.parent.parent / "templates"


@functools.lru_cache(maxsize=1)
def env() -> jinja2.Environment:
    """The Jinja2 environment of the page templates (source checkout or installed package)."""
    loader: jinja2.BaseLoader
    if (TEMPLATE_DIR / "report.html.j2").is_file():  # a source checkout
        loader = jinja2.FileSystemLoader(str(TEMPLATE_DIR))
    else:  # installed: templates ship as the package roofline_report.templates
        loader = jinja2.FunctionLoader(_packaged_template)
    return jinja2.Environment(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        autoescape=jinja2.select_autoescape(enabled_extensions=("html", "html.j2"),
                                            default_for_string=False),
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _packaged_template(name: str) -> str | None:
    try:
        return (resources.files("roofline_report.templates") / name).read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        return None


def css() -> str:
    """The report's style sheet, inlined into every HTML page."""
    e = env()
    return e.loader.get_source(e, "style.css")[0] if e.loader else ""


def render_html(template: str, doc: Document, **context: Any) -> str:
    """``doc`` checked, rendered to HTML and placed in the page template ``template``, which
    receives ``contents``, ``body``, ``css`` and ``context``."""
    doc.check()
    page = env().get_template(template).render(
        contents=Markup(html.contents(doc)), body=Markup(html.body(doc)), css=Markup(css()),
        **context)
    return normalise(page)


def render_markdown(template: str, doc: Document, **context: Any) -> str:
    """``doc`` checked, rendered to Markdown and placed in the page template ``template``,
    which receives ``contents``, ``body`` and ``context``."""
    doc.check()
    page = env().get_template(template).render(
        contents=markdown.contents(doc), body=markdown.body(doc), **context)
    return normalise(page)


def normalise(text: str) -> str:
    """No trailing spaces, no runs of blank lines, one final newline."""
    out: list[str] = []
    for line in (line.rstrip() for line in text.splitlines()):
        if line == "" and out and out[-1] == "":
            continue
        out.append(line)
    return "\n".join(out).strip() + "\n"
