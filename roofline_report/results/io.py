"""results.json: the one file between measuring and rendering (no jax).

Written with sorted keys and a schema version; loaded with validation, so a hand-edited, truncated
or foreign file gives one clear line (InputError) instead of a traceback deep in the renderer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pydantic

from roofline_report.errors import InputError
from roofline_report.results import convert, per_call_columns, schema
from roofline_report.results.json_text import INDENTED_LEVELS, dumps

SCHEMA_VERSION = schema.SCHEMA_VERSION
__all__ = ["INDENTED_LEVELS", "SCHEMA_VERSION", "document", "dumps", "load", "load_both",
           "loads", "parse", "plain", "read", "typed", "validate"]


class _NotFinite(ValueError):
    """A NaN or infinite number in the JSON text (dumps never writes one)."""


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(text)
    return value


def _no_constant(name: str) -> Any:
    raise _NotFinite(name)


def loads(text: str, *, source: str = "results.json") -> dict[str, Any]:
    """Parse and validate a results document, returned as the plain version-3 document (a
    version-2 one converted); InputError names the file and the problem.

    Raises InputError, and nothing else, for any ``text``: not JSON, NaN or infinite numbers,
    text that cannot be written back as UTF-8 (lone surrogates), or a structure that
    :func:`parse` refuses.
    """
    return _loaded(text, source)[0]


def _loaded(text: str, source: str) -> tuple[dict[str, Any], schema.Results]:
    """The plain version-3 document of ``text`` and its typed form (see :func:`loads`)."""
    try:
        data = json.loads(text, parse_float=_finite_float, parse_constant=_no_constant)
    except _NotFinite as exc:
        raise InputError(f"{source}: non-finite number {exc} (unknown values are null)") from None
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{source}: not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno})"
        ) from None
    except RecursionError:
        raise InputError(f"{source}: not valid JSON (nested too deeply)") from None
    except ValueError:  # e.g. an integer beyond Python's limit on digits
        raise InputError(f"{source}: not valid JSON (a number has too many digits)") from None
    try:  # the report is written as UTF-8: refuse what cannot be (lone surrogates from \uD800)
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{source}: holds text that is not valid Unicode") from None
    return _converted(data, source)


def _converted(data: Any, source: str) -> tuple[dict[str, Any], schema.Results]:
    """``data`` as the version-3 document, and its typed form (validated once)."""
    if isinstance(data, dict):  # a profile's per-call samples as written, in full again
        data = dict(per_call_columns.expand(data))
        problem = per_call_columns.malformed_calls(data)
        if problem is not None:
            raise InputError(f"{source}: {problem}")
    if isinstance(data, dict) and data.get("schema_version") == 2 \
            and not isinstance(data.get("schema_version"), bool):
        try:
            data = convert.upgrade(data)
        except (TypeError, ValueError, AttributeError, OverflowError) as exc:
            # A version-2 document of the wrong shapes (a count that is a list, a record that
            # is a number): the conversion reads what that version wrote, nothing else.
            raise InputError(f"{source}: a version-2 document that cannot be converted "
                             f"({type(exc).__name__}: {exc})") from None
    return data, parse(data, source=source)


def typed(results: schema.Results | Mapping[str, Any], *, source: str = "results.json"
          ) -> schema.Results:
    """``results`` as the typed document: a typed one as it is, a plain one (as ``json.load``
    gives it) written out in full, converted and validated once, as :func:`read` does."""
    if isinstance(results, schema.Results):
        return results
    return _converted(dict(results), source)[1]


def read(path: str | Path) -> schema.Results:
    """The typed document of the results.json at ``path`` (converted, validated)."""
    return _loaded(_read_text(path), str(path))[1]


def load_both(path: str | Path) -> tuple[dict[str, Any], schema.Results]:
    """The plain version-3 document of the results.json at ``path`` and its typed form, read,
    converted and validated once (as :func:`load` and :func:`read` each do)."""
    return _loaded(_read_text(path), str(path))


def load(path: str | Path) -> dict[str, Any]:
    """Read, convert (version 2) and validate the results.json at ``path``: the plain
    version-3 document."""
    return loads(_read_text(path), source=str(path))


def _read_text(path: str | Path) -> str:
    """The text of the file at ``path``; InputError when it cannot be read as UTF-8."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, not a results.json file") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    return text


def document(results: schema.Results) -> dict[str, Any]:
    """The plain JSON form of a validated document (what results.json holds)."""
    return plain(results)


def plain(record: pydantic.BaseModel) -> dict[str, Any]:
    """The plain JSON form of a validated record, as results.json holds it: the keys the
    record was given, none of the defaults it was not (a workload's record is the one the
    document's ``workloads`` list holds)."""
    return record.model_dump(mode="json", exclude_unset=True)


