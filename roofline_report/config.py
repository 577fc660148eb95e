"""The user's workloads, read from a TOML file (``--config FILE``).

Schema (every key not listed is an error, so typos are caught)::

    schema = 1                       # optional; only 1 exists
    preset = "H100"                  # optional; a chip preset name or alias (see presets.py)

    [budgets]                        # optional; hypothetical budgets replacing 100 GFLOP/s, 20 GB/s
    peak = "200 GFLOP/s"             # a rate string (roofline_report.units) or a number in FLOP/s
    bandwidth = "25 GB/s"            # a rate string or a number in bytes/s

    [[workload]]                     # one table per workload; at least one
    name = "my matmul"               # optional display name; defaults to the function's name
    function = "my_workloads:scaled_matmul"   # required: package.module:function
    dims = { n = 256 }               # named dimensions: positive integers
    args = [                         # the function's positional arguments, in order
      { shape = ["n", "n"], dtype = "float32" },
      { shape = ["n", 64], dtype = "bfloat16" },   # entries: a positive int or a name in dims
    ]
    sweep = { n = [64, 128, 256] }   # optional: values for named dims (each name must be in dims)
    reference = "my_workloads:scaled_matmul_numpy"   # optional NumPy reference for the check
    rtol = 2e-5                      # optional tolerances for the check (non-negative, finite);
    atol = 2e-5                      # by default the result dtype's (roofline_report.tolerances)

    [[workload]]                     # a program whose arguments are made by code
    name = "transformer step"
    setup = "transformer:setup"      # returns (fn, args) or (fn, args, kwargs); called with
    dims = { batch = 8 }             # the dims as keyword arguments (or none); no 'args',
                                     # 'function', 'sweep' or 'mesh'; 'reference', 'rtol'
                                     # and 'atol' as above

    [[workload]]                     # a sharded workload: analysed on a mesh of devices
    name = "matmul, contracting axis"
    function = "my_workloads:scaled_matmul"
    dims = { m = 256, k = 512, n = 128 }
    args = [ { shape = ["m", "k"], dtype = "float32" }, { shape = ["k", "n"], dtype = "float32" } ]
    mesh = { d = 8 }                 # mesh axis name = size; at most MAX_MESH_DEVICES devices
    partition = [ ["", "d"], ["d", ""] ]   # per argument, per dimension: an axis or "" (whole)
    out_partition = ["", ""]         # optional, same form for the result; default replicated

Rules:

* ``shape`` is a list (``[]`` is a scalar) whose entries are positive integers or names in
  ``dims``; ``dtype`` is one of :data:`DTYPES`.
* Dimensions are at most :data:`MAX_DIM`; a sweep gives at most :data:`MAX_SWEEP_POINTS` points
  (the cartesian product of its value lists, duplicates removed).
* ``mesh`` makes a workload sharded: it is not measured in the main process (``workloads``
  holds only the unsharded ones) but listed in ``Config.sharded`` and analysed in the sharding
  child process (``roofline_report.observe.sharding``), which has :data:`MAX_MESH_DEVICES` devices.
  ``partition`` is required with a mesh and refused without one; each dimension it shards must
  be divisible by the axis size at the declared dims, an axis shards at most one dimension of an
  argument, and a sharded workload cannot have a ``sweep``. ``out_partition`` is checked against
  the result (its rank, divisibility) only in the child, where the result's shape is known.
* Workload names are unique. Import paths are ``module.path:attribute`` with Python identifiers;
  they are imported (by :func:`import_callable`) with the config file's folder and the current
  directory on ``sys.path``, so ``my_workloads:f`` finds ``my_workloads.py`` next to the config.

Every problem is an :class:`~roofline_report.errors.InputError` whose one-line message names the
file, the workload (by name, or ``#k`` counting from 1) and the problem. Nothing here imports jax.
"""

from __future__ import annotations

