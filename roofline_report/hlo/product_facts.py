"""A kernel's matrix products and convolutions as the model prices them, read from its fused
instructions: how many independent products its largest dot splits into, the precision and
integer type they ask for, the convolutions whose windows tile their input (products in
form), the grouped (depthwise) convolutions and their taps, and the elements its reduces read
(pure; no jax). The kernel's pattern, where it runs below the streaming roofs, is
:mod:`.kernel_patterns`'.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import NamedTuple

from roofline_report.hlo.ir import Instruction, Module
from roofline_report.hlo.kernel_cost import (
    conv_flops,
    dot_flops,
    features_per_group,
    ints_in,
    pads,
    tiles_input,
    window_elements,
)
from roofline_report.hlo.kernel_patterns import _fused_instructions
from roofline_report.hlo.taps import DIM_LABELS
from roofline_report.hlo.tpu import TPU, lane_reduction, product_batch, product_convolution


def _products(instr: Instruction, module: Module, backend: str | None
              ) -> list[tuple[int, Instruction]]:
    """(flops, instruction) of the kernel's matrix products: its dots, and on a TPU the
    convolutions that compute one (:func:`~roofline_report.hlo.tpu.product_convolution`)."""
    tpu = backend == TPU
    out = [(dot_flops(i) or 0, i) for i in _fused_instructions(instr, module, tpu)
           if i.opcode == "dot"]
    if tpu:
        out += [(conv_flops(i) or 0, i) for i in _fused_instructions(instr, module, tpu)
                if product_convolution(i)]
    return out


def _largest_product(instr: Instruction, module: Module, backend: str | None
                     ) -> Instruction | None:
    found = _products(instr, module, backend)
    return max(found, key=lambda pair: (pair[0], pair[1].name))[1] if found else None


def matmul_products(instr: Instruction, module: Module, backend: str | None = None) -> int:
    """How many independent matrix products the kernel's largest dot computes: the product of
    its batch dimensions (1 for a plain matrix product, or a kernel without a dot). A batched
    dot of small products runs at the rate of one small product, not of its total flops. On a
    TPU a product written as a convolution counts its batch made spatial dimensions
    (:func:`~roofline_report.hlo.tpu.product_batch`)."""
    largest = _largest_product(instr, module, backend)
    if largest is None:
        return 1
    if largest.opcode == "convolution":
        return max(1, product_batch(largest))
    lhs = largest.operand_shapes[0] if largest.operand_shapes else None
    if lhs is None or lhs.array is None:
        return 1
    batch = ints_in(largest.attributes.get("lhs_batch_dims"))
    return max(1, math.prod(lhs.array.dims[d] for d in batch if d < len(lhs.array.dims)))


#: XLA's operand precisions above the default, as it prints them (``operand_precision=``).
PRECISIONS = ("high", "highest")


def matmul_precision(instr: Instruction, module: Module, backend: str | None = None
                     ) -> str | None:
    """The operand precision of the kernel's largest matrix product where it asks for more
    than the default (``high``, ``highest``: ``precision=lax.Precision.HIGHEST``, or an FFT's
    factors on a TPU); None for the default or a kernel without one. A TPU multiplies float32
    in bfloat16 passes: one by default, six for ``highest`` (the trace of a 2048 x 2048 float32
    product at ``highest`` gave XLA's flops as six times the product's 2mnk, and it took 6.5
    times the default product's time per flop)."""
    largest = _largest_product(instr, module, backend)
    if largest is None:
        return None
    found = [p for p in ints_words(largest.attributes.get("operand_precision")) if p in PRECISIONS]
    return max(found, key=PRECISIONS.index) if found else None


def ints_words(text: str | None) -> list[str]:
    """The words of an attribute's value (``{highest,highest}``: ``["highest", "highest"]``)."""
    return [w for w in (text or "").strip("{}").replace(" ", "").split(",") if w]


def reduced_elements(instr: Instruction, module: Module, backend: str | None = None) -> int:
    """The elements the kernel's reduce ops read, summed over them (each reduce's first
    operand): a fusion that reduces the same input twice (a layer norm's mean and variance,
    a softmax's maximum and sum, fused into one library kernel) reduces twice the elements
    it reads. 0 for a kernel without a reduce. On a TPU a whole-row reduce-window
    (:func:`~roofline_report.hlo.tpu.lane_reduction`) is such a reduce."""
    tpu = backend == TPU
    total = 0
    for i in _fused_instructions(instr, module, tpu):
        if i.opcode == "reduce" or (tpu and lane_reduction(i) is not None):
            operand = i.operand_shapes[0] if i.operand_shapes else None
            if operand is not None and operand.array is not None:
                total += operand.array.elements
    return total


def patch_conv_flops(instr: Instruction, module: Module, backend: str | None = None) -> int:
    """The flops of the kernel's convolutions whose windows tile their input
    (:func:`~roofline_report.hlo.kernel_cost.tiles_input`): matrix products of patches in
    form. The model still prices them at the convolution roof: XLA keeps them convolutions,
    run by the convolution library (on a 2-core CPU a ViT's 8x8 patch embedding of three
    colours ran at half the matmul rate of its flops). On a TPU a dot the compiler wrote as a
    convolution is not one: it is counted a matrix product."""
    tpu = backend == TPU
    return sum(conv_flops(i) or 0 for i in _fused_instructions(instr, module, tpu)
               if tiles_input(i) and not (tpu and product_convolution(i)))


def line_convolutions(instr: Instruction, module: Module, backend: str | None = None
                      ) -> tuple[int, int]:
    """(flops, filter elements) of the kernel's dense convolutions over one spatial dimension
    (a sequence's: an audio encoder's strided convolutions; no feature or batch groups), the
    filter that of the one of the most flops: its window × input features × output features,
    the weights of the matrix product each output position is. On XLA:CPU such a convolution
    runs near the matmul roof once its filter is large (a 2-core CPU: 78 GFLOP/s with 16
    features over a window of 3, 160 with 32, 180 to 210 with 64 to 256, strided or not),
    while an image's 3x3 convolution falls with the image's size (92 GFLOP/s at 32x32 with 32
    channels, 23 at 128x128): a roof of its own, read at its filter's size. A dilated one (a
    strided convolution's gradients: ``lhs_dilate`` for its input's, ``rhs_dilate`` for its
    filter's) is not one: in a plain-JAX audio step they ran at a quarter of that roof. (0, 0)
    without one; on a TPU a convolution that computes a matrix product is not one."""
    best = (0, 0)
    total = 0
    for i in _dense_convolutions(instr, module, backend):
        if not _sequence_convolution(i):
            continue
        rhs = i.operand_shapes[1] if len(i.operand_shapes) > 1 else None
        flops = conv_flops(i) or 0
        if rhs is None or rhs.array is None or not flops:
            continue
        total += flops
        best = max(best, (flops, rhs.array.elements))
    return total, best[1]


class ImageConvolution(NamedTuple):
    """A kernel's dense image convolution of the most flops, as the model prices it: the
    elements of its patch matrix (:func:`image_conv_patch`), whether it pads its input
    (:func:`image_conv_padded`) and whether it is a weight gradient
    (:func:`image_conv_weight_gradient`)."""

    patch: int
    padded: bool
    weight_gradient: bool


def image_convolution(instr: Instruction, module: Module, backend: str | None = None
                      ) -> ImageConvolution:
    """The kernel's dense image convolution of the most flops, read once for the three facts
    the inventory records of it; all 0 and False without one."""
    found = _image_convolution(instr, module, backend)
    if found is None:
        return ImageConvolution(0, False, False)
    conv, patch = found
    return ImageConvolution(patch, pads(conv), _weight_gradient(conv))


def image_conv_patch(instr: Instruction, module: Module, backend: str | None = None) -> int:
    """The elements of the patch matrix of the kernel's dense convolution of the most flops
    that is not a sequence's (:func:`line_convolutions`): its output positions x its window x
    its input features, the matrix a convolution library multiplies by the filters (its flops
    over twice its output features). On XLA:CPU a dense image convolution's rate follows that
    matrix, not its flops: the convolution roof's 3x3 kernels of 32 features in and out ran
    at 190 to 200 GFLOP/s on a 2-core CPU with a patch matrix of 4 MB (32x32 images, a batch
    of 4) and fell to 100 to 160 at 18 MB and to 30 at 73 MB (its im2col temporary then
    faulted in fresh pages every call), where a VAE's 3x3 convolution into 64 features, with
    a patch matrix of 9 MB and flops between those two sizes', ran at 216, and a ViT's patch
    embedding (16x16 windows of three colours into 768 features) at 200.
    0 without one; on a TPU a convolution that computes a matrix product is not one."""
    return image_convolution(instr, module, backend).patch


def image_conv_padded(instr: Instruction, module: Module, backend: str | None = None) -> bool:
    """Whether the kernel's dense image convolution of the most flops (that of
    :func:`image_conv_patch`) pads its input: any side of any spatial dimension padded
    (``pad=1_1x1_1``, a "SAME" convolution's). XLA:CPU runs a padded convolution on a faster
    path than an unpadded ("VALID") one of the same patch matrix, a gap that grows with the
    images: on a 2-core CPU 3x3 kernels of 32 features in and out over a batch of 4 ran, by
    flops over the taps that land on the input, at 190 against 170 GFLOP/s on 16x16 outputs,
    200 against 165 on 32x32 and 230 against 146 on 64x64; with 64 features on 64x64 outputs,
    236 against 55 (the unpadded one's im2col temporary, 38 MB, faulted in fresh pages every
    call). The padded convolutions have a roof of their own. False without one."""
    return image_convolution(instr, module, backend).padded


def image_conv_weight_gradient(instr: Instruction, module: Module,
                               backend: str | None = None) -> bool:
    """Whether the kernel's dense image convolution of the most flops (that of
    :func:`image_conv_patch`) is a weight gradient: its window holds more elements than an
    image of its output has positions, as when the gradient of a 3x3 convolution's filter
    slides the output's gradient (its window, the images' size) over the input to give a 3x3
    output. XLA:CPU runs such a convolution below the forward one of the same patch matrix:
    on a 2-core CPU, for the padded roof's 3x3 kernels of 32 features over a batch of 4, at
    0.85 to 0.92 of the forward rate on 8x8 to 32x32 images and 0.65 to 0.77 on 64x64 and
    128x128; a ResNet block's two in its training step at 0.81 to 0.86 of its forward ones.
    Weight gradients have a roof of their own. A forward convolution whose window is larger
    than its output (a 3x3 window over a 2x2 output) reads as one too. False without one."""
    return image_convolution(instr, module, backend).weight_gradient


def _weight_gradient(conv: Instruction) -> bool:
    """Whether a convolution's window holds more elements than an image of its output has
    positions (:func:`image_conv_weight_gradient`)."""
    labels = DIM_LABELS.match(conv.attributes.get("dim_labels", ""))
    out = conv.shape.array
    if labels is None or out is None or len(labels["out"]) != len(out.dims):
        return False
    positions = math.prod(out.dims[i] for i, c in enumerate(labels["out"]) if c.isdigit())
    return window_elements(conv) > positions


def generic_conv_flops(instr: Instruction, backend: str | None = None) -> int:
    """The flops of a kernel that is a bare dense convolution XLA:CPU hands to no library: one
    whose dimension labels are not the batch-first, features-last form the convolution
    libraries take (``b01f_01io->b01f``). XLA leaves such a convolution, the filter gradient of
    a transposed convolution among them (``dim_labels=01fb_o01i->f01b`` with its window dilated
    and reversed), to generic code of its own, which runs it far below a library's rate: on a
    2-core CPU the filter gradients of 4x4 transposed convolutions of stride 2 ran at 3.3 to 8
    GFLOP/s (32 to 128 features, 4x4 to 32x32 inputs), where the convolution roofs run at 150
    to 230; a DCGAN iteration's three took 1.4 to 6.3 ms against 50 to 180 us read at those
    roofs. Bare convolutions in the libraries' form (a transposed convolution's own, dilated
    input and all) ran at the libraries' rates. 0 for any other kernel, and on a TPU (whose
    compiler writes its convolutions otherwise; a GPU's hands them to cuDNN custom calls, no
    bare convolution)."""
    if backend == TPU or instr.opcode != "convolution" or _grouped(instr):
        return 0
    labels = DIM_LABELS.match(instr.attributes.get("dim_labels", ""))
    if labels is None:
        return 0
    lhs, rhs, out = labels["lhs"], labels["rhs"], labels["out"]
    library = lhs[0] == "b" and lhs[-1] == "f" and out[0] == "b" and out[-1] == "f" \
        and rhs[-2:] == "io"
    return 0 if library else conv_flops(instr) or 0


def generic_convolution(instr: Instruction, backend: str | None = None) -> tuple[int, int]:
    """(flops, window elements) of a kernel that is a bare convolution XLA:CPU hands to no
    library (:func:`generic_conv_flops`, :func:`generic_conv_window`), read once for the
    inventory; (0, 0) for any other."""
    flops = generic_conv_flops(instr, backend)
    return flops, window_elements(instr) if flops else 0


def generic_conv_window(instr: Instruction, backend: str | None = None) -> int:
    """The window elements of the convolution :func:`generic_conv_flops` counts (0 for any
    other kernel): XLA:CPU's generic code runs it at a rate that falls with the window it
    slides (on a 2-core CPU 7.4 GFLOP/s over a 4x4 window, 5.6 over 8x8, 4.1 over 16x16 and
    3.4 over 32x32, and a DCGAN's three at 9.0, 4.7 and 4.2 over 4x4, 8x8 and 16x16)."""
    return generic_convolution(instr, backend)[1]


def _image_convolution(instr: Instruction, module: Module, backend: str | None
                       ) -> tuple[Instruction, int] | None:
    """(convolution, patch matrix elements) of the kernel's dense image convolution of the
    most flops (see :func:`image_conv_patch`); None without one."""
    best: tuple[int, int, Instruction] | None = None
    for i in _dense_convolutions(instr, module, backend):
        labels = DIM_LABELS.match(i.attributes.get("dim_labels", ""))
        out = i.shape.array
        if _sequence_convolution(i) or labels is None or out is None \
                or len(labels["out"]) != len(out.dims) or "f" not in labels["out"]:
            continue  # a sequence's: the 1-D convolution roof reads its filter
        flops = conv_flops(i) or 0
        features = out.dims[labels["out"].index("f")]
        patch = flops // (2 * features) if features else 0
        if flops and features and (best is None or (flops, patch) > best[:2]):
            best = (flops, patch, i)
    return (best[2], best[1]) if best is not None else None


def _dense_convolutions(instr: Instruction, module: Module, backend: str | None
                        ) -> Iterator[Instruction]:
    """The kernel's convolutions with no feature or batch groups, less, on a TPU, those that
    compute a matrix product (:func:`~roofline_report.hlo.tpu.product_convolution`)."""
    tpu = backend == TPU
    for i in _fused_instructions(instr, module, tpu):
        if i.opcode == "convolution" and not _grouped(i) \
                and not (tpu and product_convolution(i)):
            yield i


def _sequence_convolution(conv: Instruction) -> bool:
    """Whether a dense convolution is a sequence's (:func:`line_convolutions`): one spatial
    dimension in its input, and no dilation (a strided convolution's gradients run on
    another path)."""
    labels = DIM_LABELS.match(conv.attributes.get("dim_labels", ""))
    return labels is not None and sum(c.isdigit() for c in labels["lhs"]) == 1 \
        and "dilate=" not in conv.attributes.get("window", "")


def grouped_conv_flops(instr: Instruction, module: Module) -> int:
    """The flops of the kernel's grouped convolutions (``feature_group_count`` or
    ``batch_group_count`` above 1; depthwise when the groups are the channels), HLO
    convolutions and library ones (cuDNN custom calls) alike: each group a small convolution
    of its own, which runs at a rate of its own, far below a dense convolution's
    (:func:`~roofline_report.hlo.kernel_cost.conv_flops` counts their flops). The model charges
    them no more than the kernel's counted convolution flops."""
    return sum(flops for _, flops in _grouped_convolutions(instr, module))


def grouped_conv_tap_flops(instr: Instruction, module: Module) -> int:
    """The flops of the kernel's grouped convolutions as if every tap of their windows landed
    on the input: 2 x their output elements x their taps (window elements x input features per
    group). A grouped convolution's time goes with its outputs, padding or none: on a 2-core
    CPU a 7x7 depthwise one took 49 to 53 ns an output over 12x12 to 32x32 images of 64 and 96
    channels, padded by 3 or not, while the flops XLA counts (the taps that land on the input)
    were 0.74 of those over 12x12 images padded. Equal to :func:`grouped_conv_flops` for
    unpadded ones; the model prices a grouped convolution's time at these."""
    return sum(2 * conv.shape.array.elements * window_elements(conv) * features_per_group(conv)
               for conv, _ in _grouped_convolutions(instr, module)
               if conv.shape.array is not None)


def grouped_conv_taps(instr: Instruction, module: Module) -> int:
    """The multiply-adds of each output element of the kernel's grouped convolution of the most
    flops: its window's elements times the input features of a group (9 for a 3x3 depthwise
    one, 1,024 for 128 taps over groups of 8 features); 0 without one. A grouped convolution's
    rate follows them: on XLA:CPU its time goes with its outputs more than with its
    multiply-adds, so a 3x3 depthwise one runs at about a quarter of a 7x7 one's FLOP/s."""
    convs = list(_grouped_convolutions(instr, module))
    if not convs:
        return 0
    conv, _ = max(convs, key=lambda pair: pair[1])
    return window_elements(conv) * features_per_group(conv)


def _grouped_convolutions(instr: Instruction, module: Module
                          ) -> Iterator[tuple[Instruction, int]]:
    """(convolution, flops) of each grouped convolution of the kernel, HLO and library ones;
    a library one with its result's shape."""
    for i in _fused_instructions(instr, module):
        if not _grouped(i):
            continue
        if i.opcode == "convolution":
            yield i, conv_flops(i) or 0
        elif i.opcode == "custom-call" and "conv" in (i.custom_call_target or "").lower():
            # A library convolution (cuDNN on a GPU) returns (result, workspace): its flops
            # are those of the convolution its first array is the result of.
            result = next(iter(i.shape.elements), None)
            if result is not None and result.array is not None:
                conv = replace(i, shape=result)
                yield conv, conv_flops(conv) or 0


def _grouped(conv: Instruction) -> bool:
    return conv.attributes.get("feature_group_count", "1") != "1" \
        or conv.attributes.get("batch_group_count", "1") != "1"


# HLO integer element types by the name jax gives them.
INTEGER_TYPES = {"s4": "int4", "u4": "uint4", "s8": "int8", "u8": "uint8", "s16": "int16",
                 "u16": "uint16", "s32": "int32", "u32": "uint32", "s64": "int64",
                 "u64": "uint64"}


def matmul_dtype(instr: Instruction, module: Module, backend: str | None = None) -> str | None:
    """The integer type (jax's name: ``int8``, ``int4``, ...) the kernel's largest dot
    multiplies (or a library gemm's, on a GPU; a product written as a convolution's, on a TPU),
    from its left operand (an ``s8 x s8 -> s32`` dot multiplies int8); None for a
    kernel without a dot or one that multiplies floats. Integer products have roofs of their
    own: accelerators' integer peaks differ from their float ones."""
    inside = _fused_instructions(instr, module, backend == TPU)
    # A library gemm (cuBLAS on a GPU) carries its dot in its backend config.
    gemms = [i for i in inside if i.opcode == "custom-call"
             and isinstance((i.backend_config or {}).get("gemm_backend_config"), Mapping)]
    largest = _largest_product(instr, module, backend)
    if largest is None and not gemms:
        return None
    largest = largest if largest is not None else gemms[0]
    lhs = largest.operand_shapes[0] if largest.operand_shapes else None
    if lhs is None or lhs.array is None:
        return None
    return INTEGER_TYPES.get(lhs.array.dtype)
