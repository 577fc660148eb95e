"""Any JAX program as a workload: a function, its example arguments as pytrees, keyword arguments
and static arguments (imports jax).

The arguments may be arrays or pytrees of arrays: dicts, lists, tuples, NamedTuples, dataclasses
registered with jax, Flax NNX states and graph definitions, Equinox modules, optax states. The
program is lowered through its pytrees: ``jax.jit(program).lower(*args, **kwargs)``, where
``program`` calls the user's function with every non-array part put back in place:

* static arguments (``static_argnums``/``static_argnames``, and those of a function that was
  already jitted) are held as Python values, not traced;
* leaves that are functions (an Equinox module's activation, say) are held the same way, as
  ``equinox.filter_jit`` does;
* every other leaf must be an array (NumPy, jax, or a ``jax.ShapeDtypeStruct``, given random
  values); a Python number is refused unless it is a static argument.

A function that was already jitted is unwrapped and jitted again here with the options of its own
jit that change the compiled program (:class:`JitOptions`): the buffers it donates
(``donate_argnums``/``donate_argnames``) are donated, every timed call donating its own buffers
as a loop would (:mod:`roofline_report.observe.donation`); ``keep_unused``,
``compiler_options`` and its in and out shardings are kept. What cannot be kept (layouts, a
``device``/``backend``, shardings that do not fit the arguments as given here) is recorded as not
kept (``as_written``), and the page says the program was timed without it.

:func:`argument_tree` records each argument's leaves (path, shape, dtype, bytes) and the
result's, for results.json.
"""

from __future__ import annotations

import inspect
import reprlib
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from roofline_report import tolerances
from roofline_report.errors import InputError
from roofline_report.observe import lower as lowering

#: Leaves listed per argument in results.json; the rest are counted (and their bytes summed).
MAX_LISTED_LEAVES = 4000

_NUMBERS = (bool, int, float, complex)


def _is_array(leaf: Any) -> bool:
    if isinstance(leaf, jax.ShapeDtypeStruct | jax.Array | np.ndarray | np.generic):
        return True
    return hasattr(leaf, "shape") and hasattr(leaf, "dtype") and hasattr(leaf, "__array__")


def _is_static_leaf(leaf: Any) -> bool:
    """A leaf that is held as a Python value rather than traced: a function, or a Python number
    inside an argument's pytree (an Equinox module's ``MaxPool2d.init``, a layer's ``eps``), as
    ``equinox.filter_jit`` holds them. A bare number as a whole argument is refused before
    this is asked (:func:`_check_tree`): it must be named static."""
    return not _is_array(leaf) and (callable(leaf) or isinstance(leaf, _NUMBERS))


def _none(x: Any) -> bool:
    return x is None


def is_jitted(fn: Any) -> bool:
    """True for the result of ``jax.jit`` (it can be lowered by itself)."""
    return callable(fn) and callable(getattr(fn, "lower", None)) and \
        callable(getattr(fn, "trace", None))