import importlib
import itertools
import math
import numbers
import os
import re
import reprlib
import sys
import tomllib
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline_report import tolerances
from roofline_report.errors import InputError
from roofline_report.presets import get_preset
from roofline_report.units import RateKind, parse_rate

SCHEMA_VERSION = 1
MAX_SWEEP_POINTS = 64
MAX_DIM = 2**31 - 1
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

_TOP_KEYS = ("schema", "preset", "budgets", "workload")
_BUDGET_KEYS = ("peak", "bandwidth")
_WORKLOAD_KEYS = (
    "name", "function", "dims", "args", "sweep", "reference", "rtol", "atol",
    "mesh", "partition", "out_partition", "setup",
)  # fmt: skip
_ARG_KEYS = ("shape", "dtype")

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_IMPORT_PATH_RE = re.compile(rf"{_IDENT}(?:\.{_IDENT})*:{_IDENT}(?:\.{_IDENT})*", re.ASCII)
_DIM_NAME_RE = re.compile(_IDENT, re.ASCII)

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
                    raise InputError(f"dimension {_show(entry)} has no value")
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
            raise InputError(f"{self.source}: workload {_show(spec.name)}: has no 'setup'")
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


# ---------------------------------------------------------------------------------------------
# Loading


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and validate a TOML config file. Raises InputError (only) for any problem."""
    file = Path(path)
    name = file.name or str(path)
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{name}: config file not found") from None
    except IsADirectoryError:
        raise InputError(f"{name}: is a folder, not a config file") from None
    except OSError as exc:
        raise InputError(f"{name}: cannot read the config file: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{name}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
        ) from None
    return loads_config(text, source=name, base_dir=file.resolve().parent)


def loads_config(text: str, *, source: str = "<config>", base_dir: Path | None = None) -> Config:
    """Parse and validate TOML text; ``source`` names it in messages."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{source}: TOML syntax error: {exc}") from None
    except RecursionError:
        raise InputError(f"{source}: TOML nested too deeply to read") from None
    return config_from_dict(data, source=source, base_dir=base_dir)


def config_from_dict(
    data: Mapping[str, Any], *, source: str = "<config>", base_dir: Path | None = None
) -> Config:
    """Validate an already-parsed config (the TOML document as a dict). InputError only.

    A None value counts as an absent key (TOML has no null), so
    ``config_from_dict(config.to_dict())`` gives back an equal Config.
    """
    where = f"{source}:"
    if not isinstance(data, Mapping):
        raise InputError(f"{where} expected a table at the top level, got {_type(data)}")
    data = _present(data)
    _check_keys(data, _TOP_KEYS, where)
    schema = data.get("schema", SCHEMA_VERSION)
    if not _is_int(schema) or schema != SCHEMA_VERSION:
        raise InputError(
            f"{where} unsupported schema {_show(schema)}; this version reads schema = 1"
        )
    preset = data.get("preset")
    if preset is not None:
        if not isinstance(preset, str):
            raise InputError(f"{where} preset must be a string, got {_type(preset)}")
        if not preset.strip():
            raise InputError(f"{where} preset: give a chip preset's name (see --list-presets), "
                             "or leave the key out to match this device")
        try:
            preset = get_preset(preset).name
        except InputError as exc:
            raise InputError(f"{where} {exc}") from None
    budgets = _budgets(data.get("budgets"), where)
    tables = data.get("workload")
    if tables is None:
        raise InputError(f"{where} no workloads: add at least one [[workload]] table")
    if isinstance(tables, Mapping):
        raise InputError(f"{where} write [[workload]] (an array of tables), not [workload]")
    if not isinstance(tables, list):
        raise InputError(f"{where} 'workload' must be an array of tables, got {_type(tables)}")
    if not tables:
        raise InputError(f"{where} no workloads: add at least one [[workload]] table")
    workloads: list[WorkloadSpec] = []
    seen: dict[str, int] = {}
    for index, table in enumerate(tables, start=1):
        spec = _workload(table, index, where)
        if spec.name in seen:
            raise InputError(
                f"{where} workload #{index}: duplicate name {_show(spec.name)} "
                f"(also workload #{seen[spec.name]}); give each a distinct 'name'"
            )
        seen[spec.name] = index
        workloads.append(spec)
    unsharded = tuple(w for w in workloads if not w.is_sharded)
    sharded = tuple(w for w in workloads if w.is_sharded)
    return Config(preset, budgets, unsharded, source, base_dir, sharded)


