"""The config file's schema as pydantic models: :class:`ConfigFile` (the file), its
:class:`BudgetsTable`, each :class:`WorkloadTable` and the :class:`ArgTable` of its arguments.

Every table is closed (an unknown key is an error, so a typo is caught) and strict (no value is
coerced: ``"4"`` is not a dimension). The types check each value on its own; the validators
check a key against the keys it depends on, which pydantic has validated before it in the
table's order (``dims`` before the ``args``, ``sweep`` and ``backend_dims`` that name them,
``mesh`` before the partitions), and skip the check where one of those failed (its own error is
reported). A problem a validator finds is a :class:`~pydantic_core.PydanticCustomError` of type
:data:`PROBLEM` whose message is the project's, relative to the table it lies in; pydantic's own
errors (a wrong type, a missing or unknown key, a number out of range) are worded by
:mod:`roofline_report.config.messages`, which turns the first error into the one line the user
reads.

The validated tables are turned into the records the rest of the code uses
(:meth:`ConfigFile.to_config`: :class:`~roofline_report.config.spec.Config` and its
:class:`~roofline_report.config.spec.WorkloadSpec` records).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Literal, NoReturn, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from roofline_report.config.spec import (
    DTYPES,
    MAX_MESH_DEVICES,
    MAX_SWEEP_POINTS,
    SCHEMA_VERSION,
    ArgSpec,
    Budgets,
    Config,
    Partition,
    WorkloadSpec,
)
from roofline_report.config.values import (
    DIM_NAME_RE,
    IMPORT_PATH_RE,
    MAX_DIM,
    attribute_name,
    name_problem,
    show,
)
from roofline_report.errors import InputError
from roofline_report.presets import get_preset
from roofline_report.units import RateKind, parse_rate

#: The error type of a problem found by a validator (its message is the project's own).
PROBLEM = "config_problem"

#: The backends a workload may size itself for (``backend_dims``): jax's platform names, a
#: GPU's under one name whatever its vendor.
Backend = Literal["cpu", "gpu", "tpu"]
BACKEND_NAMES: tuple[str, ...] = get_args(Backend)

#: A dimension, a mesh axis's size or a shape entry: a positive integer of at most MAX_DIM.
Size = Annotated[int, Field(gt=0, le=MAX_DIM)]
#: A dim or mesh axis name: one Python identifier.
Identifier = Annotated[str, StringConstraints(pattern=f"^{DIM_NAME_RE.pattern}$")]
#: ``package.module:attribute``, Python identifiers throughout.
ImportPath = Annotated[str, StringConstraints(pattern=f"^{IMPORT_PATH_RE.pattern}$")]
#: A check's rtol or atol: finite and not negative.
Tolerance = Annotated[float, Field(ge=0, allow_inf_nan=False)]
#: A budget given as a number: FLOP/s or bytes/s.
RateNumber = Annotated[float, Field(gt=0, allow_inf_nan=False)]


def problem(message: str) -> NoReturn:
    """Raise the project's ``message`` as a validation error (see the module's docstring)."""
    raise PydanticCustomError(PROBLEM, "{message}", {"message": message})


def _defined(names: Sequence[str]) -> str:
    return ", ".join(names) or "none"


def _rate(kind: RateKind, key: str) -> AfterValidator:
    def read(text: str) -> float:
        try:
            return parse_rate(text, kind, what=key)
        except InputError as exc:
            problem(str(exc))

    return AfterValidator(read)


def _preset(name: str) -> str:
    if not name.strip():
        problem("preset: give a chip preset's name (see --list-presets), or leave the key out "
                "to match this device")
    try:
        return get_preset(name).name
    except InputError as exc:
        problem(str(exc))


def _name(name: str) -> str:
    why = name_problem(name)
    if why is not None:
        problem(f"'name' {why}")
    return name


def _dtype(dtype: str) -> str:
    if dtype not in DTYPES:
        problem(f"unknown dtype {show(dtype)}; allowed: {', '.join(DTYPES)}")
    return dtype


class Table(BaseModel):
    """A table of the file: closed (unknown keys are errors) and strict (nothing coerced)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class BudgetsTable(Table):
    """``[budgets]``: hypothetical peak and bandwidth, each a rate string or a number."""

    peak: Annotated[str, _rate("flops", "peak")] | RateNumber | None = None
    bandwidth: Annotated[str, _rate("bytes", "bandwidth")] | RateNumber | None = None

    def to_budgets(self) -> Budgets:
        return Budgets(peak=_float(self.peak), bandwidth=_float(self.bandwidth))


