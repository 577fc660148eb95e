"""Published ICI networks of TPU pods that are 3D tori: TPU v4 and TPU v5p (:data:`TPU_TORI`),
kept apart from the chips' compute figures (:mod:`roofline_report.presets`) and joined to a
preset by its name (:func:`torus_for`).

Every bandwidth is a spec-sheet figure with its source: one ICI link's bytes/s one way, as "How
to Scale Your Model" ('How to Think About TPUs') tabulates it (TPU v4p 4.5e10, TPU v5p 9e10;
bidirectional twice that). A chip has 6 links, one each way along each of the 3 torus axes:
6 x 9e10 one way is 1.08e12 both ways for v5p, where Google's v5p page prints 1,200 GBps of
bidirectional ICI a chip (the book's rounder per-link figure is the one priced). The largest
slice is the pod ("superpod": 16 x 16 x 16 for TPU v4, 16 x 20 x 28 for TPU v5p; Google's v5p
page schedules at most 16 x 16 x 24 in one job), built of 4 x 4 x 4 cubes joined by optical
switches: a slice of whole cubes is a full 3D torus (Google's v5p page: "All 4x4x4 and larger
slices ... have full 3D torus"; the book: "we have wraparound links for the Z axis since it's
a multiple of 4"), a smaller one (2 x 4 x 4) a mesh. The slice shapes are those Google's v5p
page lists. The latency per hop is an assumption (kind hypothetical), the order the book gives
for ICI.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from roofline_report.kinds import Kind, Quantity
from roofline_report.preset_records import Source

_BOOK_TPUS = Source(
    "How to Scale Your Model, 'How to Think About TPUs' (jax-ml/scaling-book): ICI bandwidth "
    "per link and pod sizes", "https://jax-ml.github.io/scaling-book/tpus/")
_BOOK_SHARDING = Source(
    "How to Scale Your Model, 'Sharded Matrices' (jax-ml/scaling-book): wraparound on axes of a "
    "multiple of 4", "https://jax-ml.github.io/scaling-book/sharding/")
_ICI_LATENCY_NOTE = (
    "assumed 1 us per hop, the order the scaling book gives for ICI (a single byte costs about "
    "as long as ~45 kB at full bandwidth)")


@dataclass(frozen=True, slots=True)
class TpuTorus:
    """A TPU pod's ICI: ``link_bandwidth`` bytes/s one way per link, the pod's torus ``axes``,
    a slice of whole ``wraps_every``-sided cubes closing the ring of each axis, the slice
    shape of each chip count that ``slices`` lists (a smaller count takes the most nearly
    cubic slice that fits), an assumed ``latency`` per hop."""

    chip: str
    link_bandwidth: float
    axes: tuple[int, ...]
    wraps_every: int
    latency: float
    latency_note: str
    sources: tuple[Source, ...]
    slices: tuple[tuple[int, tuple[int, ...]], ...] = ()

    @property
    def links(self) -> int:
        """Links per chip: one each way along each torus axis."""
        return 2 * len(self.axes)

    @property
    def egress(self) -> float:
        """Bytes/s one chip sends on all its links at once."""
        return self.links * self.link_bandwidth

    def to_json(self) -> dict[str, Any]:
        """The link as a preset's interconnect is written (name, both-directions figure, egress,
        latency, one link's figure, sources): the figures the torus is priced at."""
        link = f"{self.link_bandwidth / 1e9:g} GB/s"
        return {
            "name": "ICI",
            "bandwidth": Quantity(2 * self.egress, "B/s", Kind.SPEC_SHEET,
                                  f"per chip, both directions: {self.links} links x {link} "
                                  "each way").to_json(),
            "egress": self.egress,
            "latency": Quantity(self.latency, "s", Kind.HYPOTHETICAL,
                                self.latency_note).to_json(),
            "link_bandwidth": Quantity(self.link_bandwidth, "B/s", Kind.SPEC_SHEET,
                                       f"one ICI link, one way ({link})").to_json(),
            "sources": [source.to_json() for source in self.sources],
        }


# Slice shapes of Google's v5p page (axes sorted), up to 16 x 16 x 16.
_CUBES: tuple[tuple[int, tuple[int, ...]], ...] = (
    (4, (1, 2, 2)), (8, (2, 2, 2)), (32, (2, 4, 4)), (64, (4, 4, 4)), (128, (4, 4, 8)),
    (256, (4, 8, 8)), (512, (8, 8, 8)), (1024, (8, 8, 16)), (2048, (8, 16, 16)),
    (4096, (16, 16, 16)),
)

TPU_TORI: tuple[TpuTorus, ...] = (
    TpuTorus("TPU v4", 4.5e10, (16, 16, 16), 4, 1e-6, _ICI_LATENCY_NOTE,
             (_BOOK_TPUS, _BOOK_SHARDING,
              Source("Google Cloud TPU documentation: TPU v4 (3D torus, optical circuit "
                     "switches)", "https://cloud.google.com/tpu/docs/v4")),
             _CUBES),
    TpuTorus("TPU v5p", 9.0e10, (16, 20, 28), 4, 1e-6, _ICI_LATENCY_NOTE,
             (_BOOK_TPUS, _BOOK_SHARDING,
              Source("Google Cloud TPU documentation: TPU v5p (system architecture)",
                     "https://cloud.google.com/tpu/docs/v5p")),
             (*_CUBES, (6144, (16, 16, 24)), (8960, (16, 20, 28)))),
)


def _key(name: str) -> str:
    return re.sub(r"[\s_\-]+", "", str(name).casefold()).replace("tpu", "")


def torus_for(name: str) -> TpuTorus | None:
    """The 3D-torus ICI of the chip ``name`` ("TPU v5p", "v5p", "tpu-v4"...), None when this
    table has none."""
    key = _key(name)
    return next((t for t in TPU_TORI if _key(t.chip) == key), None)
