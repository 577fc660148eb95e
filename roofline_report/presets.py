"""Spec-sheet presets of real accelerators: published dense peaks, HBM and interconnect bandwidth.

Every figure here is a :attr:`~roofline_report.kinds.Kind.SPEC_SHEET` number: what the vendor
publishes for one chip (one GPU, one TPU chip), with its source. They are ceilings nobody reaches
in practice (GPUs typically reach 80-85% of the claimed matmul peak), and they describe the chip
named, not the machine the report runs on.

Conventions:

* Peaks are **dense**. NVIDIA's tables print tensor-core figures "with sparsity" (2:4 structured
  sparsity doubles them); the dense figure is half of that and is the one used here.
* Peak keys are the spec sheets' names: ``bf16``, ``fp16``, ``fp8``, ``int8``, ``tf32``, ``fp32``,
  ``fp64``. :func:`normalize_dtype` also accepts numpy/JAX names (``bfloat16``, ``float32``...).
  ``fp32`` is the non-tensor-core figure; JAX runs float32 matmuls on NVIDIA GPUs at TF32 by
  default, so ``tf32`` is often the relevant ceiling there.
* Integer peaks are in OP/s, floating-point peaks in FLOP/s, bandwidths in bytes/s.
* Interconnect bandwidth is the vendor's per-chip figure, both directions added: NVLink per GPU,
  ICI per TPU chip over all its ports; a chip sends at half of it (``Interconnect.egress``).
  ``domain`` chips share that link (an 8-GPU NVLink node, a 256-chip TPU pod); beyond it a
  collective crosses ``scale_out`` (InfiniBand, one port per GPU), where published. A TPU pod
  is a torus (``Preset.torus``, 16 x 16 for v5e and v6e) of links of ``link_bandwidth`` bytes/s
  one way each, the figure the scaling book tabulates; ``slices`` gives the published slice
  shape of each chip count (the wraparound exists only on an axis of 16). The TPU presets give
  no network figure across pods.
* Interconnect latencies are assumptions (kind hypothetical): no vendor publishes the per-step
  latency of a collective; each note says where its order of magnitude comes from.
* The kernel launch floor of a GPU (``Preset.launch``, seconds one kernel launch costs at the
  least) is an assumption too (kind hypothetical): no vendor publishes it, and its note says
  where its order of magnitude comes from. TPU presets have none (None): no launch floor is
  known for those chips.

A dtype a chip does not publish a figure for gives None (:meth:`Preset.peak`), not an error.
"""

from __future__ import annotations

import re

from roofline_report.errors import InputError
from roofline_report.preset_records import (
    SPEC_DTYPES,
    Interconnect,
    Peak,
    Preset,
    Source,
    normalize_dtype,
)

# The records a preset is made of are preset_records'; they stay importable from here.
__all__ = ["SPEC_DTYPES", "Interconnect", "Peak", "Preset", "Source", "get_preset",
           "list_presets", "match_device_kind", "normalize_dtype"]

_SPARSE = "dense; NVIDIA's table prints the 2:4-sparse figure, twice this"

_SCALING_BOOK_GPUS = Source(
    "How to Scale Your Model, 'How to Think About GPUs' (jax-ml/scaling-book)",
    "https://jax-ml.github.io/scaling-book/gpus/",
)
_SCALING_BOOK_TPUS = Source(
    "How to Scale Your Model, 'How to Think About TPUs' (jax-ml/scaling-book)",
    "https://jax-ml.github.io/scaling-book/tpus/",
)


def _hopper_peaks() -> tuple[Peak, ...]:
    """H100 SXM and H200 share the GH100 die and its compute figures."""
    return (
        Peak("bf16", 9.89e14, note=_SPARSE + " (1,979 TFLOP/s)"),
        Peak("fp16", 9.89e14, note=_SPARSE + " (1,979 TFLOP/s)"),
        Peak("fp8", 1.979e15, note=_SPARSE + " (3,958 TFLOP/s)"),
        Peak("int8", 1.979e15, unit="OP/s", note=_SPARSE + " (3,958 TOPS)"),
        Peak("tf32", 4.945e14, note=_SPARSE + " (989 TFLOP/s)"),
        Peak("fp32", 6.7e13, note="non-tensor-core"),
        Peak("fp64", 3.4e13, note="non-tensor-core; FP64 tensor core 67 TFLOP/s"),
    )


