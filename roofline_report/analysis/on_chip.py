"""A TPU kernel whose operands stay in the core's own memories (vector memory, scalars): which
roofs measured on arrays streamed from HBM do not bound it, and the rate its on-chip bytes are
priced at instead (pure; no jax). :mod:`.predict` applies it.
"""

from __future__ import annotations

from roofline_report.results import schema

ON_CHIP = "on-chip"  # the rate of bytes moved within a TPU core's vector memory
ON_CHIP_DETAIL = "on chip"  # the detail of a prediction's term for its on-chip bytes
ON_CHIP_REDUCTION = ("its reductions read operands that stay on chip: the row reduction's "
                     "roof, measured on arrays in HBM, does not bound them; priced by their "
                     "on-chip bytes")

#: Reductions whose roofs are measured on arrays streamed from HBM: on a TPU v5e a strided
#: reduction whose operands the compiler kept in vector memory ran 3.5 times faster (median
#: of 39 kernels) than that roof allows, near its on-chip bytes at the on-chip rate (0.84 of
#: its time). Transposes, gathers, scatters, sorts and top-k keep their roofs there: their
#: time goes with their access order, not with where their bytes are.
STREAMED_PATTERNS = ("strided-reduction", "variadic-reduction", "interleaved-reduction",
                     "reduce-window-lane")
ON_CHIP_PATTERN = ("its operands stay on chip: the {pattern} roof ({roof}), measured on "
                   "arrays in HBM, does not bound it; priced by its on-chip bytes")


def reads_on_chip(kernel: schema.KernelRecord) -> bool:
    """True for a TPU kernel whose operands all stay in the core's own memories: no HBM byte
    read, some on chip (what it writes, a reduction's small result say, may go to HBM)."""
    return kernel.bytes_read == 0 and kernel.on_chip_bytes_read > 0