def parse(data: Any, *, source: str = "results.json") -> schema.Results:
    """The typed document of ``data``: a version-3 document validated, a version-2 one converted
    first (:func:`roofline_report.results.convert.upgrade`); InputError naming the key path of
    the first problem, or the version, quoted as written."""
    if not isinstance(data, dict):
        raise InputError(f"{source}: expected a JSON object at the top level")
    if "schema_version" not in data:
        raise InputError(f"{source}: no schema_version; is this a roofline-report results file?")
    version = data["schema_version"]
    if not isinstance(version, int) or isinstance(version, bool):
        raise InputError(f"{source}: schema_version must be an integer, got "
                         f"{json.dumps(version, ensure_ascii=False)[:40]}")
    if version == 1:
        raise InputError(
            f"{source}: schema version 1 stored derived values (verdicts, predictions, sentences) "
            f"that version {SCHEMA_VERSION} computes at render time; measure again with this "
            "roofline-report"
        )
    if version == 2:
        data = convert.upgrade(data)
    elif version != SCHEMA_VERSION:
        raise InputError(
            f"{source}: schema version {version} is not supported (this roofline-report reads "
            f"versions 2 and {SCHEMA_VERSION}); re-measure with this version"
        )
    try:
        return schema.Results.model_validate(data)
    except pydantic.ValidationError as exc:
        raise InputError(f"{source}: {describe(exc)}") from None


def validate(data: Any, *, source: str = "results.json") -> None:
    """Check ``data`` as :func:`parse` does, keeping nothing."""
    parse(data, source=source)


# Call records of a kernel timing, from this many on, are checked all at once by
# :func:`validate_built` (a 100 MB trace's 153,345 took 0.5 to 0.8 s one model each).
CALLS_AT_ONCE = 1000
_CALL_FIELDS = tuple(schema.TraceCall.model_fields)
_NUMBER_TYPES = frozenset((int, float))


def validate_built(data: Any, *, source: str = "results.json") -> None:
    """Check a document this tool built as :func:`validate` does, except that a kernel
    timing's call records, where there are :data:`CALLS_AT_ONCE` or more, are checked all at
    once (each a record of the five times, each time a finite non-negative number, as the
    schema's ``TraceCall`` requires) and the schema validates the first of them with the rest
    of the document. Where the records are not all of that form, the whole document is
    validated as :func:`validate` does, with its error."""
    if not isinstance(data, dict) or not isinstance(data.get("workloads"), list):
        return validate(data, source=source)
    workloads = []
    for w in data["workloads"]:
        timing = w.get("kernel_timing") if isinstance(w, dict) else None
        calls = timing.get("calls") if isinstance(timing, dict) else None
        if isinstance(timing, dict) and isinstance(calls, list) and len(calls) >= CALLS_AT_ONCE:
            if not _plain_calls(calls):
                return validate(data, source=source)
            w = {**w, "kernel_timing": {**timing, "calls": calls[:1]}}
        workloads.append(w)
    validate({**data, "workloads": workloads}, source=source)
    return None


def _plain_calls(calls: list[Any]) -> bool:
    """Whether every call is a record of exactly the call fields whose values are finite,
    non-negative numbers (not booleans), told for all of them at once."""
    if set(map(type, calls)) != {dict}:
        return False
    fields = set(_CALL_FIELDS)
    if not all(c.keys() == fields for c in calls):
        return False
    for name in _CALL_FIELDS:
        column = [c[name] for c in calls]
        if not set(map(type, column)) <= _NUMBER_TYPES:
            return False
        values = np.asarray(column, dtype=np.float64)
        if not (np.isfinite(values).all() and (values >= 0).all()):
            return False
    return True


_TAGS = {"yes", "no"}


def key_path(loc: tuple[str | int, ...]) -> str:
    """A pydantic error location as a key path: ``workloads[3].timing.per_call.median``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in _TAGS or "[" in part or part in ("function-after", "nullable"):
            continue  # union branches and validators, not keys of the document
        else:
            out += ("." if out else "") + part
    return out or "(top level)"


def describe(exc: pydantic.ValidationError) -> str:
    """The first error of a validation as one line: key path, problem, and the value given."""
    first = exc.errors(include_url=False)[0]
    loc = tuple(first.get("loc", ()))
    more = exc.error_count() - 1
    tail = f"; {more} more problem{'s' if more != 1 else ''}" if more > 0 else ""
    if first.get("type") == "missing" and loc:
        parent = key_path(loc[:-1])
        prefix = "" if parent == "(top level)" else f"{parent}: "
        return f"{prefix}missing key '{loc[-1]}'{tail}"
    if first.get("type") == "extra_forbidden" and loc:
        return f"{key_path(loc)}: unknown key (a misspelling, or a file of another version?){tail}"
    where = key_path(loc)
    message = str(first.get("msg", "invalid")).removeprefix("Value error, ")
    given = first.get("input")
    shown = "" if isinstance(given, dict | list) or first.get("type") == "missing" \
        else f" (got {_short(given)})"
    prefix = "" if where == "(top level)" else f"{where}: "  # a check of the whole document
    return f"{prefix}{message}{shown}{tail}"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)  # as written in the file
    return text if len(text) <= 40 else text[:37] + "..."
