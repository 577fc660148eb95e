"""Reading and writing rates with SI units: "100 GFLOP/s", "4.8 TB/s", "1.23 ms".

Parsing (:func:`parse_rate`) takes what a person types on the command line or in a config file:

* a bare number, in base units: ``"1.2e14"`` (FLOP/s or B/s, whichever is expected);
* a number, an optional space, an optional prefix and a unit: ``"989 TFLOP/s"``, ``"20GB/s"``.

Compute units: ``FLOP/s``, ``FLOPS``, ``FLOPs`` (all "per second"), and ``OP/s``/``OPS`` for
integer peaks. Bandwidth units: ``B/s`` and ``Bps``. Units and prefixes are matched without
regard to case, with two exceptions that catch real mistakes: a lowercase ``b`` (``Gb/s``) is bits,
which is refused with a hint to divide by 8, and there is no milli prefix, so ``m`` and ``M`` both
mean mega (1e6). Decimal prefixes: k 1e3, M 1e6, G 1e9, T 1e12, P 1e15, E 1e18. Binary prefixes,
for bytes only: Ki 2**10, Mi 2**20, Gi 2**30, Ti 2**40, Pi 2**50, Ei 2**60.

Every parse failure is an :class:`~roofline_report.errors.InputError` with a one-line message.

Formatting (:func:`format_si`, :func:`format_intensity`) produces the display strings the report
shows: three significant digits by default, trailing zeros dropped, SI prefixes (n, µ, m for
seconds; k through E for everything else), ``"unknown"`` for a missing value.
"""

from __future__ import annotations

import decimal
import math
import re
from typing import Literal

from roofline_report.errors import InputError

RateKind = Literal["flops", "bytes"]

_DECIMAL = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15, "e": 1e18}
_BINARY = {"ki": 2.0**10, "mi": 2.0**20, "gi": 2.0**30, "ti": 2.0**40, "pi": 2.0**50, "ei": 2.0**60}

_FLOP_UNITS = frozenset({"flop/s", "flops", "op/s", "ops"})
_BYTE_UNITS = frozenset({"b/s", "bps"})

_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_PREFIX = r"(?:[kKmMgGtTpPeE][iI]?)?"
_UNIT = r"[A-Za-z]+(?:/[A-Za-z]+)?"
_RATE_RE = re.compile(rf"\s*({_NUMBER})\s*(?:({_PREFIX})({_UNIT}))?\s*", re.ASCII)

_EXAMPLES: dict[str, str] = {
    "flops": "'100 GFLOP/s' or '1.2e14'",
    "bytes": "'20 GB/s' or '4.8 TB/s'",
}
_NOUNS: dict[str, str] = {
    "flops": "a compute rate (FLOP/s)",
    "bytes": "a bandwidth (bytes per second)",
}


def parse_rate(text: str, kind: RateKind, *, what: str = "") -> float:
    """Parse a positive, finite rate in FLOP/s (``kind="flops"``) or bytes/s (``kind="bytes"``).

    ``what`` names the input in error messages (for example ``"--peak"``). Raises InputError,
    and nothing else, for anything that is not such a rate, including a rate of the other kind.
    """
    if kind not in _NOUNS:
        raise ValueError(f"kind must be 'flops' or 'bytes', got {kind!r}")
    label = f"{what}: " if what else ""
    expected = f"expected {_NOUNS[kind]} such as {_EXAMPLES[kind]}"
    if not isinstance(text, str):
        raise InputError(f"{label}{text!r} is not a string; {expected}")
    shown = _shorten(text)
    # A power of ten as the report writes one ("6.71×10⁷ FLOP/s") reads as 6.71e7.
    text = _POWER_RE.sub(lambda m: f"{m.group(1)}e{m.group(2).translate(_FROM_SUPERSCRIPT)}",
                         text)
    match = _RATE_RE.fullmatch(text)
    if match is None:
        raise InputError(f"{label}cannot read {shown} as a rate; {expected}")
    number, prefix, unit = match.group(1), match.group(2) or "", match.group(3)
    value = float(number)
    scale = 1.0
    if unit is not None:
        scale = _unit_scale(prefix, unit, kind, label=label, shown=shown, expected=expected)
    result = value * scale
    if not math.isfinite(result) or result <= 0:
        raise InputError(f"{label}{shown} must be positive and finite; {expected}")
    return result


def is_bare_number(text: str) -> bool:
    """Whether ``text`` is a number without a unit ("100", "1.2e14"), which :func:`parse_rate`
    reads in base units (FLOP/s or B/s); False for anything else, a rate with a unit included."""
    match = _RATE_RE.fullmatch(text) if isinstance(text, str) else None
    return match is not None and match.group(3) is None


