"""Which chip a trace ran on, from the stats its device plane keeps (pure: no jax).

A GPU's device plane in a profiler trace does not name the chip. It keeps what the runtime
reported of it: ``device_vendor`` ("AMD", "Nvidia"), ``core_count`` (compute units or SMs),
``compute_cap_major``/``compute_cap_minor`` (9.4 is AMD's gfx942, 9.5 gfx950, 9.0 gfx90a; 9.0
is also NVIDIA Hopper), ``memory_size`` (bytes) and ``clock_rate`` (kHz). :func:`recognise`
matches those against the published shape of each chip a preset describes (the vendor's
compute-unit count, architecture and memory; ROCm's "AMD GPU specifications" table for AMD),
and returns the preset with the facts it matched on, or None with why not. A device that two
chips could be (the same die with the same memory) is matched only where the clock tells them
apart; otherwise it gets no preset rather than a wrong one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["DeviceFacts", "Recognition", "recognise"]

GIB = 1 << 30


@dataclass(frozen=True, slots=True)
class DeviceFacts:
    """What a trace's device plane says of its device."""

    vendor: str | None = None
    cores: int | None = None
    compute_capability: tuple[int, int] | None = None
    memory_bytes: int | None = None
    clock_hz: float | None = None
    name: str | None = None

    @classmethod
    def from_stats(cls, stats: Mapping[str, Any]) -> DeviceFacts:
        def whole(key: str) -> int | None:
            value = stats.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        major, minor = whole("compute_cap_major"), whole("compute_cap_minor")
        clock = whole("clock_rate")  # kHz
        vendor = stats.get("device_vendor")
        name = stats.get("gpu_device_name") or stats.get("device_type_string")
        return cls(vendor=str(vendor) if vendor else None, cores=whole("core_count"),
                   compute_capability=(major, minor) if major is not None and minor is not None
                   else None,
                   memory_bytes=whole("memory_size"),
                   clock_hz=clock * 1e3 if clock else None,
                   name=str(name) if name else None)


@dataclass(frozen=True, slots=True)
class _Shape:
    """One chip as its device plane shows it."""

    preset: str
    vendor: str  # casefolded device_vendor
    capability: tuple[int, int]
    cores: int
    memory_gib: tuple[float, float]  # the range of memory_size in GiB
    clock_ghz: tuple[float, float] | None = None  # where the clock tells two chips apart
    arch: str = ""  # the architecture's name, for the words


# The published shape of each chip: compute units or SMs, architecture, device memory. AMD:
# ROCm's "AMD GPU specifications" (MI300X 304 CUs, 192 GiB; MI325X 304 CUs, 256 GiB;
# MI350X/MI355X 256 CUs, 288 GiB, 2.2/2.4 GHz peak engine clock; MI250X 110 CUs and 64 GiB per
# GCD). NVIDIA: the vendor's whitepapers (A100 108 SMs, H100 SXM and H200 132 SMs, H100 PCIe 114
# SMs; compute capability 8.0, 9.0). The memory ranges hold what the runtime reports (a little
# under the marketed size) and exclude the boards of other memory sizes on the same die.
_SHAPES: tuple[_Shape, ...] = (
    _Shape("AMD Instinct MI300X", "amd", (9, 4), 304, (180, 200), arch="gfx942"),
    _Shape("AMD Instinct MI325X", "amd", (9, 4), 304, (240, 260), arch="gfx942"),
    _Shape("AMD Instinct MI355X", "amd", (9, 5), 256, (270, 290), (2.35, 2.45), arch="gfx950"),
    _Shape("AMD Instinct MI350X", "amd", (9, 5), 256, (270, 290), (2.15, 2.25), arch="gfx950"),
    _Shape("AMD Instinct MI250X", "amd", (9, 0), 110, (60, 65), arch="gfx90a"),
    _Shape("A100", "nvidia", (8, 0), 108, (75, 81), arch="Ampere"),
    _Shape("H100 SXM", "nvidia", (9, 0), 132, (75, 81), arch="Hopper"),
    _Shape("H100 PCIe", "nvidia", (9, 0), 114, (75, 81), arch="Hopper"),
    _Shape("H200", "nvidia", (9, 0), 132, (130, 142), arch="Hopper"),
)


@dataclass(frozen=True, slots=True)
class Recognition:
    """The preset a device was recognised as (None: none), the facts used, and why not."""

    preset: str | None
    facts: DeviceFacts
    by: str  # "name", "stats" or "" (not recognised)
    reason: str = ""  # why no preset, where none

    def to_json(self) -> dict[str, Any]:
        f = self.facts
        return {"preset": self.preset, "by": self.by, "reason": self.reason,
                "vendor": f.vendor, "cores": f.cores,
                "compute_capability": None if f.compute_capability is None
                else f"{f.compute_capability[0]}.{f.compute_capability[1]}",
                "memory_bytes": f.memory_bytes, "clock_hz": f.clock_hz, "name": f.name}


def _fits(shape: _Shape, f: DeviceFacts) -> bool:
    if (f.vendor or "").casefold() != shape.vendor or f.compute_capability != shape.capability:
        return False
    if f.cores != shape.cores or f.memory_bytes is None:
        return False
    low, high = shape.memory_gib
    if not low * GIB <= f.memory_bytes <= high * GIB:
        return False
    if shape.clock_ghz is not None:
        return f.clock_hz is not None and \
            shape.clock_ghz[0] * 1e9 <= f.clock_hz <= shape.clock_ghz[1] * 1e9
    return True


def recognise(facts: DeviceFacts) -> Recognition:
    """The preset ``facts`` describe: by the device's name where the trace keeps one that a
    preset matches, else by its vendor, architecture, core count, memory (and clock)."""
    from roofline_report import presets

    if facts.name:
        match = presets.match_device_kind(facts.name)
        if match is not None:
            return Recognition(match.name, facts, "name")
    fits = [s for s in _SHAPES if _fits(s, facts)]
    if len(fits) == 1:
        return Recognition(fits[0].preset, facts, "stats")
    if not facts.vendor and facts.cores is None:
        why = "the trace keeps neither the device's name nor its vendor and core count"
    elif len(fits) > 1:  # pragma: no cover - the table's shapes are disjoint (a test checks)
        why = "several chips have that shape: " + ", ".join(s.preset for s in fits)
    else:
        why = "no chip preset has that vendor, architecture, core count and memory"
    return Recognition(None, facts, "", why)


def architecture(facts: DeviceFacts) -> str:
    """The architecture a device's compute capability names (``gfx942``), where known."""
    for shape in _SHAPES:
        if (facts.vendor or "").casefold() == shape.vendor and \
                facts.compute_capability == shape.capability:
            return shape.arch
    return ""
