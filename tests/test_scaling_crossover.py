"""A worked check of the projection against a crossover derived by hand, as "How to Scale Your
Model" derives it (jax-ml/scaling-book, chapter "How to Parallelize a Transformer for
Training": data parallelism and FSDP stay compute-bound while the per-device batch exceeds the
chip's FLOP/s over the bandwidth its gradients travel at, ``B/X > C / W``).

The step is this project's two-layer MLP training step (``observe/training_steps.py``) in
bfloat16: ``w1[D, F]``, ``w2[F, D]``; per device and per sample ``10 D F`` matmul flops (two
forward matmuls, three backward: the book's ``8 D F`` counts the backward pass only and the
input's gradient too). Data parallel all-reduces both gradients, ``2 x 2 (2 D F) (N-1)/N``
bytes sent per device; FSDP all-gathers both weights and reduce-scatters both gradients, the
same bytes. Neither grows with the batch, so with ``W`` the bytes per second each device sends:

    T_comm = 8 D F (N-1)/N / W,   T_math(b) = 10 D F b / C,   b* = 0.8 (N-1)/N C / W.

The book's own convention counts T_math over the backward pass only, twice the forward pass's
``4 D F`` per sample (its ``2 x 2 x 2 D F``), so its crossover is ``b* = C / W (N-1)/N``; the
tool gives that figure too (bandwidth only, ``critical_per_device_book``) beside its own (the
whole step's flops, latency included, ``critical_per_device``), which is never below the
whole step's bandwidth-only figure.

The figures (the presets cite them): TPU v5e 1.97e14 bf16 FLOP/s, ICI 4.5e10 B/s one way per
link; a whole 16 x 16 pod wraps on both axes, so a device sends both ways on both: W = 2 x 2 x
4.5e10 = 1.8e11 (the book's ``W_ici`` bidirectional x ``n_axes``). H100: 9.89e14 dense bf16
FLOP/s, NVLink 4.5e11 B/s per direction per GPU inside a node of 8, InfiniBand 400 Gb/s =
5e10 B/s per GPU (4e11 a node) across nodes; the two levels pipelined, the slower one sets
the time. The latency figure adds the assumed latency (1 us per ICI or NVLink step, 5 us per
InfiniBand step).
"""

from __future__ import annotations

from typing import Any

import pytest

from roofline_report.analysis.sharding_records import ProjectedStep
from roofline_report.analysis.study import step_study
from roofline_report.observe.training_steps import (
    StepSizes,
    expected_collectives,
    matmul_flops,
)
from roofline_report.results.schema_sharding import Sharding

SIZES = StepSizes(batch=8 * 1024, d_model=16384, d_ff=16384, layers=1)
BF16 = 2
COMPILED_DEVICES = 8