def _unit_scale(
    prefix: str, unit: str, kind: RateKind, *, label: str, shown: str, expected: str
) -> float:
    unit_key = unit.lower()
    if unit_key in _BYTE_UNITS and unit[0] == "b":
        raise InputError(f"{label}{shown} is in bits (lowercase b); write bytes (B/s): divide by 8")
    if unit_key in _FLOP_UNITS:
        family: RateKind = "flops"
    elif unit_key in _BYTE_UNITS:
        family = "bytes"
    else:
        raise InputError(f"{label}unknown unit {unit!r} in {shown}; {expected}")
    if family != kind:
        raise InputError(f"{label}{shown} is {_NOUNS[family]}; {expected}")
    prefix_key = prefix.lower()
    if prefix_key in _DECIMAL:
        return _DECIMAL[prefix_key]
    if kind == "bytes":
        return _BINARY[prefix_key]
    raise InputError(
        f"{label}binary prefix {prefix!r} in {shown} applies to bytes only; {expected}"
    )


def _shorten(text: str, limit: int = 40) -> str:
    shown = text if len(text) <= limit else text[: limit - 3] + "..."
    return repr(shown)


_BIG_PREFIXES = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_SMALL_PREFIXES = ((1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"), (1e-12, "p"))
_SCIENTIFIC_ABOVE = 1e6


def format_si(value: float | None, unit: str, digits: int = 3) -> str:
    """Display string with an SI prefix: ``format_si(3.35e12, "B/s") == "3.35 TB/s"``.

    ``digits`` significant digits, trailing zeros dropped. Seconds (``unit == "s"``) get the
    prefixes m, µ, n, p and no prefix above one second; every other unit gets k, M, G, T, P, E and
    no prefix below one. Values beyond the prefixes (below 1 ps, or a million times the largest
    prefix) use scientific notation (``"1e-15 s"``). None and non-finite values give
    ``"unknown"``; zero gives ``"0 <unit>"``.
    """
    if digits < 1:
        raise ValueError(f"digits must be at least 1, got {digits}")
    if value is None or not math.isfinite(value):
        return "unknown"
    if value == 0:
        return _join("0", unit)
    magnitude = abs(value)
    sign = "-" if value < 0 else ""
    ladder = _SMALL_PREFIXES if unit == "s" else (*_BIG_PREFIXES, (1.0, ""))
    for scale, prefix in ladder:
        if magnitude >= scale * (1 - 0.5 * 10.0 ** (-digits)):
            mantissa = _round_significant(magnitude / scale, digits)
            if mantissa < _SCIENTIFIC_ABOVE:
                return _join(sign + _plain(mantissa, digits), prefix + unit)
            break
    # Beyond the prefixes at either end: a plain decimal down to 0.001, else a power of ten
    # (parse_rate reads both back).
    if 1e-3 <= magnitude < 1:
        return _join(sign + _plain(_round_significant(magnitude, digits), digits), unit)
    return _join(sign + scientific(magnitude, digits), unit)


_BINARY_PREFIXES = ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))


def format_binary(value: float | None, digits: int = 3) -> str:
    """A size in bytes with a binary prefix, as caches and arrays are sized:
    ``format_binary(32768) == "32 KiB"``, ``format_binary(1536) == "1.5 KiB"``; below 1 KiB in
    bytes; None and non-finite values give ``"unknown"``."""
    if value is None or not math.isfinite(value):
        return "unknown"
    magnitude = abs(value)
    for scale, prefix in _BINARY_PREFIXES:
        if magnitude >= scale:
            return _join(("-" if value < 0 else "")
                         + _plain(_round_significant(magnitude / scale, digits), digits), prefix)
    return _join(f"{value:g}", "B")


def format_intensity(value: float | None, digits: int = 3) -> str:
    """Arithmetic intensity for display: ``"5 FLOP/B"``, ``"3.43 FLOP/B"``, ``"2731 FLOP/B"``.

    Values of 10**(digits-1) and more are rounded to whole numbers; smaller ones keep ``digits``
    significant digits. None and non-finite values give ``"unknown"``.
    """
    if value is None or not math.isfinite(value):
        return "unknown"
    if abs(value) >= 1e6 or (value and abs(value) < 10.0 ** -(digits + 1)):
        return f"{scientific(value, digits)} FLOP/B"
    if abs(value) >= 10 ** (digits - 1):
        return f"{round(value):d} FLOP/B"
    if value == 0:
        return "0 FLOP/B"
    return f"{_plain(_round_significant(value, digits), digits)} FLOP/B"


def _round_significant(value: float, digits: int) -> float:
    return float(f"{value:.{digits}g}")


def _plain(value: float, digits: int) -> str:
    """Positional notation with trailing zeros dropped (an exponent only for tiny values)."""
    if abs(value) >= 10**digits:
        return f"{value:.0f}"
    if abs(value) < 10.0 ** -(digits + 1):
        return f"{value:.{digits}g}"
    return format(decimal.Decimal(f"{value:.{digits}g}"), "f")


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
_FROM_SUPERSCRIPT = str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")
_POWER_RE = re.compile(r"([0-9.]+)\s*[×x]\s*10([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)")


def scientific(value: float, digits: int = 3) -> str:
    """A number as a power of ten, for values no prefix reaches: ``"6.71×10⁷"``,
    ``"2.18×10⁻⁷"`` (``digits`` significant digits, trailing zeros dropped)."""
    mantissa, exponent = f"{value:.{max(1, digits - 1)}e}".split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}×10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def _join(number: str, unit: str) -> str:
    return f"{number} {unit}" if unit else number
