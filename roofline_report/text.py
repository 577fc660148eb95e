"""The one home of number formatting: every number the report, the gate and the API's text
show is made here (no jax, no analysis; it sits beside :mod:`roofline_report.units`, below the
analysis and the report, so both may use it).

A number leaves this module as a :class:`Num`: its display text and its kind (a
:class:`~roofline_report.analysis.kinds.Kind` value, or '' for a plain count), so renderers only
place
text and markers and never format. Percentages and counts with a noun have one rule each:
:func:`percent` and :func:`plural`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from roofline_report.kinds import Kind
from roofline_report.units import format_si, scientific

if TYPE_CHECKING:  # the text of a miss needs only its attributes
    from roofline_report.analysis.miss import Miss

KIND_MARKERS: dict[str, str] = {
    Kind.ANALYTIC.value: "A",
    Kind.HYPOTHETICAL.value: "H",
    Kind.SPEC_SHEET.value: "S",
    Kind.COMPILER_ESTIMATE.value: "C",
    Kind.PREDICTED.value: "P",
    Kind.MEASURED.value: "M",
}


@dataclass(frozen=True, slots=True)
class Num:
    """A formatted number and its kind; ``kind`` is a Kind value or '' for plain counts."""

    text: str
    kind: str = ""

    @property
    def kind_label(self) -> str:
        return Kind(self.kind).label if self.kind else ""

    @property
    def marker(self) -> str:
        return KIND_MARKERS.get(self.kind, "")


def n(value: float | None, unit: str, kind: Kind | str) -> Num:
    """``value`` with an SI prefix and ``unit`` ('unknown' for None)."""
    return Num(format_si(value, unit), Kind(kind).value)


def count(value: float | None, kind: Kind | str) -> Num:
    """A count: integers with thousands separators, others to six significant digits."""
    if value is None:
        return Num("unknown", Kind(kind).value)
    if float(value).is_integer():
        return Num(f"{int(value):,}", Kind(kind).value)
    return Num(decimal(float(value), 6), Kind(kind).value)


def signed_count(value: float | None, kind: Kind | str, unit: str = "") -> Num:
    """A change in a count, always with its sign ("+399,669", "-1", "+0"), then ``unit``."""
    if value is None:
        return Num("unknown", Kind(kind).value)
    text = count(value, kind).text
    sign = "" if text.startswith("-") else "+"
    return Num(f"{sign}{text}{' ' + unit if unit else ''}", Kind(kind).value)


def decimal(value: float, digits: int = 4) -> str:
    """A plain number to ``digits`` significant digits, never in exponent notation: from 10⁻³
    to below 10⁶ as a decimal ("0.0156", "2048"), beyond as a power of ten ("2.18×10⁻⁷")."""
    if not math.isfinite(value):
        return "unknown"
    if value == 0:
        return "0"
    size = abs(value)
    if 1e-3 <= size < 1e6:
        text = f"{value:.{digits}g}"
        if "e" not in text:
            return text
    return scientific(value, digits)


def whole(value: float, digits: int = 3) -> str:
    """A plain number to at least ``digits`` significant digits and to every digit of its whole
    part ("12346", "10.2", "0.00123"); never in exponent notation: past 10⁶ and below 10⁻³ a
    power of ten, as :func:`decimal` writes it."""
    if not math.isfinite(value) or value == 0 or not 1 <= abs(value) < 1e6:
        return decimal(value, digits)
    return decimal(value, max(digits, math.floor(math.log10(abs(value))) + 1))


def ratio(value: float | None, kind: Kind | str, digits: int = 4) -> Num:
    """A dimensionless ratio to ``digits`` significant digits ('unknown' for None), never in
    exponent notation (:func:`decimal`)."""
    return Num("unknown" if value is None else decimal(value, digits), Kind(kind).value)


def percent_text(fraction: float | None) -> str:
    """``fraction`` as a percentage, never in exponent notation.

    The rule: at and above 10% a whole number ("220%", "100%", "12%"); below 10% two
    significant digits ("4.6%", "0.5%", "0.012%"), trailing zeros dropped; 0 is "0%".
    None, NaN and infinities are "unknown".
    """
    if fraction is None or not math.isfinite(fraction):
        return "unknown"
    p = 100.0 * fraction
    size = abs(p)
    if size == 0:
        return "0%"
    if round(size) >= 10:
        return f"{p:.0f}%"
    digits = max(0, 1 - math.floor(math.log10(size)))
    text = f"{p:.{digits}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    if round(float(text), digits) >= 10:  # 9.96 rounds up to "10.0": one rule above 10%
        text = f"{p:.0f}"
    return f"{text}%"


def percent(fraction: float | None, kind: Kind | str = "") -> Num:
    """``fraction`` (1.0 is 100%) as a :class:`Num` with :func:`percent_text`'s rule."""
    return Num(percent_text(fraction), Kind(kind).value if kind else "")


def plural(number: object, one: str, many: str) -> str:
    """"1 device", "8 devices", "3,000 calls": the noun agrees with ``number`` (an int, written
    with thousands separators as every other count, or its display text)."""
    if isinstance(number, int) and not isinstance(number, bool):
        return f"{number:,} {one if number == 1 else many}"
    singular = str(number).strip() in ("1", "1.0")
    return f"{number} {one if singular else many}"


__all__ = ["KIND_MARKERS", "Num", "count", "decimal", "miss_text", "n", "ordinal", "percent",
           "percent_text", "plural", "rate", "ratio", "whole"]


def miss_text(m: Miss | None) -> Num:
    """A prediction's miss as a ratio: '2.3× slower', '1.4× faster', 'as predicted' (within
    5%), kind predicted; 'unknown' without one."""
    if m is None:
        return Num("unknown", Kind.PREDICTED.value)
    if m.direction == "as predicted":
        return Num("as predicted", Kind.PREDICTED.value)
    return Num(f"{whole(m.factor, 2)}× {m.direction}", Kind.PREDICTED.value)


def rate(value: tuple[float, str] | None, kind: Kind | str) -> Num:
    """A (rate, unit) pair such as a prediction's roof: '86 GFLOP/s' or '12 GB/s'."""
    if value is None:
        return Num("unknown", Kind(kind).value)
    return n(value[0], value[1], kind)


def ordinal(number: int) -> str:
    """'1st', '2nd', '3rd', '4th', '11th', '21st'."""
    if 10 <= number % 100 <= 20:
        suffix = "th"
    else:
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"
