"""Real programs in: pytrees, keyword and static arguments, jitted functions, setup functions,
the argument tree in results.json and the report, and a report about the user's program."""

from __future__ import annotations

import dataclasses
import json
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
np = pytest.importorskip("numpy")

import roofline_report  # noqa: E402
from roofline_report import cli  # noqa: E402
from roofline_report.errors import EXIT_INPUT, EXIT_OK, EXIT_PARTIAL, InputError  # noqa: E402
from roofline_report.report import views as render  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def _a(*shape: int, start: float = 0.0) -> Any:
    size = int(np.prod(shape)) if shape else 1
    return np.linspace(start - 1, start + 1, size, dtype=np.float32).reshape(shape)


class Pair(NamedTuple):
    w: Any
    b: Any


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Layer:
    w: Any
    b: Any


def _dense(p: Any, x: Any) -> Any:
    return jnp.tanh(x @ p.w + p.b)


# ------------------------------------------------------------------ pytrees of every kind


def _plain_trees() -> list[tuple[str, Callable[..., Any], tuple[Any, ...], int]]:
    x = _a(4, 3)
    return [
        ("dict", lambda p, x: x @ p["w"] + p["b"], ({"w": _a(3, 2), "b": _a(2)}, x), 3),
        ("list", lambda p, x: x @ p[0] + p[1], ([_a(3, 2), _a(2)], x), 3),
        ("tuple", lambda p, x: x @ p[0] + p[1], ((_a(3, 2), _a(2)), x), 3),
        ("NamedTuple", _dense, (Pair(_a(3, 2), _a(2)), x), 3),
        ("dataclass", _dense, (Layer(_a(3, 2), _a(2)), x), 3),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("kind", [k for k, *_ in _plain_trees()])
def test_pytree_arguments_are_lowered_through_their_trees(kind: str) -> None:
    _, fn, args, leaves = next(t for t in _plain_trees() if t[0] == kind)
    record = roofline_report.analyze(fn, *args, name=kind).record
    assert record["lowering"]["available"] is True
    assert record["timing"]["available"] is True
    tree = record["arguments"]
    assert tree["leaf_count"] == leaves
    assert tree["bytes"] == 4 * (3 * 2 + 2 + 4 * 3)
    assert tree["result"]["bytes"] == 4 * 4 * 2
    assert [a["name"] for a in tree["arguments"]] == ["p", "x"]
    assert record["analytic"] == {"available": False, "reason": "no analytic model"}


@pytest.mark.slow
def test_flax_nnx_split_state_and_graphdef() -> None:
    nnx = pytest.importorskip("flax.nnx")
    model = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    graphdef, state = nnx.split(model)

    def apply(graphdef: Any, state: Any, x: Any) -> Any:
        return nnx.merge(graphdef, state)(x)

    record = roofline_report.analyze(apply, graphdef, state, _a(4, 3)).record
    assert record["check"]["reason"] == "no NumPy reference was declared"
    paths = [leaf["path"] for leaf in record["arguments"]["arguments"][1]["leaves"]]
    assert any("kernel" in path for path in paths) and any("bias" in path for path in paths)
    assert record["arguments"]["arguments"][0]["leaf_count"] == 0  # the graph def: no arrays


@pytest.mark.slow
def test_optax_state_and_equinox_module() -> None:
    optax = pytest.importorskip("optax")
    eqx = pytest.importorskip("equinox")
    mlp = eqx.nn.MLP(3, 2, 8, 1, key=jax.random.PRNGKey(0))  # holds functions as leaves
    tx = optax.adam(1e-2)
    params = eqx.filter(mlp, eqx.is_array)
    opt_state = tx.init(params)

    def step(model: Any, opt_state: Any, x: Any) -> Any:
        def loss(m: Any) -> Any:
            return jnp.mean(jax.vmap(m)(x) ** 2)

        grads = eqx.filter_grad(loss)(model)
        updates, opt_state = tx.update(eqx.filter(grads, eqx.is_array), opt_state)
        return eqx.apply_updates(model, updates), opt_state

    record = roofline_report.analyze(step, mlp, opt_state, _a(5, 3)).record
    assert record["lowering"]["available"] is True, record["lowering"]
    model_node = record["arguments"]["arguments"][0]
    assert model_node["held_leaves"] == 2  # activation and final activation
    assert model_node["leaf_count"] == 4
    assert record["arguments"]["arguments"][1]["leaf_count"] == 1 + 2 * 4  # count, mu, nu
    # The module's held leaves (its activations) are put back for JAX's estimate too.
    assert record["jax_roofline"]["available"] is True, record["jax_roofline"]


# ------------------------------------------------------------------ keywords, statics, jit


def _scaled(x: Any, n: int, *, w: Any, mode: str = "tanh") -> Any:
    y = x @ w
    for _ in range(n):
        y = jnp.tanh(y) if mode == "tanh" else jnp.sin(y)
    return y


def _scaled_ref(x: Any, n: int, *, w: Any, mode: str = "tanh") -> Any:
    y = x @ w
    for _ in range(n):
        y = np.tanh(y) if mode == "tanh" else np.sin(y)
    return y


@pytest.mark.slow
def test_keyword_and_static_arguments() -> None:
    record = roofline_report.analyze(_scaled, _a(4, 3), 3, w=_a(3, 2), mode="sin",
                                     static_argnums=1, static_argnames="mode",
                                     reference=_scaled_ref).record
    assert record["check"]["passed"] is True
    assert record["hlo_count"]["transcendentals"] == 3 * 4 * 2
    names = {a["name"]: a for a in record["arguments"]["arguments"]}
    assert names["n"]["static"] and names["n"]["value"] == "3"
    assert names["w"]["keyword"] and names["w"]["bytes"] == 24
    assert names["mode"]["static"] and names["mode"]["leaf_count"] == 0
    # JAX's own estimate sees the program as it was lowered: statics in place, keywords passed.
    assert record["jax_roofline"]["available"] is True, record["jax_roofline"]
    assert record["jax_roofline"]["flops"] == 2 * 4 * 3 * 2


@pytest.mark.slow
def test_an_already_jitted_function_and_its_statics() -> None:
    jitted = jax.jit(_scaled, static_argnums=1, static_argnames="mode")
    record = roofline_report.analyze(jitted, _a(4, 3), 2, w=_a(3, 2), reference=_scaled_ref).record
    assert record["title"] == "_scaled"
    assert record["check"]["passed"] is True
    assert record["hlo_count"]["transcendentals"] == 2 * 4 * 2
    plain = roofline_report.analyze(jax.jit(lambda x: x * 2), _a(8), name="doubled").record
    assert plain["timing"]["available"] is True


@pytest.mark.slow
def test_a_donated_argument_is_donated_on_every_call_and_says_so(tmp_path: Path) -> None:
    def step(params: Any, x: Any) -> Any:
        return jax.tree.map(lambda p: p - 0.1 * x.sum(), params)

    jitted = jax.jit(step, donate_argnums=0)
    out = tmp_path / "donated"
    record = roofline_report.analyze(jitted, {"w": _a(4, 4)}, _a(4), out=out).record
    assert record["timing"]["available"] is True  # called again and again: fresh copies
    assert record["as_written"]["donated_leaves"] == 1
    donated = {a["name"]: a.get("donated", False) for a in record["arguments"]["arguments"]}
    assert donated == {"params": True, "x": False}
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "`params` (donated by your jit, and by every timed call)" in md


@pytest.mark.slow
def test_a_pytree_result_is_checked_leaf_by_leaf() -> None:
    def f(x: Any) -> Any:
        return {"sum": x.sum(), "parts": [x * 2, jnp.tanh(x)]}

    def wrong(x: Any) -> Any:
        return {"sum": x.sum(), "parts": [x * 2, np.tanh(x) + 1.0]}

    good = roofline_report.analyze(f, _a(16), reference=lambda x: {
        "sum": x.sum(), "parts": [x * 2, np.tanh(x)]}).record
    assert good["check"]["passed"] is True and good["check"]["leaves"] == 3
    bad = roofline_report.analyze(f, _a(16), reference=wrong).record
    assert bad["check"]["passed"] is False
    assert bad["check"]["leaf"] == "['parts'][1]"


@pytest.mark.parametrize(("call", "fragment"), [
    (lambda: roofline_report.analyze(_dense, {"w": "text", "b": _a(2)}, _a(4, 3)),
     "analyze(): argument 0 at ['w'] is str, not an array"),
    (lambda: roofline_report.analyze(_scaled, _a(4, 3), 3, w=_a(3, 2)),
     "analyze(): argument 1 is int, not an array"),
    (lambda: roofline_report.analyze(_scaled, _a(4, 3), 3, w=object(), static_argnums=1),
     "analyze(): keyword argument 'w' is object, not an array"),
    (lambda: roofline_report.analyze(_scaled, _a(4, 3), 3, w=_a(3, 2), static_argnums=5),
     "analyze(): static_argnums= names argument 5"),
    (lambda: roofline_report.analyze(_scaled, _a(4, 3), 3, w=_a(3, 2), static_argnums=1,
                                     static_argnames="nope"),
     "analyze(): static_argnames= names 'nope'"),
    (lambda: roofline_report.analyze(lambda x: x @ x, _a(4, 3), name="bad shapes"),
     "analyze(): bad shapes cannot be traced at these arguments: TypeError"),
    (lambda: roofline_report.analyze(_dense, _a(3), teaching="yes"),
     "analyze(): teaching= must be True or False"),
])
def test_bad_programs_are_one_line(call: Callable[[], Any], fragment: str) -> None:
    with pytest.raises(InputError) as info:
        call()
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------ a report about the program


def _many_leaves() -> dict[str, Any]:
    return {f"layer{i}": {"w": _a(8, 8, start=i), "b": _a(8)} for i in range(12)}


def _mlp(params: dict[str, Any], x: Any) -> Any:
    for i in range(12):
        x = jnp.tanh(x @ params[f"layer{i}"]["w"] + params[f"layer{i}"]["b"])
    return x


@pytest.mark.slow
def test_analyze_out_writes_a_report_about_the_program(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    roofline_report.analyze(_mlp, _many_leaves(), _a(4, 8), name="deep mlp", out=out)
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert data["options"]["teaching"] is False
    assert data["lab"]["available"] is False  # the lab was not run
    assert [w["name"] for w in data["workloads"]] == ["user:deep mlp"]
    md = (out / "report.md").read_text(encoding="utf-8")
    html = (out / "report.html").read_text(encoding="utf-8")
    # The page a user reads first: titled by the program, the summary first.
    assert md.startswith("# Roofline of deep mlp\n")
    assert "1. [Summary](#summary)" in md and "2. [Your programs](#programs)" in md
    summary = md[md.index('<a id="summary">'):md.index('<a id="programs">')]
    assert "deep mlp" in summary and "What to fix first" in summary
    for anchor in (*TEACHING_ANCHORS, "(#lab)", "The seed workload"):
        assert anchor not in md, anchor
    # The tree is folded: 24 leaves give the top levels, and every leaf inside a fold.
    assert "params: top levels" in md
    # The heading counts what its table lists: the arguments, then the result.
    assert "Arguments and result (2 arguments, 25 arrays," in md
    assert "; the result 1 array, 128 B):" in md
    assert "<summary>params: every array (24)</summary>" in html
    assert md.count("`['layer3']['w']`") == 1  # listed once, inside the fold
    assert "no analytic model" in md
    assert "(argument + result bytes)" in md
    assert not list(out.glob("*.svg"))  # no seed figures in a report about the program


TEACHING_ANCHORS = ("(#lowered)", "(#compiled)", "(#model)", "(#experiment)", "(#exercise)",
                    "(#catalog)")


@pytest.mark.slow
def test_teaching_adds_the_seed_sections() -> None:
    data = json.loads((REPO / "tests" / "fixtures" / "cpu_results.json").read_text())
    data["options"]["teaching"] = False
    data["workloads"] = data["workloads"][1:2]
    md = render.render(data).markdown
    for anchor in TEACHING_ANCHORS:
        assert anchor not in md, anchor
    assert "(#lab)" in md  # the run measured it: it was asked for
    data["lab"] = {"available": False, "reason": "not measured by roofline_report.analyze()"}
    md = render.render(data).markdown
    assert "(#lab)" not in md
    data["options"]["teaching"] = True
    md = render.render(data).markdown
    for anchor in TEACHING_ANCHORS:
        assert anchor in md, anchor


# ------------------------------------------------------------------ setup = "module:function"


SETUPS = '''
import numpy as np
import jax.numpy as jnp


def good(n=4):
    def step(params, x, *, scale):
        return {"y": jnp.tanh(x @ params["w"]) * scale}
    params = {"w": np.ones((n, 3), np.float32)}
    return step, (params, np.ones((2, n), np.float32)), {"scale": np.float32(2.0)}


def reference(params, x, *, scale):
    return {"y": np.tanh(x @ params["w"]) * scale}


def raises():
    raise RuntimeError("no weights file")


def not_a_tuple():
    return [lambda x: x, (np.ones(3),)]


def four():
    return (lambda x: x, (np.ones(3),), {}, 1)


def not_callable():
    return (3, (np.ones(3),))


def args_not_a_sequence():
    return (lambda x: x, np.ones(3))


def text_leaf():
    return (lambda p: p["w"], ({"w": "weights.npy"},))


def untraceable():
    return (lambda x: x @ x, (np.ones((2, 3), np.float32),))
'''


@pytest.fixture
def setups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    name = f"setups_{abs(hash(str(tmp_path))) % 10**8}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(SETUPS), encoding="utf-8")
    monkeypatch.setattr(sys, "path", list(sys.path))
    return tmp_path / f"{name}.py"


def _config(module: Path, setup: str, extra: str = "") -> Path:
    path = module.parent / f"{setup}.toml"
    path.write_text(f'[[workload]]\nname = "mine"\nsetup = "{module.stem}:{setup}"\n{extra}',
                    encoding="utf-8")
    return path


@pytest.mark.slow
def test_a_setup_workload_reports_only_the_users_program(
        setups: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(setups, "good", f'dims = {{ n = 5 }}\nreference = "{setups.stem}:reference"')
    code = cli.main(["--config", str(config), "--only-config", "--quick", "--no-ceilings",
                     "--progress", "none", "--out", "report"])
    assert code in (EXIT_OK, EXIT_PARTIAL), capsys.readouterr().err
    data = json.loads(Path("report/results.json").read_text(encoding="utf-8"))
    (w,) = data["workloads"]
    assert w["check"]["passed"] is True and w["check"]["leaf"] == "['y']"
    assert w["arguments"]["arguments"][0]["leaves"][0]["shape"] == [5, 3]
    assert [a["name"] for a in w["arguments"]["arguments"]] == ["params", "x", "scale"]
    assert data["lab"]["available"] is False and data["sharding"]["available"] is False
    md = Path("report/report.md").read_text(encoding="utf-8")
    assert "Your programs" in md and "Lab notebook" not in md and "Workload catalog" not in md


@pytest.mark.parametrize(("setup", "extra", "fragment"), [
    ("raises", "", "setup {m}:raises raised RuntimeError: no weights file"),
    ("not_a_tuple", "", "must return (fn, args) or (fn, args, kwargs), got list"),
    ("four", "", "must return (fn, args) or (fn, args, kwargs), got a tuple of 4"),
    ("not_callable", "", "returned int as the function"),
    ("args_not_a_sequence", "", "returned ndarray as the arguments"),
    ("text_leaf", "", "argument 0 at ['w'] is str, not an array"),
    ("untraceable", "", "mine cannot be traced at these arguments"),
    ("good", "dims = { m = 3 }", "raised TypeError"),
    ("good", 'args = [ { shape = [3], dtype = "float32" } ]', "'args' cannot be used with"),
    ("nope", "", "has no 'nope'"),
])
def test_a_bad_setup_is_one_line_and_writes_nothing(
        setup: str, extra: str, fragment: str, setups: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(setups, setup, extra)
    capsys.readouterr()
    code = cli.main(["--config", str(config), "--only-config", "--quick", "--no-ceilings",
                     "--progress", "none", "--out", "report"])
    err = capsys.readouterr().err
    assert code == EXIT_INPUT, err
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert fragment.format(m=setups.stem) in err
    assert "workload 'mine'" in err and config.name in err
    assert not Path("report").exists()


# ------------------------------------------------------------------ the shipped example


@pytest.mark.slow
def test_the_shipped_transformer_step_end_to_end(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("flax")
    pytest.importorskip("optax")
    out = tmp_path / "transformer"
    code = cli.main(["--config", str(REPO / "examples" / "transformer.toml"), "--only-config",
                     "--quick", "--no-ceilings", "--progress", "none", "--out", str(out)])
    assert code in (EXIT_OK, EXIT_PARTIAL), capsys.readouterr().err
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    (w,) = data["workloads"]
    # A whole training step's kernels: over 100 on XLA:CPU, 93 on a TPU v5e (it fuses more).
    assert w["compiled"]["kernels"] >= (100 if data["environment"]["backend"] == "cpu" else 80)
    tree = w["arguments"]
    assert [a["name"] for a in tree["arguments"]] == ["params", "opt_state", "x", "y"]
    assert tree["arguments"][0]["leaf_count"] == 16
    assert w["analytic"]["available"] is False
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "opt\\_state: top levels" in md and "(#lab)" not in md


@pytest.mark.slow
def test_numbers_inside_a_pytree_are_held_like_equinox_fields() -> None:
    """An Equinox module carries Python numbers as fields (MaxPool2d's ``init``, a norm's
    ``eps``): held as values, as ``equinox.filter_jit`` holds them; a bare number stays refused."""
    import jax.numpy as jnp

    def scaled(params: dict[str, Any], x: Any) -> Any:
        return params["w"] * x + params["eps"]

    params = {"w": jnp.ones((4,)), "eps": 1e-5}
    record = roofline_report.analyze(scaled, params, jnp.ones((4,)), quick=True).record
    node = record["arguments"]["arguments"][0]
    assert node["leaf_count"] == 1 and node["held_leaves"] == 1
    with pytest.raises(InputError, match="argument 1 is float, not an array"):
        roofline_report.analyze(scaled, params, 2.0, quick=True)