def _budgets(value: Any, where: str) -> Budgets:
    if value is None:
        return Budgets()
    if not isinstance(value, Mapping):
        raise InputError(f"{where} [budgets] must be a table, got {_type(value)}")
    value = _present(value)
    _check_keys(value, _BUDGET_KEYS, f"{where} [budgets]")
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
        raise InputError(f"{what}: expected a rate string or a number, got {_type(value)}")
    number = _float(value)
    if not math.isfinite(number) or number <= 0:
        raise InputError(f"{what}: {_show(value)} must be positive and finite")
    return number


def _workload(table: Any, index: int, where: str) -> WorkloadSpec:
    if not isinstance(table, Mapping):
        raise InputError(f"{where} workload #{index}: expected a table, got {_type(table)}")
    table = _present(table)
    label = _workload_label(table, index)
    here = f"{where} workload {label}:"
    _check_keys(table, _WORKLOAD_KEYS, here)
    if table.get("setup") is not None:
        return _setup_workload(table, here)

    function = table.get("function")
    if function is None:
        raise InputError(f"{here} missing 'function' (an import path such as 'module:function') "
                         "or 'setup' (one that returns the function and its arguments)")
    function = _import_path(function, "function", here)
    reference = table.get("reference")
    if reference is not None:
        reference = _import_path(reference, "reference", here)

    name = table.get("name")
    if name is None:
        name = function.rsplit(":", 1)[1].rsplit(".", 1)[-1]
    elif (why := name_problem(name)) is not None:
        raise InputError(f"{here} 'name' {why}")

    dims = _dims(table.get("dims"), here)
    args = _args(table.get("args"), dims, here)
    sweep = _sweep(table.get("sweep"), dims, here)
    mesh = _mesh(table.get("mesh"), here)
    partition: tuple[Partition, ...] | None = None
    out_partition: Partition | None = None
    if mesh is None:
        for key in ("partition", "out_partition"):
            if key in table:
                raise InputError(f"{here} '{key}' needs a 'mesh' (such as mesh = {{ d = 8 }})")
    else:
        if sweep is not None:
            raise InputError(
                f"{here} sweeps of sharded workloads are not supported; remove 'sweep' or 'mesh'"
            )
        if "partition" not in table:
            raise InputError(
                f"{here} 'mesh' needs 'partition': one list per argument, with an axis name "
                'or "" for each dimension'
            )
        partition = _partition(table["partition"], mesh, args, dims, here)
        if "out_partition" in table:
            out_partition = _axes(table["out_partition"], dict(mesh), f"{here} out_partition:")
    return WorkloadSpec(
        name=name,
        function=function,
        dims=dims,
        args=args,
        sweep=sweep,
        reference=reference,
        rtol=_tolerance(table.get("rtol"), "rtol", here),
        atol=_tolerance(table.get("atol"), "atol", here),
        mesh=mesh,
        partition=partition,
        out_partition=out_partition,
    )


