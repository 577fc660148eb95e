"""What a validated config holds: :class:`Config`, its :class:`WorkloadSpec` per ``[[workload]]``
table, their :class:`ArgSpec` arguments and :class:`Budgets`; and the limits a file is held to."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from roofline_report.config.imports import import_callable
from roofline_report.config.values import show
from roofline_report.errors import InputError

SCHEMA_VERSION = 1
MAX_SWEEP_POINTS = 64
#: Devices the sharding child process is started with: the largest mesh a config may declare.
MAX_MESH_DEVICES = 8

#: Allowed dtype names and their item sizes in bytes.
DTYPES: Mapping[str, int] = {
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float64": 8,
    "int32": 4,
    "int8": 1,
    "int16": 2,
    "int64": 8,
    "uint8": 1,
    "bool": 1,
}

Shape = tuple[int, ...]
DimRef = int | str
#: One entry per dimension: a mesh axis name, or "" for a dimension that is not sharded.
Partition = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Budgets:
    """Hypothetical budgets from the config: FLOP/s and bytes/s, None where not given."""

    peak: float | None = None
    bandwidth: float | None = None

    def to_json(self) -> dict[str, float | None]:
        return {"peak": self.peak, "bandwidth": self.bandwidth}


@dataclass(frozen=True, slots=True)
class ArgSpec:
    """One positional argument: a shape of ints and dim names, and a dtype name."""

    shape: tuple[DimRef, ...]
    dtype: str

    def resolve(self, dims: Mapping[str, int]) -> Shape:
        """The concrete shape. Raises InputError if a name is missing from ``dims``."""
        out: list[int] = []
        for entry in self.shape:
            if isinstance(entry, str):
                if entry not in dims:
                    raise InputError(f"dimension {show(entry)} has no value")
                out.append(int(dims[entry]))
            else:
                out.append(entry)
        return tuple(out)

    def to_json(self) -> dict[str, Any]:
        return {"shape": list(self.shape), "dtype": self.dtype}


@dataclass(frozen=True)
class WorkloadSpec:
    """One ``[[workload]]`` table, validated. ``function``/``reference`` are import paths.

    ``mesh`` (axis name, size) pairs in the file's order, ``partition`` one :data:`Partition` per
    argument and ``out_partition`` the result's: all None for an unsharded workload.
    """

    name: str
    function: str
    dims: Mapping[str, int]
    args: tuple[ArgSpec, ...]
    sweep: Mapping[str, tuple[int, ...]] | None = None
    reference: str | None = None
    rtol: float | None = None
    atol: float | None = None
    mesh: tuple[tuple[str, int], ...] | None = None
    partition: tuple[Partition, ...] | None = None
    out_partition: Partition | None = None
    setup: str | None = None  # a setup function making (fn, args[, kwargs]); then no args
    # Dims replacing ``dims`` on a backend ("cpu", "gpu", "tpu"): see :meth:`on_backend`.
    backend_dims: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    def on_backend(self, backend: str) -> WorkloadSpec:
        """The workload at the dims it declares for ``backend`` (a jax platform name: a GPU's
        "cuda" or "rocm" reads the ``gpu`` entry), its own dims where it declares none."""
        from roofline_report.backends import describe

        name = describe(backend).name
        sized = self.backend_dims.get(name)
        if not sized:
            return self
        return replace(self, dims={**self.dims, **sized})

    @property
    def is_sharded(self) -> bool:
        """True when the workload declares a mesh (it runs in the sharding child)."""
        return self.mesh is not None

    @property
    def mesh_devices(self) -> int:
        """Devices in the mesh (the product of its axis sizes); 1 without a mesh."""
        return math.prod(size for _, size in self.mesh or ())

    def resolve_shapes(self, dims: Mapping[str, int] | None = None) -> list[tuple[Shape, str]]:
        """``(shape, dtype)`` per argument, with ``dims`` overriding the workload's own dims."""
        merged = {**self.dims, **(dims or {})}
        return [(arg.resolve(merged), arg.dtype) for arg in self.args]

    def sweep_points(self) -> list[dict[str, int]]:
        """Full dim assignments, one per sweep point (the cartesian product of the sweep's
        values, sorted); just ``[dims]`` without a sweep. At most MAX_SWEEP_POINTS entries."""
        if not self.sweep:
            return [dict(self.dims)]
        names = sorted(self.sweep)
        points = []
        for values in itertools.product(*(sorted(set(self.sweep[n])) for n in names)):
            points.append({**self.dims, **dict(zip(names, values, strict=True))})
        return points[:MAX_SWEEP_POINTS]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "function": self.function,
            "dims": dict(sorted(self.dims.items())),
            "args": [arg.to_json() for arg in self.args],
            "sweep": None
            if self.sweep is None
            else {k: list(v) for k, v in sorted(self.sweep.items())},
            "reference": self.reference,
            "rtol": self.rtol,
            "atol": self.atol,
            "mesh": None
            if self.mesh is None
            else {
                "axis_names": [a for a, _ in self.mesh],
                "shape": [size for _, size in self.mesh],
            },
            "partition": None if self.partition is None else [list(p) for p in self.partition],
            "out_partition": None if self.out_partition is None else list(self.out_partition),
            **({"setup": self.setup} if self.setup is not None else {}),
            **({"backend_dims": {b: dict(sorted(d.items()))
                                 for b, d in sorted(self.backend_dims.items())}}
               if self.backend_dims else {}),
        }

    def to_table(self) -> dict[str, Any]:
        """The workload as a TOML-shaped table (keys as in the file), None values left out."""
        table = {k: v for k, v in self.to_json().items() if v is not None}
        if self.setup is not None:
            table.pop("function", None)
            table.pop("args", None)
        if self.mesh is not None:
            table["mesh"] = dict(self.mesh)
        return table


