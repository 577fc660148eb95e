"""Your own workloads: from a TOML config or from Python (imports jax).

A user's function has no hand-written analytic model, so its work is our own count from its
StableHLO (loops multiplied out, transcendentals apart) and its minimum traffic the bytes of its
arguments and results: both exact for the program as lowered, hence kind ``analytic``.

Python API::

    import jax.numpy as jnp
    import roofline_report

    record = roofline_report.analyze(lambda x, w: jnp.tanh(x @ w), x, w, name="my layer")
    roofline_report.analyze(f, x, w, out="my-report")   # also writes a full report folder
"""

from __future__ import annotations

import reprlib
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from roofline_report import tolerances
from roofline_report.config import Config, WorkloadSpec
from roofline_report.errors import InputError
from roofline_report.workloads import Dims, Workload


def counted_model(fn: Callable[..., Any], shapes: Sequence[tuple[tuple[int, ...], str]]
                  ) -> dict[str, int]:
    """Work and minimum traffic of ``fn`` at these shapes, from our own StableHLO count."""
    from roofline_report import lowering
    from roofline_report.hlo import count_stablehlo

    specs = [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in shapes]  # type: ignore[no-untyped-call]
    lowered = jax.jit(fn).lower(*specs)
    count = count_stablehlo(lowering.stablehlo_module(lowered))
    return {"flops": int(count["flops"]), "transcendentals": int(count["transcendentals"]),
            "minimum_bytes": int(count["minimum_bytes"])}


def _random_inputs(shapes: Sequence[tuple[tuple[int, ...], str]], seed: int
                   ) -> tuple[np.ndarray[Any, Any], ...]:
    rng = np.random.default_rng(seed)
    out = []
    for shape, dtype in shapes:
        if dtype == "bool":
            out.append(rng.integers(0, 2, size=shape).astype(bool))
        elif dtype.startswith(("int", "uint")):
            out.append(rng.integers(0, 8, size=shape).astype(np.float64))
        else:
            out.append(rng.standard_normal(shape))
    return tuple(out)


def result_tolerance(fn: Callable[..., Any], shapes: Sequence[tuple[tuple[int, ...], str]]
                     ) -> tolerances.Tolerance:
    """The default check tolerance for ``fn``'s result at these shapes: its dtype's (the loosest
    of several results). If ``fn`` cannot be traced here, the dtype the arguments promote to
    stands in for it; the failure itself is reported when the workload is measured."""
    specs = [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in shapes]  # type: ignore[no-untyped-call]
    try:
        result = jax.eval_shape(fn, *specs)
        names = [np.dtype(leaf.dtype).name for leaf in jax.tree_util.tree_leaves(result)]
    except Exception:
        names = [np.dtype(jax.numpy.result_type(*(d for _, d in shapes))).name] if shapes else []
    return tolerances.for_dtypes(names)


def workload_from_spec(config: Config, spec: WorkloadSpec) -> Workload:
    """A Workload for one ``[[workload]]`` of a config; imports fail with InputError.

    Tolerances the config leaves out are the result dtype's defaults (at the declared dims).
    """
    fn = config.load_function(spec)
    reference = config.load_reference(spec)
    seed = zlib.crc32(spec.name.encode("utf-8"))
    dtypes = tuple(arg.dtype for arg in spec.args)

    def build(d: Dims) -> tuple[np.ndarray[Any, Any], ...]:
        return _random_inputs(spec.resolve_shapes(d), seed)

    def analytic(d: Dims, _itemsize: int) -> dict[str, int]:
        return counted_model(fn, spec.resolve_shapes(d))

    sweep: dict[str, tuple[int, ...]] = {}
    if spec.sweep:
        points = spec.sweep_points()
        sweep = {k: tuple(p[k] for p in points) for k in sorted(spec.sweep)}
    rtol, atol = spec.rtol, spec.atol
    if rtol is None or atol is None:
        default = result_tolerance(fn, spec.resolve_shapes())
        rtol = default.rtol if rtol is None else rtol
        atol = default.atol if atol is None else atol
    return Workload(
        name=f"user:{spec.name}",
        title=spec.name,
        fn=fn,
        build=build,
        reference=reference,
        analytic=analytic,
        dims=dict(spec.dims),
        dtype=dtypes[0] if dtypes else "float32",
        description=f"Declared in {config.source} as {spec.function}.",
        rtol=rtol,
        atol=atol,
        sweep=sweep,
        user=True,
        arg_dtypes=dtypes,
    )


def workloads_from_config(config: Config) -> list[Workload]:
    return [workload_from_spec(config, spec) for spec in config.workloads]


_API = "analyze():"


def _check_tolerance(value: float | None, key: str, label: str) -> float | None:
    if value is None:
        return None
    why = tolerances.problem(value)
    if why is not None:
        raise InputError(f"{_API} {key} {why} (workload {label!r})")
    return float(value)


def _label(fn: Callable[..., Any], name: str | None) -> str:
    if name is None:
        return str(getattr(fn, "__name__", None) or "workload")
    if not isinstance(name, str) or not name.strip():
        raise InputError(f"{_API} name= must be a non-empty string, got {reprlib.repr(name)}")
    return name


