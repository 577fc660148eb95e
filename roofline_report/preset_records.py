"""What a spec-sheet preset is (no jax): a chip's published peaks per dtype, its HBM and
interconnect, their sources, and the dtype names the spec sheets use. The chips themselves,
with their figures and sources, are :mod:`roofline_report.presets`; its conventions (dense
peaks, both directions of a link added, assumed latencies and launch floors) hold here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from roofline_report import roofline
from roofline_report.errors import InputError
from roofline_report.kinds import Kind, Quantity

# Spec-sheet dtype names, and the numpy/JAX dtype names that map onto them.
SPEC_DTYPES = ("bf16", "fp16", "fp8", "int8", "tf32", "fp32", "fp64")
_DTYPE_ALIASES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "single": "fp32",
    "float64": "fp64",
    "double": "fp64",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
    "float8_e4m3": "fp8",
    "float8_e4m3fnuz": "fp8",
    "float8_e5m2fnuz": "fp8",
    "uint8": "int8",
}


def normalize_dtype(dtype: str) -> str:
    """Map ``"bfloat16"``/``"bf16"``/``"BF16"`` to the spec-sheet name ``"bf16"``.

    Raises InputError for a name that is neither a spec-sheet dtype nor a known alias.
    """
    key = str(dtype).strip().lower()
    key = _DTYPE_ALIASES.get(key, key)
    if key not in SPEC_DTYPES:
        known = ", ".join(SPEC_DTYPES)
        raise InputError(f"unknown dtype {dtype!r} for a chip peak; known: {known}")
    return key


@dataclass(frozen=True, slots=True)
class Source:
    """Where a published figure comes from."""

    title: str
    url: str

    def to_json(self) -> dict[str, str]:
        return {"title": self.title, "url": self.url}


@dataclass(frozen=True, slots=True)
class Peak:
    """One dense peak: ``value`` per second in ``unit`` (FLOP/s, or OP/s for integers)."""

    dtype: str
    value: float
    unit: str = "FLOP/s"
    note: str = ""

    def quantity(self) -> Quantity:
        return Quantity(self.value, self.unit, Kind.SPEC_SHEET, self.note)


@dataclass(frozen=True, slots=True)
class Interconnect:
    """Chip-to-chip link: ``bandwidth`` in bytes/s per chip, both directions added.

    ``latency`` is the seconds one step of a collective costs whatever its size (the alpha of
    the alpha-beta model). Vendors publish no per-step collective latency for these links, so
    it is an assumption (kind hypothetical) whose ``latency_note`` says where its order of
    magnitude comes from; ``sources`` cite the link's published figures.
    """

    name: str
    bandwidth: float
    note: str = ""
    latency: float | None = None
    latency_note: str = ""
    sources: tuple[Source, ...] = ()
    # A torus link's bytes/s one way (TPU ICI), where the chip's links form a torus; None on a
    # switched link (NVLink through NVSwitch, InfiniBand), where ``egress`` is what counts.
    link_bandwidth: float | None = None
    link_note: str = ""

    def quantity(self) -> Quantity:
        return Quantity(self.bandwidth, "B/s", Kind.SPEC_SHEET, self.note)

    @property
    def egress(self) -> float:
        """Bytes/s one chip sends: half the both-directions figure."""
        return self.bandwidth / 2

    def latency_quantity(self) -> Quantity:
        return Quantity(self.latency, "s", Kind.HYPOTHETICAL, self.latency_note)

    def link_quantity(self) -> Quantity | None:
        """One torus link's bandwidth one way (spec sheet), None on a switched link."""
        if self.link_bandwidth is None:
            return None
        return Quantity(self.link_bandwidth, "B/s", Kind.SPEC_SHEET, self.link_note)

    def to_json(self) -> dict[str, Any]:
        link = self.link_quantity()
        return {"name": self.name, "bandwidth": self.quantity().to_json(),
                "egress": self.egress, "latency": self.latency_quantity().to_json(),
                "link_bandwidth": None if link is None else link.to_json(),
                "sources": [source.to_json() for source in self.sources]}


