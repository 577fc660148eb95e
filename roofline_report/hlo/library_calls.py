"""The work of library calls in GPU HLO: custom calls the compiler hands to cuDNN, MIOpen,
cuBLAS, cuBLASLt or hipBLASLt, counted as the compiler knows them; other custom calls opaque.

In the optimized HLO of a GPU program a convolution, a gemm and a fused attention are custom
calls whose result is a (result, workspace) tuple (XLA names the ROCm libraries' calls with the
same targets):

* convolutions, ``__cudnn$convForward``, ``__cudnn$convBackwardInput``,
  ``__cudnn$convBackwardFilter`` and the fused ``__cudnn$convBiasActivationForward``: the
  ``window`` and ``dim_labels`` attributes are those of the forward convolution, whose input,
  filter and output are the call's operands and result in an order set by the direction
  (forward: input, filter -> output; backward input: output gradient, filter -> input gradient;
  backward filter: input, output gradient -> filter gradient). Each direction does the forward
  convolution's multiply-adds: 2 x input features per group x output features x batch x the
  kernel taps that land on the input (XLA's rule, :func:`~roofline_report.hlo.kernel_cost.
  convolution_flops`); the fused call adds one flop per output element for the bias and one
  for the activation where it has one.
* gemms, ``__cublas$gemm``, ``__cublas$lt$matmul`` (and its fp8 form): 2 x result elements x
  the contracted size read from ``gemm_backend_config.dot_dimension_numbers`` (batched gemms
  included: the batch is in the result).
* fused attention, ``__cudnn$fmha...`` forward calls: the two products of
  ``cudnn_fmha_backend_config`` (``bmm1``: Q x K^T, ``bmm2``: P x V) from their dimension
  numbers and the operands Q, K, V; a causal mask (``mask_type`` CAUSAL) computes half the
  score matrix. Backward calls are not counted (their five products' operands are not read).

Transformer Engine's fused attention (``te_fused_attn_forward_ffi``, ``..._backward_ffi``) is an
opaque FFI call, but a known operation: it is counted by its name from the sizes its config
states, and says so (``LibraryCount.reason``). Any other custom call (Triton, Pallas/Mosaic
kernels, other FFI calls) is opaque: its bytes are counted from its shapes like any kernel's,
its work is not. :func:`library_call` says which, and why a call is not counted.

Pure: no jax.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roofline_report.hlo.ir import Instruction
from roofline_report.hlo.shapes import Array
from roofline_report.hlo.taps import convolution_flops

__all__ = ["LibraryCount", "library_call"]

CONV_PREFIX = "__cudnn$conv"
GEMM_TARGETS = ("__cublas$gemm", "__cublas$lt$matmul")
FMHA_PREFIX = "__cudnn$fmha"


@dataclass(frozen=True, slots=True)
class LibraryCount:
    """One custom call's count: ``flops`` (None: not counted), what it is (``convolution``,
    ``gemm``, ``attention``; ``opaque`` for a call no rule knows; ``unreadable`` for a library
    call whose shapes or config cannot be read) and, where not counted, why."""

    flops: int | None
    what: str
    reason: str = ""  # why not counted; for a call counted by its name, how
    op: str = ""  # the StableHLO op the flops are charged to

    @property
    def counted(self) -> bool:
        return self.flops is not None


def _arrays(instr: Instruction) -> list[Array]:
    return list(instr.shape.arrays())


def _operand(instr: Instruction, index: int) -> Array | None:
    if index >= len(instr.operand_shapes):
        return None
    shape = instr.operand_shapes[index]
    return None if shape is None else shape.array


def _convolution(instr: Instruction, target: str) -> LibraryCount:
    result = next(iter(_arrays(instr)), None)
    a, b = _operand(instr, 0), _operand(instr, 1)
    if result is None or a is None or b is None:
        return LibraryCount(None, "unreadable", f"{target}: its operand or result shapes "
                            "cannot be read")
    if target.endswith("BackwardInput"):
        lhs, rhs, out = result, b, a
    elif target.endswith("BackwardFilter"):
        lhs, rhs, out = a, result, b
    else:
        lhs, rhs, out = a, b, result
    flops = convolution_flops(lhs.dims, rhs.dims, out.dims, instr.attributes)
    if flops is None:
        return LibraryCount(None, "unreadable", f"{target}: its window or dim_labels cannot be "
                            "read")
    if target.endswith("BiasActivationForward"):
        config = (instr.backend_config or {}).get("cudnn_conv_backend_config")
        activation = config.get("activation_mode") if isinstance(config, Mapping) else None
        flops += out.elements * (2 if activation not in (None, "kNone") else 1)
    return LibraryCount(flops, "convolution", op="stablehlo.convolution")


def _gemm(instr: Instruction, target: str) -> LibraryCount:
    config = (instr.backend_config or {}).get("gemm_backend_config")
    numbers = config.get("dot_dimension_numbers") if isinstance(config, Mapping) else None
    lhs = _operand(instr, 0)
    result = next(iter(_arrays(instr)), None)
    if not isinstance(numbers, Mapping) or lhs is None or result is None:
        return LibraryCount(None, "unreadable", f"{target}: its backend config gives no dot "
                            "dimension numbers, or its shapes cannot be read")
    try:
        contracting = [int(d) for d in numbers.get("lhs_contracting_dimensions", [])]
    except (TypeError, ValueError):
        return LibraryCount(None, "unreadable", f"{target}: its dot dimension numbers cannot "
                            "be read")
    if any(d >= len(lhs.dims) for d in contracting):
        return LibraryCount(None, "unreadable", f"{target}: its dot dimension numbers do not "
                            "fit its operand")
    size = math.prod(lhs.dims[d] for d in contracting)
    return LibraryCount(2 * result.elements * size, "gemm", op="stablehlo.dot_general")


def _dims(numbers: Mapping[str, Any], key: str) -> list[int]:
    return [int(d) for d in numbers.get(key, [])]


def _product(lhs: Sequence[int], rhs: Sequence[int], numbers: Mapping[str, Any]) -> int:
    """2 x batch x M x N x K of one product with XLA's dot dimension numbers."""
    lb, lc = _dims(numbers, "lhs_batch_dimensions"), _dims(numbers, "lhs_contracting_dimensions")
    rb, rc = _dims(numbers, "rhs_batch_dimensions"), _dims(numbers, "rhs_contracting_dimensions")
    if any(d >= len(lhs) for d in lb + lc) or any(d >= len(rhs) for d in rb + rc):
        raise ValueError("dimension numbers out of range")
    batch = math.prod(lhs[d] for d in lb)
    k = math.prod(lhs[d] for d in lc)
    m = math.prod(n for i, n in enumerate(lhs) if i not in lb and i not in lc)
    n = math.prod(n for i, n in enumerate(rhs) if i not in rb and i not in rc)
    return 2 * batch * m * n * k


