"""The spec sheet's launch floor: no predicted time on a chip's published roofs falls below the
launch of one kernel, and a chip with no known floor says so."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from roofline_report.analysis import roofs
from roofline_report.analysis.analyse import analyse, assumptions_for
from roofline_report.analysis.records import Analysis
from roofline_report.kinds import Kind, Quantity
from roofline_report.presets import get_preset, list_presets
from roofline_report.report import views as render
from roofline_report.report.format import Num
from roofline_report.report.view_records import PresetView
from roofline_report.results import io as results
from roofline_report.units import format_si

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "cpu_results.json"
GPUS = [p.name for p in list_presets() if p.vendor == "NVIDIA"]
TPUS = [p.name for p in list_presets() if p.vendor == "Google"]
SEED = "tanh(a @ b)"


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    loaded: dict[str, Any] = results.load(FIXTURE)
    return loaded


def _analysed(data: dict[str, Any], preset: str) -> Analysis:
    return analyse(data, assumptions_for(data, preset=preset))


def _spec_view(data: dict[str, Any], preset: str) -> PresetView:
    view = render._preset(_analysed(data, preset))
    assert view is not None
    return view


def _seconds(num: Num) -> float:
    """The value of a formatted time, read back through the formatter (3 significant digits)."""
    value, unit = num.text.split(" ")
    scale = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9, "ps": 1e-12}[unit]
    return float(value) * scale


@pytest.mark.parametrize("name", GPUS)
def test_gpu_preset_json_carries_a_hypothetical_launch_floor(name: str) -> None:
    preset = get_preset(name)
    data = preset.to_json()
    launch = data["launch"]
    q = Quantity.from_json(launch)
    assert q.kind is Kind.HYPOTHETICAL and q.unit == "s"
    assert q.value == preset.launch
    assert q.value is not None and 1e-6 <= q.value <= 1e-5  # a few microseconds
    assert q.note.startswith("assumed") and "CUDA Graphs" in q.note
    assert "a few microseconds per launch" in q.note
    assert launch["sources"]
    assert all(s["url"].startswith("https://") for s in launch["sources"])
    assert any(s["url"] == "https://developer.nvidia.com/blog/cuda-graphs/"
               for s in launch["sources"])


@pytest.mark.parametrize("name", TPUS)
def test_tpu_preset_has_no_launch_floor(name: str) -> None:
    preset = get_preset(name)
    assert preset.launch is None and preset.launch_quantity() is None
    assert preset.to_json()["launch"] is None
    assert roofs.spec_sheet(preset).launch is None


def test_spec_sheet_roof_set_has_the_launch_floor() -> None:
    preset = get_preset("H100")
    roof_set = roofs.spec_sheet(preset)
    assert roof_set.launch == preset.launch
    floor = roof_set.floor("launch")
    assert floor is not None
    assert floor.kind is Kind.HYPOTHETICAL
    assert floor.provenance == preset.launch_note
    assert roof_set.dispatch is None  # no dispatch floor is published or assumed


def test_spec_sheet_tolerates_a_preset_without_launch() -> None:
    record = dataclasses.replace(get_preset("H100"), launch=None, launch_note="")
    roof_set = roofs.spec_sheet(record)
    assert roof_set.floors == () and roof_set.launch is None
    assert roof_set.complete


def test_seed_on_h100_is_never_below_the_launch_floor(data: dict[str, Any]) -> None:
    view = _spec_view(data, "H100")
    floor = get_preset("H100").launch
    assert floor is not None
    assert view.launch == Num(format_si(floor, "s"), Kind.HYPOTHETICAL.value)
    seed = next(r for r in view.placed if r.title == SEED)
    assert _seconds(seed.roofline) < floor  # the roofline alone says about a nanosecond
    assert _seconds(seed.time) >= floor
    assert seed.bound == "launch"
    assert seed.time.kind == Kind.HYPOTHETICAL.value  # set by the assumed floor
    assert seed.roofline.kind == Kind.SPEC_SHEET.value
    for row in view.placed:
        assert _seconds(row.time) >= floor * (1 - 1e-3), row.title
        expected = Kind.HYPOTHETICAL if row.bound == "launch" else Kind.SPEC_SHEET
        assert row.time.kind == expected.value, row.title


def test_the_count_the_floor_binds_follows_the_rows(data: dict[str, Any]) -> None:
    view = _spec_view(data, "H100")
    bound = sum(1 for r in view.placed if r.bound == "launch")
    total = len(view.placed)
    assert 0 < bound < total
    assert view.launch_binds.startswith(f"The launch floor binds {bound} of the {total} ")


def test_large_compute_bound_workload_keeps_its_roofline_time(data: dict[str, Any]) -> None:
    doc = copy.deepcopy(data)
    seed = next(w for w in doc["workloads"] if w["title"] == SEED)
    # An 8192-square float32 matmul: its one kernel counts its work and touches its bytes.
    flops, nbytes = 2 * 8192**3, 3 * 4 * 8192**2
    seed["title"] = "a large product"
    seed["kernels"]["flops"], seed["kernels"]["bytes_read"] = flops, nbytes
    seed["kernels"]["bytes_written"] = 0
    doc["workloads"] = [seed]
    view = render._preset(_analysed(doc, "H100"))
    (row,) = view.placed
    tf32 = get_preset("H100").peak("tf32")
    assert tf32 is not None
    roofline = flops / tf32
    launch = get_preset("H100").launch
    assert launch is not None and roofline > launch
    assert row.bound == "compute"
    assert row.time == Num(format_si(roofline, "s"), Kind.SPEC_SHEET.value)
    assert row.time == row.roofline


def _section_texts(data: dict[str, Any], preset: str) -> tuple[str, str]:
    r = render.render(data, assumptions_for(data, preset=preset))
    start = r.html.index('id="preset"')
    html = r.html[start:r.html.index("</section>", start)]
    md_start = r.markdown.index("Spec sheet: ", r.markdown.index("](#preset)"))
    md = r.markdown[md_start:]
    return html, md


@pytest.mark.slow
@pytest.mark.parametrize("name", ["TPU v5e"])
def test_tpu_section_says_no_launch_floor_is_known(data: dict[str, Any], name: str) -> None:
    view = _spec_view(data, name)
    assert view.launch is None and view.launch_binds == ""
    for row in view.placed:
        assert row.bound in ("memory", "compute")
        assert row.time == row.roofline and row.time.kind == Kind.SPEC_SHEET.value
    html, md = _section_texts(data, name)
    assert "no launch floor known for this chip" in html
    assert "no launch floor known for this chip" in md


@pytest.mark.slow
def test_gpu_section_shows_the_floor_in_both_formats(data: dict[str, Any]) -> None:
    html, md = _section_texts(data, "H100")
    for out in (html, md):
        assert "kernel launch floor" in out
        assert "no launch floor known" not in out
        assert "https://developer.nvidia.com/blog/cuda-graphs/" in out
        assert "predicted time on it" in out
        assert "The launch floor binds" in out


@pytest.mark.slow
def test_the_float32_roof_sentence_follows_the_chip() -> None:
    from roofline_report.analysis.analyse import assumptions_for
    from roofline_report.report import views as render
    from roofline_report.results import io as results

    data = results.load(FIXTURE)
    h100 = render.render(data, assumptions_for(data, preset="H100")).markdown
    assert "float32 work to the H100 SXM tf32 roof, at which jax runs float32" in h100
    tpu = render.render(data, assumptions_for(data, preset="TPU v5e")).markdown
    assert "float32 work to the TPU v5e bf16 roof: the chip publishes no float32 figure" in tpu
    assert "NVIDIA" not in tpu[tpu.index('<a id="preset">'):tpu.index('<a id="sharding">')]
