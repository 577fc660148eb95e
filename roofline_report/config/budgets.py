"""The ``[budgets]`` table: hypothetical peak and bandwidth, as rate strings or numbers."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

from roofline_report.config.spec import Budgets
from roofline_report.config.values import check_keys, present, show, type_name
from roofline_report.errors import InputError
from roofline_report.units import RateKind, parse_rate

_BUDGET_KEYS = ("peak", "bandwidth")


def read_budgets(value: Any, where: str) -> Budgets:
    """The file's ``[budgets]`` (None: not given). ``where`` starts each message."""
    if value is None:
        return Budgets()
    if not isinstance(value, Mapping):
        raise InputError(f"{where} [budgets] must be a table, got {type_name(value)}")
    value = present(value)
    check_keys(value, _BUDGET_KEYS, f"{where} [budgets]")
    return Budgets(
        peak=_rate(value.get("peak"), "flops", f"{where} [budgets] peak"),
        bandwidth=_rate(value.get("bandwidth"), "bytes", f"{where} [budgets] bandwidth"),
    )


def _rate(value: Any, kind: RateKind, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, str):
        return parse_rate(value, kind, what=what)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"{what}: expected a rate string or a number, got {type_name(value)}")
    number = _float(value)
    if not math.isfinite(number) or number <= 0:
        raise InputError(f"{what}: {show(value)} must be positive and finite")
    return number


def _float(value: numbers.Real) -> float:
    """float(value), with integers too large for a float giving inf (rejected by the caller)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf
