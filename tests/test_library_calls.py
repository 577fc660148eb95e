"""Tests for roofline_report.hlo.library_calls: library custom calls of GPU HLO counted as the
library does them (cuDNN/MIOpen convolutions in each direction, cuBLAS/hipBLASLt gemms, cuDNN
fused attention), opaque calls and unreadable configs said to be uncounted."""

from __future__ import annotations

import pytest

from roofline_report.hlo.ir import Instruction, parse_module
from roofline_report.hlo.kernel_cost import Coster, instruction_cost
from roofline_report.hlo.library_calls import library_call


def _call(operands: list[str], result: str, attrs: str) -> Instruction:
    params = "\n".join(f"  %p{i} = {shape} parameter({i})" for i, shape in enumerate(operands))
    args = ", ".join(f"%p{i}" for i in range(len(operands)))
    text = (f"HloModule m\n\nENTRY %main () -> {result} {{\n{params}\n"
            f"  ROOT %c = {result} custom-call({args}), {attrs}\n}}\n")
    module = parse_module(text)
    entry = module.entry_computation
    assert entry is not None and entry.root is not None
    return entry.root


CONV = ('window={size=1x2x2 stride=1x2x2 pad=1_1x1_1x1_1}, dim_labels=bf012_oi012->bf012, '
        'custom_call_target="{target}"')
X = "bf16[1,16,32,60,104]{4,3,2,1,0}"
W = "bf16[5120,16,1,2,2]{4,3,2,1,0}"
Y = "bf16[1,5120,34,31,53]{4,3,2,1,0}"
# 2 x 16 input features x 5120 output features x the taps that land on the input: with a
# stride equal to the window, each input element once (32 x 60 x 104).
CONV_FLOPS = 2 * 16 * 5120 * 32 * 60 * 104


def test_convolution_forward_backward_input_and_filter_do_the_same_work() -> None:
    fwd = _call([X, W], f"({Y}, u8[0]{{0}})", CONV.replace("{target}", "__cudnn$convForward"))
    # backward input: (output gradient, filter) -> input gradient
    bwd_in = _call([Y, W], f"({X}, u8[0]{{0}})",
                   CONV.replace("{target}", "__cudnn$convBackwardInput"))
    # backward filter: (input, output gradient) -> filter gradient
    bwd_w = _call([X, Y], f"({W}, u8[0]{{0}})",
                  CONV.replace("{target}", "__cudnn$convBackwardFilter"))
    for instr in (fwd, bwd_in, bwd_w):
        counted = library_call(instr)
        assert counted.what == "convolution" and counted.flops == CONV_FLOPS, instr.name


def test_fused_convolution_adds_bias_and_activation() -> None:
    attrs = (CONV.replace("{target}", "__cudnn$convBiasActivationForward")
             + ', backend_config={"cudnn_conv_backend_config":{"activation_mode":"kRelu"}}')
    bias = "bf16[5120]{0}"
    counted = library_call(_call([X, W, bias], f"({Y}, u8[0]{{0}})", attrs))
    assert counted.flops == CONV_FLOPS + 2 * 5120 * 34 * 31 * 53
    plain = attrs.replace("kRelu", "kNone")
    assert library_call(_call([X, W, bias], f"({Y}, u8[0]{{0}})", plain)).flops == \
        CONV_FLOPS + 5120 * 34 * 31 * 53


def test_convolution_with_labels_that_do_not_fit_is_unreadable() -> None:
    bad = CONV.replace("{target}", "__cudnn$convForward").replace("bf012_oi012->bf012",
                                                                    "bf01_oi01->bf01")
    counted = library_call(_call([X, W], f"({Y}, u8[0]{{0}})", bad))
    assert counted.flops is None and counted.what == "unreadable"
    assert "window or dim_labels" in counted.reason


GEMM = ('custom_call_target="{target}", backend_config={{"gemm_backend_config":'
        '{{"dot_dimension_numbers":{{"lhs_contracting_dimensions":["{c}"],'
        '"rhs_contracting_dimensions":["1"],"lhs_batch_dimensions":{b},'
        '"rhs_batch_dimensions":{b}}}}}}}')


@pytest.mark.parametrize("target", ["__cublas$gemm", "__cublas$lt$matmul",
                                    "__cublas$lt$matmul$f8"])
def test_gemms_from_their_dot_dimension_numbers(target: str) -> None:
    attrs = GEMM.format(target=target, c="1", b="[]")
    counted = library_call(_call(["bf16[4096,6144]{1,0}", "bf16[2048,6144]{1,0}"],
                                 "(bf16[4096,2048]{1,0}, s8[1024]{0})", attrs))
    assert counted.what == "gemm" and counted.flops == 2 * 4096 * 2048 * 6144
    batched = GEMM.format(target=target, c="2", b='["0"]')
    counted = library_call(_call(["f8e4m3fn[8,128,64]{2,1,0}", "f8e4m3fn[8,32,64]{2,1,0}"],
                                 "(bf16[8,128,32]{2,1,0}, s8[1024]{0})", batched))
    assert counted.flops == 2 * 8 * 128 * 32 * 64