def _arg_dtype(i: int, a: Any) -> tuple[tuple[int, ...], str]:
    """(shape, dtype name) of positional argument ``i``; InputError if it is not an array."""
    shape, dtype = getattr(a, "shape", None), getattr(a, "dtype", None)
    if shape is None or dtype is None:
        raise InputError(f"{_API} argument {i} is {type(a).__name__}, not an array; pass arrays "
                         "(NumPy or jax) or jax.ShapeDtypeStruct")
    try:
        np_dtype = np.dtype(dtype)
        dims = tuple(int(s) for s in shape)
    except (TypeError, ValueError):
        raise InputError(f"{_API} argument {i} has an unusable shape or dtype "
                         f"({reprlib.repr(shape)}, {reprlib.repr(dtype)})") from None
    if np_dtype.kind in "OUSMmV" and np_dtype.name not in tolerances.DEFAULTS:
        raise InputError(f"{_API} argument {i} has dtype {np_dtype.name}; pass numeric arrays")
    return dims, np_dtype.name


def workload_from_arrays(fn: Callable[..., Any], args: Sequence[Any], *, name: str | None = None,
                         reference: Callable[..., Any] | None = None,
                         rtol: float | None = None, atol: float | None = None) -> Workload:
    """A Workload for ``fn`` at the given example arguments (arrays or ShapeDtypeStructs).

    ``rtol``/``atol`` None: the default for the dtype of ``fn``'s result (roofline_report.
    tolerances). Bad input raises an InputError that speaks of :func:`analyze`'s parameters.
    """
    if not callable(fn):
        raise InputError(f"{_API} fn (the first argument) must be callable, got "
                         f"{type(fn).__name__} {reprlib.repr(fn)}")
    label = _label(fn, name)
    if reference is not None and not callable(reference):
        raise InputError(f"{_API} reference= must be callable (a NumPy function of the same "
                         f"arguments), got {type(reference).__name__}")
    checked_rtol = _check_tolerance(rtol, "rtol", label)
    checked_atol = _check_tolerance(atol, "atol", label)
    shapes: list[tuple[tuple[int, ...], str]] = []
    host: list[np.ndarray[Any, Any] | None] = []
    for i, a in enumerate(args):
        shapes.append(_arg_dtype(i, a))
        host.append(_host_copy(a) if hasattr(a, "__array__") else None)
    seed = zlib.crc32(label.encode("utf-8"))

    def build(_d: Dims) -> tuple[np.ndarray[Any, Any], ...]:
        if all(h is not None for h in host):
            return tuple(h for h in host if h is not None)
        return _random_inputs(shapes, seed)

    def analytic(_d: Dims, _s: int) -> dict[str, int]:
        return counted_model(fn, shapes)

    if checked_rtol is None or checked_atol is None:
        default = result_tolerance(fn, shapes)
        checked_rtol = default.rtol if checked_rtol is None else checked_rtol
        checked_atol = default.atol if checked_atol is None else checked_atol
    dtypes = tuple(d for _, d in shapes)
    return Workload(name=f"user:{label}", title=label, fn=fn, build=build, reference=reference,
                    analytic=analytic, dims={}, dtype=dtypes[0] if dtypes else "float32",
                    description="Analysed through the Python API.", rtol=checked_rtol,
                    atol=checked_atol, user=True, arg_dtypes=dtypes)


def _host_copy(a: Any) -> np.ndarray[Any, Any]:
    array = np.asarray(a)
    return array.astype(np.complex128 if np.iscomplexobj(array) else np.float64)


def analyze(fn: Callable[..., Any], *args: Any, name: str | None = None,
            reference: Callable[..., Any] | None = None, quick: bool = True,
            out: str | Path | None = None, ceilings: bool = False,
            rtol: float | None = None, atol: float | None = None) -> dict[str, Any]:
    """Lower, check (if ``reference`` is given), account and time ``fn`` at ``args``.

    Returns the workload's record as stored in results.json. With ``out``, also writes a full
    report folder for this workload (the seed's model included), like ``generate.py`` does; a
    destination that must not be replaced is refused before anything is measured.

    The check passes when ``|result - reference| <= atol + rtol * |reference|`` everywhere;
    ``rtol``/``atol`` None take the default for the dtype of ``fn``'s result
    (:mod:`roofline_report.tolerances`: 2e-5 for float32, 3e-2 for bfloat16, ...).

    Bad input raises :class:`~roofline_report.errors.InputError` with one line naming the
    parameter, such as ``analyze(): argument 1 is int, not an array; ...``.
    """
    from roofline_report import measure, output

    w = workload_from_arrays(fn, args, name=name, reference=reference, rtol=rtol, atol=atol)
    if out is None:
        return measure.measure_workload(w, quick=quick, skips=measure.Skips())
    if not isinstance(out, str | Path) or not str(out):
        raise InputError(f"{_API} out= must be a folder path (str or pathlib.Path), got "
                         f"{type(out).__name__} {reprlib.repr(out)}")
    destination = Path(out)
    label = f"{_API} out={str(out)!r}"
    output.check_destination(destination, label=label)
    options = measure.RunOptions(quick=quick, ceilings=ceilings, sweeps=False, sharding=False,
                                 origin="python",
                                 builtin=False, user_workloads=(w,))
    data = measure.run(options)
    output.write_results(destination, data, label=label)
    record: dict[str, Any] = data["workloads"][0]
    return record
