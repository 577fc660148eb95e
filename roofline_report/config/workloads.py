"""One ``[[workload]]`` table: a function with declared arguments (dims, args, sweep; a mesh
for a sharded one, read by :mod:`roofline_report.config.sharded`), or a setup function that
makes the function and its arguments."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roofline_report import tolerances
from roofline_report.config.sharded import read_sharding
from roofline_report.config.spec import DTYPES, MAX_SWEEP_POINTS, ArgSpec, DimRef, WorkloadSpec
from roofline_report.config.values import (
    DIM_NAME_RE,
    IMPORT_PATH_RE,
    attribute_name,
    check_keys,
    import_path,
    name_problem,
    positive_int,
    present,
    show,
    type_name,
)
from roofline_report.errors import InputError

_WORKLOAD_KEYS = (
    "name", "function", "dims", "args", "sweep", "reference", "rtol", "atol",
    "mesh", "partition", "out_partition", "setup", "backend_dims",
)  # fmt: skip
#: The backends a workload may size itself for (``backend_dims``): jax's platform names, a
#: GPU's under one name whatever its vendor.
BACKEND_NAMES = ("cpu", "gpu", "tpu")
_ARG_KEYS = ("shape", "dtype")


def read_workload(table: Any, index: int, where: str) -> WorkloadSpec:
    """The ``index``-th (from 1) ``[[workload]]`` table, validated; ``where`` names the file."""
    if not isinstance(table, Mapping):
        raise InputError(f"{where} workload #{index}: expected a table, got {type_name(table)}")
    table = present(table)
    label = _workload_label(table, index)
    here = f"{where} workload {label}:"
    check_keys(table, _WORKLOAD_KEYS, here)
    if table.get("setup") is not None:
        return _setup_workload(table, here)

    function = table.get("function")
    if function is None:
        raise InputError(f"{here} missing 'function' (an import path such as 'module:function') "
                         "or 'setup' (one that returns the function and its arguments)")
    function = import_path(function, "function", here)
    reference, name = _reference_and_name(table, function, here)

    dims = _dims(table.get("dims"), here)
    args = _args(table.get("args"), dims, here)
    sweep = _sweep(table.get("sweep"), dims, here)
    mesh, partition, out_partition = read_sharding(table, args, dims, sweep, here)
    by_backend = _backend_dims(table.get("backend_dims"), dims, here)
    if by_backend and mesh is not None:
        raise InputError(f"{here} 'backend_dims' cannot be used with 'mesh' (a sharded "
                         "workload is analysed on emulated CPU devices at its declared dims)")
    return WorkloadSpec(
        name=name,
        function=function,
        dims=dims,
        backend_dims=by_backend,
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
    setup = import_path(table["setup"], "setup", here)
    for key in ("function", "args", "sweep", "mesh", "partition", "out_partition"):
        if key in table:
            raise InputError(f"{here} '{key}' cannot be used with 'setup' (the setup function "
                             "returns the function and its arguments)")
    reference, name = _reference_and_name(table, setup, here)
    dims = _dims(table.get("dims"), here)
    return WorkloadSpec(
        name=name,
        function="",
        dims=dims,
        backend_dims=_backend_dims(table.get("backend_dims"), dims, here),
        args=(),
        reference=reference,
        rtol=_tolerance(table.get("rtol"), "rtol", here),
        atol=_tolerance(table.get("atol"), "atol", here),
        setup=setup,
    )


def _reference_and_name(table: Mapping[str, Any], path: str, here: str) -> tuple[str | None, str]:
    """The table's ``reference`` (None if not given) and ``name``, by default the name of the
    attribute ``path`` (the function or setup) imports."""
    reference = table.get("reference")
    if reference is not None:
        reference = import_path(reference, "reference", here)
    name = table.get("name")
    if name is None:
        name = attribute_name(path)
    elif (why := name_problem(name)) is not None:
        raise InputError(f"{here} 'name' {why}")
    return reference, name


def _workload_label(table: Mapping[str, Any], index: int) -> str:
    name = table.get("name")
    if isinstance(name, str) and name.strip():
        return show(name)
    for key in ("function", "setup"):
        function = table.get(key)
        if isinstance(function, str) and IMPORT_PATH_RE.fullmatch(function):
            return show(attribute_name(function))
    return f"#{index}"


def _dims(value: Any, here: str) -> dict[str, int]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"{here} 'dims' must be a table of name = positive integer")
    dims: dict[str, int] = {}
    for name, size in present(value).items():
        if not isinstance(name, str) or not DIM_NAME_RE.fullmatch(name):
            raise InputError(f"{here} dims: {show(name)} is not a valid name (letters, digits, _)")
        dims[name] = positive_int(size, f"{here} dims.{name}")
    return dict(sorted(dims.items()))


def _backend_dims(value: Any, dims: Mapping[str, int], here: str
                  ) -> dict[str, dict[str, int]]:
    """``backend_dims = { tpu = { batch = 1024 }, gpu = { ... } }``: dims that replace the
    declared ones on that backend (a program sized so that a call takes milliseconds on a CPU
    measures nothing but dispatch on an accelerator). Each name must be one of ``dims``."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not value:
        raise InputError(f"{here} 'backend_dims' must be a table of backend = {{ name = size }} "
                         f"(backends: {', '.join(BACKEND_NAMES)})")
    out: dict[str, dict[str, int]] = {}
    for backend, table in present(value).items():
        if backend not in BACKEND_NAMES:
            raise InputError(f"{here} backend_dims: {show(backend)} is not a backend "
                             f"(one of {', '.join(BACKEND_NAMES)})")
        at = f"{here} backend_dims.{backend}"
        if not isinstance(table, Mapping) or not table:
            raise InputError(f"{at} must be a table of name = positive integer")
        sized: dict[str, int] = {}
        for name, size in present(table).items():
            if name not in dims:
                defined = ", ".join(dims) or "none"
                raise InputError(f"{at}: {show(name)} is not in dims (defined: {defined}); "
                                 "give it its default size in dims")
            sized[name] = positive_int(size, f"{at}.{name}")
        out[backend] = dict(sorted(sized.items()))
    return dict(sorted(out.items()))


