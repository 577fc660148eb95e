"""A config file's validation error as the one line the user reads: the file, the table (the
workload by its name, or ``#k`` counting from 1), the key path and the problem, in the
project's words (``workloads.toml: workload 'mlp': dims.n: 0 is not a positive integer (at
most 2147483647)``).

The models (:mod:`roofline_report.config.models`) word the problems their validators find
themselves; pydantic's own errors (a value of the wrong type, a number out of range, a key
missing or unknown) are worded here, from the error's location and the value given, and only
here. Of several errors, the one reported is the first in the file's order, except that a
table's unknown key comes before the problems of its values (a typo explains the rest).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from roofline_report import tolerances
from roofline_report.config.models import BACKEND_NAMES, PROBLEM, TABLES, table_keys
from roofline_report.config.spec import DTYPES, SCHEMA_VERSION
from roofline_report.config.values import (
    IMPORT_PATH_RE,
    MAX_DIM,
    attribute_name,
    name_problem,
    show,
    type_name,
)

Loc = tuple[int | str, ...]


def describe(exc: ValidationError, document: Any) -> str:
    """The first problem of ``exc`` (validating ``document``, the file's table as the models
    read it) as one line without the file's name: ``workload 'w1': dims.n: ...``."""
    error = _first(exc.errors(include_url=False))
    loc: Loc = tuple(error["loc"])
    where, kind, rest = _table(loc, document)
    if error["type"] == PROBLEM:
        return f"{where}{error['msg']}"
    return f"{where}{_detail(kind, rest, error)}"


def _first(errors: Sequence[ErrorDetails]) -> ErrorDetails:
    """The first error, or the outermost unknown key of a table that holds it."""
    first = errors[0]
    loc = tuple(first["loc"])
    typos = [e for e in errors
             if e["type"] == "extra_forbidden" and loc[:len(e["loc"]) - 1] == e["loc"][:-1]]
    return min(typos, key=lambda e: len(e["loc"])) if typos else first


def _table(loc: Loc, document: Any) -> tuple[str, str, Loc]:
    """The table ``loc`` lies in, as a message names it (``"workload 'w1': "``), its kind (a
    key of :data:`~roofline_report.config.models.TABLES`) and the rest of the location."""
    if loc[:1] == ("budgets",):
        return "[budgets] ", "budgets", loc[1:]
    if len(loc) >= 2 and loc[0] == "workload" and isinstance(loc[1], int):
        where = f"workload {_label(document, loc[1])}: "
        if len(loc) >= 4 and loc[2] == "args" and isinstance(loc[3], int):
            return f"{where}args[{loc[3]}]: ", "arg", loc[4:]
        return where, "workload", loc[2:]
    return "", "top", loc


def _label(document: Any, index: int) -> str:
    """A workload as messages name it: its name, else its function's (or setup's), else
    ``#k``."""
    tables = document.get("workload") if isinstance(document, Mapping) else None
    table = tables[index] if isinstance(tables, list) and index < len(tables) else None
    if isinstance(table, Mapping):
        name = table.get("name")
        if isinstance(name, str) and name.strip():
            return show(name)
        for key in ("function", "setup"):
            path = table.get(key)
            if isinstance(path, str) and IMPORT_PATH_RE.fullmatch(path):
                return show(attribute_name(path))
    return f"#{index + 1}"


_NOT_A_SIZE = f"is not a positive integer (at most {MAX_DIM})"
_AXES = 'a list with one mesh axis name or "" per dimension'
_AXIS = 'mesh axis names or "" (not sharded)'


def _detail(kind: str, rest: Loc, error: ErrorDetails) -> str:
    """Pydantic's error at ``rest`` in a table of ``kind``, in the project's words."""
    kind_of, given = error["type"], error.get("input")
    if not rest:
        return _not_a_table(kind, given)
    key, sub = rest[0], rest[1:]
    if kind_of == "extra_forbidden" and not sub:
        return (f"unknown key {show(str(key))}; allowed: "
                f"{', '.join(table_keys(TABLES[kind]))}")
    worded = _WORDS.get(kind, _top)(str(key), sub, kind_of, given)
    return worded if worded is not None else f"{_path(rest)}: {error['msg']}"


def _not_a_table(kind: str, given: Any) -> str:
    if kind == "top":
        return f"expected a table at the top level, got {type_name(given)}"
    if kind == "budgets":
        return f"must be a table, got {type_name(given)}"
    if kind == "arg":
        return "expected a table { shape = [...], dtype = ... }"
    return f"expected a table, got {type_name(given)}"