_NCCL_TESTS = Source(
    "NVIDIA nccl-tests, doc/PERFORMANCE.md (algorithm and bus bandwidth of each collective)",
    "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md",
)
_SCALING_BOOK_SHARDING = Source(
    "How to Scale Your Model, 'Sharded Matrices', a note on ICI latency (jax-ml/scaling-book)",
    "https://jax-ml.github.io/scaling-book/sharding/",
)
_NVLINK_LATENCY = (
    "assumed 1 us per step: NVIDIA publishes no NVLink collective latency; small-message NCCL "
    "steps over NVSwitch take the order of a microsecond (measure with nccl-tests)"
)
_IB_LATENCY = (
    "assumed 5 us per step: NVIDIA quotes sub-microsecond switch port-to-port latency for "
    "Quantum-2; GPU to GPU across nodes adds PCIe, the NIC and the software, a few microseconds"
)
_ICI_LATENCY = (
    "assumed 1 us per hop, the order the scaling book gives for ICI (a single byte costs about "
    "as long as ~45 kB at full bandwidth)"
)


_CUDA_GRAPHS = Source("NVIDIA Technical Blog, 'Getting Started with CUDA Graphs'",
                      "https://developer.nvidia.com/blog/cuda-graphs/")
_GPU_LAUNCH = 2e-6
_GPU_LAUNCH_NOTE = (
    "assumed 2 µs per kernel launch: NVIDIA publishes no launch cost; its blog 'Getting Started "
    "with CUDA Graphs' times short kernels launched back to back on a stream at a few "
    "microseconds per launch, the overhead CUDA Graphs were made to cut; the low end of that "
    "is taken, so that the floor does not overstate the cost"
)


def _nvlink(name: str, bandwidth: float, source: Source) -> Interconnect:
    return Interconnect(name, bandwidth, "per GPU, both directions", latency=1e-6,
                        latency_note=_NVLINK_LATENCY, sources=(source, _NCCL_TESTS))


def _infiniband(name: str, gbit: int, source: Source) -> Interconnect:
    per_direction = gbit * 1e9 / 8
    return Interconnect(
        name, 2 * per_direction,
        f"one {gbit} Gb/s port per GPU ({per_direction / 1e9:g} GB/s each way), both directions",
        latency=5e-6, latency_note=_IB_LATENCY,
        sources=(source, Source("NVIDIA Quantum-2 InfiniBand platform",
                                "https://www.nvidia.com/en-us/networking/quantum2/")),
    )  # fmt: skip


def _ici(published: str, source: Source, link: float, ports: int = 4) -> Interconnect:
    """A TPU chip's ICI as it is priced: ``ports`` links of ``link`` bytes/s each way (the
    scaling book's table), so the chip's figure, both directions added, is ``2 ports link``
    and its egress ``ports link``: the figure every header prints is the one priced.
    ``published`` quotes the vendor page's own per-chip figure."""
    return Interconnect(
        "ICI", 2 * ports * link,
        f"per chip, both directions: {ports} links x {link / 1e9:g} GB/s each way ({published})",
        latency=1e-6, latency_note=_ICI_LATENCY,
        sources=(source, _SCALING_BOOK_TPUS, _SCALING_BOOK_SHARDING), link_bandwidth=link,
        link_note=f"one ICI link, one way ({link / 1e9:g} GB/s; {2 * link / 1e9:g} GB/s both "
        f"ways), as the scaling book's table of TPU interconnects gives it; {ports} links per "
        "chip on the 2D torus")  # fmt: skip


# A pod of TPU v5e or v6e chips is a 16 x 16 2D torus; a slice of fewer chips is a smaller
# rectangle, with the wraparound only on an axis of 16 (Google Cloud TPU documentation, the
# v5e and v6e pages' topologies; "How to Scale Your Model", 'How to Think About TPUs').
_POD_2D = (16, 16)
_SLICES_2D: tuple[tuple[int, tuple[int, ...]], ...] = (
    (1, (1, 1)), (4, (2, 2)), (8, (2, 4)), (16, (4, 4)), (32, (4, 8)), (64, (8, 8)),
    (128, (8, 16)), (256, (16, 16)),
)


_DGX_H100 = Source("NVIDIA DGX H100 (8 GPUs; 8 x 400 Gb/s ConnectX-7 InfiniBand ports)",
                   "https://www.nvidia.com/en-us/data-center/dgx-h100/")
_DGX_A100 = Source("NVIDIA DGX A100 (8 GPUs; 8 x 200 Gb/s ConnectX-6 InfiniBand ports)",
                   "https://www.nvidia.com/en-us/data-center/dgx-a100/")
_HGX = Source("NVIDIA HGX platform (8-GPU boards; NVLink and networking)",
              "https://www.nvidia.com/en-us/data-center/hgx/")

