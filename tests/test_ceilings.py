"""Measured ceilings: the plan, machine information parsing, and a tiny run of the measurement."""

from __future__ import annotations

import itertools
import json
import math
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from roofline_report.observe.ceilings import compute as compute_ceilings
from roofline_report.observe.ceilings import dispatch as dispatch_ceilings
from roofline_report.observe.ceilings import host, load, sampling
from roofline_report.observe.ceilings import machine as ceilings
from roofline_report.observe.ceilings import streams as stream_ceilings
from roofline_report.observe.ceilings.plan import Plan, plan_for
from roofline_report.observe.ceilings.sampling import GiB, MiB
from tests.ceilings_records import typed_ceilings

TINY = Plan(
    matmul_sizes=(32, 64),
    matmul_max_call_s=1.0,
    matmul_dtypes=("float32", "bfloat16"),
    array_bytes=1 * MiB,
    samples=3,
    min_sample_s=1e-3,
    sweep_samples=2,
    sweep_min_sample_s=5e-4,
    budget_s=0.2,
    huge_pages=True,  # exercised, though 1 MiB holds no whole 2 MiB page
)

# ------------------------------------------------------------------------------------ plan


def test_cpu_plan_scales_arrays_with_the_cache() -> None:
    small_cache = plan_for("cpu", quick=False, cache_bytes=32 * MiB, free_bytes=None)
    assert small_cache.array_bytes == 256 * MiB  # 4 x 32 MiB = 128 MiB, raised to the floor
    mid_cache = plan_for("cpu", quick=False, cache_bytes=96 * MiB, free_bytes=None)
    assert mid_cache.array_bytes == 384 * MiB
    big_cache = plan_for("cpu", quick=False, cache_bytes=480 * MiB, free_bytes=None)
    assert big_cache.array_bytes == 512 * MiB  # the cap
    unknown = plan_for("cpu", quick=False, cache_bytes=None, free_bytes=None)
    assert unknown.array_bytes == 256 * MiB
    assert big_cache.huge_pages


def test_plans_measure_the_kernel_patterns() -> None:
    full = plan_for("cpu", quick=False, cache_bytes=32 * MiB, free_bytes=None)
    quick = plan_for("cpu", quick=True, cache_bytes=32 * MiB, free_bytes=None)
    assert full.patterns is not None and quick.patterns is not None
    assert len(quick.patterns.sizes) < len(full.patterns.sizes)
    assert TINY.patterns is None  # hand-made plans measure none unless asked


def test_cpu_plan_quick_is_smaller_and_memory_bounded() -> None:
    quick = plan_for("cpu", quick=True, cache_bytes=480 * MiB, free_bytes=None)
    full = plan_for("cpu", quick=False, cache_bytes=480 * MiB, free_bytes=None)
    assert quick.array_bytes == 256 * MiB
    assert max(quick.matmul_sizes) <= max(full.matmul_sizes)
    assert quick.samples < full.samples
    assert quick.budget_s < full.budget_s
    tight = plan_for("cpu", quick=False, cache_bytes=32 * MiB, free_bytes=1 * GiB)
    assert tight.array_bytes == 128 * MiB  # an eighth of the free memory


def test_gpu_plan_uses_large_matmuls_and_a_fraction_of_free_memory() -> None:
    plan = plan_for("gpu", quick=False, cache_bytes=None, free_bytes=130 * GiB)
    assert max(plan.matmul_sizes) == 8192
    assert plan.array_bytes == 4 * GiB
    small = plan_for("gpu", quick=False, cache_bytes=None, free_bytes=16 * GiB)
    assert small.array_bytes == 1 * GiB
    unknown = plan_for("gpu", quick=True, cache_bytes=None, free_bytes=None)
    assert unknown.array_bytes == 256 * MiB
    assert list(plan.matmul_sizes) == sorted(plan.matmul_sizes)
    assert not plan.huge_pages


# ---------------------------------------------------------------------- machine information


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("491520K\n", 491520 * 1024),
        ("32 MiB", 32 * MiB),
        ("2048 KB", 2 * MiB),
        ("1.5M", 3 * MiB // 2),
        ("64", 64),
        ("lots", None),
        ("12 parsecs", None),
    ],
)
def test_parse_size(text: str, expected: int | None) -> None:
    assert host.parse_size(text) == expected


def test_parse_lscpu_takes_last_level_per_instance() -> None:
    text = """Architecture:            x86_64
L1d cache:               96 KiB (2 instances)
L1i cache:               128 KiB (2 instances)
L2 cache:                4 MiB (2 instances)
L3 cache:                64 MiB (2 instances)
NUMA node(s):            1
"""
    assert host.parse_lscpu(text) == 32 * MiB
    assert host.parse_lscpu("L2 cache: 1024K\nL1d cache: 32K\n") == 1 * MiB
    assert host.parse_lscpu("Architecture: x86_64\n") is None


def _cache_index(root: Path, index: int, level: int, kind: str, size: str) -> None:
    folder = root / f"index{index}"
    folder.mkdir(parents=True)
    (folder / "level").write_text(f"{level}\n")
    (folder / "type").write_text(f"{kind}\n")
    (folder / "size").write_text(f"{size}\n")


def test_read_cache_bytes_from_sysfs(tmp_path: Path) -> None:
    _cache_index(tmp_path, 0, 1, "Data", "48K")
    _cache_index(tmp_path, 1, 1, "Instruction", "64K")
    _cache_index(tmp_path, 2, 2, "Unified", "2048K")
    _cache_index(tmp_path, 3, 3, "Unified", "491520K")
    assert host.read_cache_bytes(tmp_path) == 480 * MiB


