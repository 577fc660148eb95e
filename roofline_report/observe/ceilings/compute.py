"""The compute ceilings: square matmuls per dtype and 3x3 convolutions, each swept over sizes
with rough timings and the best size timed in full (:func:`matmul_entry`, :func:`conv_entry`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from roofline_report.analysis.stats import Timing
from roofline_report.kinds import Kind
from roofline_report.observe import timer as timing
from roofline_report.observe.ceilings import load
from roofline_report.observe.ceilings.plan import Plan
from roofline_report.observe.ceilings.sampling import (
    Again,
    Progress,
    failure_reason,
    fastest_rate,
    join_notes,
    round_samples,
)


def _matmul(a: Any, b: Any) -> Any:
    return a @ b


def _matmul_highest(a: Any, b: Any) -> Any:
    import jax

    return jax.numpy.matmul(a, b, precision=jax.lax.Precision.HIGHEST)


def _matmul_operands(n: int, dtype: str, batch: int | None = None) -> tuple[Any, Any]:
    """Two n x n operands (``batch`` x n x n with a batch), uniform in [-1, 1), made by NumPy
    (quicker than compiling jax.random for each shape) and put on the default device."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(0)
    kind = jnp.dtype(dtype)

    def operand() -> Any:
        shape = (n, n) if batch is None else (batch, n, n)
        return jax.device_put((2 * rng.random(shape, dtype=np.float32) - 1).astype(kind))

    return operand(), operand()


def _matmul_caveat(backend: str, dtype: str) -> str:
    if backend == "cpu" and dtype == "bfloat16":
        return "the CPU backend upcasts bfloat16 matmuls to float32: not a native bfloat16 rate"
    if backend in ("gpu", "cuda") and dtype == "float32":
        return "jax's default matmul precision (TF32 on NVIDIA GPUs)"
    return ""



def matmul_entry(dtype: str, backend: str, plan: Plan, say: Progress, *,
                  highest: bool = False, again: Again | None = None,
                  budget: load.Budget | None = None) -> dict[str, Any]:
    """Sweep the sizes with rough timings, then time the best size in full (and, with
    ``again``, once more later: see :func:`_sized_rates`). ``highest``: at
    ``Precision.HIGHEST`` instead of jax's default precision. ``budget``: time to take a
    round under load again (see :func:`.load.quiet_round`)."""
    entry = _compute_entry(f"matmul {dtype}" + (" (highest precision)" if highest else ""),
                           "matmul", dtype, "highest" if highest else "default")
    caveat = "" if highest else _matmul_caveat(backend, dtype)
    fn = _matmul_highest if highest else _matmul
    _sized_rates(entry, fn, plan.matmul_sizes, lambda n: _matmul_operands(n, dtype),
                 lambda n: 2 * n**3, plan, say, caveat, again, budget)
    if entry["available"]:
        _batched_points(entry, fn, dtype, plan, say, again)
    return entry


