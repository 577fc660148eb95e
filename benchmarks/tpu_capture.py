"""Capture what an accelerator runs: compiled HLO, call times and profiler traces of programs.

    python benchmarks/tpu_capture.py --out DIR [--budget SECONDS] [--only GROUP,...]
        [--match TEXT,...] [--sizes scaled|backend]

For each program of three groups, on the default jax backend (meant for a TPU):

* ``patterns``: one kernel kind each (products per dtype, matrix-vector products, elementwise
  and transcendental streams, reductions along each axis, transposes and layout changes, sort
  and top-k, FFTs, convolutions, gathers and scatters, cumulative sums, loops, cache updates),
  sized so that the chip, not the host, sets the time;
* ``step``: the shipped Flax NNX training step (examples/transformer.py) at its own size;
* ``heldout``: the programs of benchmarks/heldout/ with their batch dimension scaled by 8, then
  4 times more while a call takes under 1.5 ms (at most three sizes); with ``--sizes
  backend``, once each at the sizes benchmarks/heldout/heldout.toml gives this backend (the
  sizes the prediction benchmark measures there).

It writes ``hlo/NAME.txt`` (the optimized HLO), the program's cost and memory analysis and its
call times (calls enqueued and blocked once, five rounds) into ``programs.json``, and a
profiler trace of three calls, each inside a ``StepTraceAnnotation``, under
``traces/NAME/`` (``patterns`` share one trace). The output is what the trace reader and the
accelerator's pricing are developed and tested against; the held-out programs are captured
to read their traces and to choose their sizes on this backend, never to fit a rate.

``--only updates`` adds a group of its own, traced with the patterns: in-place
dynamic-update-slices along each axis of the tiled layouts (``dus_...``), whose per-op times
show what such an update costs a tile. ``--match`` keeps the programs whose name holds one of
its comma-separated texts.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
import tomllib
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks" / "heldout")]

BATCH_DIMS = ("batch", "tokens", "rows", "graphs", "rays")
HELDOUT_TARGET_S = 1.5e-3


@dataclass
class Case:
    name: str
    fn: Callable[..., Any]
    args: Callable[[], tuple[Any, ...]]
    donate: tuple[int, ...] = ()
    static: dict[str, Any] | None = None


def _pattern_cases() -> Iterator[Case]:
    import jax
    import jax.numpy as jnp
    from jax import lax

    key = jax.random.PRNGKey(0)

    def rand(shape: tuple[int, ...], dtype: Any = jnp.float32) -> Callable[[], Any]:
        def make() -> Any:
            if jnp.issubdtype(dtype, jnp.integer):
                return jax.random.randint(key, shape, -100, 100, dtype=dtype)
            if jnp.issubdtype(dtype, jnp.complexfloating):
                re = jax.random.normal(key, shape, jnp.float32)
                return lax.complex(re, re[::-1] if re.ndim else re)
            return jax.random.normal(key, shape, dtype)
        return make

    def args(*makers: Callable[[], Any]) -> Callable[[], tuple[Any, ...]]:
        return lambda: tuple(m() for m in makers)

    bf16, i8 = jnp.bfloat16, jnp.int8
    n = 4096
    yield Case("matmul_bf16_4096", lambda a, b: a @ b, args(rand((n, n), bf16), rand((n, n), bf16)))
    yield Case("matmul_f32_4096", lambda a, b: a @ b, args(rand((n, n)), rand((n, n))))
    yield Case("matmul_f32_highest_2048",
               lambda a, b: jnp.matmul(a, b, precision=lax.Precision.HIGHEST),
               args(rand((2048, 2048)), rand((2048, 2048))))
    yield Case("matmul_int8_4096",
               lambda a, b: lax.dot(a, b, preferred_element_type=jnp.int32),
               args(rand((n, n), i8), rand((n, n), i8)))
    yield Case("matmul_bf16_tall_65536x256x256", lambda a, b: a @ b,
               args(rand((65536, 256), bf16), rand((256, 256), bf16)))
    yield Case("bmm_bf16_64x512", lambda a, b: jnp.einsum("bij,bjk->bik", a, b),
               args(rand((64, 512, 512), bf16), rand((64, 512, 512), bf16)))
    yield Case("matvec_f32_8192", lambda w, x: w @ x, args(rand((8192, 8192)), rand((8192,))))
    yield Case("token_proj_bf16_8x4096x16384", lambda x, w: x @ w,
               args(rand((8, 4096), bf16), rand((4096, 16384), bf16)))
    big = 1 << 26
    yield Case("scale_f32_64M", lambda x: 2 * x, args(rand((big,))))
    yield Case("axpy_f32_64M", lambda x, y: 3 * x + y, args(rand((big,)), rand((big,))))
    yield Case("scale_donated_f32_64M", lambda x: 2 * x, args(rand((big,))), donate=(0,))
    yield Case("exp_f32_64M", jnp.exp, args(rand((big,))))
    yield Case("tanh_f32_64M", jnp.tanh, args(rand((big,))))
    yield Case("log_f32_64M", lambda x: jnp.log(jnp.abs(x) + 1), args(rand((big,))))
    yield Case("sin_f32_64M", jnp.sin, args(rand((big,))))
    yield Case("erf_f32_64M", jax.scipy.special.erf, args(rand((big,))))
    yield Case("sqrt_f32_64M", lambda x: jnp.sqrt(jnp.abs(x)), args(rand((big,))))
    yield Case("fma_chain_f32_16M", lambda x: ((((x * 1.1 + 0.3) * 0.9 + 0.1) * 1.2 + 0.5)
                                                * 0.7 + 0.2) * 1.3 + 0.4,
               args(rand((1 << 24,))))
    yield Case("convert_f32_bf16_64M", lambda x: x.astype(bf16), args(rand((big,))))
    yield Case("scale_bf16_64M", lambda x: 2 * x, args(rand((big,), bf16)))
    yield Case("row_sum_16384x4096", lambda x: x.sum(axis=-1), args(rand((16384, 4096))))
    yield Case("col_sum_16384x4096", lambda x: x.sum(axis=0), args(rand((16384, 4096))))
    yield Case("mid_sum_256x256x1024", lambda x: x.sum(axis=1), args(rand((256, 256, 1024))))
    yield Case("full_sum_64M", jnp.sum, args(rand((big,))))
    yield Case("row_max_16384x4096", lambda x: x.max(axis=-1), args(rand((16384, 4096))))
    yield Case("softmax_8192x4096", lambda x: jax.nn.softmax(x, axis=-1),
               args(rand((8192, 4096))))
    yield Case("log_softmax_4x512x8192", lambda x: jax.nn.log_softmax(x, axis=-1),
               args(rand((4, 512, 8192))))
    yield Case("layer_norm_8192x4096", lambda x: (x - x.mean(-1, keepdims=True))
               * lax.rsqrt(x.var(-1, keepdims=True) + 1e-5), args(rand((8192, 4096))))
    yield Case("row_max_broadcast_8192x4096", lambda x: x - x.max(axis=-1, keepdims=True),
               args(rand((8192, 4096))))
    yield Case("transpose_f32_8192", lambda x: x.T, args(rand((8192, 8192))))
    yield Case("transpose_bf16_8192", lambda x: x.T, args(rand((8192, 8192), bf16)))
    yield Case("transpose_scaled_f32_8192", lambda x: (2 * x).T, args(rand((8192, 8192))))
    yield Case("swap_minor_64x1024x1024", lambda x: x.transpose(0, 2, 1),
               args(rand((64, 1024, 1024))))
    yield Case("swap_major_64x1024x1024", lambda x: x.transpose(1, 0, 2),
               args(rand((64, 1024, 1024))))
    yield Case("kv_layout_bf16_8x32x2048x128", lambda x: x.transpose(0, 2, 1, 3),
               args(rand((8, 32, 2048, 128), bf16)))
    yield Case("heads_split_f32_16x2048x1024",
               lambda x: x.reshape(16, 2048, 16, 64).transpose(0, 2, 1, 3),
               args(rand((16, 2048, 1024))))
    yield Case("copy_f32_64M", lambda x: x + 0, args(rand((big,))))
    yield Case("top_k_2048x32768_k20", lambda x: lax.top_k(x, 20), args(rand((2048, 32768))))
    yield Case("sort_2048x32768", lambda x: jnp.sort(x, axis=-1), args(rand((2048, 32768))))
    yield Case("argmax_16384x4096", lambda x: jnp.argmax(x, axis=-1), args(rand((16384, 4096))))
    yield Case("argmax_int32_16384x4096", lambda x: jnp.argmax(x, axis=-1),
               args(rand((16384, 4096), jnp.int32)))
    yield Case("fft_c64_2048x4096", jnp.fft.fft, args(rand((2048, 4096), jnp.complex64)))
    yield Case("rfft_f32_4096x4096", jnp.fft.rfft, args(rand((4096, 4096))))
    yield Case("fft2_c64_64x512x512", jnp.fft.fft2, args(rand((64, 512, 512), jnp.complex64)))
    yield Case("complex_mul_c64_16M", lambda a, b: a * b,
               args(rand((1 << 24,), jnp.complex64), rand((1 << 24,), jnp.complex64)))

    def conv(x: Any, w: Any, groups: int = 1, stride: int = 1) -> Any:
        return lax.conv_general_dilated(x, w, (stride, stride), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                        feature_group_count=groups)

    yield Case("conv3x3_f32_32x64x64x128", conv,
               args(rand((32, 64, 64, 128)), rand((3, 3, 128, 128))))
    yield Case("conv3x3_bf16_32x64x64x128", conv,
               args(rand((32, 64, 64, 128), bf16), rand((3, 3, 128, 128), bf16)))
    yield Case("conv1x1_bf16_32x64x64x256", conv,
               args(rand((32, 64, 64, 256), bf16), rand((1, 1, 256, 256), bf16)))
    yield Case("patch16_bf16_64x224x224x3", lambda x, w: conv(x, w, stride=16),
               args(rand((64, 224, 224, 3), bf16), rand((16, 16, 3, 768), bf16)))
    yield Case("depthwise3x3_f32_32x64x64x256", lambda x, w: conv(x, w, groups=256),
               args(rand((32, 64, 64, 256)), rand((3, 3, 1, 256))))
    yield Case("depthwise7x7_f32_32x64x64x256", lambda x, w: conv(x, w, groups=256),
               args(rand((32, 64, 64, 256)), rand((7, 7, 1, 256))))

    def maxpool(x: Any) -> Any:
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")

    yield Case("maxpool3x3s2_f32_32x128x128x64", maxpool, args(rand((32, 128, 128, 64))))
    yield Case("cumsum_f32_4096x4096", lambda x: jnp.cumsum(x, axis=-1),
               args(rand((4096, 4096))))
    yield Case("cumsum_axis0_f32_4096x4096", lambda x: jnp.cumsum(x, axis=0),
               args(rand((4096, 4096))))

    def gather_rows(table: Any) -> Any:
        idx = (jnp.arange(65536, dtype=jnp.int32) * 7919) % table.shape[0]
        return jnp.take(table, idx, axis=0)

    def scatter_rows(table: Any, upd: Any) -> Any:
        idx = (jnp.arange(upd.shape[0], dtype=jnp.int32) * 7919) % table.shape[0]
        return table.at[idx].add(upd)

    yield Case("gather_rows_f32_262144x256", gather_rows, args(rand((262144, 256))))
    yield Case("scatter_add_rows_f32_262144x256", scatter_rows,
               args(rand((262144, 256)), rand((65536, 256))), donate=(0,))

    def loop(x: Any, w: Any) -> Any:
        return lax.fori_loop(0, 16, lambda i, c: jnp.tanh(c @ w), x)

    yield Case("fori16_tanh_matmul_bf16_4096", loop,
               args(rand((4096, 4096), bf16), rand((4096, 4096), bf16)))

    def cache_update(cache: Any, new: Any, pos: Any) -> Any:
        return lax.dynamic_update_slice(cache, new, (0, pos, 0))

    yield Case("kv_update_bf16_32x8192x1024",
               lambda c, u: cache_update(c, u, jnp.int32(77)),
               args(rand((32, 8192, 1024), bf16), rand((32, 1, 1024), bf16)), donate=(0,))
    yield Case("concat_f32_2x8192x4096", lambda a, b: jnp.concatenate([a, b], axis=-1),
               args(rand((8192, 4096)), rand((8192, 4096))))
    yield Case("pad_f32_8192x4096", lambda a: jnp.pad(a, ((1, 1), (3, 5))),
               args(rand((8192, 4096))))
    yield Case("slice_rows_f32_16384x4096", lambda a: a[::2, 8:],
               args(rand((16384, 4096))))
    yield Case("broadcast_add_f32_8192x8192", lambda a, v: a + v[None, :] * jnp.sin(v)[None, :],
               args(rand((8192, 8192)), rand((8192,))))
    yield Case("where_mask_f32_64M", lambda x: jnp.where(x > 0, x, 0.1 * x), args(rand((big,))))


def _named(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` under ``name``: jax names the compiled module after it (``jit_NAME``), so that
    programs traced together stay apart in the trace."""
    fn.__name__ = fn.__qualname__ = name
    return fn


