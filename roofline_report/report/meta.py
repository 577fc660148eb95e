"""What a published page says about itself: its title, stable anchors, and the footer's date
and machine, all taken from results.json (the clock is never read while rendering).

Anchors that people link to must not move between runs: a workload's anchor is derived from its
name alone (:func:`workload_anchor`), never from its position in a run.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from roofline_report.results import schema

DEFAULT_TITLE = "Reasoning with HLO and the roofline model"
DEFAULT_HTML_TITLE = "Roofline report: reasoning with HLO and the roofline model"
DEFAULT_COMPARE_TITLE = "Roofline comparison of {runs} runs"

_PLAIN = re.compile(r"[A-Za-z0-9_-]+")
_LOSSY = re.compile(r"[^a-z0-9]+")
# Letters and digits of any script stay in an anchor; '_' (part of \w) is made '-' as in
# name_slug, so ASCII names slug alike.
_LOSSY_WORDS = re.compile(r"(?:[^\w]|_)+")
#: The longest slug a name gives: anchors and figure file names stay short whatever the name's
#: length (a file name of 255 bytes is the common limit).
SLUG_CHARS = 40


def name_slug(name: str) -> str:
    """The part of an anchor or a file name derived from a workload's name, the same in every
    run: the name itself when it is at most :data:`SLUG_CHARS` letters, digits, '_' and '-'
    (``matmul_bf16``); any other name is lowered to such a slug, cut to :data:`SLUG_CHARS`
    characters, and suffixed with six hex digits of the name's SHA-1, so two names never share
    one (``"scaled matmul"`` -> ``scaled-matmul-`` + 6 hex digits; a name of no ASCII letter
    or digit, such as ``"行列積"``, is the six digits alone). At most 47 characters of
    ``[A-Za-z0-9_-]``.
    """
    if len(name) <= SLUG_CHARS and _PLAIN.fullmatch(name):
        return name
    slug = _LOSSY.sub("-", name.lower()).strip("-")[:SLUG_CHARS].rstrip("-")
    digest = hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:6]
    return f"{slug}-{digest}" if slug else digest


def anchor_slug(name: str) -> str:
    """:func:`name_slug`'s rule for an anchor, which keeps letters and digits of every script
    (an HTML id may hold any character but whitespace; only file names need ASCII): a plain name
    is itself, any other is lowered, its runs of other characters made '-', cut to
    :data:`SLUG_CHARS` and suffixed with the same six hex digits (``"注意力 block"`` ->
    ``注意力-block-`` + 6 hex digits, ``"café"`` -> ``café-`` + 6 hex digits). ASCII names give
    the same slug as :func:`name_slug`, so their anchors do not move."""
    if len(name) <= SLUG_CHARS and _PLAIN.fullmatch(name):
        return name
    lowered = unicodedata.normalize("NFC", name).lower()
    slug = _LOSSY_WORDS.sub("-", lowered).strip("-")[:SLUG_CHARS].rstrip("-")
    digest = hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:6]
    return f"{slug}-{digest}" if slug else digest


def workload_anchor(name: str) -> str:
    """The anchor of the workload called ``name``, the same in every run and every report:
    ``w-`` and the name's :func:`anchor_slug` (``w-matmul_bf16``, ``w-scaled-matmul-1f0c2a``,
    ``w-注意力-block-`` + 6 hex digits)."""
    return f"w-{anchor_slug(name)}"


def figure_name(prefix: str, name: str) -> str:
    """The name of a figure about the workload called ``name`` (its file is
    ``figures/<figure name>.svg``, its ids start with it): ``prefix``, '_' and the name's
    :func:`name_slug`, bounded whatever the name."""
    return f"{prefix}_{name_slug(name)}"


def check_title(title: str | None) -> str | None:
    """A page title from the command line: one line of text, or None for the default."""
    from roofline_report.errors import InputError

    if title is None:
        return None
    cleaned = " ".join(title.split())
    if not cleaned:
        raise InputError("--title: give some text (or leave the option out for the default)")
    if len(cleaned) > 200:
        raise InputError(f"--title: at most 200 characters, got {len(cleaned)}")
    return cleaned


def machine(env: schema.Environment) -> str:
    """One line naming the machine a run measured: backend, device (the CPU model where the
    device is just 'cpu'), device count and jax version."""
    device = env.device_kind
    cpu = env.cpu_model or ""
    if cpu and device.lower() in ("", "cpu"):
        device = cpu
    count = env.device_count
    many = f" ×{count}" if count > 1 else ""
    jax = f", jax {env.jax}" if env.jax else ""
    return f"{env.backend}: {device or 'unknown device'}{many}{jax}"


def measured_date(results: schema.Results) -> str:
    """The recorded measurement time (UTC, ISO 8601), or '' where it was not recorded."""
    return results.generator.measured_at or ""


TEACHING_LEDE = ("A JAX computation lowered, checked, accounted three ways and timed on this "
                 "machine.")
PROGRAMS_LEDE = ("Where the time of {names} goes on {machine}: each program and each of its "
                 "kernels timed, counted, predicted from the roofs and placed on the roofline.")
TRACE_LEDE = ("Where the time of {names} went in a profile captured on {machine}: each kernel "
              "timed from the trace, counted from the HLO it holds, predicted from the roofs and "
              "placed on the roofline.")
MAX_NAMED = 3  # programs named in a title; the rest are counted


def programs_title(names: list[str]) -> str:
    """'Roofline of a', 'Roofline of a and b', 'Roofline of a, b, c and 2 more'."""
    shown = names[:MAX_NAMED]
    rest = len(names) - len(shown)
    if rest:
        return f"Roofline of {', '.join(shown)} and {rest} more"
    if len(shown) == 1:
        return f"Roofline of {shown[0]}"
    return f"Roofline of {', '.join(shown[:-1])} and {shown[-1]}"


@dataclass(frozen=True, slots=True)
class PageMeta:
    """The page's title (the heading, and the HTML <title>), the sentence under it and its
    footer's facts."""

    title: str
    html_title: str
    version: str
    measured_at: str
    machine: str
    lede: str = TEACHING_LEDE

    @property
    def provenance(self) -> str:
        """One sentence: when and on what the run was measured."""
        if self.measured_at:
            return f"Measured {self.measured_at} on {self.machine}."
        return f"Measured on {self.machine} (the date of the measurement was not recorded)."

    def for_markdown(self) -> PageMeta:
        """The same facts escaped for Markdown text."""
        from roofline_report.report.markdown import escape

        return replace(self, title=escape(self.title), html_title=escape(self.html_title),
                       version=escape(self.version), measured_at=escape(self.measured_at),
                       machine=escape(self.machine), lede=escape(self.lede))


