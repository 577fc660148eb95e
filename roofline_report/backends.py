"""What roofline-report knows of each kind of backend (no jax): one description per backend,
used everywhere a backend matters, so that a new backend is one new description.

A backend is named by what ``jax.default_backend()`` returns ("cpu", "gpu", "cuda", "rocm",
"tpu") or by a trace's device planes; :func:`describe` maps every such name to one
:class:`Backend`. Nothing here is a measurement: the figures the report shows come from the
ceilings measured on the machine, or from a chip's spec sheet, and each says so.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BACKENDS", "Backend", "describe"]


@dataclass(frozen=True, slots=True)
class Backend:
    """One kind of backend.

    ``main_memory``: the name of the memory the slowest bandwidth roof belongs to; ``caches``:
    where cache sizes come from (or that none are known, and the levels of the working-set
    sweep are found from its plateaus alone); ``float32_matmul``: how jax runs float32 matrix
    products there by default; ``converts_bfloat16``: whether the backend computes bfloat16 in
    float32 (converting operands and results); ``launch``: what one kernel launch costs and
    where that figure comes from; ``aliases``: the platform names that mean this backend.
    """

    name: str
    title: str
    aliases: tuple[str, ...]
    main_memory: str
    caches: str
    caches_known: bool
    float32_matmul: str
    converts_bfloat16: bool
    launch: str
    accelerator: bool


CPU = Backend(
    name="cpu",
    title="CPU",
    aliases=("cpu",),
    main_memory="DRAM",
    caches="the operating system's description of the data caches (Linux sysfs, else lscpu)",
    caches_known=True,
    float32_matmul="full float32",
    converts_bfloat16=True,
    launch=("measured: the time one more kernel adds inside a compiled program (XLA:CPU runs "
            "each kernel as a thunk of its runtime)"),
    accelerator=False,
)
GPU = Backend(
    name="gpu",
    title="GPU",
    aliases=("gpu", "cuda", "rocm"),
    main_memory="HBM",
    caches="none known to the tool: levels are the plateaus of the working-set sweep",
    caches_known=False,
    float32_matmul="TF32 on NVIDIA GPUs (jax's default precision); HIGHEST for full float32",
    converts_bfloat16=False,
    launch=("measured where the ceilings ran; a spec sheet assumes 2 µs (hypothetical: vendors "
            "publish none)"),
    accelerator=True,
)
TPU = Backend(
    name="tpu",
    title="TPU",
    aliases=("tpu",),
    main_memory="HBM",
    caches="none known to the tool: levels are the plateaus of the working-set sweep",
    caches_known=False,
    float32_matmul="bfloat16 passes (jax's default precision on TPUs)",
    converts_bfloat16=False,
    launch="measured where the ceilings ran; no published figure is known",
    accelerator=True,
)
OTHER = Backend(
    name="other",
    title="device",
    aliases=(),
    main_memory="main memory",
    caches="none known to the tool: levels are the plateaus of the working-set sweep",
    caches_known=False,
    float32_matmul="unknown: the ceilings measured per dtype say",
    converts_bfloat16=False,
    launch="measured where the ceilings ran; no published figure is known",
    accelerator=True,
)
BACKENDS: tuple[Backend, ...] = (CPU, GPU, TPU)


def describe(name: str | None) -> Backend:
    """The description of a backend by any of its names (case ignored); a generic one for a
    name no description claims; the CPU's for None or '' (the default backend of a run that
    recorded none)."""
    key = (name or "").strip().lower()
    for backend in BACKENDS:
        if key in backend.aliases:
            return backend
    if key.startswith(("/device:gpu", "gpu:")):
        return GPU
    if key.startswith(("/device:tpu", "tpu:")):
        return TPU
    return CPU if not key else OTHER