def _update_slice_cases() -> Iterator[Case]:
    """In-place dynamic-update-slices along each axis of the chip's tiled layouts: the update
    along the major axis (whole tiles), the second-minor (one sublane row of each tile it
    crosses), the minor (one lane of each tile), aligned to a tile and not, in float32 and
    bfloat16, alone and once an iteration of a loop, at sizes that scale the tiles crossed."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    bf16 = jnp.bfloat16
    key = jax.random.PRNGKey(0)

    def rand(shape: tuple[int, ...], dtype: Any = jnp.float32) -> Callable[[], Any]:
        return lambda: jax.random.normal(key, shape, dtype)

    def args(*makers: Callable[[], Any]) -> Callable[[], tuple[Any, ...]]:
        return lambda: tuple(m() for m in makers)

    def update(name: str, shape: tuple[int, ...], upd: tuple[int, ...], at: tuple[int, ...],
               dtype: Any = jnp.float32) -> Case:
        fn = _named(name, lambda c, u: lax.dynamic_update_slice(
            c, u, tuple(jnp.int32(i) for i in at)))
        return Case(name, fn, args(rand(shape, dtype), rand(upd, dtype)), donate=(0,))

    def looped(name: str, shape: tuple[int, ...], axis: int, trips: int) -> Case:
        upd = tuple(1 if d == axis else n for d, n in enumerate(shape))

        def body(i: Any, carry: tuple[Any, Any]) -> tuple[Any, Any]:
            c, u = carry
            u = u * 1.0001 + 0.5
            start = tuple(i if d == axis else jnp.int32(0) for d in range(len(shape)))
            return lax.dynamic_update_slice(c, u, start), u

        fn = _named(name, lambda c, u: lax.fori_loop(0, trips, body, (c, u))[0])
        return Case(name, fn, args(rand(shape), rand(upd)), donate=(0,))

    yield update("dus_row_f32_8192x4096", (8192, 4096), (1, 4096), (77, 0))
    yield update("dus_rows8_f32_8192x4096", (8192, 4096), (8, 4096), (80, 0))
    yield update("dus_col_f32_2048x4096", (2048, 4096), (2048, 1), (0, 77))
    yield update("dus_col_f32_8192x4096", (8192, 4096), (8192, 1), (0, 77))
    yield update("dus_col_f32_32768x4096", (32768, 4096), (32768, 1), (0, 77))
    yield update("dus_col_f32_65536x729", (65536, 729), (65536, 1), (0, 77))
    yield update("dus_kv_f32_64x4096x8x64", (64, 4096, 8, 64), (64, 1, 8, 64), (0, 77, 0, 0))
    yield update("dus_kv_bf16_64x4096x8x64", (64, 4096, 8, 64), (64, 1, 8, 64),
                 (0, 77, 0, 0), bf16)
    yield update("dus_kv_f32_8x4096x8x64", (8, 4096, 8, 64), (8, 1, 8, 64), (0, 77, 0, 0))
    yield update("dus_kv_f32_64x4096x8x128", (64, 4096, 8, 128), (64, 1, 8, 128), (0, 77, 0, 0))
    yield update("dus_major_f32_128x256x256", (128, 256, 256), (1, 256, 256), (77, 0, 0))
    yield update("dus_mid_f32_256x128x256", (256, 128, 256), (256, 1, 256), (0, 77, 0))
    yield update("dus_mid_f32_1024x128x256", (1024, 128, 256), (1024, 1, 256), (0, 77, 0))
    yield update("dus_mid_bf16_256x128x256", (256, 128, 256), (256, 1, 256), (0, 77, 0), bf16)
    yield looped("dus_loop_mid_f32_256x128x256", (256, 128, 256), 1, 128)
    yield looped("dus_loop_major_f32_128x256x256", (128, 256, 256), 0, 128)
    yield looped("dus_loop_col_f32_65536x729", (65536, 729), 1, 64)


def _heldout_cases(config: Path, backend: str | None = None
                   ) -> Iterator[tuple[str, str, dict[str, int]]]:
    """Each held-out workload's title, setup and dims; with ``backend``, the dims that
    heldout.toml gives that backend laid over its own."""
    spec = tomllib.loads(config.read_text())
    for w in spec["workload"]:
        dims = dict(w.get("dims", {}))
        if backend is not None:
            dims.update(w.get("backend_dims", {}).get(backend, {}))
        yield w["name"], w["setup"], dims


def _block(x: Any) -> Any:
    import jax
    return jax.block_until_ready(x)  # type: ignore[no-untyped-call]


def _time_calls(run: Runner) -> dict[str, Any]:
    """Calls enqueued and blocked once, five rounds (a program that donates its inputs: one
    call a round, its fresh inputs made before the clock starts): seconds per call per round,
    and one blocking call's time."""
    run.prepare()
    _block(run.call())
    run.prepare()
    t0 = time.perf_counter()
    _block(run.call())
    single = time.perf_counter() - t0
    per_round = 1 if run.donated else max(1, min(200, int(0.05 / max(single, 1e-6))))
    rounds = []
    for _ in range(5):
        run.prepare()
        t0 = time.perf_counter()
        out = None
        for _ in range(per_round):
            out = run.call()
        _block(out)
        rounds.append((time.perf_counter() - t0) / per_round)
    return {"single_s": single, "calls_per_round": per_round, "round_s": rounds,
            "min_s": min(rounds), "median_s": sorted(rounds)[2]}