@dataclass(frozen=True)
class Config:
    """A validated config file. ``source`` is the file's name only (no folder), for reports;
    ``base_dir`` is the folder imports are resolved against (not part of equality or JSON).

    ``workloads`` are the unsharded workloads, measured in the main process; ``sharded`` those
    with a ``mesh``, analysed only in the sharding child process. Each keeps the file's order.
    """

    preset: str | None
    budgets: Budgets
    workloads: tuple[WorkloadSpec, ...]
    source: str
    base_dir: Path | None = field(default=None, compare=False, repr=False)
    sharded: tuple[WorkloadSpec, ...] = ()

    def load_function(self, spec: WorkloadSpec) -> Callable[..., Any]:
        """Import the workload's function (see :func:`import_callable`)."""
        return import_callable(
            spec.function, config_name=self.source, workload=spec.name, base_dir=self.base_dir
        )

    def load_setup(self, spec: WorkloadSpec) -> Callable[..., Any]:
        """Import the workload's setup function (see :func:`import_callable`)."""
        if spec.setup is None:
            raise InputError(f"{self.source}: workload {show(spec.name)}: has no 'setup'")
        return import_callable(
            spec.setup, config_name=self.source, workload=spec.name, base_dir=self.base_dir
        )

    def load_reference(self, spec: WorkloadSpec) -> Callable[..., Any] | None:
        """Import the workload's NumPy reference, or None if it has none."""
        if spec.reference is None:
            return None
        return import_callable(
            spec.reference, config_name=self.source, workload=spec.name, base_dir=self.base_dir
        )

    def to_dict(self) -> dict[str, Any]:
        """The config as a TOML-shaped document (keys as in the file), None values left out."""
        document: dict[str, Any] = {"schema": SCHEMA_VERSION}
        if self.preset is not None:
            document["preset"] = self.preset
        budgets = {k: v for k, v in self.budgets.to_json().items() if v is not None}
        if budgets:
            document["budgets"] = budgets
        document["workload"] = [w.to_table() for w in (*self.workloads, *self.sharded)]
        return document

    def to_json(self) -> dict[str, Any]:
        """Plain JSON for results.json: every key present, None where not given."""
        return {
            "schema": SCHEMA_VERSION,
            "source": self.source,
            "preset": self.preset,
            "budgets": self.budgets.to_json(),
            "workloads": [w.to_json() for w in self.workloads],
            "sharded": [w.to_json() for w in self.sharded],
        }
