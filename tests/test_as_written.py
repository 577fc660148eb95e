"""A user's program is timed as it was written: the options of its own jit kept (donated
arguments donated on every call, with fresh copies made outside the timed region), and what
cannot be kept said in the summary row. Checked structurally (the executable's donation, the
buffers each call gets, where the copies are made), never by timing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
np = pytest.importorskip("numpy")

import roofline_report  # noqa: E402
from roofline_report.observe import donation  # noqa: E402
from roofline_report.observe import timer as timing  # noqa: E402
from roofline_report.observe.program import make_program  # noqa: E402
from roofline_report.report import views as render  # noqa: E402

N = 4096


def _step(params: Any, grad: Any) -> Any:
    return jax.tree.map(lambda p: p - 0.01 * grad, params)


def _inputs() -> tuple[dict[str, Any], Any]:
    return {"w": np.linspace(-1, 1, N, dtype=np.float32)}, np.full(N, 0.5, np.float32)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1e-9
        return self.now


def test_fresh_inputs_are_made_outside_the_timed_region() -> None:
    """On a synthetic clock a call costs 1 ms and making a call's inputs 5 s: a copy inside a
    timed sample would show in its per-call time."""
    clock = Clock()
    prepared: list[int] = []
    ran: list[int] = []

    def prepare(n: int) -> None:
        clock.now += 5.0 * n
        prepared.append(n)

    def run(n: int) -> None:
        assert prepared[-1] == n  # made for exactly this run, just before it
        clock.now += 1e-3 * n
        ran.append(n)

    t = timing.measure(run, samples=4, min_sample_seconds=0.004, timer=clock, prepare=prepare,
                       warmup_seconds=0.01)
    assert prepared == ran
    assert t.per_call.max == pytest.approx(1e-3, rel=1e-5)


def test_each_timed_call_gets_its_own_undeleted_donated_buffers() -> None:
    params, grad = _inputs()
    compiled = jax.jit(_step, donate_argnums=0).lower(params, grad).compile()
    # The executable itself donates: jax says so and the compiled module aliases its output.
    assert compiled.args_info[0][0]["w"].donated is True
    assert compiled.args_info[0][1].donated is False
    assert "input_output_alias" in compiled.as_text().split("\n", 1)[0]

    seen: list[Any] = []
    kept_grads: set[int] = set()

    class Recorder:
        args_info = compiled.args_info

        def __call__(self, p: Any, g: Any) -> Any:
            w = p["w"]
            assert not w.is_deleted()  # given before use, not consumed by an earlier call
            assert all(w is not old for old in seen)  # never the same buffer twice
            seen.append(w)
            kept_grads.add(id(g))
            out = compiled(p, g)
            assert w.is_deleted()  # really donated by this call
            return out

    values = (jax.device_put(params), jax.device_put(grad))
    calls = donation.calls_of(Recorder(), values, {})
    assert calls.donates and calls.donated_leaves == 1 and calls.donated_bytes == 4 * N
    t = timing.time_jitted(calls.call, calls.values, quick=True, samples=3,
                           pool=donation.pool(calls), max_inner=4)
    assert t.inner_reps <= 4
    assert len(seen) >= 1 + 3 * t.inner_reps
    assert len(kept_grads) == 1  # what is not donated is passed as it is
    assert not values[0]["w"].is_deleted()  # the example inputs are never donated
    np.testing.assert_array_equal(np.asarray(values[0]["w"]), params["w"])


def test_a_chained_call_donates_what_the_previous_call_returned() -> None:
    """As a loop ``params = step(params, grad)`` runs: each call's donated input is the output
    the previous call wrote in its place, never a buffer already consumed."""
    params, grad = _inputs()
    compiled = jax.jit(_step, donate_argnums=0).lower(params, grad).compile()
    given: list[Any] = []
    returned: list[Any] = []

    class Recorder:
        args_info = compiled.args_info
        out_info = compiled.out_info

        def __call__(self, p: Any, g: Any) -> Any:
            assert not p["w"].is_deleted()
            given.append(p["w"])
            out = compiled(p, g)
            assert p["w"].is_deleted()
            returned.append(out["w"])
            return out

    values = (jax.device_put(params), jax.device_put(grad))
    calls = donation.calls_of(Recorder(), values, {})
    (prepare, call), most, method = donation.timed_calls(calls)
    assert method == donation.CHAINED
    t = timing.time_jitted(None, (), quick=True, samples=3, pool=(prepare, call),
                           max_inner=most, pool_method=method)
    assert t.method == donation.CHAINED
    assert given[0] is not values[0]["w"] and not values[0]["w"].is_deleted()
    assert all(g is r for g, r in zip(given[1:], returned, strict=False))
    assert len(given) >= 1 + 3 * t.inner_reps


@pytest.mark.filterwarnings("ignore:Some donated buffers were not usable")
def test_a_donated_input_without_an_output_to_take_its_place_gets_fresh_copies() -> None:
    def total(x: Any) -> Any:
        return x.sum()

    x = np.ones(N, np.float32)
    compiled = jax.jit(total, donate_argnums=0).lower(x).compile()
    calls = donation.calls_of(compiled, (jax.device_put(x),), {})
    assert calls.donates and donation.chain(calls) is None
    _, most, method = donation.timed_calls(calls)
    assert method == donation.POOLED and most == calls.pool_limit()


def test_the_pool_is_capped_to_its_bytes() -> None:
    params, grad = _inputs()
    compiled = jax.jit(_step, donate_argnums=0).lower(params, grad).compile()
    calls = donation.calls_of(compiled, (params, grad), {})
    assert calls.pool_limit() == donation.POOL_BYTES // (4 * N)
    plain = donation.calls_of(jax.jit(_step).lower(params, grad).compile(), (params, grad), {})
    assert not plain.donates and plain.inputs() is plain.values


@pytest.mark.slow
def test_a_donating_program_is_timed_with_donation(tmp_path: Path) -> None:
    params, grad = _inputs()
    out = tmp_path / "report"
    result = roofline_report.analyze(jax.jit(_step, donate_argnums=0), params, grad, out=out)
    record = result.record
    assert record["timing"]["available"] is True
    assert record["timing"]["method"] == donation.CHAINED
    assert result.timed_without == () and result.to_dict()["timed_without"] == []
    assert record["as_written"] == {"kept": ["donation"], "not_kept": [],
                                    "donated_leaves": 1, "donated_bytes": 4 * N}
    header = record["lowering"]["compiled_text"].split("\n", 1)[0]
    assert "input_output_alias" in header
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "`params` (donated by your jit, and by every timed call)" in md
    assert "timed without" not in md


@pytest.mark.slow
def test_donated_keyword_arguments_and_kept_options() -> None:
    def f(x: Any, *, acc: Any) -> Any:
        return acc + x

    jitted = jax.jit(f, donate_argnames="acc", keep_unused=True)
    x = np.ones(64, np.float32)
    p = make_program(jitted, (x,), {"acc": np.zeros(64, np.float32)}, name="f", where="t:")
    assert p.donated == {"acc"}
    assert p.as_written() == {"kept": ["donation", "keep_unused"], "not_kept": []}
    record = roofline_report.analyze(jitted, x, acc=np.zeros(64, np.float32)).record
    assert record["as_written"]["donated_leaves"] == 1
    assert record["timing"]["available"] is True


@pytest.mark.slow
def test_shardings_of_the_users_jit_are_kept() -> None:
    device = jax.devices()[0]
    one = jax.sharding.SingleDeviceSharding(device)
    jitted = jax.jit(_step, in_shardings=(one, one), out_shardings=one)
    params, grad = _inputs()
    record = roofline_report.analyze(jitted, params, grad).record
    assert record["as_written"]["kept"] == ["in_shardings", "out_shardings"]
    assert record["as_written"]["not_kept"] == []
    assert record["timing"]["available"] is True


@pytest.mark.slow
def test_what_was_not_kept_is_said_in_the_summary_row(tmp_path: Path) -> None:
    params, grad = _inputs()
    out = tmp_path / "report"
    roofline_report.analyze(jax.jit(_step, donate_argnums=0), params, grad, out=out,
                            name="sgd")
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    doc["workloads"][-1]["as_written"]["not_kept"] = ["in_layouts", "out_layouts"]
    page = render.render(doc)
    row = next(line for line in page.markdown.splitlines() if "-summary\"></a>" in line)
    assert "timed without its jit's in_layouts and out_layouts" in row.replace("\\", "")
    assert "this is not its time as written" in page.markdown


@pytest.mark.slow
def test_the_users_own_arrays_are_never_donated() -> None:
    params = {"w": jnp.linspace(-1, 1, N, dtype=jnp.float32)}
    grad = jnp.full(N, 0.5, jnp.float32)
    expected = np.asarray(params["w"]).copy()
    record = roofline_report.analyze(jax.jit(_step, donate_argnums=0), params, grad,
                                     reference=lambda p, g: {"w": p["w"] - 0.01 * g}).record
    assert record["check"]["passed"] is True  # checked on copies, against the same values
    assert not params["w"].is_deleted() and not grad.is_deleted()
    np.testing.assert_array_equal(np.asarray(params["w"]), expected)