def test_read_cache_bytes_ignores_instruction_caches(tmp_path: Path) -> None:
    _cache_index(tmp_path, 0, 1, "Data", "32K")
    _cache_index(tmp_path, 1, 2, "Instruction", "1024K")
    assert host.read_cache_bytes(tmp_path) == 32 * 1024


def test_read_cache_bytes_falls_back_to_lscpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(host, "_lscpu_cache_bytes", lambda: 12345)
    assert host.read_cache_bytes(tmp_path / "missing") == 12345


def test_free_memory_of_a_device_with_allocator_stats() -> None:
    class Device:
        platform = "gpu"

        def memory_stats(self) -> dict[str, int]:
            return {"bytes_limit": 100, "bytes_in_use": 30}

    class Bare:
        platform = "tpu"

        def memory_stats(self) -> None:
            return None

    assert host.free_memory_bytes(Device()) == 70
    assert host.free_memory_bytes(Bare()) is None


# ----------------------------------------------------------------------------- measurement


def _check_timing(record: dict[str, Any]) -> None:
    assert len(record["per_call_s"]) >= 1 and "per_call" not in record
    assert record["inner_reps"] >= 1
    assert min(record["per_call_s"]) > 0


@pytest.fixture(scope="module")
def tiny() -> dict[str, Any]:
    """A tiny real measurement, on a machine the load readings say is quiet (whatever the real
    one's load: which round a ceiling keeps must not depend on it here)."""
    messages: list[str] = []
    seconds = itertools.count(1)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(load, "PROBE", lambda: load.Sample(
            wall=float(t := next(seconds)), busy_s=float(t), cores=2, own_s=float(t),
            loadavg=None))
        data = ceilings.measure_ceilings(quick=True, progress=messages.append, plan=TINY)
    data["_messages"] = messages
    return data


@pytest.mark.slow
def test_tiny_run_structure(tiny: dict[str, Any]) -> None:
    messages = tiny.pop("_messages")
    try:
        json.dumps(tiny, allow_nan=False)
        assert tiny["backend"] == jax_backend()
        assert tiny["quick"] is True
        assert set(tiny) == {
            "backend",
            "device_kind",
            "compute",
            "bandwidth",
            "dispatch",
            "peak_compute",
            "peak_bandwidth",
            "cache_bytes",
            "caches",
            "quick",
            "conditions",
        }  # a hand-made plan asks for no working-set sweep and no rates
        # The load over the whole measurement is recorded (here the injected readings').
        assert tiny["conditions"]["wall_s"] > 0 and tiny["conditions"]["others_cpu_s"] == 0
        for entry in [*tiny["compute"], *tiny["bandwidth"]]:
            assert len(entry["round_loads"]) == len(entry["rounds"]) == sampling.ROUNDS
            assert entry["repeated"] == 0  # a hand-made plan takes no round again
        assert any("matmul float32" in m for m in messages)
    finally:
        tiny["_messages"] = messages


@pytest.mark.slow
def test_tiny_run_compute_entries(tiny: dict[str, Any]) -> None:
    names = [e["name"] for e in tiny["compute"]]
    # an accelerator's float32 matmul at default precision is a faster format's (TF32 on NVIDIA
    # GPUs, one bfloat16 pass on TPUs): full float32 is measured beside it
    highest = [] if jax_backend() == "cpu" else ["matmul float32 (highest precision)"]
    assert names == ["matmul float32", "matmul bfloat16", *highest]
    for entry in tiny["compute"]:
        assert entry["available"], entry["reason"]
        assert entry["kind"] == "measured" and entry["unit"] == "FLOP/s"
        n = entry["size"]
        assert n in TINY.matmul_sizes
        assert entry["flops_per_call"] == 2 * n**3
        _check_timing(entry["timing"])
        # The value is the work over the fastest sample, of the faster of two rounds.
        assert entry["value"] == pytest.approx(
            entry["flops_per_call"] / min(entry["timing"]["per_call_s"])
        )
        assert len(entry["rounds"]) == sampling.ROUNDS
        assert entry["value"] == max(entry["rounds"])
    bf16 = tiny["compute"][1]
    if jax_backend() == "cpu":
        assert "upcasts" in bf16["reason"]
    assert tiny["peak_compute"] == {
        "value": tiny["compute"][0]["value"],
        "name": "matmul float32",
    }


@pytest.mark.slow
def test_tiny_run_bandwidth_entries(tiny: dict[str, Any]) -> None:
    entries = tiny["bandwidth"]
    assert [e["name"] for e in entries] == ["reduce", "scale", "triad"]
    for entry, arrays in zip(entries, (1, 2, 3), strict=True):
        assert entry["available"], entry["reason"]
        assert entry["array_bytes"] == 1 * MiB
        assert entry["bytes_per_call"] == arrays * MiB
        assert entry["value"] > 0 and math.isfinite(entry["value"])
        assert entry["unit"] == "B/s" and entry["kind"] == "measured"
        assert entry["huge_pages"] is False
        _check_timing(entry["timing"])
        # Measured in rounds a pass over the other ceilings apart; the value is the best one.
        assert len(entry["rounds"]) == sampling.ROUNDS
        assert entry["value"] == max(entry["rounds"])
    best = max(entries, key=lambda e: e["value"])
    assert tiny["peak_bandwidth"] == {"value": best["value"], "name": best["name"]}


@pytest.mark.slow
def test_tiny_run_dispatch(tiny: dict[str, Any]) -> None:
    dispatch = tiny["dispatch"]
    assert dispatch["available"]
    assert dispatch["unit"] == "s"
    assert 0 < dispatch["value"] < 1
    _check_timing(dispatch["timing"])
    assert "every call" in dispatch["timing"]["method"]