_PRESETS: tuple[Preset, ...] = (
    Preset(
        name="H100 SXM",
        aliases=("h100", "h100-sxm", "h100-sxm5", "h100 80gb"),
        vendor="NVIDIA",
        peaks=_hopper_peaks(),
        hbm_bandwidth=3.35e12,
        hbm_note="80 GB HBM3",
        interconnect=_nvlink("NVLink 4", 9.0e11, Source(
            "NVIDIA H100 Tensor Core GPU", "https://www.nvidia.com/en-us/data-center/h100/")),
        sources=(
            Source("NVIDIA H100 Tensor Core GPU", "https://www.nvidia.com/en-us/data-center/h100/"),
            _SCALING_BOOK_GPUS,
        ),
        notes="SXM5 board. Dense peaks; sparse figures are 2x. The PCIe and NVL boards have "
        "lower clocks and bandwidth and are not this preset.",
        domain=8,
        launch=_GPU_LAUNCH, launch_note=_GPU_LAUNCH_NOTE, launch_sources=(_CUDA_GRAPHS,),
        scale_out=_infiniband("InfiniBand NDR", 400, _DGX_H100),
    ),
    Preset(
        name="H200",
        aliases=("h200-sxm", "h200 sxm", "h200-141gb"),
        vendor="NVIDIA",
        peaks=_hopper_peaks(),
        hbm_bandwidth=4.8e12,
        hbm_note="141 GB HBM3e",
        interconnect=_nvlink("NVLink 4", 9.0e11, Source(
            "NVIDIA H200 Tensor Core GPU", "https://www.nvidia.com/en-us/data-center/h200/")),
        sources=(
            Source("NVIDIA H200 Tensor Core GPU", "https://www.nvidia.com/en-us/data-center/h200/"),
            _SCALING_BOOK_GPUS,
        ),
        notes="SXM board; same compute as H100 SXM, more and faster HBM. Dense peaks; sparse "
        "figures are 2x. The H200 NVL (PCIe) board is not this preset.",
        domain=8,
        launch=_GPU_LAUNCH, launch_note=_GPU_LAUNCH_NOTE, launch_sources=(_CUDA_GRAPHS,),
        scale_out=_infiniband("InfiniBand NDR", 400, _HGX),
    ),
    Preset(
        name="A100",
        aliases=("a100-sxm", "a100 sxm", "a100-80gb", "a100-sxm4-80gb", "a100 sxm 80gb"),
        vendor="NVIDIA",
        peaks=(
            Peak("bf16", 3.12e14, note=_SPARSE + " (624 TFLOP/s)"),
            Peak("fp16", 3.12e14, note=_SPARSE + " (624 TFLOP/s)"),
            Peak("int8", 6.24e14, unit="OP/s", note=_SPARSE + " (1,248 TOPS)"),
            Peak("tf32", 1.56e14, note=_SPARSE + " (312 TFLOP/s)"),
            Peak("fp32", 1.95e13, note="non-tensor-core"),
            Peak("fp64", 9.7e12, note="non-tensor-core; FP64 tensor core 19.5 TFLOP/s"),
        ),
        hbm_bandwidth=2.039e12,
        hbm_note="80 GB HBM2e, SXM (2,039 GB/s; the scaling book rounds to 2.0e12)",
        interconnect=_nvlink("NVLink 3", 6.0e11, _DGX_A100),
        sources=(
            Source(
                "NVIDIA A100 Tensor Core GPU datasheet",
                "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
                "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf",
            ),
            _SCALING_BOOK_GPUS,
        ),
        notes="SXM4 80 GB board. Dense peaks; sparse figures are 2x. The 40 GB board "
        "(1,555 GB/s) and the PCIe boards are not this preset. No FP8 support.",
        domain=8,
        launch=_GPU_LAUNCH, launch_note=_GPU_LAUNCH_NOTE, launch_sources=(_CUDA_GRAPHS,),
        scale_out=_infiniband("InfiniBand HDR", 200, _DGX_A100),
    ),
    Preset(
        name="B200",
        aliases=("b200-sxm", "hgx b200", "hgx-b200"),
        vendor="NVIDIA",
        peaks=(
            Peak("bf16", 2.25e15, note=_SPARSE + " (4.5 PFLOP/s)"),
            Peak("fp16", 2.25e15, note=_SPARSE + " (4.5 PFLOP/s)"),
            Peak("fp8", 4.5e15, note=_SPARSE + " (9 PFLOP/s)"),
            Peak("int8", 4.5e15, unit="OP/s", note=_SPARSE + " (9 POPS)"),
            Peak("tf32", 1.1e15, note=_SPARSE + " (2.2 PFLOP/s)"),
            Peak("fp32", 8.0e13, note="non-tensor-core; a later table revision lists 75 TFLOP/s"),
            Peak("fp64", 4.0e13, note="a later table revision lists 37 TFLOP/s"),
        ),
        hbm_bandwidth=8.0e12,
        hbm_note="HBM3e, 192 GB (later HGX tables list 180 GB at 7.7 TB/s)",
        interconnect=_nvlink("NVLink 5", 1.8e12, _HGX),
        sources=(
            Source(
                "NVIDIA HGX platform (HGX B200 specifications)",
                "https://www.nvidia.com/en-us/data-center/hgx/",
            ),
            _SCALING_BOOK_GPUS,
        ),
        notes="HGX B200 (1,000 W configuration), per GPU. Dense peaks; sparse figures are 2x. "
        "GB200 parts run at higher power and publish higher peaks.",
        domain=8,
        launch=_GPU_LAUNCH, launch_note=_GPU_LAUNCH_NOTE, launch_sources=(_CUDA_GRAPHS,),
        scale_out=_infiniband("InfiniBand NDR", 400, _HGX),
    ),
    Preset(
        name="TPU v5e",
        aliases=("v5e", "tpu-v5e", "tpuv5e", "tpu v5 lite", "v5litepod"),
        vendor="Google",
        peaks=(
            Peak("bf16", 1.97e14),
            Peak("int8", 3.93e14, unit="OP/s", note="393 TOPS"),
        ),
        hbm_bandwidth=8.19e11,
        hbm_note="16 GB HBM2, 819 GBps (the scaling book rounds to 8.2e11)",
        interconnect=_ici(
            "an earlier revision of Google's v5e page: 1,600 Gbps per chip",
            Source("Google Cloud TPU documentation: TPU v5e",
                   "https://cloud.google.com/tpu/docs/v5e"),
            4.5e10,
        ),
        sources=(
            Source(
                "Google Cloud TPU documentation: TPU v5e", "https://cloud.google.com/tpu/docs/v5e"
            ),
            _SCALING_BOOK_TPUS,
        ),
        notes="One TensorCore per chip. No published FP32 matmul peak. A pod is a 16 x 16 "
        "torus; pods talk over the data-center network, for which no per-chip figure is "
        "published here.",
        domain=256, torus=_POD_2D, slices=_SLICES_2D,
    ),
    Preset(
        name="TPU v6e",
        aliases=("v6e", "tpu-v6e", "tpuv6e", "trillium", "tpu v6 lite"),
        vendor="Google",
        peaks=(
            Peak("bf16", 9.18e14),
            Peak("int8", 1.836e15, unit="OP/s", note="1,836 TOPS"),
        ),
        hbm_bandwidth=1.64e12,
        hbm_note="32 GB HBM, 1,640 GBps (revisions of the page also print 1,638 and 1,600 GBps)",
        interconnect=_ici(
            "an earlier revision of Google's v6e page: 3,584 Gbps per chip",
            Source("Google Cloud TPU documentation: TPU v6e (Trillium)",
                   "https://cloud.google.com/tpu/docs/v6e"),
            9.0e10,
        ),
        sources=(
            Source(
                "Google Cloud TPU documentation: TPU v6e (Trillium)",
                "https://cloud.google.com/tpu/docs/v6e",
            ),
            _SCALING_BOOK_TPUS,
        ),
        notes="Trillium. One TensorCore per chip. No published FP32 matmul peak. A pod is a "
        "16 x 16 torus; pods talk over the data-center network, for which no per-chip figure "
        "is published here.",
        domain=256, torus=_POD_2D, slices=_SLICES_2D,
    ),
)


