"""Workloads sized for the backend they run on: a config's ``backend_dims`` and the catalog's
accelerator sizes (at a CPU's sizes a call takes microseconds on a GPU or TPU and measures
nothing but dispatch)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from roofline_report.config import loads_config
from roofline_report.errors import InputError

REPO = Path(__file__).resolve().parents[1]

SIZED = """
[[workload]]
name = "mlp"
setup = "examples.transformer:setup"
dims = { batch = 8, width = 64 }
backend_dims = { tpu = { batch = 1024 }, gpu = { batch = 512, width = 128 } }
"""


def test_backend_dims_replace_the_declared_dims_on_their_backend() -> None:
    (spec,) = loads_config(SIZED, source="w.toml").workloads
    assert spec.dims == {"batch": 8, "width": 64}
    assert spec.on_backend("cpu").dims == {"batch": 8, "width": 64}
    assert spec.on_backend("tpu").dims == {"batch": 1024, "width": 64}
    # jax names a GPU's platform by its vendor's runtime: both read the gpu entry
    assert spec.on_backend("cuda").dims == {"batch": 512, "width": 128}
    assert spec.on_backend("rocm").dims == spec.on_backend("gpu").dims
    assert spec.to_json()["backend_dims"] == {"gpu": {"batch": 512, "width": 128},
                                              "tpu": {"batch": 1024}}


def test_a_workload_without_backend_dims_echoes_none() -> None:
    text = SIZED.replace("backend_dims = { tpu = { batch = 1024 }, gpu = { batch = 512, "
                         "width = 128 } }\n", "")
    (spec,) = loads_config(text, source="w.toml").workloads
    assert spec.on_backend("tpu") is spec
    assert "backend_dims" not in spec.to_json()


@pytest.mark.parametrize(("entry", "message"), [
    ("{ npu = { batch = 2 } }", "backend_dims: 'npu' is not a backend (one of cpu, gpu, tpu)"),
    ("{ tpu = { depth = 2 } }", "backend_dims.tpu: 'depth' is not in dims"),
    ("{ tpu = { batch = 0 } }", "backend_dims.tpu.batch"),
    ("{ tpu = {} }", "backend_dims.tpu must be a table of name = positive integer"),
    ("3", "'backend_dims' must be a table of backend"),
])
def test_bad_backend_dims_are_one_line_errors(entry: str, message: str) -> None:
    text = SIZED.replace(
        "{ tpu = { batch = 1024 }, gpu = { batch = 512, width = 128 } }", entry)
    with pytest.raises(InputError, match=None) as caught:
        loads_config(text, source="w.toml")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_every_heldout_program_has_accelerator_sizes() -> None:
    """The held-out suite runs on an accelerator at sizes of its own (chosen so that a call
    takes a millisecond or more on a TPU v5e), each a size of a dimension it declares."""
    spec = tomllib.loads((REPO / "benchmarks" / "heldout" / "heldout.toml").read_text())
    for table in spec["workload"]:
        sized = table.get("backend_dims", {})
        assert set(sized) == {"gpu", "tpu"}, table["name"]
        for dims in sized.values():
            assert set(dims) <= set(table["dims"]), table["name"]
            assert any(dims[d] > table["dims"][d] for d in dims), table["name"]


def test_the_catalog_is_larger_on_an_accelerator() -> None:
    jax = pytest.importorskip("jax")
    del jax
    from roofline_report.observe.workloads import catalog

    cpu = {w.name: w for w in catalog("cpu")}
    for backend in ("tpu", "gpu", "cuda"):
        accelerated = {w.name: w for w in catalog(backend)}
        assert accelerated.keys() == cpu.keys()
        assert accelerated["seed_tanh_matmul"].dims == cpu["seed_tanh_matmul"].dims
        for name, w in accelerated.items():
            if name == "seed_tanh_matmul":
                continue
            small = cpu[name]
            assert any(w.dims[d] > small.dims[d] for d in small.dims), name
            assert bool(w.sweep) == bool(small.sweep), name
            assert w.model()["minimum_bytes"] > small.model()["minimum_bytes"], name
            for values in w.sweep.values():
                assert max(values) > max(small.sweep[next(iter(small.sweep))]), name
    assert catalog() == catalog("cpu")