def _setup_workload(table: Mapping[str, Any], here: str) -> WorkloadSpec:
    """A ``setup = "module:function"`` workload: the function and its arguments are made by
    code, so the keys that declare them (and sweeps and meshes, which need them) are refused."""
    setup = _import_path(table["setup"], "setup", here)
    for key in ("function", "args", "sweep", "mesh", "partition", "out_partition"):
        if key in table:
            raise InputError(f"{here} '{key}' cannot be used with 'setup' (the setup function "
                             "returns the function and its arguments)")
    reference = table.get("reference")
    if reference is not None:
        reference = _import_path(reference, "reference", here)
    name = table.get("name")
    if name is None:
        name = setup.rsplit(":", 1)[1].rsplit(".", 1)[-1]
    elif (why := name_problem(name)) is not None:
        raise InputError(f"{here} 'name' {why}")
    return WorkloadSpec(
        name=name,
        function="",
        dims=_dims(table.get("dims"), here),
        args=(),
        reference=reference,
        rtol=_tolerance(table.get("rtol"), "rtol", here),
        atol=_tolerance(table.get("atol"), "atol", here),
        setup=setup,
    )


def _workload_label(table: Mapping[str, Any], index: int) -> str:
    name = table.get("name")
    if isinstance(name, str) and name.strip():
        return _show(name)
    for key in ("function", "setup"):
        function = table.get(key)
        if isinstance(function, str) and _IMPORT_PATH_RE.fullmatch(function):
            return _show(function.rsplit(":", 1)[1].rsplit(".", 1)[-1])
    return f"#{index}"


def _import_path(value: Any, key: str, here: str) -> str:
    if not isinstance(value, str) or not _IMPORT_PATH_RE.fullmatch(value):
        raise InputError(
            f"{here} '{key}' must be an import path 'package.module:function', got {_show(value)}"
        )
    return value


def _dims(value: Any, here: str) -> dict[str, int]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"{here} 'dims' must be a table of name = positive integer")
    dims: dict[str, int] = {}
    for name, size in _present(value).items():
        if not isinstance(name, str) or not _DIM_NAME_RE.fullmatch(name):
            raise InputError(f"{here} dims: {_show(name)} is not a valid name (letters, digits, _)")
        dims[name] = _positive_int(size, f"{here} dims.{name}")
    return dict(sorted(dims.items()))


def _args(value: Any, dims: Mapping[str, int], here: str) -> tuple[ArgSpec, ...]:
    if value is None:
        raise InputError(f"{here} missing 'args' (a list of {{ shape = [...], dtype = ... }})")
    if not isinstance(value, list):
        raise InputError(f"{here} 'args' must be a list of tables, got {_type(value)}")
    specs: list[ArgSpec] = []
    for position, arg in enumerate(value):
        at = f"{here} args[{position}]:"
        if not isinstance(arg, Mapping):
            raise InputError(f"{at} expected a table {{ shape = [...], dtype = ... }}")
        arg = _present(arg)
        _check_keys(arg, _ARG_KEYS, at)
        if "shape" not in arg:
            raise InputError(f"{at} missing 'shape'")
        if "dtype" not in arg:
            raise InputError(f"{at} missing 'dtype' (one of {', '.join(DTYPES)})")
        shape = arg["shape"]
        if not isinstance(shape, list):
            raise InputError(f"{at} 'shape' must be a list of positive integers or dim names")
        entries: list[DimRef] = []
        for entry in shape:
            if isinstance(entry, str):
                if entry not in dims:
                    defined = ", ".join(dims) or "none"
                    raise InputError(
                        f"{at} shape entry {_show(entry)} is not defined in dims "
                        f"(defined: {defined})"
                    )
                entries.append(entry)
            else:
                entries.append(_positive_int(entry, f"{at} shape entry"))
        dtype = arg["dtype"]
        if not isinstance(dtype, str) or dtype not in DTYPES:
            raise InputError(f"{at} unknown dtype {_show(dtype)}; allowed: {', '.join(DTYPES)}")
        specs.append(ArgSpec(tuple(entries), dtype))
    return tuple(specs)


