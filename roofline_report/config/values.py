"""What the config's models and messages share: the limits and patterns of its values, the check
of a workload's name (the Python API's too), and the short forms a message quotes a value in
(:func:`show`, :func:`type_name`)."""

from __future__ import annotations

import re
import reprlib
import unicodedata
from typing import Any

#: The largest dimension, mesh axis size or shape entry a config may give.
MAX_DIM = 2**31 - 1

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
#: ``package.module:attribute``, Python identifiers throughout.
IMPORT_PATH_RE = re.compile(rf"{_IDENT}(?:\.{_IDENT})*:{_IDENT}(?:\.{_IDENT})*", re.ASCII)
#: A dim or mesh axis name: one Python identifier.
DIM_NAME_RE = re.compile(_IDENT, re.ASCII)


def attribute_name(path: str) -> str:
    """The last name of an import path's attribute: ``f`` for ``pkg.mod:Class.f``."""
    return path.rsplit(":", 1)[1].rsplit(".", 1)[-1]


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
