"""The Python API: roofline_report.analyze and roofline_report.analyze_sharded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

jnp = pytest.importorskip("jax.numpy")
np = pytest.importorskip("numpy")

import roofline_report  # noqa: E402
from roofline_report.errors import InputError  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def _layer(x: object, w: object) -> object:
    return jnp.tanh(x @ w)  # type: ignore[operator]


@pytest.mark.slow
def test_analyze_counts_checks_and_times() -> None:
    x = jnp.asarray(np.linspace(-1, 1, 64 * 32, dtype=np.float32).reshape(64, 32))
    w = jnp.asarray(np.linspace(-1, 1, 32 * 16, dtype=np.float32).reshape(32, 16))
    record = roofline_report.analyze(_layer, x, w, name="layer",
                                     reference=lambda a, b: np.tanh(a @ b)).record
    assert record["title"] == "layer"
    # A user's function has no hand model: our count is the HLO count, never "analytic".
    assert record["analytic"] == {"available": False, "reason": "no analytic model"}
    assert record["hlo_count"]["flops"] == 2 * 64 * 32 * 16
    assert record["hlo_count"]["transcendentals"] == 64 * 16
    assert record["arguments"]["bytes"] == 4 * (64 * 32 + 32 * 16)
    assert record["arguments"]["result"]["bytes"] == 4 * 64 * 16
    assert record["check"]["passed"] is True
    assert min(record["timing"]["per_call_s"]) > 0
    import jax

    if jax.default_backend() == "cpu":  # a GPU may cost the matmul as a custom call (-1)
        assert record["xla"]["values"]["flops"] == 2 * 64 * 32 * 16
    assert "stablehlo.dot_general" in record["lowering"]["ops"]


@pytest.mark.slow
def test_analyze_answers_in_python_without_a_page() -> None:
    """The typed answer: counted work, measured time, the prediction of kind predicted on the
    roofs it names and its miss, its share of the roof at its intensity (of an assumed roof,
    without ceilings, and said so), its levers, and every kernel the same; and a plain form
    that JSON takes."""
    import json

    from roofline_report.api import AnalyzeResult
    from roofline_report.kinds import Kind

    x = jnp.ones((128, 64))
    w = jnp.ones((64, 32))
    result = roofline_report.analyze(_layer, x, w, name="layer")
    assert isinstance(result, AnalyzeResult) and result.name == "user:layer"
    assert result.flops is not None and result.flops >= 2 * 128 * 64 * 32
    assert result.seconds is not None and result.seconds > 0
    p = result.prediction
    assert p is not None and p.kind is Kind.PREDICTED
    assert result.roofs == "assumed budgets"  # no ceilings asked for
    # Every roof is an assumed one; the only others are the program's own host dispatch,
    # measured where an accelerator's arguments are, and an asynchronous transfer's overlap.
    from roofline_report.analysis.predict import HOST_DISPATCH, OVERLAPPED
    assert {t.kind for t in p.terms if t.group != "overhead"} == {Kind.HYPOTHETICAL}
    assert all(t.kind is Kind.HYPOTHETICAL or t.roof in (HOST_DISPATCH, OVERLAPPED)
               for t in p.terms), p.terms
    # On the assumed budgets the share of the roof at its intensity is no headroom: the API
    # withholds it as the hardware's and gives it as the assumed roof's, labelled.
    achieved = result.flops / result.seconds
    roof = result.hardware_roof
    assert roof is not None and roof.kind is Kind.HYPOTHETICAL and roof.rate is not None
    assert result.share_of_hardware_roof is None
    assert result.share_of_assumed_roof is not None
    assert achieved / result.share_of_assumed_roof == pytest.approx(roof.rate[0], rel=1e-9)
    assert "of an assumed roof (no roof measured: not headroom)" in repr(result)
    with pytest.warns(DeprecationWarning, match="share_of_hardware_roof"):
        assert result.share_of_roof is None
    assert result.miss is not None and result.miss.predicted == p.seconds
    assert result.kernels and all(k.prediction is not None for k in result.kernels)
    plain = result.to_dict()
    again = json.loads(json.dumps(plain))
    assert again["prediction"]["kind"] == "predicted" and again["roofs_kind"] == "hypothetical"
    # The assumed budgets are a compute and a bandwidth roof: the layer's tanh has no rate
    # there, and the answer names it as left out (a loop-free count: not a lower bound).
    assert again["prediction"]["unpriced"] == ["tanh (no tanh rate)"]
    assert again["prediction"]["lower_bound"] is False
    assert again["share_of_hardware_roof"] is None
    assert again["hardware_roof"]["kind"] == "hypothetical"
    assert again["share_of_assumed_roof"] == result.share_of_assumed_roof
    assert [x["kind"] for x in again["levers"]] == [x.what for x in result.levers]
    assert len(again["kernels"]) == len(result.kernels)
    assert again["record"]["name"] == "user:layer"
    assert "layer" in repr(result)
    # One time per call: the API's, its plain form's and the samples' first quartile agree.
    from roofline_report.analysis.stats import own_time
    assert result.seconds == own_time(result.record["timing"]["per_call_s"])
    assert again["timing"]["seconds"] == result.seconds


@pytest.mark.slow
def test_analyze_without_reference_says_so() -> None:
    x = jnp.ones((8, 8))
    record = roofline_report.analyze(_layer, x, x).record
    assert record["check"]["available"] is False
    assert "reference" in record["check"]["reason"]
    assert record["timing"]["available"] is True


@pytest.mark.slow
def test_analyze_writes_a_report(tmp_path: Path) -> None:
    x = jnp.ones((16, 16))
    roofline_report.analyze(_layer, x, x, name="<b>mine</b>", out=tmp_path / "r")
    html = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert "&lt;b&gt;mine&lt;/b&gt;" in html and "<b>mine</b>" not in html
    # The report speaks of what this call did, not of command-line flags nobody passed.
    md = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert "not measured by roofline\\_report.analyze()" in md
    assert "--no-" not in md and "--no-" not in html


def test_analyze_rejects_bad_arguments() -> None:
    with pytest.raises(InputError):
        roofline_report.analyze("not a function", jnp.ones(3))  # type: ignore[arg-type]
    with pytest.raises(InputError):
        roofline_report.analyze(_layer, 3, 4)


@pytest.mark.slow
def test_analyze_sharded_on_emulated_devices() -> None:
    code = """