def _attention(instr: Instruction, target: str) -> LibraryCount:
    if "Backward" in target:
        return LibraryCount(None, "opaque", f"{target}: a fused-attention backward call, whose "
                            "products' operands are not read")
    config = (instr.backend_config or {}).get("cudnn_fmha_backend_config")
    q, k, v = (_operand(instr, i) for i in range(3))
    if not isinstance(config, Mapping) or q is None or k is None or v is None:
        return LibraryCount(None, "unreadable", f"{target}: its backend config or its Q, K, V "
                            "shapes cannot be read")
    bmm1, bmm2 = config.get("bmm1_dot_dimension_numbers"), config.get("bmm2_dot_dimension_numbers")
    if not isinstance(bmm1, Mapping) or not isinstance(bmm2, Mapping):
        return LibraryCount(None, "unreadable", f"{target}: its config gives no bmm1/bmm2 "
                            "dimension numbers")
    try:
        scores = _product(q.dims, k.dims, bmm1)
        # P has Q's batch and row dimensions and K's rows: P x V contracts K's rows with V's.
        batch = math.prod(q.dims[d] for d in _dims(bmm1, "lhs_batch_dimensions"))
        kc = _dims(bmm1, "lhs_contracting_dimensions")
        rows = math.prod(n for i, n in enumerate(q.dims)
                         if i not in _dims(bmm1, "lhs_batch_dimensions") and i not in kc)
        vb, vc = _dims(bmm2, "rhs_batch_dimensions"), _dims(bmm2, "rhs_contracting_dimensions")
        keys = math.prod(v.dims[d] for d in vc)
        width = math.prod(n for i, n in enumerate(v.dims) if i not in vb and i not in vc)
        values = 2 * batch * rows * keys * width
    except (TypeError, ValueError):
        return LibraryCount(None, "unreadable", f"{target}: its dimension numbers cannot be "
                            "read")
    flops = scores + values
    if str(config.get("mask_type", "")).upper() == "CAUSAL":
        flops //= 2
    return LibraryCount(flops, "attention", op="stablehlo.dot_general")