def test_a_gemm_whose_config_cannot_be_read_is_not_counted() -> None:
    attrs = 'custom_call_target="__cublas$gemm", backend_config={not json at all}'
    counted = library_call(_call(["bf16[64,64]{1,0}", "bf16[64,64]{1,0}"],
                                 "(bf16[64,64]{1,0}, s8[16]{0})", attrs))
    assert counted.flops is None and counted.what == "unreadable"
    assert counted.reason.startswith("__cublas$gemm: its backend config")


FMHA = ('custom_call_target="__cudnn$fmhaSoftmax", backend_config={{"cudnn_fmha_backend_config":'
        '{{"mask_type":"{mask}","bmm1_dot_dimension_numbers":{{"lhs_contracting_dimensions":'
        '["3"],"rhs_contracting_dimensions":["3"],"lhs_batch_dimensions":["0","2"],'
        '"rhs_batch_dimensions":["0","2"]}},"bmm2_dot_dimension_numbers":'
        '{{"lhs_contracting_dimensions":["3"],"rhs_contracting_dimensions":["1"],'
        '"lhs_batch_dimensions":["0","1"],"rhs_batch_dimensions":["0","2"]}}}}}}')
Q = "bf16[2,1024,16,128]{3,2,1,0}"  # batch, sequence, heads, head dim


@pytest.mark.parametrize(("mask", "share"), [("NO_MASK", 1.0), ("CAUSAL", 0.5)])
def test_fused_attention_from_its_two_products(mask: str, share: float) -> None:
    counted = library_call(_call([Q, Q, Q], f"({Q}, u8[0]{{0}})", FMHA.format(mask=mask)))
    per_product = 2 * 2 * 16 * 1024 * 1024 * 128  # batch x heads x Sq x Skv x head dim
    assert counted.what == "attention" and counted.flops == int(2 * per_product * share)


TE = ('custom_call_target="te_fused_attn_{way}_ffi", api_version=API_VERSION_TYPED_FFI, '
      "backend_config={{attn_heads = 16 : i64, input_batch = 2 : i64, is_training = true, "
      "kv_max_seqlen = 1024 : i64, mask_type = {mask} : i64, q_max_seqlen = 1024 : i64, "
      "qk_head_dim = 128 : i64, scaling_factor = 0.088 : f64, v_head_dim = 64 : i64}}")


@pytest.mark.parametrize(("way", "mask", "products"), [
    ("forward", 0, (1, 1)), ("forward", 2, (0.5, 0.5)), ("backward", 0, (3, 2)),
    ("backward", 5, (1.5, 1))])
def test_transformer_engine_attention_counted_by_name(way: str, mask: int,
                                                      products: tuple[float, float]) -> None:
    counted = library_call(_call([Q], f"({Q}, u8[0]{{0}})", TE.format(way=way, mask=mask)))
    qk, pv = 2 * 2 * 16 * 1024 * 1024 * 128, 2 * 2 * 16 * 1024 * 1024 * 64
    assert counted.what == "attention"
    assert counted.flops == int(products[0] * qk + products[1] * pv)
    assert counted.reason.startswith(f"te_fused_attn_{way}_ffi: counted as fused attention")
    assert ("causal" in counted.reason) == (mask in (2, 5))
    sizes_missing = TE.format(way=way, mask=mask).replace("q_max_seqlen = 1024 : i64, ", "")
    unsized = library_call(_call([Q], f"({Q}, u8[0]{{0}})", sizes_missing))
    assert unsized.flops is None and "does not state the attention's sizes" in unsized.reason


def test_opaque_custom_calls_keep_their_bytes_but_not_their_work() -> None:
    attrs = 'custom_call_target="__gpu$xla.gpu.triton", backend_config={"name":"kernel"}'
    instr = _call([Q], f"({Q}, f32[2,16,1024,1]{{3,2,1,0}})", attrs)
    counted = library_call(instr)
    assert counted.flops is None and counted.what == "opaque"
    assert counted.reason == "__gpu$xla.gpu.triton: an opaque custom call"
    module = parse_module(f"HloModule m\n\nENTRY %main () -> {Q} {{\n  %p0 = {Q} parameter(0)\n"
                          f"  ROOT %n = {Q} negate(%p0)\n}}\n")
    cost = instruction_cost(instr, Coster(module))
    assert cost.flops == 0 and cost.uncosted == {counted.reason}
    backward = library_call(_call([Q, Q, Q], f"({Q}, u8[0]{{0}})", FMHA.format(mask="NO_MASK")
                                  .replace("fmhaSoftmax", "fmhaSoftmaxBackward")))
    assert backward.flops is None and "backward" in backward.reason
