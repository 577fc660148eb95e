"""Tests for roofline_report.device_recognition: the chip a trace ran on, from the stats its
device plane keeps (vendor, compute capability, cores, memory, clock) or its name."""

from __future__ import annotations

import pytest

from roofline_report.device_recognition import (
    _SHAPES,
    GIB,
    DeviceFacts,
    _fits,
    architecture,
    recognise,
)
from roofline_report.presets import get_preset

# The device-plane stats of the real traces (tests/fixtures/traces_real).
MI300X = {"device_vendor": "AMD", "clock_rate": 2100000, "core_count": 304,
          "memory_bandwidth": 2662400000000, "memory_size": 206141652992,
          "compute_cap_major": 9, "compute_cap_minor": 4}
MI355X = {"device_vendor": "AMD", "clock_rate": 2400000, "core_count": 256,
          "memory_bandwidth": 4096000000000, "memory_size": 309220868096,
          "compute_cap_major": 9, "compute_cap_minor": 5}


def test_stats_of_real_traces() -> None:
    found = recognise(DeviceFacts.from_stats(MI300X))
    assert (found.preset, found.by) == ("AMD Instinct MI300X", "stats")
    assert recognise(DeviceFacts.from_stats(MI355X)).preset == "AMD Instinct MI355X"
    facts = DeviceFacts.from_stats(MI300X)
    assert facts.clock_hz == 2.1e9 and facts.compute_capability == (9, 4)
    assert architecture(facts) == "gfx942"


@pytest.mark.parametrize(("stats", "preset"), [
    ({**MI300X, "memory_size": 256 * GIB - 2 * GIB}, "AMD Instinct MI325X"),
    ({**MI355X, "clock_rate": 2200000}, "AMD Instinct MI350X"),
    ({"device_vendor": "AMD", "core_count": 110, "memory_size": 64 * GIB - GIB // 2,
      "compute_cap_major": 9, "compute_cap_minor": 0}, "AMD Instinct MI250X"),
    ({"device_vendor": "Nvidia", "core_count": 132, "memory_size": 85_031_714_816,
      "compute_cap_major": 9, "compute_cap_minor": 0}, "H100 SXM"),
    ({"device_vendor": "Nvidia", "core_count": 114, "memory_size": 85_031_714_816,
      "compute_cap_major": 9, "compute_cap_minor": 0}, "H100 PCIe"),
    ({"device_vendor": "Nvidia", "core_count": 132, "memory_size": 150_754_820_096,
      "compute_cap_major": 9, "compute_cap_minor": 0}, "H200"),
    ({"device_vendor": "Nvidia", "core_count": 108, "memory_size": 85_031_714_816,
      "compute_cap_major": 8, "compute_cap_minor": 0}, "A100"),
])
def test_shapes(stats: dict[str, object], preset: str) -> None:
    found = recognise(DeviceFacts.from_stats(stats))
    assert found.preset == preset
    get_preset(preset)  # every shape names a preset that exists


@pytest.mark.parametrize("stats", [
    {**MI300X, "core_count": 228, "memory_size": 128 * GIB},  # MI300A: no preset
    {**MI300X, "core_count": 38},  # one partition of an MI300X (CPX mode)
    {**MI355X, "clock_rate": 2000000},  # a clock neither MI350X nor MI355X runs at
    {"device_vendor": "Nvidia", "core_count": 108, "memory_size": 42_505_273_344,
     "compute_cap_major": 8, "compute_cap_minor": 0},  # A100 40 GB: no preset
    {"device_vendor": "Nvidia", "core_count": 132, "memory_size": 100_485_038_080,
     "compute_cap_major": 9, "compute_cap_minor": 0},  # H100 NVL or GH200: not told apart
])
def test_devices_no_preset_describes_get_none(stats: dict[str, object]) -> None:
    found = recognise(DeviceFacts.from_stats(stats))
    assert found.preset is None and found.by == ""
    assert "no chip preset" in found.reason


def test_a_name_the_trace_keeps_comes_first() -> None:
    found = recognise(DeviceFacts.from_stats({**MI300X, "gpu_device_name": "NVIDIA H200"}))
    assert (found.preset, found.by) == ("H200", "name")
    tpu = recognise(DeviceFacts.from_stats({"device_type_string": "TPU v5 lite"}))
    assert tpu.preset == "TPU v5e"
    nothing = recognise(DeviceFacts.from_stats({}))
    assert nothing.preset is None and "neither the device's name" in nothing.reason


def test_no_device_fits_two_shapes() -> None:
    for a in _SHAPES:
        low, high = a.memory_gib
        for memory in (low, (low + high) / 2, high):
            clock = None if a.clock_ghz is None else sum(a.clock_ghz) / 2 * 1e9
            facts = DeviceFacts(a.vendor, a.cores, a.capability, int(memory * GIB), clock)
            assert [s.preset for s in _SHAPES if _fits(s, facts)] == [a.preset]
