"""Your own workloads: from a TOML config or from Python (imports jax).

A user's function has no hand-written analytic model: the report says "no analytic model" and
shows, labelled as such, the minimum traffic of reading every argument and writing every result
once. Its work is our own count of its StableHLO and XLA's estimate, shown as what they are.

Python API::

    import jax.numpy as jnp
    import roofline_report

    record = roofline_report.analyze(lambda x, w: jnp.tanh(x @ w), x, w, name="my layer")
    roofline_report.analyze(train_step, params, opt_state, batch=batch)   # pytrees, keywords
    roofline_report.analyze(f, x, w, out="my-report")   # also writes a report of this program

A TOML workload either declares ``function`` and ``args`` (random inputs of those shapes) or
names a ``setup`` function that returns the function and its example arguments (see
:func:`workload_from_setup`).
"""

from __future__ import annotations

import contextlib
import reprlib
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from roofline_report import tolerances
from roofline_report.api import AnalyzeResult, result_of
from roofline_report.config import Config, WorkloadSpec, name_problem
from roofline_report.errors import InputError, reason
from roofline_report.observe.program import Program, function_name, make_program
from roofline_report.observe.workloads import Dims, Workload, no_analytic_model


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
    The dims are those the workload declares for this backend (``backend_dims``), where it
    declares some.
    """
    spec = spec.on_backend(jax.default_backend())
    if spec.setup is not None:
        return workload_from_setup(config, spec)
    fn = config.load_function(spec)
    reference = config.load_reference(spec)
    seed = zlib.crc32(spec.name.encode("utf-8"))
    dtypes = tuple(arg.dtype for arg in spec.args)

    def build(d: Dims) -> tuple[np.ndarray[Any, Any], ...]:
        return _random_inputs(spec.resolve_shapes(d), seed)

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
        analytic=no_analytic_model,
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
        name = function_name(fn)
        return name if name.isidentifier() else "workload"
    why = name_problem(name)
    if why is not None:
        raise InputError(f"{_API} name= {why}")
    return name


def program_tolerance(p: Program, where: str) -> tolerances.Tolerance:
    """The default check tolerance for a program's result: its dtype's (the loosest of several
    leaves). A program that cannot be traced at its arguments is an InputError."""
    args, kwargs = p.device_inputs()
    try:
        result = jax.eval_shape(p.jitted(), *args, **kwargs)
    except InputError:
        raise
    except Exception as exc:
        raise InputError(f"{where} {p.name} cannot be traced at these arguments: "
                         f"{reason(exc)}") from exc
    names = [np.dtype(leaf.dtype).name for leaf in jax.tree_util.tree_leaves(result)]
    return tolerances.for_dtypes(names)


def workload_from_program(p: Program, *, where: str, description: str,
                          reference: Callable[..., Any] | None, rtol: float | None,
                          atol: float | None, dims: Mapping[str, int] | None = None) -> Workload:
    """A Workload measuring ``p`` at its own arguments; tolerances left out are the result
    dtype's."""
    if rtol is None or atol is None:
        default = program_tolerance(p, where)
        rtol = default.rtol if rtol is None else rtol
        atol = default.atol if atol is None else atol
    dtypes = [np.dtype(leaf.dtype).name for leaf in
              jax.tree_util.tree_leaves((p.args, dict(p.kwargs)))
              if hasattr(leaf, "dtype") and hasattr(leaf, "shape")]
    return Workload(name=f"user:{p.name}", title=p.name, fn=p.fn, build=_no_build,
                    reference=reference, analytic=no_analytic_model, dims=dict(dims or {}),
                    dtype=dtypes[0] if dtypes else "float32", description=description,
                    rtol=rtol, atol=atol, user=True, program=p)


def _no_build(_d: Dims) -> tuple[np.ndarray[Any, Any], ...]:
    raise RuntimeError("a program workload brings its own arguments")