@dataclass(frozen=True, slots=True)
class Preset:
    """A chip's published figures. ``kind`` is always spec_sheet."""

    name: str
    aliases: tuple[str, ...]
    vendor: str
    peaks: tuple[Peak, ...]
    hbm_bandwidth: float
    hbm_note: str
    interconnect: Interconnect | None
    sources: tuple[Source, ...]
    notes: str
    domain: int | None = None  # chips on the scale-up link (one NVLink node, one TPU pod)
    scale_out: Interconnect | None = None  # the link between domains, where published
    # Seconds one kernel launch costs at the least (an assumption, kind hypothetical); None
    # where no launch floor is known for the chip. ``launch_note`` says where its order of
    # magnitude comes from, ``launch_sources`` cite it.
    launch: float | None = None
    launch_note: str = ""
    launch_sources: tuple[Source, ...] = ()
    # The scale-up domain as a torus (a TPU pod's 16 x 16 chips), where the topology is
    # published: its axes, and the published slice shape of each chip count.
    torus: tuple[int, ...] = ()
    slices: tuple[tuple[int, tuple[int, ...]], ...] = ()

    @property
    def kind(self) -> Kind:
        return Kind.SPEC_SHEET

    def peak(self, dtype: str = "bf16") -> float | None:
        """Dense peak for ``dtype`` (spec or numpy name); None where none is published."""
        key = normalize_dtype(dtype)
        for peak in self.peaks:
            if peak.dtype == key:
                return peak.value
        return None

    def peak_quantity(self, dtype: str = "bf16") -> Quantity:
        """The peak as a Quantity; value None, with a note, where none is published."""
        key = normalize_dtype(dtype)
        for peak in self.peaks:
            if peak.dtype == key:
                return peak.quantity()
        unit = "OP/s" if key == "int8" else "FLOP/s"
        note = f"{self.name}: no published {key} figure"
        return Quantity(None, unit, Kind.SPEC_SHEET, note)

    def hbm_quantity(self) -> Quantity:
        return Quantity(self.hbm_bandwidth, "B/s", Kind.SPEC_SHEET, self.hbm_note)

    def launch_quantity(self) -> Quantity | None:
        """The launch floor in seconds, kind hypothetical; None where none is known."""
        if self.launch is None:
            return None
        return Quantity(self.launch, "s", Kind.HYPOTHETICAL, self.launch_note)

    def launch_json(self) -> dict[str, Any] | None:
        """The launch floor's quantity with its sources; None where none is known."""
        quantity = self.launch_quantity()
        if quantity is None:
            return None
        return {**quantity.to_json(), "sources": [s.to_json() for s in self.launch_sources]}

    def ridge(self, dtype: str = "bf16") -> float | None:
        """Ridge intensity peak/HBM bandwidth in FLOP/byte; None where no peak is published."""
        value = self.peak(dtype)
        return None if value is None else roofline.ridge(value, self.hbm_bandwidth)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "aliases": list(self.aliases),
            "vendor": self.vendor,
            "kind": self.kind.value,
            "peaks": {peak.dtype: peak.quantity().to_json() for peak in self.peaks},
            "hbm_bandwidth": self.hbm_quantity().to_json(),
            "interconnect": None if self.interconnect is None else self.interconnect.to_json(),
            "sources": [source.to_json() for source in self.sources],
            "notes": self.notes,
            "domain": self.domain,
            "scale_out": None if self.scale_out is None else self.scale_out.to_json(),
            "launch": self.launch_json(),
            "torus": list(self.torus),
            "slices": {str(n): list(shape) for n, shape in self.slices},
        }

    def link_for(self, devices: int) -> Interconnect | None:
        """The slowest link a collective over ``devices`` chips crosses: the scale-up link
        within one domain, the scale-out link beyond it (None where none is published)."""
        if self.domain is None or devices <= self.domain:
            return self.interconnect
        return self.scale_out