def test_streaming_kernels_compute_what_they_claim() -> None:
    import numpy as np

    streams = stream_ceilings._Streams(8)
    streams.runner("scale")(3)  # x <- -x three times
    np.testing.assert_array_equal(np.asarray(streams.x), -np.ones(8))
    streams.runner("triad")(1)  # x <- y - x = 2 - (-1)
    np.testing.assert_array_equal(np.asarray(streams.x), np.full(8, 3.0))
    streams.runner("reduce")(2)
    with pytest.raises(ValueError, match="unknown"):
        streams.runner("copy")


@pytest.mark.parametrize("huge", [False, True])
def test_filled_arrays_hold_their_value(huge: bool) -> None:
    import numpy as np

    elements = 3 * stream_ceilings.HUGE_PAGE_BYTES // 4 + 7  # spans whole huge pages, unaligned end
    array, on_huge = stream_ceilings._filled(elements, 2.5, huge)
    np.testing.assert_array_equal(np.asarray(array), np.full(elements, 2.5, dtype=np.float32))
    assert isinstance(on_huge, bool)
    if not huge:
        assert on_huge is False


def test_request_huge_pages_declines_where_unsupported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # no whole page
    assert stream_ceilings.request_huge_pages(4096, stream_ceilings.HUGE_PAGE_BYTES) is False
    never = tmp_path / "enabled"
    never.write_text("always madvise [never]\n")
    monkeypatch.setattr(stream_ceilings, "_THP_ENABLED", never)
    assert stream_ceilings.request_huge_pages(0, 8 * stream_ceilings.HUGE_PAGE_BYTES) is False
    monkeypatch.setattr(sys, "platform", "darwin")
    assert stream_ceilings.request_huge_pages(0, 8 * stream_ceilings.HUGE_PAGE_BYTES) is False


SMAPS = """\
7f0000000000-7f0000200000 rw-p 00000000 00:00 0
Size:               2048 kB
AnonHugePages:         0 kB
7f0000200000-7f0008200000 rw-p 00000000 00:00 0
Size:             131072 kB
AnonHugePages:    129024 kB
VmFlags: rd wr mr mw me ac hg
7f0010000000-7f0010400000 rw-p 00000000 00:00 0
AnonHugePages:      4096 kB
"""


def test_huge_page_share_from_smaps(tmp_path: Path) -> None:
    smaps = tmp_path / "smaps"
    smaps.write_text(SMAPS)
    start = 0x7F0000000000
    # The 130 MiB range overlaps the first two mappings: 126 MiB of huge pages, 96.9%.
    share = stream_ceilings.huge_page_share(start, 130 * MiB, smaps)
    assert share == pytest.approx(126 / 130)
    # A range inside the small-page head only.
    assert stream_ceilings.huge_page_share(start, 4096, smaps) == 0.0
    assert stream_ceilings.huge_page_share(start, 0, smaps) is None
    assert stream_ceilings.huge_page_share(start, MiB, tmp_path / "missing") is None


def _stream(name: str, value: float | None, huge: bool = True) -> dict[str, Any]:
    return {"name": name, "value": value, "available": value is not None, "reason": "",
            "huge_pages": huge, "timing": None}


def test_streams_keep_each_kernel_s_best_round() -> None:
    first = [_stream("reduce", 30e9), _stream("scale", 31e9, huge=False), _stream("triad", None)]
    second = [_stream("reduce", 28e9), _stream("scale", 52e9), _stream("triad", 50e9)]
    best = stream_ceilings.best_streams([first, second])
    assert [e["value"] for e in best] == [30e9, 52e9, 50e9]
    assert [e["rounds"] for e in best] == [[30e9, 28e9], [31e9, 52e9], [None, 50e9]]
    assert best[1]["huge_pages"] is True  # the record of the round it came from
    assert stream_ceilings.best_streams([[], []]) == []
    only = stream_ceilings.best_streams([[_stream("scale", None)]])
    assert not only[0]["available"] and only[0]["rounds"] == [None]


def test_stream_rounds_reuse_or_renew_their_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    kept: dict[str, Any] = {}
    stream_ceilings.bandwidth_entries(TINY, None, lambda _m: None, kept, samples=3)
    arrays = kept["streams"]
    entries = stream_ceilings.bandwidth_entries(TINY, None, lambda _m: None, kept, samples=3)
    assert all(e["available"] and len(e["timing"]["per_call_s"]) == 3 for e in entries)
    # 1 MiB holds no whole huge page: never on huge pages, so each round allocates afresh.
    assert kept["streams"] is not arrays and not arrays.on_huge_pages()
    monkeypatch.setattr(stream_ceilings._Streams, "on_huge_pages", lambda _self: True)
    arrays = kept["streams"]
    stream_ceilings.bandwidth_entries(TINY, None, lambda _m: None, kept, samples=3)
    assert kept["streams"] is arrays


# -------------------------------------------------------------------------------- failures


def _raise_memory_error(*args: object, **kwargs: object) -> Any:
    raise MemoryError("could not allocate")