def _top(key: str, _sub: Loc, kind_of: str, given: Any) -> str | None:
    if key == "schema":
        return f"unsupported schema {show(given)}; this version reads schema = {SCHEMA_VERSION}"
    if key == "preset":
        return f"preset must be a string, got {type_name(given)}"
    if key == "workload":
        if kind_of in ("missing", "too_short"):
            return "no workloads: add at least one [[workload]] table"
        if isinstance(given, Mapping):
            return "write [[workload]] (an array of tables), not [workload]"
        return f"'workload' must be an array of tables, got {type_name(given)}"
    return None


def _budgets(key: str, _sub: Loc, _kind_of: str, given: Any) -> str:
    if isinstance(given, bool) or not isinstance(given, numbers.Real):
        return f"{key}: expected a rate string or a number, got {type_name(given)}"
    return f"{key}: {show(given)} must be positive and finite"


def _workload(key: str, sub: Loc, kind_of: str, given: Any) -> str | None:
    empty = kind_of == "too_short"
    if key == "name":
        return f"'name' {name_problem(given) or 'must be a non-empty string'}"
    if key in ("function", "setup", "reference"):
        return f"'{key}' must be an import path 'package.module:function', got {show(given)}"
    if key in ("rtol", "atol"):
        return f"'{key}' {tolerances.problem(given) or 'must be a number'}"
    if key == "args" and not sub:
        return f"'args' must be a list of tables, got {type_name(given)}"
    if key == "dims":
        return _sizes("dims", sub, given, "'dims' must be a table of name = positive integer",
                      "is not a valid name (letters, digits, _)")
    if key == "mesh":
        table = ("'mesh' is empty; give at least one axis, such as { d = 8 }" if empty and not sub
                 else "'mesh' must be a table of axis name = size, such as { d = 8 }")
        return _sizes("mesh", sub, given, table, "is not a valid axis name (letters, digits, _)")
    if key == "sweep":
        if not sub:
            return ("'sweep' is empty; remove it or give values for a dim" if empty
                    else "'sweep' must be a table of name = [values]")
        name = sub[0]
        if sub[1:] == ("[key]",):
            return f"sweep name {show(name)} is not a dim name"
        if len(sub) == 1:
            return f"sweep.{name} must be a non-empty list of positive integers"
        return f"sweep.{name}: {show(given)} {_NOT_A_SIZE}"
    if key == "partition":
        if not sub:
            return f"'partition' must be a list with one list per argument, got {type_name(given)}"
        if len(sub) == 1:
            return f"partition[{sub[0]}]: expected {_AXES}, got {type_name(given)}"
        return f"partition[{sub[0]}]: entries must be {_AXIS}, got {type_name(given)}"
    if key == "out_partition":
        if not sub:
            return f"out_partition: expected {_AXES}, got {type_name(given)}"
        return f"out_partition: entries must be {_AXIS}, got {type_name(given)}"
    if key == "backend_dims":
        if not sub:
            return (f"'backend_dims' must be a table of backend = {{ name = size }} "
                    f"(backends: {', '.join(BACKEND_NAMES)})")
        backend = sub[0]
        if sub[1:] == ("[key]",):
            return (f"backend_dims: {show(backend)} is not a backend (one of "
                    f"{', '.join(BACKEND_NAMES)})")
        return _sizes(f"backend_dims.{backend}", sub[1:], given,
                      f"backend_dims.{backend} must be a table of name = positive integer",
                      "is not a dim name")
    return None


def _sizes(path: str, sub: Loc, given: Any, table: str, bad_name: str) -> str:
    """A table of name = size (dims, a mesh, a backend's dims): the table itself, one of its
    names, or one of its sizes."""
    if not sub:
        return table
    if sub[1:] == ("[key]",):
        return f"{path}: {show(sub[0])} {bad_name}"
    return f"{path}.{sub[0]}: {show(given)} {_NOT_A_SIZE}"


def _arg(key: str, sub: Loc, kind_of: str, given: Any) -> str | None:
    if key == "shape":
        if kind_of == "missing":
            return "missing 'shape'"
        if not sub:
            return "'shape' must be a list of positive integers or dim names"
        return f"shape entry: {show(given)} {_NOT_A_SIZE}"
    if key == "dtype":
        if kind_of == "missing":
            return f"missing 'dtype' (one of {', '.join(DTYPES)})"
        return f"unknown dtype {show(given)}; allowed: {', '.join(DTYPES)}"
    return None


_WORDS = {"budgets": _budgets, "workload": _workload, "arg": _arg}


def _path(loc: Loc) -> str:
    """A location as a key path (``sweep.n[2]``), pydantic's own steps (a union's branch, a
    validator) left out."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif "[" not in part and "-" not in part:
            out += ("." if out else "") + part
    return out or "(top level)"
