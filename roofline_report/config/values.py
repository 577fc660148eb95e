"""Checks of single values that every part of a config file uses, and the short forms a message
quotes a value in (:func:`show`, :func:`type_name`). Each failed check is an InputError."""

from __future__ import annotations

import numbers
import re
import reprlib
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from roofline_report.errors import InputError

#: The largest dimension, mesh axis size or shape entry a config may give.
MAX_DIM = 2**31 - 1

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
#: ``package.module:attribute``, Python identifiers throughout.
IMPORT_PATH_RE = re.compile(rf"{_IDENT}(?:\.{_IDENT})*:{_IDENT}(?:\.{_IDENT})*", re.ASCII)
#: A dim or mesh axis name: one Python identifier.
DIM_NAME_RE = re.compile(_IDENT, re.ASCII)


def import_path(value: Any, key: str, here: str) -> str:
    """``value`` when it is an import path 'package.module:function'; else an InputError."""
    if not isinstance(value, str) or not IMPORT_PATH_RE.fullmatch(value):
        raise InputError(
            f"{here} '{key}' must be an import path 'package.module:function', got {show(value)}"
        )
    return value


def attribute_name(path: str) -> str:
    """The last name of an import path's attribute: ``f`` for ``pkg.mod:Class.f``."""
    return path.rsplit(":", 1)[1].rsplit(".", 1)[-1]


def positive_int(value: Any, what: str) -> int:
    if not is_int(value) or not 0 < value <= MAX_DIM:
        raise InputError(f"{what}: {show(value)} is not a positive integer (at most {MAX_DIM})")
    return int(value)


def is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def present(table: Mapping[Any, Any]) -> dict[Any, Any]:
    """The table without its None values (TOML has no null: None counts as an absent key)."""
    return {k: v for k, v in table.items() if v is not None}


def check_keys(table: Mapping[Any, Any], allowed: Sequence[str], where: str) -> None:
    for key in table:
        if key not in allowed:
            raise InputError(
                f"{where} unknown key {show(str(key))}; allowed: {', '.join(allowed)}"
            )


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a workload, as the end of a sentence ("must be ..."), or None
    when it can. Any length and any alphabet name a workload (the report derives bounded file
    names and anchors from it); a name must be a string with some visible text, on one line
    (no control characters such as a newline or a NUL), and written as UTF-8 (no lone
    surrogate), since it is printed in the report's text."""
    if not isinstance(name, str) or not name.strip():
        return f"must be a non-empty string, got {show(name)}"
    control = next((ch for ch in name if unicodedata.category(ch) == "Cc"), None)
    if control is not None:
        return (f"must be one line of text without control characters, got {show(name)} "
                f"(it holds U+{ord(control):04X})")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"must be valid Unicode text, got {show(name)} (a lone surrogate "
                f"U+{ord(name[exc.start]):04X})")
    return None


_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = 60
_REPR.maxother = 60
_REPR.maxlist = 6
_REPR.maxdict = 6


def show(value: Any) -> str:
    """A short repr for messages: bounded in length and nesting, whatever the user wrote."""
    return _REPR.repr(value)


def type_name(value: Any) -> str:
    """What ``value`` is, in the file's words: "a string", "a table", "nothing"..."""
    return {
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "a boolean",
        list: "a list",
        dict: "a table",
        type(None): "nothing",
    }.get(type(value), type(value).__name__)