@contextlib.contextmanager
def host_default_device() -> Iterator[None]:
    """Where the default backend is an accelerator, the host's CPU as the default device while
    a setup function runs; otherwise nothing changes.

    A setup's parameter initialisation is many small eager operations, and an accelerator
    compiles each on its first use: on a TPU v5e fifteen held-out setups spent about 160 s
    compiling them, against 21 s on a 2-core CPU. Run on the host, the arrays they make are
    uncommitted and go to the accelerator once, before the program is measured
    (:func:`roofline_report.observe.program.on_default_device`); arrays the function closes
    over are embedded in its compiled program as constants either way. Arrays the setup puts
    on a device itself stay there.
    """
    if jax.default_backend() == "cpu":
        yield
        return
    try:
        host = jax.devices("cpu")[0]
    except RuntimeError:  # the CPU backend is not loaded (JAX_PLATFORMS names no cpu)
        yield
        return
    with jax.default_device(host):
        yield


def workload_from_setup(config: Config, spec: WorkloadSpec) -> Workload:
    """A Workload for a ``setup = "module:function"`` table: the setup function, called with
    the workload's ``dims`` as keyword arguments (or none), returns ``(fn, args)`` or
    ``(fn, args, kwargs)``: the function and its example arguments (arrays or pytrees of
    arrays). Any problem is one InputError naming the file and the workload."""
    here = f"{config.source}: workload {spec.name!r}:"
    setup = config.load_setup(spec)
    reference = config.load_reference(spec)
    try:
        with host_default_device():
            made = setup(**spec.dims)
    except Exception as exc:
        raise InputError(f"{here} setup {spec.setup} raised {reason(exc)}") from exc
    if not isinstance(made, tuple) or len(made) not in (2, 3):
        got = f"a tuple of {len(made)}" if isinstance(made, tuple) else type(made).__name__
        raise InputError(f"{here} setup {spec.setup} must return (fn, args) or "
                         f"(fn, args, kwargs), got {got}")
    fn, args = made[0], made[1]
    kwargs = made[2] if len(made) == 3 else {}
    if not callable(fn):
        raise InputError(f"{here} setup {spec.setup} returned {type(fn).__name__} as the "
                         "function; the first item must be callable")
    if not isinstance(args, tuple | list):
        raise InputError(f"{here} setup {spec.setup} returned {type(args).__name__} as the "
                         "arguments; the second item must be a tuple or list of the "
                         "function's positional arguments")
    if not isinstance(kwargs, Mapping) or not all(isinstance(k, str) for k in kwargs):
        raise InputError(f"{here} setup {spec.setup} returned {type(kwargs).__name__} as the "
                         "keyword arguments; the third item must be a dict of name: value")
    program = make_program(fn, tuple(args), dict(kwargs), name=spec.name, where=here)
    return workload_from_program(
        program, where=here, description=f"Made in {config.source} by {spec.setup}.",
        reference=reference, rtol=spec.rtol, atol=spec.atol, dims=spec.dims)