def _sweep(value: Any, dims: Mapping[str, int], here: str) -> dict[str, tuple[int, ...]] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InputError(f"{here} 'sweep' must be a table of name = [values]")
    value = _present(value)
    if not value:
        raise InputError(f"{here} 'sweep' is empty; remove it or give values for a dim")
    sweep: dict[str, tuple[int, ...]] = {}
    count = 1
    for name, values in value.items():
        if name not in dims:
            defined = ", ".join(dims) or "none"
            raise InputError(
                f"{here} sweep name {_show(name)} is not in dims (defined: {defined}); "
                "give it a default value in dims"
            )
        if not isinstance(values, list) or not values:
            raise InputError(f"{here} sweep.{name} must be a non-empty list of positive integers")
        ints = sorted({_positive_int(v, f"{here} sweep.{name}") for v in values})
        sweep[name] = tuple(ints)
        count *= len(ints)
    if count > MAX_SWEEP_POINTS:
        raise InputError(
            f"{here} the sweep has {count} points; at most {MAX_SWEEP_POINTS} are allowed"
        )
    return dict(sorted(sweep.items()))


def _mesh(value: Any, here: str) -> tuple[tuple[str, int], ...] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InputError(f"{here} 'mesh' must be a table of axis name = size, such as {{ d = 8 }}")
    value = _present(value)
    if not value:
        raise InputError(f"{here} 'mesh' is empty; give at least one axis, such as {{ d = 8 }}")
    axes: list[tuple[str, int]] = []
    for name, size in value.items():
        if not isinstance(name, str) or not _DIM_NAME_RE.fullmatch(name):
            raise InputError(
                f"{here} mesh: {_show(name)} is not a valid axis name (letters, digits, _)"
            )
        axes.append((name, _positive_int(size, f"{here} mesh.{name}")))
    devices = math.prod(size for _, size in axes)
    if devices > MAX_MESH_DEVICES:
        raise InputError(
            f"{here} the mesh has {devices} devices; the sharded analysis runs on "
            f"{MAX_MESH_DEVICES}"
        )
    return tuple(axes)


def _partition(
    value: Any,
    mesh: Sequence[tuple[str, int]],
    args: Sequence[ArgSpec],
    dims: Mapping[str, int],
    here: str,
) -> tuple[Partition, ...]:
    if not isinstance(value, list):
        raise InputError(
            f"{here} 'partition' must be a list with one list per argument, got {_type(value)}"
        )
    if len(value) != len(args):
        raise InputError(
            f"{here} 'partition' has {len(value)} entries but the workload has {len(args)} args"
        )
    sizes = dict(mesh)
    out: list[Partition] = []
    for position, (entry, arg) in enumerate(zip(value, args, strict=True)):
        at = f"{here} partition[{position}]:"
        shape = arg.resolve(dims)
        axes = _axes(entry, sizes, at)
        if len(axes) != len(shape):
            raise InputError(
                f"{at} has {len(axes)} entries but args[{position}] has {len(shape)} dimensions"
            )
        for dim, (axis, size) in enumerate(zip(axes, shape, strict=True)):
            if axis and size % sizes[axis]:
                raise InputError(
                    f"{at} dimension {dim} of args[{position}] ({size} at the declared dims) "
                    f"is not divisible by mesh axis {_show(axis)} ({sizes[axis]})"
                )
        out.append(axes)
    return tuple(out)


def _axes(value: Any, sizes: Mapping[str, int], at: str) -> Partition:
    """One partition list: a mesh axis name or "" per dimension, no axis twice."""
    if not isinstance(value, list):
        raise InputError(
            f'{at} expected a list with one mesh axis name or "" per dimension, got {_type(value)}'
        )
    seen: set[str] = set()
    for axis in value:
        if not isinstance(axis, str):
            raise InputError(
                f'{at} entries must be mesh axis names or "" (not sharded), got {_type(axis)}'
            )
        if axis and axis not in sizes:
            raise InputError(
                f"{at} unknown axis {_show(axis)} (mesh axes: {', '.join(sizes)})"
            )
        if axis and axis in seen:
            raise InputError(f"{at} axis {_show(axis)} shards more than one dimension")
        seen.add(axis)
    return tuple(value)


