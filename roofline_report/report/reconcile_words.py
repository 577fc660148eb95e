"""The words of the reconciliation: a flag's parts and the compiler's rewrites, set as inline
text. The analysis hands over the numbers and op names (see
:mod:`roofline_report.analysis.reconcile_records`); every number is formatted here through
:mod:`roofline_report.report.format`, with its kind, and every op name is set as code.
"""

from __future__ import annotations

from collections.abc import Sequence

from roofline_report.analysis.reconcile_records import (
    CodePart,
    CountPart,
    Flag,
    Part,
    RatioPart,
)
from roofline_report.hlo.kernel_reconciliation import (
    GroupedRewrite,
    MinorRewrites,
    StrengthReduction,
)
from roofline_report.report.blocks import Code, Inline, Text
from roofline_report.report.format import Num, count, ratio, signed_count

__all__ = ["flag_text", "plain", "rewrite_text", "rewrites_text"]


def _count_part(part: CountPart) -> Num:
    kind = part.kind or "analytic"
    if part.signed:
        return signed_count(part.count, kind)
    return count(part.count, kind)


def _part(part: Part) -> Text:
    if isinstance(part, str):
        return (part,)
    if isinstance(part, CountPart):
        return (_count_part(part),)
    if isinstance(part, RatioPart):
        r = ratio(part.ratio, part.kind or "analytic", 3)
        return (Num(f"{r.text}×", r.kind),)
    if isinstance(part, CodePart):
        return (Code(part.code),)
    return rewrites_text(part.rewrites, part.unit)


def flag_text(flag: Flag) -> Text:
    """A reconciliation flag's sentence (its ``parts``) as inline text."""
    return tuple(inline for part in flag.parts for inline in _part(part))


def _amount(value: int, unit: str) -> Num:
    return signed_count(value, "analytic", unit)


def rewrite_text(item: GroupedRewrite, unit: str) -> Text:
    """One rewrite (an item of
    :func:`roofline_report.hlo.kernel_reconciliation.group_rewrites`) in words: what the
    compiler did, then its amount of ``unit`` in brackets."""
    amount = item.amount
    if isinstance(item, StrengthReduction):
        divide, multiply = item.ops
        return ("strength reduction (", Code("x / c"), " became ", Code("x * (1/c)"), "): ",
                Code(divide), " ", signed_count(-item.removed, "analytic", unit), ", ",
                Code(multiply), " ", signed_count(item.added, "analytic", unit))
    if isinstance(item, MinorRewrites):
        number = item.count
        return (count(number, "analytic"), " other op" if number == 1 else " other ops", ", ",
                _amount(amount, unit), " together")
    kind = item.kind
    op = Code(item.op)
    if kind == "converts_inserted":
        return (op, " ops inserted by the compiler (narrow floats computed in a wider type) (",
                _amount(amount, unit), ")")
    if kind == "duplicated":
        return (op, " duplicated into several kernels or added by the compiler (",
                _amount(amount, unit), ")")
    return (op, " simplified away by the compiler (", _amount(amount, unit), ")")


def rewrites_text(items: Sequence[GroupedRewrite], unit: str) -> Text:
    """The rewrites, in the order given (largest first), separated by semicolons."""
    parts: list[Inline] = []
    for i, item in enumerate(items):
        parts += ["; "] if i else []
        parts += rewrite_text(item, unit)
    return tuple(parts)


def plain(parts: Sequence[Inline]) -> str:
    """Inline text as plain words (numbers as shown, without their kind marker): for logs and
    tests."""
    out: list[str] = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        elif hasattr(part, "text"):
            out.append(str(part.text))
    return "".join(out)