def test_failures_become_unavailable_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    real_operands = compute_ceilings._matmul_operands

    def operands(n: int, dtype: str) -> Any:
        if dtype == "bfloat16":
            raise MemoryError(f"no room for {n}x{n}")
        return real_operands(n, dtype)

    monkeypatch.setattr(compute_ceilings, "_matmul_operands", operands)
    monkeypatch.setattr(stream_ceilings._Streams, "__init__", _raise_memory_error)
    monkeypatch.setattr(dispatch_ceilings, "dispatch_runner", _raise_memory_error)
    plan = Plan(**{**_fields(TINY), "matmul_sizes": (32,)})
    data = ceilings.measure_ceilings(quick=True, plan=plan)

    json.dumps(data, allow_nan=False)
    # an accelerator measures float32 at the highest precision beside them
    by_name = {c["name"]: c for c in data["compute"]}
    f32, bf16 = by_name["matmul float32"], by_name["matmul bfloat16"]
    assert f32["available"]
    assert not bf16["available"]
    assert bf16["value"] is None and bf16["timing"] is None
    assert "MemoryError: no room for 32x32" in bf16["reason"]
    for entry in data["bandwidth"]:
        assert not entry["available"] and entry["value"] is None
        assert "MemoryError: could not allocate" in entry["reason"]
        assert entry["bytes_per_call"] > 0  # still says what would have been moved
    assert data["peak_bandwidth"] == {"value": None, "name": None}
    assert not data["dispatch"]["available"]
    assert "MemoryError" in data["dispatch"]["reason"]


def test_one_failing_kernel_leaves_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    real_runner = stream_ceilings._Streams.runner

    def runner(self: stream_ceilings._Streams, name: str) -> Any:
        if name == "reduce":
            return _raise_memory_error
        return real_runner(self, name)

    monkeypatch.setattr(stream_ceilings._Streams, "runner", runner)
    entries = stream_ceilings.bandwidth_entries(TINY, None, lambda _m: None)
    assert [e["available"] for e in entries] == [False, True, True]
    assert entries[0]["reason"].startswith("reduce on 1 MiB failed: MemoryError")


def test_sweep_keeps_the_sizes_that_worked(monkeypatch: pytest.MonkeyPatch) -> None:
    real_operands = compute_ceilings._matmul_operands

    def operands(n: int, dtype: str) -> Any:
        if n > 32:
            raise MemoryError("too big")
        return real_operands(n, dtype)

    monkeypatch.setattr(compute_ceilings, "_matmul_operands", operands)
    entry = compute_ceilings.matmul_entry("float32", "cpu", TINY, lambda _m: None)
    assert entry["available"] and entry["size"] == 32
    assert entry["rounds"] == [entry["value"]]  # one round unless a second is asked for
    assert "sweep stopped: n=64 failed (MemoryError: too big)" in entry["reason"]


def test_caveats_say_why_figures_are_not_native() -> None:
    assert "upcasts" in compute_ceilings._matmul_caveat("cpu", "bfloat16")
    assert "TF32" in compute_ceilings._matmul_caveat("gpu", "float32")
    assert compute_ceilings._matmul_caveat("cpu", "float32") == ""


def test_bandwidth_caveat_when_arrays_are_near_the_cache() -> None:
    entries = stream_ceilings.bandwidth_entries(TINY, 1 * MiB, lambda _m: None)
    assert all("1x the last-level cache" in e["reason"] for e in entries)
    clean = stream_ceilings.bandwidth_entries(TINY, 64 * 1024, lambda _m: None)
    assert all(e["reason"] == "" for e in clean)


def _fields(plan: Plan) -> dict[str, Any]:
    return {name: getattr(plan, name) for name in Plan.__dataclass_fields__}


# ------------------------------------------------------------------------------ convolution


def test_conv_flops_by_hand() -> None:
    # 3x3 valid convolution of 4 images of 10x10 pixels, 32 channels in and out: 8x8 outputs,
    # each 32 output channels x 32 input channels x 9 taps multiply-adds.
    assert compute_ceilings.conv_flops(10, 4, 32) == 2 * 4 * 8 * 8 * 32 * 32 * 9
    assert compute_ceilings.conv_shape("cpu") == (4, 32)
    # Padded by one ("same"): 10x10 outputs; along each dimension the taps that land on the
    # input are 3 x 10 less the two that fall on the padding at either edge.
    assert compute_ceilings.conv_flops(10, 4, 32, padded=True) == 2 * 4 * 32 * 32 * 28 * 28


def test_padded_conv_flops_are_those_the_count_gives_its_kernel() -> None:
    # The roof's rate is its flops over its time: it must count them as a program's kernel
    # is counted, or a padded convolution would read it at the wrong rate.
    import jax
    import jax.numpy as jnp

    from roofline_report.hlo.kernels import kernel_inventory

    for padded in (False, True):
        fn = compute_ceilings._padded_convolution if padded else compute_ceilings._convolution
        text = jax.jit(fn).lower(jnp.ones((2, 10, 10, 8)), jnp.ones((3, 3, 8, 8))) \
            .compile().as_text()
        [kernel] = [k for k in kernel_inventory(text)["kernels"] if k["flops"]]
        assert kernel["flops"] == compute_ceilings.conv_flops(10, 2, 8, padded)
        assert kernel["image_conv_padded"] is padded
        assert not kernel["image_conv_weight_gradient"]
    # The weight gradient of the padded one, as the roof writes it: its flops and patch matrix
    # are the forward one's, and the count takes it for a weight gradient.
    text = jax.jit(compute_ceilings._weight_gradient).lower(
        jnp.ones((8, 10, 10, 2)), jnp.ones((10, 10, 2, 8))).compile().as_text()
    [kernel] = [k for k in kernel_inventory(text)["kernels"] if k["flops"]]
    assert kernel["flops"] == compute_ceilings.conv_flops(10, 2, 8, padded=True)
    assert kernel["image_conv_patch"] == kernel["flops"] // (2 * 8)
    assert kernel["image_conv_weight_gradient"] and kernel["image_conv_padded"]


