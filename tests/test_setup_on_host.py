"""On an accelerator a config's setup runs on the host and its arrays go to the accelerator
once: the setup's many small eager operations are not compiled for the accelerator one by one,
and no host array is copied to it on every timed call. The accelerator is stood in for by
reporting another default backend; the placement rules are what is checked."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import pytest

from roofline_report.observe import user
from roofline_report.observe.program import make_program, on_default_device


def _default_device() -> object:
    return jax.config.jax_default_device  # type: ignore[attr-defined]


@pytest.fixture
def accelerator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jax, "default_backend", lambda: "tpu")


def test_on_the_cpu_backend_arrays_stay_as_they_are() -> None:
    x = jnp.ones(4)
    assert not x.committed
    assert on_default_device(x) is x


def _on_host(make: Callable[[], jax.Array]) -> jax.Array:
    """An array made on the host, as a setup run there makes it: uncommitted on the CPU."""
    with jax.default_device(jax.devices("cpu")[0]):
        return make()


@pytest.mark.usefixtures("accelerator")
def test_an_uncommitted_host_array_goes_to_the_default_device_once() -> None:
    x = _on_host(lambda: jnp.arange(4.0))
    assert not x.committed
    moved = on_default_device(x)
    assert moved is not x
    assert moved.committed
    assert moved.devices() == {jax.devices()[0]}
    assert moved.tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.usefixtures("accelerator")
def test_an_array_the_user_placed_stays_where_it_is() -> None:
    x = jax.device_put(jnp.arange(4.0), jax.devices("cpu")[0])
    assert x.committed
    assert on_default_device(x) is x


@pytest.mark.usefixtures("accelerator")
def test_a_programs_device_inputs_are_placed_leaf_by_leaf() -> None:
    params = {"w": _on_host(lambda: jnp.ones((2, 2))),
              "b": jax.device_put(jnp.zeros(2), jax.devices()[0])}
    p = make_program(lambda q, x: q["w"] @ x + q["b"], (params, _on_host(lambda: jnp.ones(2))),
                     {},
                     name="layer", where="test:")
    (q, x), _ = p.device_inputs()
    assert q["w"].committed and x.committed
    assert q["b"] is params["b"]


@pytest.mark.cpu_backend("a CPU backend leaves the default device as it is")
def test_a_setup_runs_on_the_default_device_of_a_cpu_backend() -> None:
    with user.host_default_device():
        assert _default_device() is None


@pytest.mark.usefixtures("accelerator")
def test_on_an_accelerator_a_setup_runs_with_the_host_as_default_device() -> None:
    with user.host_default_device():
        assert _default_device() == jax.devices("cpu")[0]
        made = jnp.ones(3) * 2
    assert _default_device() is None
    assert not made.committed