def workload_from_arrays(fn: Callable[..., Any], args: Sequence[Any], *, name: str | None = None,
                         reference: Callable[..., Any] | None = None,
                         rtol: float | None = None, atol: float | None = None,
                         kwargs: Mapping[str, Any] | None = None,
                         static_argnums: int | Sequence[int] | None = None,
                         static_argnames: str | Sequence[str] | None = None) -> Workload:
    """A Workload for ``fn`` at the given example arguments: arrays, ShapeDtypeStructs or
    pytrees of them, keyword arguments and static arguments (see
    :mod:`roofline_report.observe.program`).

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
    program = make_program(fn, tuple(args), dict(kwargs or {}), name=label, where=_API,
                           static_argnums=static_argnums, static_argnames=static_argnames)
    return workload_from_program(program, where=_API, description="Analysed through the "
                                 "Python API.", reference=reference, rtol=checked_rtol,
                                 atol=checked_atol)


def analyze(fn: Callable[..., Any], *args: Any, name: str | None = None,
            reference: Callable[..., Any] | None = None, quick: bool = True,
            out: str | Path | None = None, ceilings: bool = False,
            rtol: float | None = None, atol: float | None = None,
            static_argnums: int | Sequence[int] | None = None,
            static_argnames: str | Sequence[str] | None = None,
            teaching: bool = False, fn_kwargs: Mapping[str, Any] | None = None,
            remeasure: bool = False, **kwargs: Any) -> AnalyzeResult:
    """Lower, check (if ``reference`` is given), account and time ``fn`` at ``args`` and
    ``kwargs``.

    The arguments are arrays or pytrees of arrays (dicts, lists, tuples, NamedTuples,
    registered dataclasses, Flax NNX states, Equinox modules, optax states); ``fn`` may be
    already jitted. ``static_argnums``/``static_argnames`` name arguments held as Python values
    (not traced), as in ``jax.jit``. Keyword arguments whose names clash with this function's
    own go in ``fn_kwargs``.

    Returns an :class:`~roofline_report.api.AnalyzeResult`: the program's counted work and
    bytes, measured time, the model's prediction and miss, its share of the hardware roof at
    its intensity, what binds it and its levers, and every kernel with the same
    (``.kernels``); ``.record`` is the program's record as
    results.json stores it and ``.to_dict()`` the plain form. With ``out``, also writes a
    report folder whose subject is this program; ``teaching=True`` adds the seed's teaching
    sections, the catalog and the lab notebook (measured too: minutes). A destination that
    must not be replaced is refused before anything is measured.

    ``ceilings=True`` adds this machine's measured ceilings, so that predictions are priced on
    them (without, on the assumed budgets: ``.roofs`` says which). They are measured once per
    machine and software and then reused from the ceilings cache (see
    :mod:`roofline_report.observe.ceilings.cache`; the report says when they were measured);
    ``remeasure=True`` measures them again and replaces the cached ones.

    The check passes when ``|result - reference| <= atol + rtol * |reference|`` for every leaf
    of the result; ``reference`` is called with the same arguments as float64 NumPy arrays;
    ``rtol``/``atol`` None take the default for the dtype of ``fn``'s result
    (:mod:`roofline_report.tolerances`: 2e-5 for float32, 3e-2 for bfloat16, ...).

    Bad input raises :class:`~roofline_report.errors.InputError` with one line naming the
    parameter, such as ``analyze(): argument 1 is int, not an array; ...``.
    """
    from roofline_report import output
    from roofline_report.observe import run as measure

    if not isinstance(teaching, bool):
        raise InputError(f"{_API} teaching= must be True or False, got {reprlib.repr(teaching)}")
    if not isinstance(remeasure, bool):
        raise InputError(f"{_API} remeasure= must be True or False, got "
                         f"{reprlib.repr(remeasure)}")
    if remeasure and not ceilings:
        raise InputError(f"{_API} remeasure=True measures the ceilings again: it needs "
                         "ceilings=True")
    if fn_kwargs is not None and not isinstance(fn_kwargs, Mapping):
        raise InputError(f"{_API} fn_kwargs= must be a dict, got {type(fn_kwargs).__name__}")
    all_kwargs = {**dict(fn_kwargs or {}), **kwargs}
    if out is not None:
        if not isinstance(out, str | Path) or not str(out):
            raise InputError(f"{_API} out= must be a folder path (str or pathlib.Path), got "
                             f"{type(out).__name__} {reprlib.repr(out)}")
        output.check_destination(Path(out), label=f"{_API} out={str(out)!r}")
    w = workload_from_arrays(fn, args, name=name, reference=reference, rtol=rtol, atol=atol,
                             kwargs=all_kwargs, static_argnums=static_argnums,
                             static_argnames=static_argnames)
    options = measure.RunOptions(quick=quick, ceilings=ceilings, sweeps=False, sharding=False,
                                 experiments=teaching, origin="python", builtin=teaching,
                                 teaching=teaching, user_workloads=(w,),
                                 remeasure=remeasure)
    data = measure.run(options)
    if out is not None:
        output.write_results(Path(out), data, label=f"{_API} out={str(out)!r}")
    return result_of(data, str(data["workloads"][-1]["name"]))
