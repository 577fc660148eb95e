"""Tests for roofline_report.presets: the published figures, lookup, JSON and device matching."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from roofline_report.errors import InputError
from roofline_report.kinds import Kind, Quantity
from roofline_report.presets import (
    Preset,
    get_preset,
    list_presets,
    match_device_kind,
    normalize_dtype,
)

# (name, dense bf16 FLOP/s, HBM bytes/s, interconnect bytes/s) from the cited spec sheets.
PUBLISHED = [
    ("H100 SXM", 9.89e14, 3.35e12, 9.0e11),
    ("H200", 9.89e14, 4.8e12, 9.0e11),
    ("A100", 3.12e14, 2.039e12, 6.0e11),
    ("B200", 2.25e15, 8.0e12, 1.8e12),
    ("TPU v5e", 1.97e14, 8.19e11, 3.6e11),
    ("TPU v6e", 9.18e14, 1.64e12, 7.2e11),
    ("H100 PCIe", 7.565e14, 2.0e12, 6.0e11),
    ("GH200", 9.89e14, 4.0e12, 9.0e11),
    ("GH200 144GB", 9.89e14, 4.9e12, 9.0e11),
    ("GB200", 2.5e15, 8.0e12, 1.8e12),
    ("L4", 1.21e14, 3.0e11, None),
    ("L40S", 3.6205e14, 8.64e11, None),
    ("AMD Instinct MI300X", 1.3074e15, 5.3e12, 8.96e11),
    ("AMD Instinct MI325X", 1.3074e15, 6.0e12, 8.96e11),
    ("AMD Instinct MI350X", 256 * 4096 * 2.2e9, 8.0e12, None),
    ("AMD Instinct MI355X", 256 * 4096 * 2.4e9, 8.0e12, None),
    ("AMD Instinct MI250X", 1.915e14, 1.6384e12, None),
    ("TPU v4", 2.75e14, 1.2e12, None),
    ("TPU v5p", 4.59e14, 2.765e12, 1.2e12),
    ("TPU7x", 2.307e15, 7.37e12, None),
]


@pytest.mark.parametrize(("name", "bf16", "hbm", "link"), PUBLISHED)
def test_published_figures(name: str, bf16: float, hbm: float, link: float | None) -> None:
    preset = get_preset(name)
    assert preset.name == name
    assert preset.peak("bf16") == pytest.approx(bf16)
    assert preset.hbm_bandwidth == hbm
    if link is None:  # no interconnect figure could be confirmed: none is given
        assert preset.interconnect is None
    else:
        assert preset.interconnect is not None
        assert preset.interconnect.bandwidth == link
    assert preset.ridge("bf16") == pytest.approx(bf16 / hbm)


def test_all_required_chips_present() -> None:
    assert [p.name for p in list_presets()] == [row[0] for row in PUBLISHED]


def test_h100_uses_the_dense_figure_not_the_sparse_one() -> None:
    h100 = get_preset("H100 SXM")
    assert h100.peak("bf16") == pytest.approx(1.979e15 / 2, rel=1e-3)
    assert h100.peak("bf16") != 1.979e15
    assert "sparse" in h100.peak_quantity("bf16").note
    assert "sparse" in h100.notes


def test_ridges_match_hand_computed_values() -> None:
    assert get_preset("H100").ridge() == pytest.approx(295.2, abs=0.1)
    assert get_preset("TPU v5e").ridge() == pytest.approx(240.5, abs=0.1)  # "about 240"
    assert get_preset("H200").ridge("bfloat16") == pytest.approx(206.04, abs=0.01)


def test_hopper_per_dtype_peaks() -> None:
    h100 = get_preset("h100")
    assert h100.peak("fp8") == 1.979e15
    assert h100.peak("tf32") == pytest.approx(989e12 / 2, rel=1e-3)
    assert h100.peak("float32") == 6.7e13
    assert h100.peak_quantity("int8").unit == "OP/s"


def test_unpublished_dtype_gives_none() -> None:
    a100 = get_preset("A100")
    assert a100.peak("fp8") is None
    assert a100.ridge("float8_e4m3fn") is None
    missing = a100.peak_quantity("fp8")
    assert missing.value is None
    assert missing.kind is Kind.SPEC_SHEET
    assert "fp8" in missing.note
    assert get_preset("TPU v6e").peak("float32") is None


def test_unknown_dtype_is_input_error() -> None:
    with pytest.raises(InputError, match="unknown dtype 'complex64'"):
        get_preset("H100").peak("complex64")
    assert normalize_dtype("BFloat16") == "bf16"
    assert normalize_dtype(" FP8 ") == "fp8"


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("h100", "H100 SXM"),
        ("H100-SXM", "H100 SXM"),
        ("h100_sxm5", "H100 SXM"),
        ("  H200 ", "H200"),
        ("a100-sxm4-80gb", "A100"),
        ("B200", "B200"),
        ("v5e", "TPU v5e"),
        ("tpu-v5e", "TPU v5e"),
        ("Trillium", "TPU v6e"),
        ("TPU V6E", "TPU v6e"),
    ],
)
def test_aliases(alias: str, name: str) -> None:
    assert get_preset(alias).name == name


def test_unknown_preset_lists_known_names() -> None:
    with pytest.raises(InputError) as info:
        get_preset("H300")
    message = str(info.value)
    assert "'H300'" in message
    for preset in list_presets():
        assert preset.name in message


def test_no_alias_is_shared_between_presets() -> None:
    seen: dict[str, str] = {}
    for preset in list_presets():
        for name in (preset.name, *preset.aliases):
            key = "".join(name.casefold().replace("-", " ").replace("_", " ").split())
            assert seen.setdefault(key, preset.name) == preset.name


@pytest.mark.parametrize(
    ("device_kind", "name"),
    [
        ("NVIDIA H200", "H200"),
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 SXM5 80GB", "H100 SXM"),
        ("NVIDIA A100-SXM4-80GB", "A100"),
        ("NVIDIA B200", "B200"),
        ("TPU v5 lite", "TPU v5e"),
        ("TPU v5e", "TPU v5e"),
        ("TPU v6 lite", "TPU v6e"),
        ("TPU v6e", "TPU v6e"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H100 NVL", None),
        ("NVIDIA H200 NVL", None),
        ("NVIDIA GH200 480GB", "GH200"),
        ("NVIDIA GH200 624GB", "GH200 144GB"),
        ("NVIDIA GH200", None),
        ("NVIDIA GB200", "GB200"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA L40S", "L40S"),
        ("AMD Instinct MI300X", "AMD Instinct MI300X"),
        ("AMD Instinct MI355X", "AMD Instinct MI355X"),
        ("NVIDIA A100-SXM4-40GB", None),
        ("NVIDIA A100 80GB PCIe", None),
        ("TPU v5", "TPU v5p"),
        ("TPU v5p", "TPU v5p"),
        ("TPU v4", "TPU v4"),
        ("TPU7x", "TPU7x"),
        ("TPU v3", None),
        ("cpu", None),
        ("", None),
    ],
)
def test_match_device_kind(device_kind: str, name: str | None) -> None:
    preset = match_device_kind(device_kind)
    assert (None if preset is None else preset.name) == name


def _assert_plain(value: object) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            assert isinstance(key, str)
            _assert_plain(item)
    elif isinstance(value, list):
        for item in value:
            _assert_plain(item)
    elif isinstance(value, float):
        assert math.isfinite(value)
    else:
        assert value is None or isinstance(value, str | int | bool)


@pytest.mark.parametrize("preset", list_presets(), ids=lambda p: p.name)
def test_to_json_is_plain_and_complete(preset: Preset) -> None:
    data = preset.to_json()
    _assert_plain(data)
    assert json.loads(json.dumps(data, sort_keys=True)) == data
    assert set(data) == {
        "name",
        "aliases",
        "vendor",
        "kind",
        "peaks",
        "hbm_bandwidth",
        "interconnect",
        "sources",
        "notes",
        "domain",
        "scale_out",
        "launch",
        "torus",
        "slices",
    }
    assert data["kind"] == "spec_sheet"
    assert "bf16" in data["peaks"]
    for quantity in (*data["peaks"].values(), data["hbm_bandwidth"]):
        assert Quantity.from_json(quantity).kind is Kind.SPEC_SHEET
        assert quantity["value"] > 0
    assert data["hbm_bandwidth"]["unit"] == "B/s"
    if data["interconnect"] is not None:
        assert data["interconnect"]["bandwidth"]["unit"] == "B/s"
    if data["launch"] is not None:  # an assumption: kind hypothetical, with its sources
        assert Quantity.from_json(data["launch"]).kind is Kind.HYPOTHETICAL
        assert data["launch"]["unit"] == "s" and data["launch"]["sources"]
    # A launch floor is assumed for NVIDIA GPUs only: no TPU or AMD source gives one.
    assert (data["launch"] is None) == (preset.vendor != "NVIDIA")
    assert data["sources"], "every preset cites a source"
    for source in data["sources"]:
        assert set(source) == {"title", "url"}
        assert source["url"].startswith("https://")


def test_presets_are_frozen() -> None:
    preset = get_preset("H200")
    with pytest.raises(dataclasses.FrozenInstanceError):
        preset.hbm_bandwidth = 1.0  # type: ignore[misc]


def test_vendor_sources_are_cited() -> None:
    for preset in list_presets():
        domains = {source.url.split("/")[2] for source in preset.sources}
        expected = {"NVIDIA": "www.nvidia.com", "AMD": "www.amd.com"}.get(preset.vendor,
                                                                        "cloud.google.com")
        assert expected in domains, preset.name


@pytest.mark.parametrize("preset", [p for p in list_presets() if p.interconnect is not None],
                         ids=lambda p: p.name)
def test_links_carry_latency_and_sources(preset: Preset) -> None:
    links = [link for link in (preset.interconnect, preset.scale_out) if link is not None]
    assert links
    for link in links:
        assert link.latency is not None and 1e-7 <= link.latency <= 1e-4
        assert link.latency_note.startswith("assumed")
        assert link.egress == link.bandwidth / 2
        assert link.sources and all(s.url.startswith("https://") for s in link.sources)
        data = link.to_json()
        assert data["latency"]["kind"] == "hypothetical" and data["latency"]["unit"] == "s"
    assert preset.domain in (None, 8, 256)


def test_links_by_device_count() -> None:
    h100 = get_preset("H100")
    assert h100.link_for(8) is h100.interconnect
    scale_out = h100.link_for(64)
    assert scale_out is not None and scale_out.name == "InfiniBand NDR"
    assert scale_out.egress == 400e9 / 8  # one 400 Gb/s port per GPU, 50 GB/s each way
    v5e = get_preset("TPU v5e")
    assert v5e.link_for(256) is v5e.interconnect and v5e.link_for(1024) is None


@pytest.mark.parametrize(("name", "link"), [("TPU v5e", 4.5e10), ("TPU v6e", 9.0e10)])
def test_tpu_pods_are_a_published_torus(name: str, link: float) -> None:
    """A v5e or v6e pod: 16 x 16 chips, 4 ICI links per chip of the scaling book's one-way
    figure; a slice of N chips is the published rectangle (wraparound only on an axis of 16)."""
    preset = get_preset(name)
    assert preset.torus == (16, 16) and preset.domain == 256
    slices = dict(preset.slices)
    assert slices[8] == (2, 4) and slices[64] == (8, 8) and slices[256] == (16, 16)
    assert all(math.prod(shape) == n for n, shape in preset.slices)
    ici = preset.interconnect
    assert ici is not None and ici.link_bandwidth == link
    data = ici.to_json()["link_bandwidth"]
    assert data["kind"] == "spec_sheet" and data["value"] == link and "one way" in data["note"]
    assert any("scaling-book/tpus" in s.url for s in ici.sources)
    assert preset.scale_out is None  # no published network figure across pods


def test_gpu_links_are_switched() -> None:
    h100 = get_preset("H100 SXM")
    assert h100.torus == () and h100.interconnect is not None
    assert h100.interconnect.link_bandwidth is None
    assert h100.interconnect.egress == 4.5e11  # NVLink 4: 900 GB/s both ways per GPU