def test_the_weight_gradient_roof_is_the_one_a_training_step_computes() -> None:
    # The roof's kernel is the convolution XLA writes for the filter's gradient of the padded
    # roof's own: the same window, padding and labels, the same flops.
    import jax
    import jax.numpy as jnp

    from roofline_report.hlo.kernels import kernel_inventory

    x, w = jnp.ones((2, 10, 10, 8)), jnp.ones((3, 3, 8, 8))

    def filter_gradient(x: Any, w: Any) -> Any:
        y, back = jax.vjp(compute_ceilings._padded_convolution, x, w)
        return back(y)[1]

    text = jax.jit(filter_gradient).lower(x, w).compile().as_text()
    grads = [k for k in kernel_inventory(text)["kernels"] if k["image_conv_weight_gradient"]]
    assert [k["flops"] for k in grads] == [compute_ceilings.conv_flops(10, 2, 8, padded=True)]


@pytest.mark.slow
def test_tiny_convolution_roof_is_measured_apart() -> None:
    from roofline_report.analysis.roofs import measured

    plan = Plan(**{**_fields(TINY), "matmul_sizes": (32,), "matmul_dtypes": ("float32",),
                   "conv_sizes": (6, 10)})
    data = ceilings.measure_ceilings(quick=True, plan=plan)
    conv = [e for e in data["compute"] if e["op"] == "convolution"]
    assert len(conv) == 1 and conv[0]["available"] and conv[0]["dtype"] == "float32"
    assert [s["n"] for s in conv[0]["by_size"]] == [6, 10]
    batch, channels = compute_ceilings.conv_shape(data["backend"])  # a TPU's are larger
    assert [s["flops"] for s in conv[0]["by_size"]] == [
        compute_ceilings.conv_flops(n, batch, channels) for n in (6, 10)]
    # The padded family beside it, at the same sides, its flops those of its n x n outputs.
    [padded] = [e for e in data["compute"] if e["op"] == "convolution-padded"]
    assert padded["available"] and padded["name"] == "convolution float32 (padded)"
    assert [(s["n"], s["flops"]) for s in padded["by_size"]] == [
        (n, compute_ceilings.conv_flops(n, batch, channels, padded=True)) for n in (6, 10)]
    assert padded["channels"] == channels
    # And the padded one's weight gradient: the same flops at each side.
    [gradient] = [e for e in data["compute"] if e["op"] == "convolution-weight-gradient"]
    assert gradient["available"] and gradient["name"] == "convolution float32 (weight gradient)"
    assert [(s["n"], s["flops"]) for s in gradient["by_size"]] == [
        (n, s["flops"]) for n, s in zip((6, 10), padded["by_size"], strict=True)]
    # Its output features: a kernel's patch matrix reads the rate where the roof's own had
    # one of that size (2 x patch x features flops).
    assert conv[0]["channels"] == channels
    kept = {k: v for k, v in data.items() if k not in ("peak_compute", "peak_bandwidth")}
    [roof] = [r for r in measured(typed_ceilings({**kept, "available": True})).compute
              if r.op == "convolution"]
    assert roof.channels == channels and roof.patch_flops(100, 1.0) == 2 * 100 * channels
    # The default float32 roof is the matmul's at default precision, never the convolution's.
    assert data["peak_compute"]["name"] == "matmul float32"


@pytest.mark.cpu_backend("XLA:CPU's generic code: another backend measures no such roof")
def test_tiny_generic_convolution_roof_counts_its_kernels_flops_and_windows() -> None:
    from roofline_report.analysis.roofs import measured
    from roofline_report.observe.ceilings import special_compute

    plan = Plan(**{**_fields(TINY), "conv_sizes": (8, 16, 128)})
    entry = special_compute.generic_conv_entry("float32", "cpu", plan, lambda _m: None)
    assert entry["available"], entry["reason"]
    assert entry["op"] == "convolution-generic"
    # Sides past 64 are not measured (a call over 128 x 128 outputs takes a second).
    assert [s["n"] for s in entry["by_size"]] == [8, 16]
    # Each size's flops are those the count gives its kernel: 2 x 4 x 32 x 32 x the taps
    # that land on the input (every one of the 4x4 output's positions sees all but the
    # padded edge of the dilated window).
    assert all(s["flops"] > 0 for s in entry["by_size"])
    assert entry["by_size"][1]["flops"] > 4 * entry["by_size"][0]["flops"] * 0.9
    data = {"available": True, "backend": "cpu", "compute": [entry]}
    [roof] = measured(typed_ceilings(data)).compute
    assert [w for w, _ in roof.by_window] == [16.0, 64.0]


@pytest.mark.slow
def test_tiny_sequence_convolution_roof_reads_at_a_filter() -> None:
    from roofline_report.analysis.roofs import measured

    plan = Plan(**{**_fields(TINY), "matmul_sizes": (32,), "matmul_dtypes": ("float32",),
                   "conv_1d_features": (8, 16)})
    data = ceilings.measure_ceilings(quick=True, plan=plan)
    [line] = [e for e in data["compute"] if e["op"] == "convolution-1d"]
    assert line["available"], line["reason"]
    assert (line["window"], line["rank"]) == (3, 1)
    assert line["positions"] == compute_ceilings.LINE_BATCH * compute_ceilings.LINE_LENGTH
    assert [(s["n"], s["flops"]) for s in line["by_size"]] == [
        (f, compute_ceilings.line_conv_flops(f)) for f in (8, 16)]
    kept = {k: v for k, v in data.items() if k not in ("peak_compute", "peak_bandwidth")}
    roofs = measured(typed_ceilings({**kept, "available": True}))
    found = roofs.line_convolution("float32", 3 * 16 * 16)
    assert found is not None and found[0].name == line["name"] and found[1] > 0
    assert data["peak_compute"]["name"] == "matmul float32"  # never the convolution's