# --- More data-centre accelerators a JAX user runs on (AMD Instinct, more NVIDIA boards, TPU v4,
# v5p and TPU7x). Interconnect figures are kept in ``interconnect`` as published; where a
# figure could not be confirmed from a vendor's page it is left out rather than guessed.

_ROCM_SPECS = Source("AMD ROCm documentation: AMD GPU specifications (compute units, VRAM, LLVM "
                     "target of each Instinct GPU)",
                     "https://rocm.docs.amd.com/en/latest/reference/gpu-specs.html")
_IF_LATENCY = (
    "assumed 1 us per step: AMD publishes no Infinity Fabric collective latency; small-message "
    "RCCL steps between GPUs of one node take the order of a microsecond, as NCCL's over NVLink"
)


def _infinity_fabric(bandwidth: float, note: str, source: Source) -> Interconnect:
    return Interconnect("Infinity Fabric", bandwidth, note, latency=1e-6,
                        latency_note=_IF_LATENCY, sources=(source,))


def _cdna3_peaks() -> tuple[Peak, ...]:
    """MI300X and MI325X share the CDNA 3 die and its compute figures (AMD's dense figures)."""
    return (
        Peak("bf16", 1.3074e15, note="dense (1,307.4 TFLOP/s; 2,614.9 with sparsity)"),
        Peak("fp16", 1.3074e15, note="dense (1,307.4 TFLOP/s)"),
        Peak("fp8", 2.6149e15, note="dense (2,614.9 TFLOP/s)"),
        Peak("int8", 2.6149e15, unit="OP/s", note="dense (2,614.9 TOPS)"),
        Peak("tf32", 6.537e14, note="dense (653.7 TFLOP/s)"),
        Peak("fp32", 1.634e14, note="vector and matrix (163.4 TFLOP/s)"),
        Peak("fp64", 8.17e13, note="vector (81.7 TFLOP/s; matrix 163.4)"),
    )