def _own_statics(fn: Any) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The static arguments a jitted function was made with, where jax exposes them."""
    info = getattr(fn, "_jit_info", None)
    nums = getattr(info, "static_argnums", ()) or ()
    names = getattr(info, "static_argnames", ()) or ()
    try:
        return tuple(int(i) for i in nums), tuple(str(s) for s in names)
    except (TypeError, ValueError):
        return (), ()


def _own_donated(fn: Any, names: Sequence[str]) -> frozenset[str]:
    """The arguments (by name) an already-jitted function donates, where jax exposes them."""
    info = getattr(fn, "_jit_info", None)
    nums = getattr(info, "donate_argnums", ()) or ()
    argnames = getattr(info, "donate_argnames", ()) or ()
    try:
        out = {names[int(i)] for i in nums if 0 <= int(i) < len(names)}
        return frozenset(out | {str(k) for k in argnames})
    except (TypeError, ValueError):
        return frozenset()


def _is_unspecified(x: Any) -> bool:
    return type(x).__name__ == "UnspecifiedValue"


@dataclass(frozen=True)
class JitOptions:
    """The options of a user's ``jax.jit`` (besides static and donated arguments) that change
    the compiled program, read where jax exposes them; ``not_kept`` names those given that are
    not carried over (jax's names), or ``jit_options`` when this jax does not expose them."""

    keep_unused: bool = False
    inline: bool = False
    compiler_options: tuple[tuple[str, Any], ...] = ()
    in_shardings: Any = None  # the user's, None when not given
    out_shardings: Any = None
    not_kept: tuple[str, ...] = ()

    @property
    def given(self) -> tuple[str, ...]:
        """The options given that are carried over (jax's names)."""
        names = (("keep_unused", self.keep_unused), ("inline", self.inline),
                 ("compiler_options", bool(self.compiler_options)),
                 ("in_shardings", self.in_shardings is not None),
                 ("out_shardings", self.out_shardings is not None))
        return tuple(name for name, on in names if on)


def jit_options(fn: Any) -> JitOptions:
    """The :class:`JitOptions` of an already-jitted function (none for another callable)."""
    if not is_jitted(fn):
        return JitOptions()
    info = getattr(fn, "_jit_info", None)
    if info is None:
        return JitOptions(not_kept=("jit_options",))
    not_kept: list[str] = []
    try:
        in_shardings = None
        if getattr(info, "user_specified_in_shardings", False):
            in_shardings = jax.tree_util.tree_unflatten(info.in_shardings_treedef,
                                                        info.in_shardings_leaves)
        out_leaves = tuple(getattr(info, "out_shardings_leaves", ()))
        out_shardings = None
        if out_leaves and not all(_is_unspecified(x) for x in out_leaves):
            out_shardings = jax.tree_util.tree_unflatten(info.out_shardings_treedef, out_leaves)
        for name in ("in_layouts", "out_layouts"):
            if any(x is not None for x in getattr(info, f"{name}_leaves", ()) or ()):
                not_kept.append(name)
        for name in ("device", "backend"):
            if getattr(info, name, None) is not None:
                not_kept.append(name)
        return JitOptions(
            keep_unused=bool(getattr(info, "keep_unused", False)),
            inline=bool(getattr(info, "inline", False)),
            compiler_options=tuple(getattr(info, "compiler_options_kvs", ()) or ()),
            in_shardings=in_shardings, out_shardings=out_shardings, not_kept=tuple(not_kept))
    except (AttributeError, TypeError, ValueError):
        return JitOptions(not_kept=("jit_options",))


def function_name(fn: Any) -> str:
    inner = getattr(fn, "__wrapped__", fn) if is_jitted(fn) else fn
    name = getattr(inner, "__name__", None) or getattr(fn, "__name__", None)
    return str(name) if name else type(fn).__name__


def _parameter_names(fn: Any, count: int) -> list[str]:
    """Names of the first ``count`` positional parameters (``args[i]`` where unknown)."""
    names: list[str] = []
    try:
        sig = inspect.signature(getattr(fn, "__wrapped__", fn) if is_jitted(fn) else fn)
    except (TypeError, ValueError):
        sig = None
    if sig is not None:
        for prm in sig.parameters.values():
            if prm.kind in (prm.POSITIONAL_ONLY, prm.POSITIONAL_OR_KEYWORD):
                names.append(prm.name)
            elif prm.kind is prm.VAR_POSITIONAL:
                break
    names = names[:count]
    return names + [f"args[{i}]" for i in range(len(names), count)]


@dataclass(frozen=True)
class Program:
    """A user's function at its example arguments, validated (see :func:`make_program`)."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    static_argnums: frozenset[int]
    static_argnames: frozenset[str]
    name: str
    seed: int
    donated: frozenset[str] = frozenset()  # arguments an already-jitted function donates
    options: JitOptions = JitOptions()  # the rest of an already-jitted function's options

    @property
    def parameter_names(self) -> list[str]:
        return _parameter_names(self.fn, len(self.args))

    def _split(self, args: Sequence[Any], kwargs: Mapping[str, Any]
               ) -> tuple[tuple[tuple[Any, ...], dict[str, Any]],
                          tuple[tuple[Any, ...], dict[str, Any]]]:
        """(traced part, held part) of the arguments: the traced part has None where a value
        is held, the held part None where a value is traced."""
        dyn_a: list[Any] = []
        held_a: list[Any] = []
        for i, a in enumerate(args):
            if i in self.static_argnums:
                dyn_a.append(None)
                held_a.append(a)
            else:
                dyn_a.append(jax.tree.map(lambda x: None if _is_static_leaf(x) else x, a))
                held_a.append(jax.tree.map(lambda x: x if _is_static_leaf(x) else None, a))
        dyn_k: dict[str, Any] = {}
        held_k: dict[str, Any] = {}
        for k, v in kwargs.items():
            if k in self.static_argnames:
                dyn_k[k], held_k[k] = None, v
            else:
                dyn_k[k] = jax.tree.map(lambda x: None if _is_static_leaf(x) else x, v)
                held_k[k] = jax.tree.map(lambda x: x if _is_static_leaf(x) else None, v)
        return (tuple(dyn_a), dyn_k), (tuple(held_a), held_k)

    def jitted(self, *, shardings: bool = True) -> Callable[..., Any]:
        """``jax.jit`` of a function of the traced part that calls the user's function with
        the held values put back; named like the user's function, with the options of the
        user's own jit (its in and out shardings only with ``shardings``)."""
        inner = self.fn
        if is_jitted(inner):
            inner = getattr(inner, "__wrapped__", inner)
        _, held = self._split(self.args, self.kwargs)

        def program(*args: Any, **kwargs: Any) -> Any:
            full_a, full_k = jax.tree.map(lambda d, h: h if d is None else d, (args, kwargs),
                                          held, is_leaf=_none)
            # Functions in the result (an updated Equinox module's activation) are dropped.
            return jax.tree.map(lambda x: None if _is_static_leaf(x) else x,
                                inner(*full_a, **full_k))

        program.__name__ = program.__qualname__ = self.name
        return jax.jit(program, **self._jit_keywords(shardings))

    def _jit_keywords(self, shardings: bool) -> dict[str, Any]:
        opts = self.options
        kw: dict[str, Any] = {}
        nums = tuple(i for i, name in enumerate(self.parameter_names)
                     if name in self.donated and i not in self.static_argnums)
        names = tuple(k for k in self.kwargs
                      if k in self.donated and k not in self.static_argnames)
        if nums:
            kw["donate_argnums"] = nums
        if names:
            kw["donate_argnames"] = names
        if opts.keep_unused:
            kw["keep_unused"] = True
        if opts.inline:
            kw["inline"] = True
        if opts.compiler_options:
            kw["compiler_options"] = dict(opts.compiler_options)
        if shardings and opts.in_shardings is not None:
            kw["in_shardings"] = self._in_shardings(opts.in_shardings)
        if shardings and opts.out_shardings is not None:
            kw["out_shardings"] = opts.out_shardings
        return kw

    def _in_shardings(self, given: Any) -> Any:
        """The user's in_shardings (one per traced positional argument, or one for all) laid
        over this program's positional arguments, where a static one is None."""
        if not isinstance(given, tuple | list):
            return given
        rest = iter(given)
        return tuple(None if i in self.static_argnums else next(rest, None)
                     for i in range(len(self.args)))

    def device_inputs(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The traced part on the device: arrays transferred, ShapeDtypeStructs given random
        values (deterministic), Python numbers kept."""
        rng = np.random.default_rng(self.seed)

        def put(x: Any) -> Any:
            if x is None or isinstance(x, _NUMBERS):
                return x
            if isinstance(x, jax.ShapeDtypeStruct):
                return jax.device_put(_random(rng, tuple(x.shape), np.dtype(x.dtype)))
            if isinstance(x, jax.Array):
                return x
            return jax.device_put(np.asarray(x))

        (dyn_a, dyn_k), _ = self._split(self.args, self.kwargs)
        return jax.tree.map(put, dyn_a), jax.tree.map(put, dyn_k)

    def host_inputs(self, device_args: Sequence[Any], device_kwargs: Mapping[str, Any]
                    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """What a NumPy reference is called with: the same values as float64 (complex128)
        NumPy arrays, held values in place."""

        def host(x: Any) -> Any:
            if x is None or isinstance(x, _NUMBERS):
                return x
            array = np.asarray(x)
            return array.astype(np.complex128 if np.iscomplexobj(array) else np.float64)

        _, (held_a, held_k) = self._split(self.args, self.kwargs)
        host_a, host_k = jax.tree.map(host, (tuple(device_args), dict(device_kwargs)))
        full_a, full_k = jax.tree.map(lambda d, h: h if d is None else d, (host_a, host_k),
                                      (held_a, held_k), is_leaf=_none)
        return tuple(full_a), dict(full_k)

    def lower_and_compile(self) -> tuple[lowering.Lowered, tuple[Any, ...], dict[str, Any],
                                         dict[str, Any]]:
        """(the lowered and compiled program, its positional and keyword arguments, and what
        of the user's jit was kept: :meth:`as_written`). Shardings of the user's jit that do not
        fit the arguments as given here are dropped (and named so) rather than failing."""
        args, kwargs = self.device_inputs()
        dropped: tuple[str, ...] = ()
        try:
            low = lowering.lower_and_compile_jitted(self.jitted(), args, kwargs)
        except Exception:
            sharded = tuple(x for x in self.options.given if x.endswith("_shardings"))
            if not sharded:
                raise
            low = lowering.lower_and_compile_jitted(self.jitted(shardings=False), args, kwargs)
            dropped = sharded
        return low, args, kwargs, self.as_written(dropped)

    def as_written(self, dropped: Sequence[str] = ()) -> dict[str, Any]:
        """The jit options of the user's function kept when compiling it here, and those not
        (jax's names; ``dropped`` adds some to those not kept)."""
        kept = [x for x in self.options.given if x not in dropped]
        if any(n in self.donated for n in self.parameter_names) or \
                any(k in self.donated for k in self.kwargs):
            kept.insert(0, "donation")
        if self.static_argnums or self.static_argnames:
            kept.append("static_arguments")
        return {"kept": kept, "not_kept": [*self.options.not_kept, *dropped]}

    def arguments_json(self, out_info: Any = None) -> dict[str, Any]:
        return argument_tree(self, out_info)


def _random(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype[Any]
            ) -> np.ndarray[Any, Any]:
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind in "iu":
        return rng.integers(0, 8, size=shape).astype(dtype)
    return np.asarray(rng.standard_normal(shape)).astype(dtype)


# --------------------------------------------------------------------------- validation


def _leaf_problem(leaf: Any, nested: bool = True) -> str | None:
    """Why a leaf cannot be an argument, or None; a number is a problem only as a whole
    argument (``nested`` False)."""
    if _is_static_leaf(leaf) and (nested or not isinstance(leaf, _NUMBERS)):
        return None
    if not _is_array(leaf):
        return f"is {type(leaf).__name__}, not an array"
    try:
        dtype = np.dtype(leaf.dtype)
        tuple(int(s) for s in leaf.shape)
    except (TypeError, ValueError):
        return (f"has an unusable shape or dtype ({reprlib.repr(leaf.shape)}, "
                f"{reprlib.repr(leaf.dtype)})")
    if dtype.kind in "OUSMmV" and dtype.name not in tolerances.DEFAULTS:
        return f"has dtype {dtype.name}; pass numeric arrays"
    return None


def on_default_device(x: jax.Array) -> jax.Array:
    """``x`` on the default backend's first device where it is an uncommitted array on the
    host while that backend is an accelerator (a setup run on the host, or parameters made
    there); otherwise ``x`` itself. An uncommitted host array passed to a jitted call on an
    accelerator is copied to it on every call, which the timing would count; an array the
    user placed (committed) stays where it is."""
    if x.committed or jax.default_backend() == "cpu":
        return x
    if not all(d.platform == "cpu" for d in x.devices()):
        return x
    placed: jax.Array = jax.device_put(x, jax.devices()[0])
    return placed


def _placed(leaf: Any) -> Any:
    return on_default_device(leaf) if isinstance(leaf, jax.Array) else leaf


def make_program(fn: Any, args: Sequence[Any], kwargs: Mapping[str, Any], *, name: str,
                 where: str, static_argnums: int | Sequence[int] | None = None,
                 static_argnames: str | Sequence[str] | None = None) -> Program:
    """Validate a function and its example arguments; InputError (one line, starting with
    ``where``) for anything that is not a callable with arrays or pytrees of arrays."""
    if not callable(fn):
        raise InputError(f"{where} fn (the first argument) must be callable, got "
                         f"{type(fn).__name__} {reprlib.repr(fn)}")
    nums = _static_nums(static_argnums, len(args), where)
    names = _static_names(static_argnames, kwargs, where)
    if is_jitted(fn):
        own_nums, own_names = _own_statics(fn)
        nums |= {i % len(args) for i in own_nums if -len(args) <= i < len(args)}
        names |= {k for k in own_names if k in kwargs}
    for i, a in enumerate(args):
        if i not in nums:
            _check_tree(a, f"{where} argument {i}")
    for k, v in kwargs.items():
        if k not in names:
            _check_tree(v, f"{where} keyword argument {k!r}")
    donated = (_own_donated(fn, _parameter_names(fn, len(args))) if is_jitted(fn)
               else frozenset())
    # Host arrays go to an accelerator here, once for every later use of the arguments.
    args = [a if i in nums else jax.tree.map(_placed, a) for i, a in enumerate(args)]
    kwargs = {k: v if k in names else jax.tree.map(_placed, v) for k, v in kwargs.items()}
    return Program(fn, tuple(args), dict(kwargs), frozenset(nums), frozenset(names), name,
                   zlib.crc32(name.encode("utf-8")), donated, jit_options(fn))


def _check_tree(value: Any, what: str) -> None:
    try:
        flat, _ = jax.tree_util.tree_flatten_with_path(value)
    except Exception as exc:
        raise InputError(f"{what} cannot be flattened as a pytree: {type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
    for path, leaf in flat:
        why = _leaf_problem(leaf, nested=bool(path))
        if why is not None:
            at = f" at {jax.tree_util.keystr(path)}" if path else ""
            raise InputError(f"{what}{at} {why}; pass arrays or pytrees of arrays (dicts, "
                             "lists, tuples, dataclasses registered with jax), or name it in "
                             "static_argnums/static_argnames")


def _static_nums(value: int | Sequence[int] | None, count: int, where: str) -> set[int]:
    if value is None:
        return set()
    items = (value,) if isinstance(value, int) else value
    out: set[int] = set()
    try:
        listed = list(items)
    except TypeError:
        raise InputError(f"{where} static_argnums= must be an int or a sequence of ints, got "
                         f"{type(value).__name__}") from None
    for i in listed:
        if isinstance(i, bool) or not isinstance(i, int):
            raise InputError(f"{where} static_argnums= must hold ints, got {reprlib.repr(i)}")
        if not -count <= i < count:
            raise InputError(f"{where} static_argnums= names argument {i}, but "
                             f"{count} positional argument(s) were given")
        out.add(i % count)
    return out


def _static_names(value: str | Sequence[str] | None, kwargs: Mapping[str, Any],
                  where: str) -> set[str]:
    if value is None:
        return set()
    items = [value] if isinstance(value, str) else list(value)
    for k in items:
        if not isinstance(k, str):
            raise InputError(f"{where} static_argnames= must hold names, got {reprlib.repr(k)}")
        if k not in kwargs:
            given = ", ".join(sorted(kwargs)) or "none"
            raise InputError(f"{where} static_argnames= names {k!r}, which is not among the "
                             f"keyword arguments given ({given})")
    return set(items)


# --------------------------------------------------------------------------- the record


def _leaf_json(path: Any, leaf: Any) -> dict[str, Any]:
    if isinstance(leaf, _NUMBERS):
        dtype = np.dtype(type(leaf) if not isinstance(leaf, bool) else np.bool_)
        shape: tuple[int, ...] = ()
    else:
        dtype, shape = np.dtype(leaf.dtype), tuple(int(s) for s in leaf.shape)
    size = int(np.prod(shape, dtype=np.int64)) if shape else 1
    return {"path": jax.tree_util.keystr(path), "shape": list(shape), "dtype": dtype.name,
            "bytes": size * dtype.itemsize}


def _node_json(name: str, value: Any, *, keyword: bool, static: bool,
               donated: bool = False) -> dict[str, Any]:
    node: dict[str, Any] = {"name": name, "keyword": keyword, "static": static,
                            "type": type(value).__name__, "leaves": [], "leaf_count": 0,
                            "bytes": 0, "held_leaves": 0, "omitted": 0}
    if donated:
        node["donated"] = True
    if static:
        node["value"] = reprlib.repr(value)[:80]
        return node
    flat, _ = jax.tree_util.tree_flatten_with_path(value)
    for path, leaf in flat:
        if _is_static_leaf(leaf):
            node["held_leaves"] += 1
            continue
        entry = _leaf_json(path, leaf)
        node["leaf_count"] += 1
        node["bytes"] += entry["bytes"]
        if len(node["leaves"]) < MAX_LISTED_LEAVES:
            node["leaves"].append(entry)
        else:
            node["omitted"] += 1
    return node


def argument_tree(p: Program, out_info: Any = None) -> dict[str, Any]:
    """The ``arguments`` record of results.json: per argument and keyword its leaves (path,
    shape, dtype, bytes), counts and total bytes; the result's the same way."""
    nodes = [_node_json(label, a, keyword=False, static=i in p.static_argnums,
                        donated=label in p.donated)
             for i, (label, a) in enumerate(zip(p.parameter_names, p.args, strict=True))]
    nodes += [_node_json(k, v, keyword=True, static=k in p.static_argnames,
                         donated=k in p.donated)
              for k, v in p.kwargs.items()]
    record: dict[str, Any] = {
        "arguments": nodes,
        "leaf_count": sum(n["leaf_count"] for n in nodes),
        "bytes": sum(n["bytes"] for n in nodes),
    }
    if out_info is not None:
        result = _node_json("result", out_info, keyword=False, static=False)
        record["result"] = result
    return record


def arrays_tree(args: Sequence[Any], names: Sequence[str], out_info: Any) -> dict[str, Any]:
    """The ``arguments`` record for a workload of plain array arguments (a TOML workload)."""
    nodes = [_node_json(label, a, keyword=False, static=False)
             for label, a in zip(names, args, strict=True)]
    return {"arguments": nodes, "leaf_count": sum(n["leaf_count"] for n in nodes),
            "bytes": sum(n["bytes"] for n in nodes),
            "result": _node_json("result", out_info, keyword=False, static=False)}