def _float(value: str | float | None) -> float | None:
    """A rate as validated: the string branch has turned it into a number already."""
    return None if value is None else float(value)


class ArgTable(Table):
    """One positional argument: a shape of sizes and dim names (checked against the workload's
    dims by :meth:`WorkloadTable._args`), and a dtype."""

    shape: list[str | Size]
    dtype: Annotated[str, AfterValidator(_dtype)]

    def to_arg(self) -> ArgSpec:
        return ArgSpec(tuple(self.shape), self.dtype)


#: A partition: per dimension, a mesh axis name or "" (not sharded).
Axes = list[str]
#: The keys a ``setup`` workload may not have: its function and arguments are made by code.
_NOT_WITH_SETUP = ("function", "args", "sweep", "mesh", "partition", "out_partition")


class WorkloadTable(Table):
    """One ``[[workload]]`` table: a function with declared arguments (``dims``, ``args``,
    ``sweep``; a ``mesh`` and partitions for a sharded one), or a ``setup`` function that makes
    the function and its arguments. The keys in the order an error lists them."""

    name: Annotated[str, AfterValidator(_name)] | None = None
    function: ImportPath | None = None
    dims: dict[Identifier, Size] = Field(default_factory=dict)
    args: list[ArgTable] | None = None
    sweep: Annotated[dict[str, Annotated[list[Size], Field(min_length=1)]],
                     Field(min_length=1)] | None = None
    reference: ImportPath | None = None
    rtol: Tolerance | None = None
    atol: Tolerance | None = None
    mesh: Annotated[dict[Identifier, Size], Field(min_length=1)] | None = None
    partition: list[Axes] | None = None
    out_partition: Axes | None = None
    setup: ImportPath | None = None
    backend_dims: Annotated[dict[Backend, Annotated[dict[str, Size], Field(min_length=1)]],
                            Field(min_length=1)] | None = None

    @field_validator("args")
    @classmethod
    def _args(cls, args: list[ArgTable] | None, info: ValidationInfo) -> list[ArgTable] | None:
        """Each dim name a shape names is one of ``dims``."""
        dims = info.data.get("dims")
        if args is None or dims is None:
            return args
        for position, arg in enumerate(args):
            for entry in arg.shape:
                if isinstance(entry, str) and entry not in dims:
                    problem(f"args[{position}]: shape entry {show(entry)} is not defined in "
                            f"dims (defined: {_defined(list(dims))})")
        return args

    @field_validator("sweep")
    @classmethod
    def _sweep(cls, sweep: dict[str, list[int]] | None, info: ValidationInfo
               ) -> dict[str, list[int]] | None:
        """Each name a dim's, and at most MAX_SWEEP_POINTS points (distinct values)."""
        dims = info.data.get("dims")
        if sweep is None or dims is None:
            return sweep
        for name in sweep:
            if name not in dims:
                problem(f"sweep name {show(name)} is not in dims (defined: "
                        f"{_defined(list(dims))}); give it a default value in dims")
        count = math.prod(len(set(values)) for values in sweep.values())
        if count > MAX_SWEEP_POINTS:
            problem(f"the sweep has {count} points; at most {MAX_SWEEP_POINTS} are allowed")
        return sweep

    @field_validator("mesh")
    @classmethod
    def _mesh(cls, mesh: dict[str, int] | None, info: ValidationInfo) -> dict[str, int] | None:
        """At most MAX_MESH_DEVICES devices, and no sweep (a sharded workload runs at its
        declared dims)."""
        if mesh is None:
            return mesh
        devices = math.prod(mesh.values())
        if devices > MAX_MESH_DEVICES:
            problem(f"the mesh has {devices} devices; the sharded analysis runs on "
                    f"{MAX_MESH_DEVICES}")
        if info.data.get("sweep") is not None:
            problem("sweeps of sharded workloads are not supported; remove 'sweep' or 'mesh'")
        return mesh

    @field_validator("partition")
    @classmethod
    def _partition(cls, partition: list[Axes] | None, info: ValidationInfo
                   ) -> list[Axes] | None:
        """Given with a mesh and only with one: per argument, per dimension, an axis of the
        mesh or "", no axis twice in an argument, each dividing its dimension at the declared
        dims."""
        if partition is None or "mesh" not in info.data:
            return partition  # (a mesh without one is refused by _function_or_setup)
        mesh = info.data["mesh"]
        if mesh is None:
            problem("'partition' needs a 'mesh' (such as mesh = { d = 8 })")
        args, dims = info.data.get("args"), info.data.get("dims")
        if args is None or dims is None:
            return partition  # their own error is reported (or the args are missing)
        if len(partition) != len(args):
            problem(f"'partition' has {len(partition)} entries but the workload has "
                    f"{len(args)} args")
        for position, (axes, arg) in enumerate(zip(partition, args, strict=True)):
            at = f"partition[{position}]:"
            _check_axes(axes, mesh, at)
            shape = arg.to_arg().resolve(dims)
            if len(axes) != len(shape):
                problem(f"{at} has {len(axes)} entries but args[{position}] has {len(shape)} "
                        "dimensions")
            for dim, (axis, size) in enumerate(zip(axes, shape, strict=True)):
                if axis and size % mesh[axis]:
                    problem(f"{at} dimension {dim} of args[{position}] ({size} at the declared "
                            f"dims) is not divisible by mesh axis {show(axis)} ({mesh[axis]})")
        return partition

    @field_validator("out_partition")
    @classmethod
    def _out_partition(cls, axes: Axes | None, info: ValidationInfo) -> Axes | None:
        """Given with a mesh only, its axes the mesh's, none twice (its rank and divisibility
        are checked where the result's shape is known: in the sharding child)."""
        if axes is None or "mesh" not in info.data:
            return axes
        mesh = info.data["mesh"]
        if mesh is None:
            problem("'out_partition' needs a 'mesh' (such as mesh = { d = 8 })")
        _check_axes(axes, mesh, "out_partition:")
        return axes

    @field_validator("setup")
    @classmethod
    def _setup(cls, setup: str | None, info: ValidationInfo) -> str | None:
        """Without the keys that declare the function and its arguments (a key that failed
        its own check was given too)."""
        if setup is None:
            return setup
        for key in _NOT_WITH_SETUP:
            if key not in info.data or info.data[key] is not None:
                problem(f"'{key}' cannot be used with 'setup' (the setup function returns the "
                        "function and its arguments)")
        return setup

    @field_validator("backend_dims")
    @classmethod
    def _backend_dims(cls, sized: dict[str, dict[str, int]] | None, info: ValidationInfo
                      ) -> dict[str, dict[str, int]] | None:
        """Each name one of ``dims``; not with a mesh (a sharded workload is analysed on
        emulated CPU devices at its declared dims)."""
        dims = info.data.get("dims")
        if sized is None or dims is None:
            return sized
        for backend, table in sized.items():
            for name in table:
                if name not in dims:
                    problem(f"backend_dims.{backend}: {show(name)} is not in dims (defined: "
                            f"{_defined(list(dims))}); give it its default size in dims")
        if info.data.get("mesh") is not None:
            problem("'backend_dims' cannot be used with 'mesh' (a sharded workload is analysed "
                    "on emulated CPU devices at its declared dims)")
        return sized

    @model_validator(mode="after")
    def _function_or_setup(self) -> WorkloadTable:
        """A function with its arguments (and a partition of them with a mesh), or a setup
        function that makes both."""
        if self.setup is None:
            if self.function is None:
                problem("missing 'function' (an import path such as 'module:function') or "
                        "'setup' (one that returns the function and its arguments)")
            if self.args is None:
                problem("missing 'args' (a list of { shape = [...], dtype = ... })")
            if self.mesh is not None and self.partition is None:
                problem("'mesh' needs 'partition': one list per argument, with an axis name or "
                        "\"\" for each dimension")
        return self

    @property
    def workload_name(self) -> str:
        """The ``name`` given, by default the name of the attribute the function (or setup)
        imports."""
        if self.name is not None:
            return self.name
        path = self.setup or self.function
        assert path is not None  # checked by _function_or_setup
        return attribute_name(path)

    def to_spec(self) -> WorkloadSpec:
        """The workload as the rest of the code reads it: dims and sweeps sorted by name, a
        sweep's values sorted without repeats, the mesh in the file's order."""
        return WorkloadSpec(
            name=self.workload_name,
            function=self.function or "",
            dims=dict(sorted(self.dims.items())),
            backend_dims={backend: dict(sorted(table.items()))
                          for backend, table in sorted((self.backend_dims or {}).items())},
            args=tuple(arg.to_arg() for arg in self.args or ()),
            sweep=None if self.sweep is None else
            {name: tuple(sorted(set(values))) for name, values in sorted(self.sweep.items())},
            reference=self.reference,
            rtol=self.rtol,
            atol=self.atol,
            mesh=None if self.mesh is None else tuple(self.mesh.items()),
            partition=None if self.partition is None else
            tuple(_partition(axes) for axes in self.partition),
            out_partition=None if self.out_partition is None else _partition(self.out_partition),
            setup=self.setup,
        )