def _cdna4_peaks(clock_ghz: float) -> tuple[Peak, ...]:
    """MI350X and MI355X: 256 CUs, 8,192 dense FP8 FLOP per CU per clock (as AMD presented
    the MI355X at ISSCC 2026: 5 PFLOP/s FP8; half that in FP16/BF16), at the chip's peak
    engine clock."""
    fp8 = 256 * 8192 * clock_ghz * 1e9
    note = f"dense: 256 CUs x {{}} FLOP/clock/CU x {clock_ghz:g} GHz"
    return (
        Peak("bf16", fp8 / 2, note=note.format("4,096") + f" ({fp8 / 2e12:,.1f} TFLOP/s)"),
        Peak("fp16", fp8 / 2, note=note.format("4,096") + f" ({fp8 / 2e12:,.1f} TFLOP/s)"),
        Peak("fp8", fp8, note=note.format("8,192") + f" ({fp8 / 1e12:,.1f} TFLOP/s)"),
    )


_MI300X = Source("AMD Instinct MI300X accelerator (specifications)",
                 "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html")
_MI325X = Source("AMD Instinct MI325X accelerator (specifications)",
                 "https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html")
_MI350 = Source("AMD Instinct MI350 Series (MI350X and MI355X specifications)",
                "https://www.amd.com/en/products/accelerators/instinct/mi350.html")
_CDNA4 = Source("AMD CDNA 4 architecture white paper",
                "https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/"
                "white-papers/amd-cdna-4-architecture-whitepaper.pdf")
_MI250X = Source("AMD Instinct MI250X accelerator (specifications)",
                 "https://www.amd.com/en/products/accelerators/instinct/mi200/mi250x.html")
_H100 = Source("NVIDIA H100 Tensor Core GPU", "https://www.nvidia.com/en-us/data-center/h100/")
_GH200 = Source("NVIDIA GH200 Grace Hopper Superchip",
                "https://www.nvidia.com/en-us/data-center/grace-hopper-superchip/")
_GB200 = Source("NVIDIA GB200 NVL72 (per-GPU specifications)",
                "https://www.nvidia.com/en-us/data-center/gb200-nvl72/")
_L4 = Source("NVIDIA L4 Tensor Core GPU", "https://www.nvidia.com/en-us/data-center/l4/")
_L40S = Source("NVIDIA L40S GPU", "https://www.nvidia.com/en-us/data-center/l40s/")
_TPU_V4 = Source("Google Cloud TPU documentation: TPU v4", "https://cloud.google.com/tpu/docs/v4")
_TPU_V5P = Source("Google Cloud TPU documentation: TPU v5p",
                  "https://cloud.google.com/tpu/docs/v5p")
_TPU7X = Source("Google Cloud TPU documentation: TPU7x (Ironwood)",
                "https://cloud.google.com/tpu/docs/tpu7x")


def _gh200(name: str, aliases: tuple[str, ...], hbm: float, note: str) -> Preset:
    return Preset(
        name=name, aliases=aliases, vendor="NVIDIA", peaks=_hopper_peaks(), hbm_bandwidth=hbm,
        hbm_note=note,
        interconnect=_nvlink("NVLink 4", 9.0e11, _GH200),
        sources=(_GH200, _SCALING_BOOK_GPUS),
        notes="The Hopper GPU of a GH200 superchip: H100 SXM's compute figures; the memory "
        "named. NVLink-C2C (900 GB/s) joins it to its Grace CPU.",
        domain=8, launch=_GPU_LAUNCH, launch_note=_GPU_LAUNCH_NOTE,
        launch_sources=(_CUDA_GRAPHS,))