import json
import jax, numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P
import roofline_report
mesh = jax.make_mesh((4,), ("d",), axis_types=(jax.sharding.AxisType.Auto,))
x = np.ones((16, 64), np.float32); w = np.ones((64, 32), np.float32)
out = roofline_report.analyze_sharded(
    lambda x, w: x @ w, (x, w),
    (NamedSharding(mesh, P(None, "d")), NamedSharding(mesh, P("d", None))),
    NamedSharding(mesh, P()), reference=lambda x, w: x @ w, time_it=False)
print(json.dumps({"ops": [c["op"] for c in out["collectives"]],
                  "bytes": [c["result_bytes"] for c in out["collectives"]],
                  "passed": out["check"]["passed"]}))
"""
    # four emulated devices of the CPU platform, whatever accelerator this machine has (its
    # one chip is held by this process)
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4",
           "JAX_NUM_CPU_DEVICES": "4", "JAX_PLATFORMS": "cpu",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == {"ops": ["all-reduce"], "bytes": [16 * 32 * 4], "passed": True}


def test_the_api_does_not_import_the_command_line() -> None:
    """user (the API) and cli (the command line) share helpers through output, not each other."""
    import ast

    imported: set[str] = set()
    for node in ast.walk(ast.parse((REPO / "roofline_report" / "observe" / "user.py").read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
            imported.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
    assert "roofline_report.cli" not in imported


# ------------------------------------------------------------------ tolerances per dtype


def _matmul(a: object, b: object) -> object:
    return a @ b  # type: ignore[operator]


def _low_precision_args(dtype: str) -> tuple[object, object]:
    rng = np.random.default_rng(0)
    a = jnp.asarray(rng.standard_normal((64, 128)) / np.sqrt(128), dtype=dtype)
    b = jnp.asarray(rng.standard_normal((128, 32)), dtype=dtype)
    return a, b


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_low_precision_matmuls_pass_at_their_dtype_tolerance(dtype: str) -> None:
    from roofline_report import tolerances

    a, b = _low_precision_args(dtype)
    record = roofline_report.analyze(_matmul, a, b, name=f"matmul {dtype}",
                                     reference=np.matmul).record
    check = record["check"]
    assert check["passed"] is True, check
    assert (check["rtol"], check["atol"]) == tolerances.for_dtype(dtype)
    assert check["max_abs_error"] > 2e-5  # the old one-size tolerance would have failed it


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_low_precision_matmuls_fail_at_a_tiny_tolerance(dtype: str) -> None:
    a, b = _low_precision_args(dtype)
    record = roofline_report.analyze(_matmul, a, b, name=f"matmul {dtype}",
                                     reference=np.matmul, rtol=1e-7, atol=1e-7).record
    assert record["check"]["passed"] is False
    assert (record["check"]["rtol"], record["check"]["atol"]) == (1e-7, 1e-7)


def test_the_default_follows_the_result_dtype_not_the_arguments() -> None:
    from roofline_report.observe import user

    x = jnp.ones((4, 4), dtype="bfloat16")
    w = user.workload_from_arrays(lambda a: a.astype("float32") * 2, [x])
    assert (w.rtol, w.atol) == (2e-5, 2e-5)
    w = user.workload_from_arrays(lambda a: (a > 0).astype("int32"), [jnp.ones(3)])
    assert (w.rtol, w.atol) == (0.0, 0.0)
    w = user.workload_from_arrays(_matmul, [x, x], rtol=0.5)
    assert (w.rtol, w.atol) == (0.5, 3e-2)  # one given, the other the dtype's


# ---------------------------------------------------------------- errors speak of the API


@pytest.mark.parametrize(("call", "fragment"), [
    (lambda: roofline_report.analyze("not a function", jnp.ones(3)),
     "analyze(): fn (the first argument) must be callable"),
    (lambda: roofline_report.analyze(_layer, jnp.ones((2, 2)), 4),
     "analyze(): argument 1 is int, not an array"),
    (lambda: roofline_report.analyze(_layer, np.array(["a", "b"]), jnp.ones(2)),
     "analyze(): argument 0 has dtype"),
    (lambda: roofline_report.analyze(_layer, jnp.ones(3), jnp.ones(3), name=""),
     "analyze(): name= must be a non-empty string"),
    (lambda: roofline_report.analyze(_layer, jnp.ones(3), jnp.ones(3), name=7),
     "analyze(): name= must be a non-empty string"),
    (lambda: roofline_report.analyze(_layer, jnp.ones(3), jnp.ones(3), reference="np.tanh"),
     "analyze(): reference= must be callable"),
    (lambda: roofline_report.analyze(_layer, jnp.ones(3), jnp.ones(3), name="mine", rtol=-1.0),
     "analyze(): rtol must be a non-negative finite number, got -1.0 (workload 'mine')"),
    (lambda: roofline_report.analyze(_layer, jnp.ones(3), jnp.ones(3), name="mine",
                                     atol=float("nan")),
     "analyze(): atol must be a non-negative finite number, got nan (workload 'mine')"),
    (lambda: roofline_report.analyze(_layer, jnp.ones(3), jnp.ones(3), atol=float("inf")),
     "analyze(): atol must be a non-negative finite number, got inf (workload '_layer')"),
    (lambda: roofline_report.analyze(_layer, jnp.ones(3), jnp.ones(3), rtol="1e-3"),
     "analyze(): rtol must be a number, got str"),
    (lambda: roofline_report.analyze(_layer, jnp.ones(3), jnp.ones(3), out="/usr"),
     "analyze(): out='/usr': is the system folder /usr"),
    (lambda: roofline_report.analyze(_layer, jnp.ones(3), jnp.ones(3), out=3),
     "analyze(): out= must be a folder path"),
])
def test_api_errors_name_api_parameters(call: Any, fragment: str) -> None:
    with pytest.raises(InputError) as info:
        call()
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message
    for cli_or_toml in ("--", "'rtol'", "'atol'", "[[workload]]", ".toml"):
        assert cli_or_toml not in message, message


def test_api_refuses_a_bad_out_before_measuring(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from roofline_report.observe import run as measure

    def measuring(*_a: object, **_k: object) -> None:
        raise AssertionError("measured before refusing out=")

    monkeypatch.setattr(measure, "run", measuring)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("mine")
    with pytest.raises(InputError, match=r"^analyze\(\): out='.*docs': folder is not empty"):
        roofline_report.analyze(_layer, jnp.ones(3), jnp.ones(3), out=tmp_path / "docs")