def _partition(axes: Axes) -> Partition:
    return tuple(axes)


def _check_axes(axes: Axes, mesh: Mapping[str, int], at: str) -> None:
    """One partition list: each entry an axis of the mesh or "", no axis twice."""
    seen: set[str] = set()
    for axis in axes:
        if axis and axis not in mesh:
            problem(f"{at} unknown axis {show(axis)} (mesh axes: {', '.join(mesh)})")
        if axis and axis in seen:
            problem(f"{at} axis {show(axis)} shards more than one dimension")
        seen.add(axis)


class ConfigFile(Table):
    """The file: its schema version, a chip preset, budgets and at least one workload."""

    schema_version: Annotated[int, Field(ge=SCHEMA_VERSION, le=SCHEMA_VERSION)] = Field(
        default=SCHEMA_VERSION, alias="schema")
    preset: Annotated[str, AfterValidator(_preset)] | None = None
    budgets: BudgetsTable | None = None
    workload: Annotated[list[WorkloadTable], Field(min_length=1)]

    @model_validator(mode="after")
    def _distinct_names(self) -> ConfigFile:
        seen: dict[str, int] = {}
        for index, table in enumerate(self.workload, start=1):
            name = table.workload_name
            if name in seen:
                problem(f"workload #{index}: duplicate name {show(name)} (also workload "
                        f"#{seen[name]}); give each a distinct 'name'")
            seen[name] = index
        return self

    def to_config(self, source: str, base_dir: Path | None) -> Config:
        """The validated :class:`Config`: the unsharded workloads apart from the sharded ones,
        each in the file's order."""
        specs = [table.to_spec() for table in self.workload]
        budgets = self.budgets.to_budgets() if self.budgets is not None else Budgets()
        return Config(self.preset, budgets, tuple(w for w in specs if not w.is_sharded), source,
                      base_dir, tuple(w for w in specs if w.is_sharded))


#: The model of each kind of table, by the name :mod:`~roofline_report.config.messages` gives
#: it (for the keys an unknown key's message lists).
TABLES: Mapping[str, type[Table]] = {
    "top": ConfigFile, "budgets": BudgetsTable, "workload": WorkloadTable, "arg": ArgTable,
}


def table_keys(model: type[Table]) -> list[str]:
    """The keys a table may hold, in the model's order (as the file writes them)."""
    return [field.alias or name for name, field in model.model_fields.items()]


__all__ = ["BACKEND_NAMES", "PROBLEM", "TABLES", "ArgTable", "BudgetsTable", "ConfigFile",
           "WorkloadTable", "problem", "table_keys"]