TE_ATTENTION = ("te_fused_attn_forward", "te_fused_attn_backward")
# Transformer Engine's NVTE_Mask_Type: 2 causal, 3 padding + causal, 4 and 5 the bottom-right
# aligned forms of those (transformer_engine/common/include/transformer_engine/fused_attn.h).
_TE_CAUSAL = {2, 3, 4, 5}
_MLIR_ENTRY = re.compile(r"(\w+)\s*=\s*(-?\d+)\s*:\s*i\d+")


def _te_attention(instr: Instruction, target: str) -> LibraryCount:
    """A Transformer Engine fused-attention call, known by its name: its backend config (an
    MLIR dictionary) states the batch, heads, sequence lengths and head dimensions. Forward:
    Q x K^T and P x V; backward: the score product recomputed, then dV, dP, dQ and dK (three
    products of Q x K^T's size, two of P x V's); a causal mask computes half the scores."""
    text = str(instr.attributes.get("backend_config", ""))
    config = {key: int(value) for key, value in _MLIR_ENTRY.findall(text)}
    keys = ("input_batch", "attn_heads", "q_max_seqlen", "kv_max_seqlen", "qk_head_dim",
            "v_head_dim")
    if not all(config.get(k, 0) > 0 for k in keys):
        return LibraryCount(None, "opaque", f"{target}: an opaque custom call (its config does "
                            "not state the attention's sizes)")
    b, h, sq, skv, dqk, dv = (config[k] for k in keys)
    scores, values = 2 * b * h * sq * skv * dqk, 2 * b * h * sq * skv * dv
    backward = "backward" in target
    flops = 3 * scores + 2 * values if backward else scores + values
    causal = config.get("mask_type") in _TE_CAUSAL
    if causal:
        flops //= 2
    how = (f"{target}: counted as fused attention by its name and config ({b} x {h} heads, "
           f"{sq} x {skv} positions, head dims {dqk} and {dv}"
           + (", causal: half the scores" if causal else "") + ")")
    return LibraryCount(flops, "attention", how, op="stablehlo.dot_general")


def library_call(instr: Instruction) -> LibraryCount:
    """The count of one ``custom-call`` instruction (see the module docstring)."""
    target = instr.custom_call_target or ""
    if target.startswith(CONV_PREFIX):
        return _convolution(instr, target)
    if target.startswith(GEMM_TARGETS):
        return _gemm(instr, target)
    if target.startswith(FMHA_PREFIX):
        return _attention(instr, target)
    if target.startswith(TE_ATTENTION):
        return _te_attention(instr, target)
    return LibraryCount(None, "opaque", f"{target or instr.name}: an opaque custom call")
