"""Properties (hypothesis) of the roofline model, and fuzzing of the results.json loader.

Model: intensity scales with the matmul's size, the roofline is monotone and capped, the ridge is
where the ceilings meet, and the units work out (scaling both budgets scales the roofline and
keeps the ridge).

Loader: ``results.loads`` raises nothing but InputError for any text, any JSON value and any
mutation of a real results document; a document it accepts either renders or gives InputError
through the command line's ``write(..., source=...)``.
"""

from __future__ import annotations

import copy
import json
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from roofline_report import cli
from roofline_report.analysis import seed_model as model
from roofline_report.errors import InputError
from roofline_report.report import figures
from roofline_report.results import io as results

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "cpu_results.json"

dims = st.integers(min_value=1, max_value=2**16)
itemsizes = st.sampled_from([1, 2, 4, 8])
scales = st.integers(min_value=1, max_value=256)
rates = st.floats(min_value=1e3, max_value=1e18, allow_nan=False, allow_infinity=False)
intensities = st.floats(min_value=1e-6, max_value=1e9, allow_nan=False, allow_infinity=False)
factors = st.floats(min_value=1e-6, max_value=1e6, allow_nan=False, allow_infinity=False)


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)


# ------------------------------------------------------------------------------- the model


@given(dims, dims, dims, itemsizes, scales)
def test_contract_scales_with_size(m: int, k: int, n: int, s: int, c: int) -> None:
    base = model.contract(m, k, n, s)
    big = model.contract(c * m, c * k, c * n, s)
    assert big.flops == c**3 * base.flops
    assert big.minimum_bytes == c**2 * base.minimum_bytes
    assert close(big.intensity, c * base.intensity)


@given(dims, dims, dims, itemsizes, scales)
def test_contract_relations(m: int, k: int, n: int, s: int, c: int) -> None:
    x = model.contract(m, k, n, s)
    assert x.flops == 2 * m * k * n
    assert x.minimum_bytes == s * (m * k + k * n + m * n)
    transposed = model.contract(n, k, m, s)  # C^T = B^T A^T: the same work and traffic
    assert (transposed.flops, transposed.minimum_bytes) == (x.flops, x.minimum_bytes)
    longer = model.contract(m, c * k, n, s)  # a longer contraction: more work per byte
    assert longer.flops == c * x.flops
    assert longer.intensity >= x.intensity
    wider = model.contract(m, k, n, c * s)  # wider items: the same work, c times the bytes
    assert wider.flops == x.flops
    assert close(wider.intensity, x.intensity / c)


@given(dims, itemsizes)
def test_square_intensity_closed_form(n: int, s: int) -> None:
    assert close(model.contract(n, n, n, s).intensity, model.square_intensity(n, s))
    assert close(model.square_intensity(n, s), 2 * n / (3 * s))
    assert close(model.square_intensity(n, 4), n / 6)


@given(intensities, intensities, rates, rates)
def test_roofline_is_monotone_and_capped(x1: float, x2: float, peak: float, bw: float) -> None:
    lo, hi = sorted((x1, x2))
    a_lo, a_hi = model.attainable(lo, peak, bw), model.attainable(hi, peak, bw)
    assert 0 < a_lo <= a_hi <= peak
    assert a_lo <= bw * lo


@given(rates, rates)
def test_ridge_is_where_the_ceilings_meet(peak: float, bw: float) -> None:
    r = model.ridge(peak, bw)
    assert r == peak / bw
    assert close(model.attainable(r, peak, bw), peak)
    assert model.attainable(r, peak, bw) <= peak
    assert model.attainable(2 * r, peak, bw) == peak
    assert close(model.attainable(r / 2, peak, bw), peak / 2)


@given(rates, rates, st.floats(min_value=1e-9, max_value=0.5))
def test_bound_by_switches_at_the_ridge(peak: float, bw: float, eps: float) -> None:
    r = model.ridge(peak, bw)
    assert model.bound_by(r * (1 - eps), peak, bw) == "memory"
    assert model.bound_by(r * (1 + eps), peak, bw) == "compute"


