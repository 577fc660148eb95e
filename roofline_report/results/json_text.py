"""results.json's text (no jax, nothing beyond the standard library): deterministic JSON with
sorted keys, no NaN or infinity, the top levels one key or item a line.

Kept apart from :mod:`roofline_report.results.io` (which validates with pydantic) so that a
helper process that writes a large document's text while the report renders
(:mod:`roofline_report.results.json_aside`) starts without importing more than this.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from itertools import chain
from typing import Any

from roofline_report.results.per_call_columns import compact

# Levels of the document laid out one key or item a line; everything deeper (a kernel's record,
# a call's samples) is written on one line by json's C encoder, which the standard library uses
# only without ``indent``: a profile's per-call samples wrote three times slower indented.
INDENTED_LEVELS = 4


def dumps(results: Mapping[str, Any]) -> str:
    """Deterministic JSON text: sorted keys, no NaN/inf (they become null), one final newline;
    the top :data:`INDENTED_LEVELS` levels one key or item a line, deeper values on one line;
    a profile's per-call samples in their compact forms (:mod:`.per_call_columns`). Files
    written with another layout (``indent=1`` throughout, before) or with the per-call
    samples in full load the same."""
    return _layout(_finite(compact(results)), 0) + "\n"


_compact = json.JSONEncoder(sort_keys=True, ensure_ascii=False, allow_nan=False,
                            separators=(",", ":")).encode


def _layout(value: Any, depth: int) -> str:
    if depth >= INDENTED_LEVELS or not isinstance(value, dict | list) or not value:
        return _compact(value)
    inner = "\n" + " " * (depth + 1)
    if isinstance(value, dict):
        parts = [f"{_compact(k)}: {_layout(v, depth + 1)}"
                 for k, v in sorted(value.items(), key=lambda kv: kv[0])]
        opening, closing = "{", "}"
    else:
        parts = [_layout(v, depth + 1) for v in value]
        opening, closing = "[", "]"
    return opening + inner + ("," + inner).join(parts) + "\n" + " " * depth + closing


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        if type(value) is dict and _plain_dict(value):  # nothing to change: a copy in C
            return dict(value)
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if _plain_numbers(value) or _plain_records(value):
            # nothing to change: a profile's samples or its calls' records, checked in C
            return value if isinstance(value, list) else list(value)
        return [_finite(v) for v in value]
    return value


_NUMBERS = frozenset((int, float))
_STR = frozenset((str,))
_DICT = frozenset((dict,))


def _plain_dict(value: dict[Any, Any]) -> bool:
    """Whether ``value`` has only str keys and int or finite float values (a call's times),
    which :func:`_finite` would copy unchanged."""
    return (bool(value) and set(map(type, value)) <= _STR
            and _plain_numbers(list(value.values())))


def _plain_records(values: list[Any] | tuple[Any, ...]) -> bool:
    """Whether ``values`` are all dicts of str keys and int or finite float values (a
    profile's per-call records, 150,000 of them in a long trace), told in C over all of them
    at once rather than one :func:`_plain_dict` each."""
    if not values or set(map(type, values)) != _DICT:
        return False
    if not set(map(type, set(chain.from_iterable(values)))) <= _STR:
        return False
    return _plain_numbers(list(chain.from_iterable(map(dict.values, values))))


def _plain_numbers(values: list[Any] | tuple[Any, ...]) -> bool:
    """Whether ``values`` are all ints and finite floats (bools and subclasses excepted), told
    without a Python step per value: a sum of finite numbers is finite unless it overflows
    (then the values are walked one by one, as any others)."""
    if not values or not set(map(type, values)) <= _NUMBERS:
        return False
    try:
        return math.isfinite(sum(values))
    except OverflowError:  # ints too large for a float: walked one by one
        return False