def test_only_the_cpu_plans_a_sequence_convolution_roof() -> None:
    for quick in (True, False):
        cpu = plan_for("cpu", quick=quick, cache_bytes=32 * MiB, free_bytes=None)
        assert len(cpu.conv_1d_features) >= 3
        for backend in ("gpu", "tpu"):
            assert not plan_for(backend, quick=quick, cache_bytes=None,
                                free_bytes=None).conv_1d_features


# ---------------------------------------------------------------------- small products


@pytest.mark.slow
def test_small_sides_are_timed_as_a_batch_of_products() -> None:
    """Sides below the sweep's are timed as a batch of products in one call; the point keeps
    its batch and the whole call's flops, and never becomes the roof's size."""
    plan = Plan(**{**_fields(TINY), "matmul_sizes": (32,), "matmul_dtypes": ("float32",),
                   "batch_sides": (8, 16, 32), "batch_flops": 2 * 32**3})
    assert compute_ceilings.batch_of(8, plan) == 64 and compute_ceilings.batch_of(16, plan) == 8
    assert compute_ceilings.batch_of(64, plan) == 1  # never fewer than one product
    data = ceilings.measure_ceilings(quick=True, plan=plan)
    (entry,) = [e for e in data["compute"] if e["name"] == "matmul float32"]
    assert entry["available"] and entry["size"] == 32
    # 32 is the sweep's own size, timed alone: no batched point of it.
    assert [(p["n"], p.get("batch", 1)) for p in entry["by_size"]] == [(8, 64), (16, 8)]
    assert all(p["flops"] == 2 * 32**3 and p["value"] > 0 for p in entry["by_size"])


def test_a_plan_times_small_products_below_its_smallest_size() -> None:
    for backend in ("cpu", "gpu"):
        for quick in (True, False):
            plan = plan_for(backend, quick=quick, cache_bytes=32 * MiB, free_bytes=None)
            assert plan.batch_sides and max(plan.batch_sides) < min(plan.matmul_sizes)
            assert plan.batch_flops >= 2 * max(plan.batch_sides) ** 3


# ------------------------------------------------------------------------------ split launch


@pytest.mark.slow
def test_the_split_launch_is_timed_at_the_size_the_compiler_starts_splitting() -> None:
    from roofline_report.observe.ceilings import dispatch

    entry = dispatch.split_launch_entry(TINY, lambda _m: None)
    if not entry["available"] and "split no kernel" in entry["reason"]:
        pytest.skip(entry["reason"])  # a one-core machine: nothing is split
    low, high = entry["rows"]
    # Bisection ends on adjacent sizes: the larger split, the smaller not.
    assert high == low + 1
    assert dispatch._split_parts(high)[2] == entry["parts"] > 1
    assert dispatch._split_parts(low)[2] == 1
    split, unsplit = entry["timing"]["per_call_s"], entry["timing_unsplit"]["per_call_s"]
    if entry["available"]:
        assert entry["value"] == pytest.approx(min(split) - min(unsplit))
    else:
        assert min(split) <= min(unsplit) and "below the noise" in entry["reason"]
    # Enqueued as programs are timed: the same difference, never below 0.
    enq = entry["timing_enqueued"]["per_call_s"]
    enq_unsplit = entry["timing_unsplit_enqueued"]["per_call_s"]
    assert "enqueued" in entry["timing_enqueued"]["method"]
    assert entry["enqueued"] == pytest.approx(max(0.0, min(enq) - min(enq_unsplit)))
    from roofline_report.results.schema_ceilings import SplitLaunchCeiling

    SplitLaunchCeiling.model_validate(entry)  # the entry's fields are the schema's


@pytest.mark.slow
def test_a_launch_chain_fused_into_one_kernel_is_measured_apart_at_barriers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """XLA's GPU compiler fused the plain chain into one kernel (an H200: 1 kernel against 1,
    and no launch floor): the chain is then timed again with its steps kept apart by
    optimization barriers, whose kernels the count sees."""
    from roofline_report import hlo
    from roofline_report.observe.ceilings import dispatch
    from roofline_report.results.schema_ceilings import LaunchCeiling

    real, program = hlo.inspect_compiled, dispatch._launch_program
    apart = {"now": False}

    def chain(steps: int, *, barriers: bool = False) -> Any:
        apart["now"] = barriers
        return program(steps, barriers=barriers)

    def as_gpu(text: str) -> dict[str, Any]:  # the plain chain counts as one kernel
        got = dict(real(text))
        if not apart["now"]:
            got["kernels"] = 1
        return got

    monkeypatch.setattr(dispatch, "_launch_program", chain)
    monkeypatch.setattr(hlo, "inspect_compiled", as_gpu)
    entry = dispatch.launch_entry(TINY, lambda _m: None)
    assert entry["barriers"] is True
    short, long = entry["kernels"]
    steps = (dispatch.LAUNCH_CHAIN if jax_backend() == "cpu"
             else dispatch.LAUNCH_CHAIN_ACCELERATOR) - 1
    # each step's kernels apart (XLA:CPU: one a step; a TPU's compiler: a reduction and an
    # elementwise kernel)
    assert long > short and (long - short) % steps == 0
    assert entry["available"] or "below the noise" in entry["reason"]
    assert LaunchCeiling.model_validate(entry).barriers


def test_no_split_no_split_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    from roofline_report.observe.ceilings import dispatch

    monkeypatch.setattr(dispatch, "_split_parts", lambda rows: (None, None, 1))
    entry = dispatch.split_launch_entry(TINY, lambda _m: None)
    assert not entry["available"] and entry["value"] is None
    assert entry["reason"].startswith("the compiler split no kernel")
    assert not plan_for("gpu", quick=True, cache_bytes=None,
                                 free_bytes=None).split_launch