# 30 GFLOP/s and 3.35 GB/s: 3.35e9 * (3e10 / 3.35e9) == 29999999999.999996 < 3e10, and so for
# about 3% of realistic budget pairs.
RIDGE_ROUNDS_DOWN = (3e10, 3.35e9)


@pytest.mark.parametrize("what", ["attainable", "bound_by"])
def test_at_the_ridge_itself(what: str) -> None:
    peak, bw = RIDGE_ROUNDS_DOWN
    r = model.ridge(peak, bw)
    if what == "attainable":
        assert model.attainable(r, peak, bw) == peak
    else:
        assert model.bound_by(r, peak, bw) == "compute"


@given(st.floats(min_value=0, max_value=1e20), st.floats(min_value=0, max_value=1e20), rates,
       rates, st.floats(min_value=0, max_value=1.0))
def test_predicted_seconds_is_the_largest_term(flops: float, traffic: float, peak: float,
                                               bw: float, dispatch: float) -> None:
    t = model.predicted_seconds(flops, traffic, peak, bw, dispatch)
    terms = (flops / peak, traffic / bw, dispatch)
    assert all(t >= term for term in terms)
    assert t in terms


@given(intensities, rates, rates, factors)
def test_units_scaling_both_budgets(x: float, peak: float, bw: float, c: float) -> None:
    # attainable / bandwidth is an intensity: min(x, ridge).
    assert close(model.attainable(x, peak, bw) / bw, min(x, peak / bw))
    # FLOP/s and bytes/s scaled together: the roofline scales, the ridge (FLOP/byte) does not.
    assert close(model.attainable(x, c * peak, c * bw), c * model.attainable(x, peak, bw))
    assert close(model.ridge(c * peak, c * bw), model.ridge(peak, bw))


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "4"])
def test_contract_refuses_bad_dimensions(bad: Any) -> None:
    with pytest.raises(ValueError):
        model.contract(bad, 4, 4)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_budgets_and_intensity_must_be_positive_and_finite(bad: float) -> None:
    with pytest.raises(ValueError):
        model.ridge(bad, 1e9)
    with pytest.raises(ValueError):
        model.attainable(1.0, 1e9, bad)
    with pytest.raises(ValueError):
        model.attainable(bad, 1e9, 1e9)