def page_meta(results: schema.Results, title: str | None = None,
              programs: list[str] | None = None) -> PageMeta:
    """The report page's title, lede and footer facts from a results document. A report about
    the user's ``programs`` (no teaching sections) is titled by them."""
    where = machine(results.environment)
    if programs and not results.options.teaching:
        default = programs_title(programs)
        names = ", ".join(programs[:MAX_NAMED]) + (
            f" and {len(programs) - MAX_NAMED} more" if len(programs) > MAX_NAMED else "")
        lede = (TRACE_LEDE if results.trace is not None else PROGRAMS_LEDE).format(
            names=names, machine=where)
        html_default = f"Roofline report: {default.removeprefix('Roofline of ')}"
    else:
        default, html_default, lede = DEFAULT_TITLE, DEFAULT_HTML_TITLE, TEACHING_LEDE
    return PageMeta(
        title=title or default,
        html_title=title or html_default,
        version=results.generator.version,
        measured_at=measured_date(results),
        machine=where,
        lede=lede,
    )


__all__ = [
    "DEFAULT_TITLE",
    "SLUG_CHARS",
    "PageMeta",
    "anchor_slug",
    "check_title",
    "figure_name",
    "machine",
    "measured_date",
    "name_slug",
    "page_meta",
    "workload_anchor",
]