def _step(strategy: str) -> dict[str, Any]:
    """A compiled-step record as the sharding child writes it, from the hand-derived
    collectives of the bfloat16 step on 8 devices."""
    collectives = [
        {"instruction": f"{c['op']}.{i}", "op": c["op"], "result_bytes": c["result_bytes"],
         "group_size": c["group_size"], "trip_count": c["count"], "dtype": "bf16",
         "shape": None, "loops": []}
        for i, c in enumerate(expected_collectives(strategy, SIZES, COMPILED_DEVICES, BF16))
    ]
    return {
        "name": strategy, "sharding": strategy, "step": True, "dtype": "bfloat16",
        "sizes": SIZES.to_json(),
        "batch": {"global": SIZES.batch, "per_device": SIZES.batch // COMPILED_DEVICES},
        "comm_scales_with_batch": False,
        "mesh": {"axis_names": ["d"], "shape": [COMPILED_DEVICES]},
        "collectives": collectives,
        "per_device": {"flops": matmul_flops(strategy, SIZES, COMPILED_DEVICES),
                       "hbm_bytes": 0},
    }


def _projected(preset: str, strategy: str, devices: int) -> ProjectedStep:
    doc = Sharding.model_validate({"available": True, "devices": COMPILED_DEVICES,
                                   "emulated": True, "workloads": [_step(strategy)]})
    model = step_study(doc, 1e11, 2e10, 5e9, preset=preset)
    [row] = [r for r in model.projection.rows if r.devices == devices]
    assert isinstance(row, ProjectedStep), row
    return row


def _by_hand(peak: float, seconds_per_byte: float, devices: int) -> float:
    """b* = T_comm / T_math per sample, bandwidth only: 8 D F (N-1)/N bytes x seconds per
    byte over 10 D F / C."""
    d, f = SIZES.d_model, SIZES.d_ff
    t_comm = 2 * 2 * (BF16 * d * f) * (devices - 1) / devices * seconds_per_byte
    return t_comm / (10 * d * f / peak)


def _book(peak: float, seconds_per_byte: float, devices: int) -> float:
    """The book's b* = T_comm / T_math(backward) per sample: 8 D F (N-1)/N bytes over 8 D F /
    C, that is C (N-1)/N seconds per byte."""
    return _by_hand(peak, seconds_per_byte, devices) * 10 / 8


def _check_both(row: ProjectedStep, peak: float, seconds_per_byte: float, devices: int
                ) -> None:
    hand = _by_hand(peak, seconds_per_byte, devices)
    assert row.critical_per_device_book == pytest.approx(_book(peak, seconds_per_byte,
                                                                 devices), rel=0.01)
    # with latency, on the whole step's flops: at least the bandwidth-only figure
    assert row.critical_per_device >= hand * (1 - 1e-9)


@pytest.mark.parametrize("strategy", ["dp-step", "fsdp-step"])
def test_tpu_v5e_pod(strategy: str) -> None:
    c, w = 1.97e14, 2 * 2 * 4.5e10
    hand = _by_hand(c, 1 / w, 256)
    assert hand == pytest.approx(0.8 * 255 / 256 * c / w)
    # the book's rule of thumb, B/X > C / (W_bidi n_axes): 1.97e14 / (9e10 x 2) = 1,094
    assert _book(c, 1 / w, 256) == pytest.approx(1.97e14 / (9e10 * 2) * 255 / 256)
    row = _projected("TPU v5e", strategy, 256)
    [level] = row.bounds.levels
    assert level.slice == "16 x 16" and row.peak_dtype == "bf16"
    _check_both(row, c, 1 / w, 256)
    assert row.critical_per_device == pytest.approx(hand, rel=0.10)  # latency is small here
    assert row.kinds.critical_batch == "hypothetical"  # an assumed latency enters


@pytest.mark.parametrize("strategy", ["dp-step", "fsdp-step"])
def test_h100_inside_one_nvlink_domain(strategy: str) -> None:
    c, w = 9.89e14, 4.5e11
    # the book's C / W = 2,198 for H100 over NVLink, times (N-1)/N
    assert _book(c, 1 / w, 8) == pytest.approx(7 / 8 * c / w)
    row = _projected("H100 SXM", strategy, 8)
    assert [level.level for level in row.bounds.levels] == ["NVLink 4"]
    _check_both(row, c, 1 / w, 8)


@pytest.mark.parametrize("strategy", ["dp-step", "fsdp-step"])
def test_h100_across_infiniband(strategy: str) -> None:
    """1,024 GPUs in 128 nodes: each gradient is reduced inside the node over NVLink (V 7/8
    each way at 450 GB/s) and across nodes over InfiniBand on 1/8 of it (V/8 127/128 at
    50 GB/s, V 127/128 at the node's 400 GB/s), the two at once: the network is slower and
    sets the time, the book's C / W_node = 2,472 per GPU (times 127/128; the book rounds C to
    990e12 and prints 2,475). The tree across nodes sends V/8 twice, not V/8 127/128: DP's
    all-reduce is 1/128 dearer than the ring's bytes, within the 1% tolerance."""
    c, nvlink, ib = 9.89e14, 4.5e11, 5e10
    per_byte = max(7 / 8 / nvlink, (1 / 8) * (127 / 128) / ib) / (1023 / 1024)
    row = _projected("H100 SXM", strategy, 1024)
    assert [level.level for level in row.bounds.levels] == ["NVLink 4", "InfiniBand NDR"]
    assert row.binding_level == "InfiniBand NDR"
    _check_both(row, c, per_byte, 1024)
    assert row.critical_per_device_book == pytest.approx(c / 4e11, rel=0.02)
    inside = _projected("H100 SXM", strategy, 8).critical_per_device_book
    assert 1.2 < row.critical_per_device_book / inside < 1.35