def test_each_matmul_size_keeps_its_faster_of_two_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """A burst of load during one size's rough timing stands for that size in every run that
    reuses the ceilings, unless the second round times it again."""
    from roofline_report.observe.ceilings import compute

    per_call = {32: [8e-6, 4e-6], 64: [20e-6, 40e-6]}  # by size: first round, then second
    calls: dict[int, int] = {32: 0, 64: 0}

    def fake_time(compiled: Any, args: Any, **kw: Any) -> Any:
        n = int(args[0].shape[0])
        if kw.get("quick") is False:  # the full timing of the best size
            return SimpleNamespace(rough=False, per_call=SimpleNamespace(min=1.0),
                                   to_json=dict)
        seconds = per_call[n][min(calls[n], 1)]
        calls[n] += 1
        return SimpleNamespace(rough=True, per_call=SimpleNamespace(min=seconds))

    def fake_rate(flops: float, timed: Any) -> float:
        return float(flops / timed.per_call.min) if timed.rough else 1.0

    monkeypatch.setattr(compute.timing, "time_jitted", fake_time)
    monkeypatch.setattr(compute, "fastest_rate", fake_rate)
    again: list[Any] = []
    plan = Plan(**{**_fields(TINY), "matmul_sizes": (32, 64), "matmul_dtypes": ("float32",)})
    entry = compute.matmul_entry("float32", "cpu", plan, lambda _m: None, again=again)
    first = [p["value"] for p in entry["by_size"]]
    assert first == [2 * 32**3 / 8e-6, 2 * 64**3 / 20e-6]
    for closure in again:
        closure()
    # 32 was twice as fast the second time and keeps that; 64 was slower and keeps its first.
    assert [p["value"] for p in entry["by_size"]] == [2 * 32**3 / 4e-6, 2 * 64**3 / 20e-6]
    assert calls == {32: 2, 64: 2}


# ------------------------------------------------------------------------------ page faults


@pytest.mark.slow
@pytest.mark.cpu_backend("a fresh host buffer's page faults: an accelerator's outputs live in "
                         "its own memory")
def test_a_fresh_output_past_the_mmap_threshold_pays_its_page_faults() -> None:
    from roofline_report.observe.ceilings import page_faults

    entry = page_faults.page_fault_entry(TINY, lambda _m: None)
    pages = entry["bytes"] / entry["page_bytes"]
    assert entry["faults_per_call"] >= page_faults.MIN_FAULT_SHARE * pages, entry["reason"]
    assert entry["available"] and 1e-9 < entry["value"] < 1e-4
    assert entry["timing"] and entry["timing_in_place"]


