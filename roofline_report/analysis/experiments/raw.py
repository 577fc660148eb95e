"""Reading one lab experiment's raw record (no jax): typed access that raises InputError naming
the field that is missing or malformed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from roofline_report.analysis.experiments.verdicts import finite
from roofline_report.analysis.stats import Timing
from roofline_report.errors import InputError

__all__ = ["NOT_RECORDED", "Entry"]


class Entry:
    """Typed access to one experiment's raw record; malformed fields raise InputError."""

    def __init__(self, exp_id: str, data: Mapping[str, Any]) -> None:
        self.exp_id = exp_id
        self.data = data

    def _fail(self, key: str, problem: str) -> InputError:
        return InputError(f"lab measurements: experiment {self.exp_id!r} field {key!r} {problem}")

    def count(self, key: str) -> int:
        value = self.data.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self._fail(key, f"must be a positive integer, got {value!r}")
        return value

    def _lookup(self, keys: tuple[str, ...]) -> Any:
        """The value under nested ``keys``, or None when any level is absent."""
        value: Any = self.data
        for key in keys:
            if not isinstance(value, Mapping) or key not in value:
                return None
            value = value[key]
        return value

    def opt_count(self, *keys: str) -> int | None:
        """A non-negative integer under nested ``keys``, or None when absent."""
        value = self._lookup(keys)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self._fail(".".join(keys), f"must be a count, got {value!r}")
        return value

    def opt_number(self, *keys: str) -> float | None:
        value = self._lookup(keys)
        if value is None:
            return None
        number = finite(value)
        if number is None:
            raise self._fail(".".join(keys), f"must be a finite number, got {value!r}")
        return number

    def timing(self, key: str) -> Timing:
        value = self.data.get(key)
        if not isinstance(value, Mapping):
            raise self._fail(key, "must be a timing record")
        return Timing.from_json(value)

    def ints(self, key: str) -> list[int]:
        value = self.data.get(key)
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value
        ):
            raise self._fail(key, "must be a list of positive integers")
        return list(value)

    def timings(self, key: str, count: int) -> list[Timing]:
        value = self.data.get(key)
        if not isinstance(value, list) or len(value) != count:
            raise self._fail(key, f"must be a list of {count} timing records")
        if not all(isinstance(v, Mapping) for v in value):
            raise self._fail(key, "must hold timing records")
        return [Timing.from_json(v) for v in value]

    def programs(self, variants: Sequence[str]) -> dict[str, Mapping[str, Any] | str]:
        """The kernel inventory of each variant, from the object ``programs`` (by variant), or
        the reason it has none (not recorded, or its reading failed)."""
        value = self.data.get("programs")
        if value is None:
            return dict.fromkeys(variants, NOT_RECORDED)
        if not isinstance(value, Mapping):
            raise self._fail("programs", "must be an object of kernel inventories")
        return {v: self._inventory(f"programs.{v}", value.get(v)) for v in variants}

    def sweep_programs(self, labels: Sequence[str]) -> dict[str, Mapping[str, Any] | str]:
        """The kernel inventory of each sweep point (named by ``labels``), from the list
        ``programs`` aligned with the points, or the reason it has none."""
        value = self.data.get("programs")
        if value is None:
            return dict.fromkeys(labels, NOT_RECORDED)
        if not isinstance(value, list) or len(value) != len(labels):
            raise self._fail("programs", f"must be a list of {len(labels)} kernel inventories")
        return {
            label: self._inventory(f"programs[{i}]", v)
            for i, (label, v) in enumerate(zip(labels, value, strict=True))
        }

    def dtypes(self, variants: Sequence[str]) -> dict[str, str]:
        """The dtype of each variant, from the object ``dtypes``; a variant without one is
        named after its dtype (``float32``, ``bfloat16``)."""
        value = self.data.get("dtypes")
        if value is None:
            return {v: v for v in variants}
        if not isinstance(value, Mapping) or not all(
            isinstance(value.get(v, v), str) for v in variants
        ):
            raise self._fail("dtypes", "must be an object of dtype names")
        return {v: str(value.get(v, v)) for v in variants}

    def _inventory(self, key: str, value: object) -> Mapping[str, Any] | str:
        """A kernel inventory whose fields the model reads are numbers; or why there is none."""
        if value is None:
            return NOT_RECORDED
        if not isinstance(value, Mapping):
            raise self._fail(key, "must be a kernel inventory")
        if value.get("available", True) is False:
            why = value.get("reason")
            return f"its kernel inventory failed: {why}" if why else "its kernel inventory failed"
        kernels = value.get("kernels")
        if not isinstance(kernels, list) or not all(isinstance(k, Mapping) for k in kernels):
            raise self._fail(key, "must list its kernels")
        for i, k in enumerate(kernels):
            where = f"{key}.kernels[{i}]"
            for name in ("flops", "bytes_read", "bytes_written"):
                if name in k and not _count_like(k[name]):
                    raise self._fail(where, f"{name} must be a non-negative number")
            trips = k.get("trips", 1)
            if isinstance(trips, bool) or not isinstance(trips, int) or trips < 1:
                raise self._fail(where, f"trips must be a positive integer, got {trips!r}")
            for name in ("flops_by_op", "transcendentals_by_op"):
                by_op = k.get(name) or {}
                if not isinstance(by_op, Mapping) or not all(
                    _count_like(v) for v in by_op.values()
                ):
                    raise self._fail(where, f"{name} must map operations to numbers")
        return value


NOT_RECORDED = "no kernel inventory recorded (results saved before the lab recorded them)"


def _count_like(value: object) -> bool:
    number = finite(value)
    return number is not None and number >= 0
