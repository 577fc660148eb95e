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

import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

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


def workload_from_spec(config: Config, spec: WorkloadSpec) -> Workload:
    """A Workload for one ``[[workload]]`` of a config; imports fail with InputError."""
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
        rtol=spec.rtol if spec.rtol is not None else 2e-5,
        atol=spec.atol if spec.atol is not None else 2e-5,
        sweep=sweep,
        user=True,
        arg_dtypes=dtypes,
    )


def workloads_from_config(config: Config) -> list[Workload]:
    return [workload_from_spec(config, spec) for spec in config.workloads]


def workload_from_arrays(fn: Callable[..., Any], args: Sequence[Any], *, name: str | None = None,
                         reference: Callable[..., Any] | None = None,
                         rtol: float = 2e-5, atol: float = 2e-5) -> Workload:
    """A Workload for ``fn`` at the given example arguments (arrays or ShapeDtypeStructs)."""
    if not callable(fn):
        raise InputError(f"analyze: {fn!r} is not callable")
    shapes: list[tuple[tuple[int, ...], str]] = []
    host: list[np.ndarray[Any, Any] | None] = []
    for i, a in enumerate(args):
        shape, dtype = getattr(a, "shape", None), getattr(a, "dtype", None)
        if shape is None or dtype is None:
            raise InputError(f"analyze: argument {i} has no shape/dtype (pass arrays)")
        shapes.append((tuple(int(s) for s in shape), str(np.dtype(dtype).name
                                                          if dtype != jax.numpy.bfloat16
                                                          else "bfloat16")))
        host.append(np.asarray(a, dtype=np.float64) if hasattr(a, "__array__") else None)
    label = str(name or getattr(fn, "__name__", None) or "workload")
    seed = zlib.crc32(label.encode("utf-8"))

    def build(_d: Dims) -> tuple[np.ndarray[Any, Any], ...]:
        if all(h is not None for h in host):
            return tuple(h for h in host if h is not None)
        return _random_inputs(shapes, seed)

    def analytic(_d: Dims, _s: int) -> dict[str, int]:
        return counted_model(fn, shapes)

    dtypes = tuple(d for _, d in shapes)
    return Workload(name=f"user:{label}", title=label, fn=fn, build=build, reference=reference,
                    analytic=analytic, dims={}, dtype=dtypes[0] if dtypes else "float32",
                    description="Analysed through the Python API.", rtol=rtol, atol=atol,
                    user=True, arg_dtypes=dtypes)


def analyze(fn: Callable[..., Any], *args: Any, name: str | None = None,
            reference: Callable[..., Any] | None = None, quick: bool = True,
            out: str | Path | None = None, ceilings: bool = False) -> dict[str, Any]:
    """Lower, check (if ``reference`` is given), account and time ``fn`` at ``args``.

    Returns the workload's record as stored in results.json. With ``out``, also writes a full
    report folder for this workload (the seed's model included), like ``generate.py`` does.
    """
    from roofline_report import measure

    w = workload_from_arrays(fn, args, name=name, reference=reference)
    if out is None:
        return measure.measure_workload(w, quick=quick, skips=measure.Skips())
    options = measure.RunOptions(quick=quick, ceilings=ceilings, sweeps=False, sharding=False,
                                 builtin=False, user_workloads=(w,))
    data = measure.run(options)
    from roofline_report.cli import write

    write(Path(out), data)
    record: dict[str, Any] = data["workloads"][0]
    return record

