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

from roofline_report.errors import InputError

SCHEMA_VERSION = 1

# Top-level keys and the JSON type each must have.
_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "schema_version": int,
    "generator": dict,
    "options": dict,
    "environment": dict,
    "budgets": dict,
    "seed": dict,
    "workloads": list,
    "ceilings": dict,
    "sweeps": list,
    "sharding": dict,
    "skipped": list,
}


def dumps(results: Mapping[str, Any]) -> str:
    """Deterministic JSON text: sorted keys, no NaN/inf (they become null), one final newline."""
    return json.dumps(_finite(results), sort_keys=True, indent=1, ensure_ascii=False,
                      allow_nan=False) + "\n"


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


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
    """Parse and validate a results document; InputError names the file and the problem.

    Raises InputError, and nothing else, for any ``text``: not JSON, NaN or infinite numbers,
    text that cannot be written back as UTF-8 (lone surrogates), or a structure that
    :func:`validate` refuses.
    """
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
    validate(data, source=source)
    try:  # the report is written as UTF-8: refuse what cannot be (lone surrogates from \uD800)
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{source}: holds text that is not valid Unicode") from None
    return data  # type: ignore[no-any-return]


def load(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    name = p.name or str(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, not a results.json file") from None
    except UnicodeDecodeError:
        raise InputError(f"{name}: not UTF-8 text") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    return loads(text, source=name)


def validate(data: Any, *, source: str = "results.json") -> None:
    """Check the structure the renderer relies on; raise InputError on the first problem."""
    if not isinstance(data, dict):
        raise InputError(f"{source}: expected a JSON object at the top level")
    version = data.get("schema_version")
    if version is None:
        raise InputError(f"{source}: no schema_version; is this a roofline-report results file?")
    if not isinstance(version, int) or isinstance(version, bool):
        raise InputError(f"{source}: schema_version must be an integer")
    if version != SCHEMA_VERSION:
        raise InputError(
            f"{source}: schema version {version} is not supported (this roofline-report reads "
            f"version {SCHEMA_VERSION}); re-measure with this version"
        )
    for key, kind in _REQUIRED.items():
        if key not in data:
            raise InputError(f"{source}: missing key '{key}'")
        if not isinstance(data[key], kind):
            expected = "an object" if kind is dict else "a list" if kind is list else "an integer"
            raise InputError(f"{source}: '{key}' must be {expected}")
    for i, w in enumerate(data["workloads"]):
        where = f"{source}: workloads[{i}]"
        if not isinstance(w, dict):
            raise InputError(f"{where} must be an object")
        for key in ("name", "title", "dtype"):
            if not isinstance(w.get(key), str):
                raise InputError(f"{where}: '{key}' must be a string")
    for i, item in enumerate(data["skipped"]):
        if not isinstance(item, dict) or not all(
            isinstance(item.get(key), str) for key in ("what", "reason")
        ):
            raise InputError(f"{source}: skipped[{i}] must be an object with 'what' and 'reason'")
    seed = data["seed"]
    for key in ("model", "experiment", "exercise"):
        if not isinstance(seed.get(key), dict):
            raise InputError(f"{source}: seed.{key} must be an object")
    hyp = data["budgets"].get("hypothetical")
    if not isinstance(hyp, dict):
        raise InputError(f"{source}: budgets.hypothetical must be an object")
    for key in ("peak", "bandwidth"):
        q = hyp.get(key)
        if not isinstance(q, dict) or not _positive(q.get("value")):
            raise InputError(f"{source}: budgets.hypothetical.{key} must have a positive value")


def _positive(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) and x > 0