def _compile(name: str, fn: Callable[..., Any], args: tuple[Any, ...],
             donate: tuple[int, ...], out: Path) -> tuple[Any, dict[str, Any]]:
    import jax
    t0 = time.perf_counter()
    lowered = jax.jit(fn, donate_argnums=donate).lower(*args)
    compiled = lowered.compile()
    record: dict[str, Any] = {"compile_s": time.perf_counter() - t0}
    (out / "hlo").mkdir(parents=True, exist_ok=True)
    (out / "hlo" / f"{name}.txt").write_text(compiled.as_text() or "")
    try:
        cost = compiled.cost_analysis()
        cost = cost[0] if isinstance(cost, list) else cost
        record["cost"] = {k: float(v) for k, v in (cost or {}).items()
                          if not k.startswith("bytes accessed") or k == "bytes accessed"}
    except Exception as exc:
        record["cost_error"] = repr(exc)
    try:
        mem = compiled.memory_analysis()
        record["memory"] = {k: getattr(mem, k) for k in dir(mem)
                            if k.endswith("_in_bytes") and isinstance(getattr(mem, k), int)}
    except Exception as exc:
        record["memory_error"] = repr(exc)
    return compiled, record


class Runner:
    """A compiled program and its arguments; a donated argument is copied afresh by
    :meth:`prepare` (blocking) before each call."""

    def __init__(self, compiled: Any, args: tuple[Any, ...], donate: tuple[int, ...]) -> None:
        self.compiled, self.args, self.donate = compiled, args, donate
        self.state = list(args)
        self.donated = bool(donate)

    def prepare(self) -> None:
        if self.donate:
            import jax.numpy as jnp
            for i in self.donate:
                self.state[i] = _block(jnp.copy(self.args[i]))

    def call(self) -> Any:
        return self.compiled(*self.state)


