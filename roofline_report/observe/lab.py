"""The lab's measurements (imports jax): run the experiment kernels, return raw numbers.

:func:`run_lab` times the kernels of :mod:`roofline_report.analysis.experiments` on jax's default
device and
returns plain JSON that :func:`roofline_report.analysis.experiments.analyse` turns into predictions
and
verdicts. Nothing here predicts or judges; it only measures and counts:

* times as :meth:`roofline_report.observe.timer.Timing.to_json` records (n enqueued calls per
sample);
* sizes, and what the compiled programs say about themselves: kernel counts and converts
  (:func:`roofline_report.hlo.inspect_compiled`), XLA's flops (``cost_analysis``) and ours
  (:func:`roofline_report.hlo.count_stablehlo`);
* the kernel inventory of every compiled program an experiment times
  (:func:`roofline_report.hlo.kernels.kernel_inventory` of its optimized HLO), under
  ``programs``: an object by variant (``{"one_array": inventory, "two_arrays": inventory}``),
  or for a sweep a list aligned with its points; an inventory that cannot be read is recorded
  ``{"available": False, "reason"}`` and the experiment still runs. The bfloat16 experiments
  also record each variant's dtype under ``dtypes``.

Each experiment runs on its own: one that fails is recorded ``{"available": False, "reason"}``
and the others still run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from roofline_report.errors import reason
from roofline_report.hlo import count_stablehlo, inspect_compiled
from roofline_report.hlo.ir import Module, parse_module
from roofline_report.hlo.kernels import kernel_inventory
from roofline_report.observe import timer as timing
from roofline_report.observe.ceilings.host import read_cache_bytes

Progress = Callable[[str], None]
_REASON_CHARS = 200


@dataclass(frozen=True, slots=True)
class LabPlan:
    """Sizes and sampling of one lab run (see :func:`plan_for`)."""

    stream_elements: int  # doubled traffic: elements of each float32 array
    fusion_shape: tuple[int, int, int]  # (m, k, n) of tanh(a@b)
    bf16_elements: int  # in-place scale, bfloat16 against float32
    bf16_matmul: int  # square matmul size, bfloat16 against float32
    batch_d: int  # W[d,d] @ X[d,b]
    batches: tuple[int, ...]
    dispatch_sizes: tuple[int, ...]  # y = 2x sweep
    scan_size: int
    scan_steps: int
    samples: int
    min_sample_s: float

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for key, value in data.items():
            if isinstance(value, tuple):
                data[key] = list(value)
        return data


def plan_for(backend: str, *, quick: bool) -> LabPlan:
    """The lab's sizes for a backend. Pure.

    CPU: sized for a 2-core machine (the whole lab in about 10 s, or 3 s quick). Accelerators:
    arrays of hundreds of MiB, d = 8192 for the batching sweep and b up to 8192.
    """
    if backend == "cpu":
        return LabPlan(
            stream_elements=1 << (22 if quick else 24),
            fusion_shape=(1024, 4, 1024) if quick else (2048, 4, 2048),
            bf16_elements=1 << (22 if quick else 24),
            bf16_matmul=512 if quick else 1024,
            batch_d=1024,
            batches=timing.geometric(1, 256, 4) if quick else timing.geometric(1, 512, 2),
            dispatch_sizes=timing.geometric(1 << 4, 1 << 22, 8 if quick else 4),
            scan_size=256,
            scan_steps=10,
            samples=5 if quick else 7,
            min_sample_s=0.002 if quick else 0.01,
        )
    return LabPlan(
        stream_elements=1 << (24 if quick else 26),
        fusion_shape=(4096, 8, 4096) if quick else (8192, 8, 8192),
        bf16_elements=1 << (26 if quick else 28),
        bf16_matmul=4096 if quick else 8192,
        batch_d=8192,
        batches=timing.geometric(1, 8192, 4 if quick else 2),
        dispatch_sizes=timing.geometric(1 << 4, 1 << (26 if quick else 28), 4),
        scan_size=4096,
        scan_steps=10,
        samples=timing.QUICK_SAMPLES if quick else 10,
        min_sample_s=timing.QUICK_MIN_SAMPLE_SECONDS if quick else 0.02,
    )


def run_lab(
    *,
    quick: bool,
    ceilings: Mapping[str, Any] | None,
    progress: Progress | None = None,
    plan: LabPlan | None = None,
) -> dict[str, Any]:
    """Run every experiment's kernels; plain JSON for :func:`experiments.analyse`::

        {"backend", "device_kind", "quick", "cache_bytes", "plan": LabPlan json,
         "experiments": {id: {"available": True, ...sizes, timings, counts}
                             | {"available": False, "reason": str}}}

    ``ceilings`` (the measured ceilings, or None) supplies the last-level cache size when it
    recorded one. ``plan`` overrides :func:`plan_for` (tests use tiny sizes). Never raises for a
    failing experiment.
    """
    import jax

    say = progress or (lambda _message: None)
    backend = jax.default_backend()
    if plan is None:
        plan = plan_for(backend, quick=quick)
    cache = ceilings.get("cache_bytes") if isinstance(ceilings, Mapping) else None
    if not isinstance(cache, int) or isinstance(cache, bool):
        cache = read_cache_bytes() if backend == "cpu" else None
    lab = _Lab(plan, quick)
    experiments: dict[str, Any] = {}
    for name, run in (
        ("doubled_traffic", lab.doubled_traffic),
        ("fusion", lab.fusion),
        ("bf16_memory", lab.bf16_memory),
        ("bf16_compute", lab.bf16_compute),
        ("batching", lab.batching),
        ("dispatch", lab.dispatch),
        ("scan", lab.scan),
    ):
        start = time.perf_counter()
        try:
            experiments[name] = {"available": True, **run()}
            say(f"lab: {name} done in {time.perf_counter() - start:.2g} s")
        except Exception as exc:
            experiments[name] = {"available": False, "reason": _why(exc)}
            say(f"lab: {name} failed: {experiments[name]['reason']}")
    return {
        "backend": backend,
        "device_kind": str(jax.devices()[0].device_kind),
        "quick": quick,
        "cache_bytes": cache,
        "plan": plan.to_json(),
        "experiments": experiments,
    }


class _Lab:
    """The experiments' kernels; each method returns one experiment's raw record."""

    def __init__(self, plan: LabPlan, quick: bool) -> None:
        self.plan = plan
        self.quick = quick

    def _time(self, compiled: Any, args: Sequence[Any]) -> dict[str, Any]:
        measured = timing.time_jitted(
            compiled,
            args,
            quick=self.quick,
            samples=self.plan.samples,
            min_sample_seconds=self.plan.min_sample_s,
            warmup_seconds=self.warmup,
        )
        return measured.to_json()

    @property
    def warmup(self) -> float:
        """Untimed running of each new program before its samples, as for workloads."""
        return timing.QUICK_PROGRAM_WARMUP_SECONDS if self.quick \
            else timing.PROGRAM_WARMUP_SECONDS

    def doubled_traffic(self) -> dict[str, Any]:
        import jax.numpy as jnp

        n = self.plan.stream_elements
        x, w = _full((n,), 1.0, "float32"), _full((n,), 0.5, "float32")
        one = _compile(lambda x: jnp.sum(2.0 * x), x)
        two = _compile(lambda x, w: jnp.sum(w * x), x, w)
        timing.block((x, w))
        return {
            "elements": n,
            "itemsize": 4,
            "one_array": self._time(one, (x,)),
            "two_arrays": self._time(two, (x, w)),
            "programs": {"one_array": _inventory(_program(one)),
                         "two_arrays": _inventory(_program(two))},
        }

    def fusion(self) -> dict[str, Any]:
        import jax
        import jax.numpy as jnp

        m, k, n = self.plan.fusion_shape
        a, b = _normal((m, k), "float32", 1), _normal((k, n), "float32", 2)

        def fused(a: Any, b: Any) -> Any:
            return jnp.tanh(a @ b)

        def unfused(a: Any, b: Any) -> Any:
            return jnp.tanh(jax.lax.optimization_barrier(a @ b))  # type: ignore[no-untyped-call]

        c_fused, c_unfused = _compile(fused, a, b), _compile(unfused, a, b)
        p_fused, p_unfused = _program(c_fused), _program(c_unfused)
        return {
            "m": m,
            "k": k,
            "n": n,
            "itemsize": 4,
            "kernels": {"fused": _kernels(p_fused), "unfused": _kernels(p_unfused)},
            "fused": self._time(c_fused, (a, b)),
            "unfused": self._time(c_unfused, (a, b)),
            "programs": {"fused": _inventory(p_fused), "unfused": _inventory(p_unfused)},
        }

    def bf16_memory(self) -> dict[str, Any]:
        """x <- -x in place (donated), so no call allocates its output."""
        import jax

        n = self.plan.bf16_elements
        out: dict[str, Any] = {"elements": n, "converts": {}, "programs": {}, "dtypes": {}}
        for dtype in ("float32", "bfloat16"):
            x, factor = _full((n,), 1.0, dtype), _full((), -1.0, dtype)
            compiled = jax.jit(lambda x, c: c * x, donate_argnums=0).lower(x, factor).compile()
            program = _program(compiled)
            out["converts"][dtype] = _inspect(program).get("converts")
            out["programs"][dtype] = _inventory(program)
            out["dtypes"][dtype] = dtype
            out[dtype] = timing.measure(
                _InPlace(compiled, x, factor).run,
                samples=self.plan.samples,
                min_sample_seconds=self.plan.min_sample_s,
                warmup_seconds=self.warmup,
                method="jax: n enqueued calls on a donated buffer, block once per sample",
            ).to_json()
        return out

    def bf16_compute(self) -> dict[str, Any]:

        size = self.plan.bf16_matmul
        out: dict[str, Any] = {"size": size, "converts": {}, "programs": {}, "dtypes": {}}
        for dtype in ("float32", "bfloat16"):
            a, b = _normal((size, size), dtype, 3), _normal((size, size), dtype, 4)
            compiled = _compile(lambda a, b: a @ b, a, b)
            program = _program(compiled)
            out["converts"][dtype] = _inspect(program).get("converts")
            out["programs"][dtype] = _inventory(program)
            out["dtypes"][dtype] = dtype
            out[dtype] = self._time(compiled, (a, b))
        return out

    def batching(self) -> dict[str, Any]:

        d = self.plan.batch_d
        w = _normal((d, d), "float32", 5)
        batches, times, programs = self._sweep(
            self.plan.batches,
            lambda b: (_normal((d, b), "float32", 6),),
            lambda x: _compile(lambda w, x: w @ x, w, x),
            lambda x: (w, x),
        )
        return {"d": d, "itemsize": 4, "batches": batches, "times": times, "programs": programs}

    def dispatch(self) -> dict[str, Any]:

        sizes, times, programs = self._sweep(
            self.plan.dispatch_sizes,
            lambda n: (_full((n,), 1.0, "float32"),),
            lambda x: _compile(lambda x: 2.0 * x, x),
            lambda x: (x,),
        )
        return {"itemsize": 4, "sizes": sizes, "times": times, "programs": programs}

    def _sweep(
        self,
        values: Sequence[int],
        make: Callable[[int], tuple[Any, ...]],
        build: Callable[[Any], Any],
        args: Callable[[Any], tuple[Any, ...]],
    ) -> tuple[list[int], list[dict[str, Any]], list[dict[str, Any]]]:
        """Time each sweep point and read its program's kernel inventory; stop at the first
        point that fails (out of memory, usually) once at least three are in, else re-raise.
        Returns the points done, their timings and their inventories, aligned."""
        done: list[int] = []
        times: list[dict[str, Any]] = []
        programs: list[dict[str, Any]] = []
        for value in values:
            try:
                (data,) = make(value)
                compiled = build(data)
                measured = self._time(compiled, args(data))
            except Exception:
                if len(done) >= 3:
                    break
                raise
            times.append(measured)
            programs.append(_inventory(_program(compiled)))
            done.append(value)
        return done, times, programs

    def scan(self) -> dict[str, Any]:
        import jax
        import jax.numpy as jnp

        size, steps = self.plan.scan_size, self.plan.scan_steps
        c = _full((size, size), 1.0 / size, "float32")
        x = _normal((size, size), "float32", 7)

        def body(c: Any, x: Any) -> Any:
            return jnp.tanh(c @ x)

        def scanned(c: Any, x: Any) -> Any:
            def step(carry: Any, _: Any) -> tuple[Any, None]:
                return jnp.tanh(c @ carry), None

            return jax.lax.scan(step, x, None, length=steps)[0]

        out: dict[str, Any] = {
            "size": size,
            "steps": steps,
            "xla_flops": {},
            "our_flops": {},
            "kernels": {},
            "programs": {},
        }
        for name, fn in (("body", body), ("scan", scanned)):
            lowered = jax.jit(fn).lower(c, x)
            compiled = lowered.compile()
            out["xla_flops"][name] = _xla_flops(compiled)
            out["our_flops"][name] = _our_flops(lowered)
            program = _program(compiled)
            out["kernels"][name] = _kernels(program)
            out["programs"][name] = _inventory(program)
            out[name] = self._time(compiled, (c, x))
        return out


class _InPlace:
    """run(n) for a donating executable ``compiled(x, factor)``: each call consumes the buffer
    the previous call returned."""

    def __init__(self, compiled: Any, x: Any, factor: Any) -> None:
        self.compiled, self.value, self.factor = compiled, x, factor

    def run(self, calls: int) -> None:
        for _ in range(calls):
            self.value = self.compiled(self.value, self.factor)
        timing.block(self.value)


def _full(shape: tuple[int, ...], value: float, dtype: str) -> Any:
    """A device array filled on the host (no per-shape compilation, unlike jnp.full)."""
    import jax
    import numpy as np

    return jax.device_put(np.full(shape, value, dtype=_np_dtype(dtype)))


def _normal(shape: tuple[int, ...], dtype: str, seed: int) -> Any:
    """Standard normal data drawn on the host with a fixed seed, then put on the device."""
    import jax
    import numpy as np

    data = np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)
    return jax.device_put(data.astype(_np_dtype(dtype)))


def _np_dtype(name: str) -> Any:
    import jax.numpy as jnp

    return {"float32": jnp.float32, "bfloat16": jnp.bfloat16}[name]


def _compile(fn: Callable[..., Any], *args: Any) -> Any:
    import jax

    return jax.jit(fn).lower(*args).compile()


def _program(compiled: Any) -> Module | Exception:
    """A compiled program's optimized HLO, parsed once for both :func:`_inspect` and
    :func:`_inventory`; the exception when its text cannot be read."""
    try:
        return parse_module(compiled.as_text())
    except Exception as exc:
        return exc


def _inspect(program: Module | Exception) -> dict[str, Any]:
    """inspect_compiled of the optimized HLO, or {} when the text cannot be read."""
    if isinstance(program, Exception):
        return {}
    try:
        return inspect_compiled(program)
    except Exception:
        return {}


def _inventory(program: Module | Exception) -> dict[str, Any]:
    """The kernel inventory of a compiled program's optimized HLO (plain JSON), or
    ``{"available": False, "reason"}`` when it cannot be read."""
    if isinstance(program, Exception):
        return {"available": False, "reason": _why(program)}
    try:
        return kernel_inventory(program)
    except Exception as exc:
        return {"available": False, "reason": _why(exc)}


def _kernels(program: Module | Exception) -> int | None:
    value = _inspect(program).get("kernels")
    return value if isinstance(value, int) else None


def _xla_flops(compiled: Any) -> float | None:
    """XLA's flops for a compiled program (a dict on jax >= 0.4.38, a list before), or None."""
    try:
        analysis = compiled.cost_analysis()
    except Exception:
        return None
    if isinstance(analysis, list):
        analysis = analysis[0] if analysis else None
    if not isinstance(analysis, dict):
        return None
    value = analysis.get("flops", 0.0)
    return float(value) if isinstance(value, int | float) and value >= 0 else None


def _our_flops(lowered: Any) -> int | None:
    try:
        counted = count_stablehlo(lowered.compiler_ir("stablehlo"))
    except Exception:
        return None
    flops = counted.get("flops")
    return int(flops) if isinstance(flops, int | float) else None


def _why(exc: BaseException) -> str:
    return reason(exc, _REASON_CHARS)