def _args(value: Any, dims: Mapping[str, int], here: str) -> tuple[ArgSpec, ...]:
    if value is None:
        raise InputError(f"{here} missing 'args' (a list of {{ shape = [...], dtype = ... }})")
    if not isinstance(value, list):
        raise InputError(f"{here} 'args' must be a list of tables, got {type_name(value)}")
    specs: list[ArgSpec] = []
    for position, arg in enumerate(value):
        at = f"{here} args[{position}]:"
        if not isinstance(arg, Mapping):
            raise InputError(f"{at} expected a table {{ shape = [...], dtype = ... }}")
        arg = present(arg)
        check_keys(arg, _ARG_KEYS, at)
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
                        f"{at} shape entry {show(entry)} is not defined in dims "
                        f"(defined: {defined})"
                    )
                entries.append(entry)
            else:
                entries.append(positive_int(entry, f"{at} shape entry"))
        dtype = arg["dtype"]
        if not isinstance(dtype, str) or dtype not in DTYPES:
            raise InputError(f"{at} unknown dtype {show(dtype)}; allowed: {', '.join(DTYPES)}")
        specs.append(ArgSpec(tuple(entries), dtype))
    return tuple(specs)


def _sweep(value: Any, dims: Mapping[str, int], here: str) -> dict[str, tuple[int, ...]] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InputError(f"{here} 'sweep' must be a table of name = [values]")
    value = present(value)
    if not value:
        raise InputError(f"{here} 'sweep' is empty; remove it or give values for a dim")
    sweep: dict[str, tuple[int, ...]] = {}
    count = 1
    for name, values in value.items():
        if name not in dims:
            defined = ", ".join(dims) or "none"
            raise InputError(
                f"{here} sweep name {show(name)} is not in dims (defined: {defined}); "
                "give it a default value in dims"
            )
        if not isinstance(values, list) or not values:
            raise InputError(f"{here} sweep.{name} must be a non-empty list of positive integers")
        ints = sorted({positive_int(v, f"{here} sweep.{name}") for v in values})
        sweep[name] = tuple(ints)
        count *= len(ints)
    if count > MAX_SWEEP_POINTS:
        raise InputError(
            f"{here} the sweep has {count} points; at most {MAX_SWEEP_POINTS} are allowed"
        )
    return dict(sorted(sweep.items()))


def _tolerance(value: Any, key: str, here: str) -> float | None:
    """A workload's rtol/atol, None where not given (the result dtype's default applies)."""
    if value is None:
        return None
    why = tolerances.problem(value)
    if why is not None:
        raise InputError(f"{here} '{key}' {why}")
    return float(value)