def _tolerance(value: Any, key: str, here: str) -> float | None:
    """A workload's rtol/atol, None where not given (the result dtype's default applies)."""
    if value is None:
        return None
    why = tolerances.problem(value)
    if why is not None:
        raise InputError(f"{here} '{key}' {why}")
    return float(value)


def _float(value: numbers.Real) -> float:
    """float(value), with integers too large for a float giving inf (rejected by the caller)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _positive_int(value: Any, what: str) -> int:
    if not _is_int(value) or not 0 < value <= MAX_DIM:
        raise InputError(f"{what}: {_show(value)} is not a positive integer (at most {MAX_DIM})")
    return int(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _present(table: Mapping[Any, Any]) -> dict[Any, Any]:
    return {k: v for k, v in table.items() if v is not None}


def _check_keys(table: Mapping[Any, Any], allowed: Sequence[str], where: str) -> None:
    for key in table:
        if key not in allowed:
            raise InputError(
                f"{where} unknown key {_show(str(key))}; allowed: {', '.join(allowed)}"
            )


_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = 60
_REPR.maxother = 60
_REPR.maxlist = 6
_REPR.maxdict = 6


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a workload, as the end of a sentence ("must be ..."), or None
    when it can. Any length and any alphabet name a workload (the report derives bounded file
    names and anchors from it); a name must be a string with some visible text, on one line
    (no control characters such as a newline or a NUL), and written as UTF-8 (no lone
    surrogate), since it is printed in the report's text."""
    if not isinstance(name, str) or not name.strip():
        return f"must be a non-empty string, got {_show(name)}"
    control = next((ch for ch in name if unicodedata.category(ch) == "Cc"), None)
    if control is not None:
        return (f"must be one line of text without control characters, got {_show(name)} "
                f"(it holds U+{ord(control):04X})")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"must be valid Unicode text, got {_show(name)} (a lone surrogate "
                f"U+{ord(name[exc.start]):04X})")
    return None


def _show(value: Any) -> str:
    """A short repr for messages: bounded in length and nesting, whatever the user wrote."""
    return _REPR.repr(value)


def _type(value: Any) -> str:
    return {
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "a boolean",
        list: "a list",
        dict: "a table",
        type(None): "nothing",
    }.get(type(value), type(value).__name__)


# ---------------------------------------------------------------------------------------------
# Importing


def import_callable(
    path: str, *, config_name: str, workload: str, base_dir: str | os.PathLike[str] | None = None
) -> Callable[..., Any]:
    """Import ``package.module:attr`` and return it; it must be callable.

    ``base_dir`` (the config file's folder) and the current directory are put at the front of
    ``sys.path`` first (and left there, so the module's own later imports work). Any failure,
    including an exception raised while the module runs, becomes an InputError such as
    ``"workloads.toml: workload 'my matmul': cannot import 'examples.nope:f': No module named
    'examples.nope'"``.
    """
    here = f"{config_name}: workload {_show(workload)}:"
    if not isinstance(path, str) or not _IMPORT_PATH_RE.fullmatch(path):
        raise InputError(f"{here} {_show(path)} is not an import path 'package.module:function'")
    for folder in (Path.cwd(), None if base_dir is None else Path(base_dir)):
        if folder is not None and str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    module_name, attribute = path.split(":", 1)
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise InputError(f"{here} cannot import {_show(path)}: {exc}") from None
    except (Exception, SystemExit) as exc:
        raise InputError(
            f"{here} cannot import {_show(path)}: {type(exc).__name__} while importing "
            f"{module_name}: {exc}"
        ) from None
    for depth, part in enumerate(attribute.split(".")):
        try:
            target = getattr(target, part)
        except AttributeError:
            owner = ".".join([module_name, *attribute.split(".")[:depth]])
            raise InputError(
                f"{here} cannot import {_show(path)}: {owner} has no {_show(part)}"
            ) from None
    if not callable(target):
        raise InputError(f"{here} {_show(path)} is {_type(target)}, not a function")
    return target  # type: ignore[no-any-return]