_MORE_PRESETS: tuple[Preset, ...] = (
    Preset(
        name="H100 PCIe", aliases=("h100-pcie", "h100 pcie 80gb"), vendor="NVIDIA",
        peaks=(
            Peak("bf16", 7.565e14, note=_SPARSE + " (1,513 TFLOP/s)"),
            Peak("fp16", 7.565e14, note=_SPARSE + " (1,513 TFLOP/s)"),
            Peak("fp8", 1.513e15, note=_SPARSE + " (3,026 TFLOP/s)"),
            Peak("int8", 1.513e15, unit="OP/s", note=_SPARSE + " (3,026 TOPS)"),
            Peak("tf32", 3.78e14, note=_SPARSE + " (756 TFLOP/s)"),
            Peak("fp32", 5.1e13, note="non-tensor-core"),
            Peak("fp64", 2.6e13, note="non-tensor-core"),
        ),
        hbm_bandwidth=2.0e12, hbm_note="80 GB HBM2e",
        interconnect=_nvlink("NVLink bridge", 6.0e11, _H100),
        sources=(_H100,),
        notes="PCIe board (114 SMs). Dense peaks; sparse figures are 2x. NVLink joins two "
        "boards by a bridge.",
        domain=8,
        launch=_GPU_LAUNCH, launch_note=_GPU_LAUNCH_NOTE, launch_sources=(_CUDA_GRAPHS,),
    ),
    _gh200("GH200", ("gh200-96gb", "gh200 hbm3", "grace hopper"), 4.0e12, "96 GB HBM3"),
    _gh200("GH200 144GB", ("gh200-144gb", "gh200 hbm3e"), 4.9e12, "144 GB HBM3e"),
    Preset(
        name="GB200", aliases=("gb200-nvl72", "gb200 nvl72", "b200 grace"), vendor="NVIDIA",
        peaks=(
            Peak("bf16", 2.5e15, note=_SPARSE + " (5 PFLOP/s)"),
            Peak("fp16", 2.5e15, note=_SPARSE + " (5 PFLOP/s)"),
            Peak("fp8", 5.0e15, note=_SPARSE + " (10 PFLOP/s)"),
            Peak("int8", 5.0e15, unit="OP/s", note=_SPARSE + " (10 POPS)"),
            Peak("tf32", 1.25e15, note=_SPARSE + " (2.5 PFLOP/s)"),
            Peak("fp32", 8.0e13, note="non-tensor-core"),
            Peak("fp64", 4.0e13),
        ),
        hbm_bandwidth=8.0e12, hbm_note="186 GB HBM3e",
        interconnect=_nvlink("NVLink 5", 1.8e12, _GB200),
        sources=(_GB200,),
        notes="One Blackwell GPU of a GB200 superchip (up to 1,200 W), per GPU. Dense peaks; "
        "sparse figures are 2x. An NVL72 rack joins 72 GPUs by NVLink; this preset's link "
        "domain is not modelled beyond the figure.",
        launch=_GPU_LAUNCH, launch_note=_GPU_LAUNCH_NOTE, launch_sources=(_CUDA_GRAPHS,),
    ),
    Preset(
        name="L4", aliases=("nvidia-l4", "l4 24gb"), vendor="NVIDIA",
        peaks=(
            Peak("bf16", 1.21e14, note=_SPARSE + " (242 TFLOP/s)"),
            Peak("fp16", 1.21e14, note=_SPARSE + " (242 TFLOP/s)"),
            Peak("fp8", 2.425e14, note=_SPARSE + " (485 TFLOP/s)"),
            Peak("int8", 2.425e14, unit="OP/s", note=_SPARSE + " (485 TOPS)"),
            Peak("tf32", 6.0e13, note=_SPARSE + " (120 TFLOP/s)"),
            Peak("fp32", 3.03e13, note="non-tensor-core"),
        ),
        hbm_bandwidth=3.0e11, hbm_note="24 GB GDDR6 (not HBM), 300 GB/s",
        interconnect=None, sources=(_L4,),
        notes="Ada Lovelace PCIe board, 72 W. No NVLink: GPUs talk over PCIe Gen4.",
        launch=_GPU_LAUNCH, launch_note=_GPU_LAUNCH_NOTE, launch_sources=(_CUDA_GRAPHS,),
    ),
    Preset(
        name="L40S", aliases=("nvidia-l40s", "l40s 48gb"), vendor="NVIDIA",
        peaks=(
            Peak("bf16", 3.6205e14, note=_SPARSE + " (733 TFLOP/s)"),
            Peak("fp16", 3.6205e14, note=_SPARSE + " (733 TFLOP/s)"),
            Peak("fp8", 7.33e14, note=_SPARSE + " (1,466 TFLOP/s)"),
            Peak("tf32", 1.83e14, note=_SPARSE + " (366 TFLOP/s)"),
            Peak("fp32", 9.16e13, note="non-tensor-core"),
        ),
        hbm_bandwidth=8.64e11, hbm_note="48 GB GDDR6 (not HBM), 864 GB/s",
        interconnect=None, sources=(_L40S,),
        notes="Ada Lovelace PCIe board, 350 W. No NVLink: GPUs talk over PCIe Gen4. No INT8 "
        "figure is given here: the one page read lists it for the L40 only.",
        launch=_GPU_LAUNCH, launch_note=_GPU_LAUNCH_NOTE, launch_sources=(_CUDA_GRAPHS,),
    ),
    Preset(
        name="AMD Instinct MI300X", aliases=("mi300x", "mi300x oam", "instinct mi300x"),
        vendor="AMD", peaks=_cdna3_peaks(), hbm_bandwidth=5.3e12, hbm_note="192 GB HBM3",
        interconnect=_infinity_fabric(
            8.96e11, "per GPU, both directions: 7 links of 128 GB/s", _MI300X),
        sources=(_MI300X, _ROCM_SPECS),
        notes="CDNA 3 (gfx942), 304 compute units. Dense peaks; sparse figures are 2x. "
        "ROCm reports 192 GiB of device memory.",
        domain=8,
    ),
    Preset(
        name="AMD Instinct MI325X", aliases=("mi325x", "instinct mi325x"),
        vendor="AMD", peaks=_cdna3_peaks(), hbm_bandwidth=6.0e12, hbm_note="256 GB HBM3e",
        interconnect=_infinity_fabric(
            8.96e11, "per GPU, both directions: 7 links of 128 GB/s", _MI325X),
        sources=(_MI325X, _ROCM_SPECS),
        notes="CDNA 3 (gfx942), 304 compute units, MI300X's compute with more and faster "
        "memory. Dense peaks; sparse figures are 2x.",
        domain=8,
    ),
    Preset(
        name="AMD Instinct MI350X", aliases=("mi350x", "instinct mi350x"),
        vendor="AMD", peaks=_cdna4_peaks(2.2), hbm_bandwidth=8.0e12, hbm_note="288 GB HBM3e",
        interconnect=None, sources=(_MI350, _CDNA4, _ROCM_SPECS),
        notes="CDNA 4 (gfx950), 256 compute units, 2.2 GHz peak engine clock, air-cooled "
        "(1,000 W). Dense peaks from the per-CU rate; no FP32, INT8 or interconnect figure "
        "could be confirmed here, so none is given.",
    ),
    Preset(
        name="AMD Instinct MI355X", aliases=("mi355x", "instinct mi355x"),
        vendor="AMD", peaks=_cdna4_peaks(2.4), hbm_bandwidth=8.0e12, hbm_note="288 GB HBM3e",
        interconnect=None, sources=(_MI350, _CDNA4, _ROCM_SPECS),
        notes="CDNA 4 (gfx950), 256 compute units, 2.4 GHz peak engine clock, liquid-cooled "
        "(1,400 W). Dense peaks from the per-CU rate (5 PFLOP/s FP8, as AMD states); no "
        "FP32, INT8 or interconnect figure could be confirmed here, so none is given.",
    ),
    Preset(
        name="AMD Instinct MI250X", aliases=("mi250x", "mi250x gcd", "instinct mi250x"),
        vendor="AMD",
        peaks=(
            Peak("bf16", 1.915e14, note="one GCD: half the package's 383 TFLOP/s"),
            Peak("fp16", 1.915e14, note="one GCD: half the package's 383 TFLOP/s"),
        ),
        hbm_bandwidth=1.6384e12,
        hbm_note="one GCD: half the package's 128 GB HBM2e at 3.2768 TB/s",
        interconnect=None, sources=(_MI250X, _ROCM_SPECS),
        notes="CDNA 2 (gfx90a). One graphics compute die (GCD, 110 compute units, 64 GB): "
        "JAX sees each of the package's two GCDs as a device, so the figures are the "
        "package's halved.",
    ),
    Preset(
        name="TPU v4", aliases=("v4", "tpu-v4", "tpuv4"), vendor="Google",
        peaks=(Peak("bf16", 2.75e14), Peak("int8", 2.75e14, unit="OP/s", note="275 TOPS")),
        hbm_bandwidth=1.2e12, hbm_note="32 GiB HBM2, 1,200 GBps",
        interconnect=None, sources=(_TPU_V4, _SCALING_BOOK_TPUS),
        notes="Two TensorCores per chip (one JAX device). A pod is a 3D torus; its ICI "
        "figure is not given here.",
    ),
    Preset(
        name="TPU v5p", aliases=("v5p", "tpu-v5p", "tpuv5p"), vendor="Google",
        peaks=(Peak("bf16", 4.59e14), Peak("fp8", 4.59e14, note="as bf16: 459 TFLOP/s")),
        hbm_bandwidth=2.765e12, hbm_note="95 GiB HBM2e, 2,765 GBps",
        interconnect=Interconnect(
            "ICI", 1.2e12, "per chip, both directions (1,200 GBps; 4,800 Gbps on an earlier "
            "revision of the page)", latency=1e-6, latency_note=_ICI_LATENCY,
            sources=(_TPU_V5P,)),
        sources=(_TPU_V5P, _SCALING_BOOK_TPUS),
        notes="Two TensorCores per chip (one JAX device). A pod of 8,960 chips is a 3D torus.",
    ),
    Preset(
        name="TPU7x", aliases=("ironwood", "tpu7x", "tpu 7x", "tpu-7x", "tpu v7", "tpu7"),
        vendor="Google",
        peaks=(Peak("bf16", 2.307e15), Peak("fp8", 4.614e15)),
        hbm_bandwidth=7.37e12,
        hbm_note="192 GiB HBM3e, 7.37 TB/s (4.5x Trillium's, as Google announced Ironwood)",
        interconnect=None, sources=(_TPU7X,),
        notes="Ironwood. Two TensorCores per chip. A pod is 9,216 chips; its ICI figure is "
        "not given here.",
    ),
)
_PRESETS = _PRESETS + _MORE_PRESETS