def batch_of(side: int, plan: Plan) -> int:
    """Products of ``side`` in one call of the small-product timings: ``plan.batch_flops``
    worth, at least one."""
    return max(1, plan.batch_flops // (2 * side**3))


def _batched_points(entry: dict[str, Any], fn: Callable[..., Any], dtype: str, plan: Plan,
                    say: Progress, again: Again | None) -> None:
    """Add to ``entry["by_size"]`` the rough rates of the small sides ``plan.batch_sides``,
    each timed as ``batch_of`` products of that side in one call (jax batches ``@`` over the
    leading axis): a product too small to time alone is mostly dispatch, and the small products
    a program runs (attention's per head, an expert's) come in batches. Each point keeps its
    ``batch``; a prediction reads it at the flops of one product. With ``again``, each side
    is timed once more after the other ceilings and keeps its faster rate, as the sweep's
    sizes do. A side that fails is left out."""
    import jax

    timed: list[Rough] = []
    for n in plan.batch_sides:
        if plan.matmul_sizes and n >= min(plan.matmul_sizes):
            continue  # the sweep times this side alone
        batch = batch_of(n, plan)
        try:
            args = _matmul_operands(n, dtype, batch)
            _, compiled, _, _ = timing.measure_compile(jax.jit(fn), args)
            rough = _rough(compiled, args, plan)
        except Exception:
            continue
        flops = 2 * batch * n**3
        point = {"n": n, "flops": flops, "value": fastest_rate(flops, rough), "batch": batch}
        say(f"{entry['name']} {batch} x n={n}: about {point['value'] / 1e9:.3g} GFLOP/s")
        timed.append((point, compiled, args))
    entry["by_size"] = sorted([*entry["by_size"], *(p for p, _, _ in timed)],
                              key=lambda p: p["flops"] / p.get("batch", 1))
    if again is not None and timed:
        again.append(lambda: _rough_again(timed, plan))


def _compute_entry(name: str, op: str, dtype: str, precision: str) -> dict[str, Any]:
    return {"name": name, "op": op, "precision": precision, "dtype": dtype, "value": None,
            "unit": "FLOP/s", "kind": Kind.MEASURED.value, "available": False, "reason": "",
            "size": None, "flops_per_call": None, "timing": None, "by_size": [], "rounds": [],
            "round_loads": [], "repeated": 0}


Rough = tuple[dict[str, Any], Any, tuple[Any, ...]]  # a by-size point, its kernel, its args


def _rough(compiled: Any, args: tuple[Any, ...], plan: Plan) -> Timing:
    """A rough timing of one size: the sweep's few short samples."""
    return timing.time_jitted(compiled, args, quick=True, samples=plan.sweep_samples,
                              min_sample_seconds=plan.sweep_min_sample_s)


def _rough_again(points: list[Rough], plan: Plan) -> None:
    """Time each by-size point once more, each keeping its faster rate (a failed timing leaves
    the first standing), then forget them."""
    for point, compiled, args in points:
        try:
            again = _rough(compiled, args, plan)
        except Exception:
            continue
        point["value"] = max(point["value"], fastest_rate(int(point["flops"]), again))
    points.clear()


def _sized_rates(entry: dict[str, Any], fn: Callable[..., Any], sizes: tuple[int, ...],
                 operands: Callable[[int], tuple[Any, ...]], flops_of: Callable[[int], int],
                 plan: Plan, say: Progress, caveat: str = "",
                 again: Again | None = None,
                 budget: load.Budget | None = None) -> dict[str, Any]:
    """Fill ``entry`` with the rate of ``fn`` by size: each size of ``sizes`` timed roughly
    (stopping after the first whose call lasts ``plan.matmul_max_call_s``), then the best
    size timed in full; the rough rates stay in ``by_size`` (a rate grows with the size, and
    a prediction uses the rate measured near a product's size).

    With ``again``, the full timing is split in two rounds: half the samples now, half when
    the caller runs the closure this appends (after the other ceilings), the entry keeping
    the faster round and both rates in ``rounds``; a burst of load spoils one window of
    samples, rarely two a minute apart. Each size's rough timing is taken again in that
    second round too, and the size keeps its faster rate: a prediction reads these rates as
    they are, so one burst would otherwise stand for that size in every run that reuses the
    ceilings.

    Each full round records the machine's load in ``round_loads``; a round under load is
    taken again while ``budget`` has time (:func:`.load.quiet_round`), counted in
    ``repeated``."""
    import jax

    name = entry["name"]
    best: tuple[float, int, Any, tuple[Any, ...]] | None = None
    stopped = ""
    roughs: list[Rough] = []  # each size, to time again
    for n in sizes:
        try:
            args = operands(n)
            _, compiled, _, _ = timing.measure_compile(jax.jit(fn), args)
            if len(sizes) == 1:  # nothing to choose between
                best = (0.0, n, compiled, args)
                break
            rough = _rough(compiled, args, plan)
        except Exception as exc:
            stopped = f"n={n} failed ({failure_reason(exc)})"
            break
        rate = fastest_rate(flops_of(n), rough)
        entry["by_size"].append({"n": n, "flops": flops_of(n), "value": rate})
        roughs.append((entry["by_size"][-1], compiled, args))
        say(f"{name} n={n}: about {rate / 1e9:.3g} GFLOP/s")
        if best is None or rate > best[0]:
            best = (rate, n, compiled, args)
        if rough.per_call.min >= plan.matmul_max_call_s:
            break
    if best is None:
        entry["reason"] = join_notes(f"{name} unavailable: {stopped}", caveat)
        return entry
    _, n, compiled, args = best
    samples = plan.samples if again is None else round_samples(plan.samples)

    def final() -> Timing:
        return timing.time_jitted(compiled, args, quick=False, samples=samples,
                                  min_sample_seconds=plan.min_sample_s,
                                  budget_seconds=plan.budget_s)

    flops = flops_of(n)

    def quiet() -> tuple[Timing, dict[str, Any], int]:
        return load.quiet_round(final, lambda t: fastest_rate(flops, t), budget)

    try:
        first, first_load, repeats = quiet()
    except Exception as exc:
        entry["reason"] = join_notes(f"{name} n={n} failed ({failure_reason(exc)})", caveat)
        return entry
    entry.update(
        value=fastest_rate(flops, first),
        available=True,
        reason=join_notes(caveat, f"sweep stopped: {stopped}" if stopped else ""),
        size=n,
        flops_per_call=flops,
        timing=first.to_json(),
        rounds=[fastest_rate(flops, first)],
        round_loads=[first_load],
        repeated=repeats,
    )
    say(f"{name} n={n}: {entry['value'] / 1e9:.3g} GFLOP/s")
    if again is not None:
        def second() -> None:
            _rough_again(roughs, plan)
            try:
                later, later_load, repeats = quiet()
            except Exception:  # the first round stands alone
                entry["rounds"].append(None)
                entry["round_loads"].append(None)
                return
            rate = fastest_rate(flops, later)
            entry["rounds"].append(rate)
            entry["round_loads"].append(later_load)
            entry["repeated"] += repeats
            # The faster round, unless only one of the two ran quiet: that one.
            if load.preferred([entry["value"], rate], [entry["round_loads"][0], later_load]):
                entry.update(value=rate, timing=later.to_json())

        again.append(second)
    return entry


# A convolution runs through other library code than a matmul of the same flops, at a rate of
# its own: 3x3 NHWC convolutions (HWIO filters) of CONV_CHANNELS channels in and out, a batch
# of CONV_BATCH images of n x n pixels, by n; the prediction of another convolution reads this
# family at its patch matrix's size. Three forms (CONV_FORMS):
# * unpadded ("valid": (n - 2)^2 outputs);
# * padded by one ("same": n^2 outputs, the form most models use). XLA:CPU runs a padded
#   convolution on another, faster path, the gap growing with the images: on a 2-core CPU 3x3
#   kernels of 32 features over a batch of 4 ran at 190 against 170 GFLOP/s on 16x16 outputs
#   and 230 against 146 on 64x64 (see :func:`~roofline_report.hlo.product_facts.image_conv_padded`);
# * the padded one's weight gradient, as XLA writes it: the input's features as its batch, the
#   images' batch as its features, the output's gradient as its n x n window, a 3x3 output.
#   Its flops and patch matrix are the forward one's; it ran at 0.65 to 0.92 of its rate
#   (see :func:`~roofline_report.hlo.product_facts.image_conv_weight_gradient`).
CONV_WINDOW = 3
#: The convolution roof's forms: (form, op, name suffix). Each form's kernel is in
#: :data:`_CONV_KERNELS`.
CONV_FORMS = (("unpadded", "convolution", ""),
              ("padded", "convolution-padded", " (padded)"),
              ("weight gradient", "convolution-weight-gradient", " (weight gradient)"))


def conv_shape(backend: str) -> tuple[int, int]:
    """(batch, channels) of the convolution ceiling's kernels on ``backend``."""
    return (4, 32) if backend == "cpu" else (8, 128)


def conv_flops(n: int, batch: int, channels: int, padded: bool = False) -> int:
    """The flops XLA counts for the convolution roof's kernel over n x n images: 2 · batch ·
    channels² · the window taps that land on the input. Unpadded, (n - 2)² outputs of 3 x 3
    taps each; padded by one on each side ("same"), n² outputs whose taps on the padding do
    not count, (3n - 2) a dimension (its weight gradient's too)."""
    if padded:
        taps = CONV_WINDOW * n - (CONV_WINDOW - 1)
        return 2 * batch * channels * channels * taps * taps
    side = n - CONV_WINDOW + 1
    return 2 * batch * side * side * channels * channels * CONV_WINDOW * CONV_WINDOW


def _convolution(x: Any, w: Any) -> Any:
    import jax

    return jax.lax.conv_general_dilated(x, w, window_strides=(1, 1), padding="VALID",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _padded_convolution(x: Any, w: Any) -> Any:
    import jax

    return jax.lax.conv_general_dilated(x, w, window_strides=(1, 1), padding="SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _weight_gradient(x: Any, g: Any) -> Any:
    """The weight gradient of :func:`_padded_convolution` as XLA writes it for the backward
    pass: ``x`` the input as [features, n, n, batch], ``g`` the output's gradient as
    [n, n, batch, features out], padded by one: a 3x3 output of features in x features out."""
    import jax

    return jax.lax.conv_general_dilated(x, g, window_strides=(1, 1), padding=((1, 1), (1, 1)),
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))


_CONV_KERNELS = {"unpadded": _convolution, "padded": _padded_convolution,
                 "weight gradient": _weight_gradient}


def conv_entry(dtype: str, backend: str, plan: Plan, say: Progress,
                again: Again | None = None,
                budget: load.Budget | None = None, form: str = "unpadded") -> dict[str, Any]:
    """The convolution roof of ``dtype`` by size in one of its :data:`CONV_FORMS`."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    batch, channels = conv_shape(backend)
    kind = jnp.dtype(dtype)
    [(op, suffix)] = [(o, x) for f, o, x in CONV_FORMS if f == form]
    gradient = form == "weight gradient"

    def operands(n: int) -> tuple[Any, Any]:
        rng = np.random.default_rng(1)
        if gradient:
            x = rng.standard_normal((channels, n, n, batch), dtype=np.float32)
            w = rng.standard_normal((n, n, batch, channels), dtype=np.float32) / n
        else:
            x = rng.standard_normal((batch, n, n, channels), dtype=np.float32)
            w = rng.standard_normal((CONV_WINDOW, CONV_WINDOW, channels, channels),
                                    dtype=np.float32) / (3 * channels**0.5)
        return jax.device_put(x.astype(kind)), jax.device_put(w.astype(kind))

    entry = _compute_entry(f"convolution {dtype}{suffix}", op, dtype, "default")
    entry["channels"] = channels
    return _sized_rates(entry, _CONV_KERNELS[form], plan.conv_sizes, operands,
                        lambda n: conv_flops(n, batch, channels, form != "unpadded"), plan, say,
                        _matmul_caveat(backend, dtype), again, budget)


# A sequence's convolution (1-D: an audio encoder's) of F features in and out over a window of
# CONV_WINDOW, a batch of LINE_BATCH sequences giving LINE_LENGTH outputs each, by F: on
# XLA:CPU its rate follows its filter (window x features in x out), not the sequence's length.
LINE_BATCH = 8
LINE_LENGTH = 2048


def line_conv_flops(features: int) -> int:
    """2 · batch · length · window · features²: the multiply-adds of the 1-D roof's kernel."""
    return 2 * LINE_BATCH * LINE_LENGTH * CONV_WINDOW * features * features


def _line_convolution(x: Any, w: Any) -> Any:
    import jax

    return jax.lax.conv_general_dilated(x, w, window_strides=(1,), padding="VALID",
                                        dimension_numbers=("NWC", "WIO", "NWC"))


def line_conv_entry(dtype: str, backend: str, plan: Plan, say: Progress,
                    again: Again | None = None,
                    budget: load.Budget | None = None) -> dict[str, Any]:
    """The 1-D convolution roof of ``dtype`` by features (see :data:`LINE_BATCH`): its
    ``positions`` (outputs a call, batch x length) let a kernel's filter read its rate."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    kind = jnp.dtype(dtype)

    def operands(features: int) -> tuple[Any, Any]:
        rng = np.random.default_rng(2)
        x = rng.standard_normal((LINE_BATCH, LINE_LENGTH + CONV_WINDOW - 1, features),
                                dtype=np.float32)
        w = rng.standard_normal((CONV_WINDOW, features, features),
                                dtype=np.float32) / (3 * features**0.5)
        return jax.device_put(x.astype(kind)), jax.device_put(w.astype(kind))

    entry = _compute_entry(f"convolution {dtype} (1-D, window {CONV_WINDOW})",
                           "convolution-1d", dtype, "default")
    entry.update(window=CONV_WINDOW, rank=1, positions=LINE_BATCH * LINE_LENGTH)
    return _sized_rates(entry, _line_convolution, plan.conv_1d_features, operands,
                        line_conv_flops, plan, say, _matmul_caveat(backend, dtype), again,
                        budget)