# ------------------------------------------------------------------------- loader fuzzing


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real results document: the committed fixture, else a small measurement here."""
    if FIXTURE.is_file():
        return results.load(FIXTURE)
    from roofline_report.observe import run as measure
    from roofline_report.observe import workloads

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(measure, "catalog", lambda _backend="cpu": [workloads.SEED])
        out = tmp_path_factory.mktemp("doc") / "report"
        code = cli.main(["--quick", "--no-sharding", "--no-ceilings", "--no-experiments",
                         "--progress", "none", "--out", str(out)])
    assert code in (0, 3)
    return results.load(out / "results.json")


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8), st.text(st.characters(categories=["Cs"]), min_size=1, max_size=2),
    st.sampled_from([0, -1, 0.0, 1e308, "", "nan", "<b>", [], {}]))
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)


def _expect_input_error_or_document(text: str) -> dict[str, Any] | None:
    try:
        data = results.loads(text, source="fuzz.json")
    except InputError as exc:
        message = str(exc)
        assert message.startswith("fuzz.json: ")
        assert "\n" not in message
        return None
    assert isinstance(data, dict)
    return data


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_loads_random_json_values(value: Any) -> None:
    _expect_input_error_or_document(json.dumps(value))


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.text(), st.text(alphabet='{}[]",:0123456789.eE+-truefalsnNI\\u ')))
def test_loads_random_text(text: str) -> None:
    _expect_input_error_or_document(text)


@given(st.sampled_from(["NaN", "-Infinity", "1e999", "1" * 5000, "[" * 50_000,
                        '{"schema_version": 1, "generator": "\\ud800"}', "\ufeff{}"]))
def test_loads_hostile_numbers_and_text(text: str) -> None:
    with pytest.raises(InputError):
        results.loads(text)


@st.composite
def mutations(draw: st.DrawFn, doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with 1-3 random changes somewhere in it: a key deleted, a value replaced by any
    JSON value, a value's type changed, or a value nested one level deeper."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        node: Any = doc
        while True:
            keys = sorted(node) if isinstance(node, dict) else list(range(len(node)))
            if not keys:
                break
            key = draw(st.sampled_from(keys))
            child = node[key]
            if isinstance(child, dict | list) and child and draw(st.integers(0, 9)) < 7:
                node = child
                continue
            action = draw(st.sampled_from(["delete", "replace", "retype", "nest"]))
            if action == "delete":
                del node[key]
            elif action == "replace":
                node[key] = draw(json_values)
            elif action == "nest":
                node[key] = draw(st.sampled_from([[child], {"value": child}]))
            elif isinstance(child, dict | list):
                node[key] = [] if isinstance(child, dict) else {}
            else:
                node[key] = str(child) if not isinstance(child, str) else 7
            break
    return doc


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_loads_mutated_documents(document: dict[str, Any], data: st.DataObject) -> None:
    mutated = data.draw(mutations(document))
    _expect_input_error_or_document(json.dumps(mutated))


def _trimmed(doc: dict[str, Any]) -> dict[str, Any]:
    """The document with its first two workloads and one sweep (every section still present),
    so that one render takes a fraction of a second."""
    small = copy.deepcopy(doc)
    small["workloads"] = small["workloads"][:2]
    small["sweeps"] = small["sweeps"][:1]
    return small


def _cheap_svg(draw: Any, _name: str, _title: str, _description: str) -> str:
    from matplotlib.figure import Figure

    assert isinstance(draw(), Figure)  # the figure is built, not written
    return "<svg/>\n"


@pytest.mark.slow
@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.filter_too_much])  # the schema refuses most
@given(data=st.data())
def test_accepted_documents_render_or_give_input_error(document: dict[str, Any],
                                                       data: st.DataObject) -> None:
    """Whatever the renderer raises on a validated document must reach the user as InputError,
    and nothing after rendering (results.dumps, writing the folder) may raise anything else.
    Figures are built but not serialised to SVG (matplotlib's savefig is 80% of a render's time;
    anything it raises is inside the same ``render`` call, so the property is the same)."""
    from unittest import mock

    import matplotlib.pyplot as plt

    from roofline_report.report import figures

    mutated = data.draw(mutations(_trimmed(document)))
    loaded = _expect_input_error_or_document(json.dumps(mutated))
    assume(loaded is not None)
    assert loaded is not None
    with tempfile.TemporaryDirectory() as tmp, mock.patch.object(figures, "to_svg", _cheap_svg):
        out = Path(tmp) / "report"
        try:
            cli.write(out, loaded, source="fuzz.json")
        except InputError as exc:
            assert str(exc).startswith("fuzz.json: ")
            assert "\n" not in str(exc)
            assert not out.exists()
            assert list(Path(tmp).iterdir()) == []
        else:
            assert (out / "report.html").is_file()
        finally:
            plt.close("all")


@pytest.mark.slow
def test_unmutated_document_renders(document: dict[str, Any], tmp_path: Path) -> None:
    """The control case: the real document itself renders."""
    cli.write(tmp_path / "report", document, source="fuzz.json")
    assert (tmp_path / "report" / "report.html").is_file()


def test_a_failed_render_leaves_no_open_figure(document: dict[str, Any], tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    plt.close("all")
    broken = copy.deepcopy(document)
    def fail_while_saving(draw: Any, *_args: Any, **_kwargs: Any) -> Any:
        draw()  # the figure is built
        raise ValueError("drawing failed")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(figures, "to_svg", fail_while_saving)
        with pytest.raises(InputError):
            cli.write(tmp_path / "report", broken, source="fuzz.json")
    assert plt.get_fignums() == []