def list_presets() -> tuple[Preset, ...]:
    """All presets, in a fixed order."""
    return _PRESETS


def _key(name: str) -> str:
    return re.sub(r"[\s_\-]+", "", name.casefold())


_BY_KEY: dict[str, Preset] = {}
for _preset in _PRESETS:
    for _name in (_preset.name, *_preset.aliases):
        _existing = _BY_KEY.setdefault(_key(_name), _preset)
        if _existing is not _preset:  # pragma: no cover - a table error, caught by the tests
            raise AssertionError(f"preset alias {_name!r} is ambiguous")


def get_preset(name: str) -> Preset:
    """The preset named ``name`` or one of its aliases (case, spaces, '-' and '_' ignored).

    Raises InputError listing the known names when there is none.
    """
    preset = _BY_KEY.get(_key(str(name)))
    if preset is None:
        known = ", ".join(p.name for p in _PRESETS)
        raise InputError(f"unknown chip preset {str(name)!r}; known presets: {known}")
    return preset


def match_device_kind(device_kind: str) -> Preset | None:
    """The preset describing a JAX ``device.device_kind`` string, or None if none does.

    ``"NVIDIA H200"`` -> H200, ``"NVIDIA H100 80GB HBM3"`` -> H100 SXM, ``"TPU v5 lite"`` ->
    TPU v5e, ``"TPU v5"`` -> TPU v5p, ``"AMD Instinct MI300X"`` -> its preset. Boards without a
    preset of their own (H100 NVL, H200 NVL, A100 40 GB or PCIe, a GH200 whose memory the name
    does not tell) and unknown strings give None rather than a wrong preset.
    """
    tokens = set(re.split(r"[\s_\-]+", str(device_kind).casefold().strip()))
    by_token = (("mi300x", "AMD Instinct MI300X"), ("mi325x", "AMD Instinct MI325X"),
                ("mi350x", "AMD Instinct MI350X"), ("mi355x", "AMD Instinct MI355X"),
                ("mi250x", "AMD Instinct MI250X"), ("gb200", "GB200"), ("l40s", "L40S"),
                ("l4", "L4"), ("tpu7x", "TPU7x"), ("ironwood", "TPU7x"))
    for token, name in by_token:
        if token in tokens:
            return get_preset(name)
    if "nvl" in tokens:
        return None
    if "gh200" in tokens:  # the superchip's name counts its CPU's memory too
        return get_preset("GH200 144GB") if "624gb" in tokens else (
            get_preset("GH200") if "480gb" in tokens else None)
    if "h100" in tokens:
        return get_preset("H100 PCIe" if "pcie" in tokens else "H100 SXM")
    if "pcie" in tokens:
        return None
    if "h200" in tokens:
        return get_preset("H200")
    if "a100" in tokens and "80gb" in tokens:
        return get_preset("A100")
    if "b200" in tokens:
        return get_preset("B200")
    if "tpu" in tokens:
        if "v5e" in tokens or {"v5", "lite"} <= tokens:
            return get_preset("TPU v5e")
        if "v6e" in tokens or {"v6", "lite"} <= tokens:
            return get_preset("TPU v6e")
        if "v5p" in tokens or tokens == {"tpu", "v5"}:  # JAX names a v5p chip "TPU v5"
            return get_preset("TPU v5p")
        if "v4" in tokens:
            return get_preset("TPU v4")
        if tokens & {"7x", "v7", "v7x"}:
            return get_preset("TPU7x")
    return None