def _heldout_program(name: str, title: str, setup_ref: str, dims: dict[str, int],
                     out: Path) -> tuple[dict[str, Any], Runner]:
    """A held-out program (``module:function`` of benchmarks/heldout/) set up at ``dims``,
    compiled, its HLO written and its calls timed: its record and its runner."""
    module_name, func = setup_ref.split(":")
    fn, args = getattr(importlib.import_module(module_name), func)(**dims)
    compiled, rec = _compile(name, fn, args, (), out)
    call = Runner(compiled, args, ())
    rec["timing"] = _time_calls(call)
    rec.update(group="heldout", title=title, dims=dims, setup=setup_ref)
    return rec, call


def _trace(logdir: Path, calls: list[tuple[str, Runner]], steps: int = 3) -> None:
    import jax
    logdir.mkdir(parents=True, exist_ok=True)
    with jax.profiler.trace(str(logdir)):
        n = 0
        for _name, run in calls:
            for _ in range(steps):
                run.prepare()
                with jax.profiler.StepTraceAnnotation("step", step_num=n):
                    _block(run.call())
                n += 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--budget", type=float, default=480.0)
    p.add_argument("--only", default="step,patterns,heldout")
    p.add_argument("--match", default="",
                   help="only programs whose name holds one of these texts (comma-separated)")
    p.add_argument("--sizes", choices=("scaled", "backend"), default="scaled",
                   help="held-out programs with their batch scaled by 8 and more (scaled), or "
                        "once at the sizes heldout.toml gives this backend (backend)")
    ns = p.parse_args(argv)
    start = time.perf_counter()
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    groups = ns.only.split(",")
    matches = ns.match.split(",")

    def wanted(name: str) -> bool:
        return any(m in name for m in matches)

    import jax
    dev = jax.devices()[0]
    env = {"jax": jax.__version__, "backend": jax.default_backend(),
           "device_kind": dev.device_kind, "devices": len(jax.devices()),
           "device_attrs": {k: repr(getattr(dev, k)) for k in dir(dev)
                            if not k.startswith("_") and not callable(getattr(dev, k))}}
    try:
        env["memory_stats"] = dev.memory_stats()
    except Exception as exc:
        env["memory_stats"] = repr(exc)
    records: dict[str, Any] = {"environment": env, "programs": {}}
    programs = records["programs"]

    def left() -> float:
        return float(ns.budget) - (time.perf_counter() - start)

    def save() -> None:
        (out / "programs.json").write_text(json.dumps(records, indent=1, default=repr))

    print("environment:", json.dumps(env, default=repr)[:600], flush=True)
    if "step" in groups and left() > 60:
        try:
            from examples.transformer import setup
            fn, args = setup()
            compiled, rec = _compile("transformer_step", fn, args, (), out)
            call = Runner(compiled, args, ())
            rec["timing"] = _time_calls(call)
            _trace(out / "traces" / "transformer_step", [("transformer_step", call)], steps=5)
            rec["group"] = "step"
            programs["transformer_step"] = rec
            print("transformer_step", rec["timing"]["median_s"], flush=True)
        except Exception:
            programs["transformer_step"] = {"error": traceback.format_exc()[-3000:]}
            print(programs["transformer_step"]["error"], flush=True)
        save()
    if "patterns" in groups or "updates" in groups:
        traced: list[tuple[str, Runner]] = []
        chunk = 0

        def flush() -> None:
            nonlocal chunk
            if not traced:
                return
            try:
                _trace(out / "traces" / f"patterns_{chunk}", traced)
                records.setdefault("pattern_traces", {})[f"patterns_{chunk}"] = [
                    n for n, _ in traced]
            except Exception:
                records.setdefault("pattern_trace_errors", []).append(
                    traceback.format_exc()[-3000:])
            traced.clear()
            chunk += 1

        cases = [*(_pattern_cases() if "patterns" in groups else ()),
                 *(_update_slice_cases() if "updates" in groups else ())]
        for case in cases:
            if not wanted(case.name):
                continue
            if len(traced) >= 6:
                flush()
            if left() < 150:
                print("patterns: out of time before", case.name, flush=True)
                break
            try:
                args = case.args()
                compiled, rec = _compile(case.name, case.fn, args, case.donate, out)
                call = Runner(compiled, args, case.donate)
                rec["timing"] = _time_calls(call)
                rec["group"] = "patterns"
                programs[case.name] = rec
                traced.append((case.name, call))
                print(case.name, f"{rec['timing']['median_s'] * 1e3:.3f} ms", flush=True)
            except Exception:
                programs[case.name] = {"error": traceback.format_exc()[-3000:], "group": "patterns"}
                print(case.name, "failed:", traceback.format_exc()[-400:], flush=True)
        flush()
        save()
    if "heldout" in groups and ns.sizes == "backend":
        backend = jax.default_backend()
        for title, setup_ref, dims in _heldout_cases(ROOT / "benchmarks/heldout/heldout.toml",
                                                     backend):
            module_name = setup_ref.split(":")[0]
            if not wanted(module_name) or left() < 40:
                continue
            name = f"heldout_{module_name}_{backend}"
            try:
                rec, call = _heldout_program(name, title, setup_ref, dims, out)
                _trace(out / "traces" / name, [(name, call)])
                rec["traced"] = True
                programs[name] = rec
                print(name, f"{rec['timing']['median_s'] * 1e3:.3f} ms", flush=True)
            except Exception:
                programs[name] = {"error": traceback.format_exc()[-3000:], "group": "heldout",
                                  "dims": dims}
                print(name, "failed:", traceback.format_exc()[-400:], flush=True)
            finally:
                jax.clear_caches()  # type: ignore[no-untyped-call]
            save()
    elif "heldout" in groups:
        for title, setup_ref, dims in _heldout_cases(ROOT / "benchmarks/heldout/heldout.toml"):
            module_name = setup_ref.split(":")[0]
            if not wanted(module_name):
                continue
            batch = next((d for d in BATCH_DIMS if d in dims), None)
            factor = 8
            for attempt in range(3):
                if left() < 40:
                    break
                name = f"heldout_{module_name}_x{factor}"
                sized = dict(dims)
                if batch:
                    sized[batch] = dims[batch] * factor
                try:
                    rec, call = _heldout_program(name, title, setup_ref, sized, out)
                    programs[name] = rec
                    median = rec["timing"]["median_s"]
                    print(name, f"{median * 1e3:.3f} ms", flush=True)
                    if median >= HELDOUT_TARGET_S or attempt == 2 or not batch:
                        _trace(out / "traces" / name, [(name, call)])
                        rec["traced"] = True
                        break
                    factor *= 4
                except Exception:
                    programs[name] = {"error": traceback.format_exc()[-3000:],
                                      "group": "heldout", "dims": sized}
                    print(name, "failed:", traceback.format_exc()[-400:], flush=True)
                    break
                finally:
                    jax.clear_caches()  # type: ignore[no-untyped-call]
            save()
    save()
    print(f"done in {time.perf_counter() - start:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