def test_an_allocator_that_keeps_the_memory_gives_no_page_fault_cost(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from roofline_report.observe.ceilings import page_faults

    monkeypatch.setattr(page_faults, "_minor_faults", lambda: 7)  # no fault ever counted
    entry = page_faults.page_fault_entry(TINY, lambda _m: None, fresh_bytes=4 * MiB)
    assert not entry["available"] and entry["value"] is None
    assert entry["faults_per_call"] == 0 and "keeps the memory" in entry["reason"]
    assert plan_for("cpu", quick=True, cache_bytes=None, free_bytes=None).page_faults
    assert not plan_for("gpu", quick=True, cache_bytes=None, free_bytes=None).page_faults


# ------------------------------------------- integer products and grouped convolutions


def test_plans_measure_integer_products_and_grouped_convolutions() -> None:
    full = plan_for("cpu", quick=False, cache_bytes=32 * MiB, free_bytes=None)
    quick = plan_for("cpu", quick=True, cache_bytes=32 * MiB, free_bytes=None)
    for plan in (full, quick):
        # int4 only where the backend has an int4 product: XLA:CPU and XLA:GPU refuse one, and a
        # default build must not list it as missing on every machine.
        assert plan.integer_dtypes == ("int8",)
        assert plan.integer_sizes and plan.grouped_conv_sizes
    tpu = plan_for("tpu", quick=False, cache_bytes=None, free_bytes=None)
    assert tpu.integer_dtypes == ("int8", "int4")
    # Few sizes: these roofs must not lengthen the ceilings pass by more than seconds.
    assert len(quick.integer_sizes) == len(quick.grouped_conv_sizes) == 1
    assert len(full.integer_sizes) <= 2 and len(full.grouped_conv_sizes) <= 2
    assert not TINY.integer_sizes and not TINY.grouped_conv_sizes


def test_depthwise_flops_by_hand() -> None:
    from roofline_report.observe.ceilings import special_compute

    # A valid 7x7 depthwise convolution of 4 images of 16x16 pixels, 64 channels: 10x10
    # outputs, each channel 49 taps of its own channel.
    assert special_compute.depthwise_flops(16, 4, 64, 7) == 2 * 4 * 10 * 10 * 64 * 49
    # And a 3x3 one: 14x14 outputs, 9 taps each.
    assert special_compute.depthwise_flops(16, 4, 64, 3) == 2 * 4 * 14 * 14 * 64 * 9
    assert special_compute.depthwise_shape("cpu") == (4, 64)


@pytest.mark.slow
def test_tiny_integer_and_grouped_convolution_roofs() -> None:
    from roofline_report.observe.ceilings import special_compute
    from roofline_report.results.schema import ComputeCeiling

    plan = Plan(**{**_fields(TINY), "matmul_sizes": (32,), "matmul_dtypes": ("float32",),
                   "integer_dtypes": ("int8", "int4"), "integer_sizes": (32, 64),
                   "grouped_conv_sizes": (10,)})
    data = ceilings.measure_ceilings(quick=True, plan=plan)
    by_name = {e["name"]: e for e in data["compute"]}
    for e in data["compute"]:
        ComputeCeiling.model_validate_json(json.dumps(e))
    int8 = by_name["matmul int8 (int32 sums)"]
    assert int8["available"] and (int8["op"], int8["dtype"]) == ("matmul", "int8")
    assert [(s["n"], s["flops"]) for s in int8["by_size"]] == [(32, 2 * 32**3), (64, 2 * 64**3)]
    assert int8["value"] == max(s["value"] for s in int8["by_size"])
    # XLA:CPU has no int4 dot: the entry is unavailable, with the reason.
    int4 = by_name["matmul int4 (int32 sums)"]
    if jax_backend() == "cpu":
        assert not int4["available"] and int4["reason"]
    grouped = by_name["grouped convolution float32 (7x7 depthwise)"]
    assert grouped["available"] and grouped["op"] == "grouped-convolution"
    assert grouped["window"] == 7
    batch, channels = special_compute.depthwise_shape(data["backend"])
    assert grouped["by_size"][0]["flops"] == special_compute.depthwise_flops(10, batch,
                                                                             channels, 7)
    small = by_name["grouped convolution float32 (3x3 depthwise)"]
    assert small["available"] and small["window"] == 3
    assert small["by_size"][0]["flops"] == special_compute.depthwise_flops(10, batch,
                                                                           channels, 3)
    # The float32 roofs stay the matmul's.
    assert data["peak_compute"]["name"] == "matmul float32"
    from roofline_report.analysis.roofs import measured

    # The record as a run keeps it: the measurement's peaks are chosen at render time.
    kept = {k: v for k, v in data.items() if k not in ("peak_compute", "peak_bandwidth")}
    roofs = measured(typed_ceilings({**kept, "available": True}))
    assert roofs.compute_for("float32").name == "matmul float32"  # type: ignore[union-attr]
    assert roofs.compute_for("int8").dtype == "int8"  # type: ignore[union-attr]
    found = roofs.compute_for("float32", op="grouped-convolution")
    assert found is not None and found.name in (grouped["name"], small["name"],
                                                "grouped convolution float32 (3x3 groups of 16)")
    # Taps an output: 3x3 and 7x7 depthwise, 3x3 over groups of 16 input features, and a
    # sequence's 4 taps (causal, depthwise), on every backend that runs each as a grouped
    # convolution. A TPU v5e's compiler leaves no grouped convolution of groups of 16 in the
    # program: that roof is unavailable there, with the reason.
    windows = {r.window for r in roofs.compute if r.op == "grouped-convolution"}
    wide = by_name["grouped convolution float32 (3x3 groups of 16)"]
    assert (wide["window"], wide["group"]) == (3, 16)
    if data["backend"] == "cpu" or wide["available"]:
        assert wide["available"] and windows == {4, 9, 49, 144}
        assert wide["by_size"][0]["flops"] == special_compute.depthwise_flops(
            10, batch, channels, 3, 16)
    else:
        assert windows == {4, 9, 49}
        assert "has no grouped convolution float32 (3x3 groups of 16) kernel" in wide["reason"]


def jax_backend() -> str:
    import jax

    return str(jax.default_backend())


def test_the_checks_find_integer_dots_and_grouped_convolutions() -> None:
    from roofline_report.hlo.ir import parse_module
    from roofline_report.observe.ceilings import special_compute

    text = """HloModule m

ENTRY %main (a: s8[4,4], b: s8[4,4], x: f32[1,5,5,4], w: f32[3,3,1,4]) -> s32[4,4] {
  %a = s8[4,4]{1,0} parameter(0)
  %b = s8[4,4]{1,0} parameter(1)
  %x = f32[1,5,5,4]{3,2,1,0} parameter(2)
  %w = f32[3,3,1,4]{3,2,1,0} parameter(3)
  %c = f32[1,3,3,4]{3,2,1,0} convolution(%x, %w), window={size=3x3}, \
dim_labels=b01f_01io->b01f, feature_group_count=4
  ROOT %d = s32[4,4]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    found = {i.name: i for _c, i in parse_module(text).instructions()}
    assert special_compute.integer_dot(found["d"], "int8")
    assert not special_compute.integer_dot(found["d"], "int4")
    assert special_compute.grouped_convolution(found["c"])
    assert not special_compute.grouped_convolution(found["d"])
    # XLA's GPU backend runs them as library calls: cuBLAS and cuDNN
    gpu = """HloModule m

ENTRY %main (a: s8[4,4], b: s8[4,4], x: f32[1,5,5,4], w: f32[3,3,1,4]) -> s32[4,4] {
  %a = s8[4,4]{1,0} parameter(0)
  %b = s8[4,4]{1,0} parameter(1)
  %x = f32[1,5,5,4]{3,2,1,0} parameter(2)
  %w = f32[3,3,1,4]{3,2,1,0} parameter(3)
  %c = (f32[1,3,3,4]{3,2,1,0}, u8[0]{0}) custom-call(%x, %w), window={size=3x3}, \
dim_labels=b01f_01io->b01f, feature_group_count=4, custom_call_target="__cudnn$convForward"
  %g = (s32[4,4]{1,0}, s8[64]{0}) custom-call(%a, %b), custom_call_target="__cublas$gemm"
  ROOT %d = s32[4,4]{1,0} get-tuple-element(%g), index=0
}
"""
    found = {i.name: i for _c, i in parse_module(gpu).instructions()}
    assert special_compute.integer_dot(found["g"], "int8")
    assert special_compute.grouped_convolution(found["c"])
    assert not special_compute.grouped_convolution(found["g"])
