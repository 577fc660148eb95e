"""Tests for roofline_report.units: parsing rates and formatting display strings."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline_report.errors import InputError
from roofline_report.units import format_intensity, format_si, parse_rate


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        ("100 GFLOP/s", "flops", 100e9),
        ("100GFLOP/s", "flops", 100e9),
        ("1.2e14", "flops", 1.2e14),
        ("989 TFLOP/s", "flops", 989e12),
        ("989 tflop/s", "flops", 989e12),
        ("2 PFLOPS", "flops", 2e15),
        ("1836 TOPS", "flops", 1.836e15),
        ("  7.5 kFLOP/s  ", "flops", 7500.0),
        ("100 mflops", "flops", 100e6),  # no milli: m is mega
        ("1 EFLOP/s", "flops", 1e18),
        ("20 GB/s", "bytes", 20e9),
        ("4.8 TB/s", "bytes", 4.8e12),
        ("1638 GBps", "bytes", 1.638e12),
        ("900 GiB/s", "bytes", 900 * 2**30),
        ("1 KiB/s", "bytes", 1024.0),
        ("2 TiB/s", "bytes", 2 * 2**40),
        ("3e10", "bytes", 3e10),
        (".5 GB/s", "bytes", 0.5e9),
    ],
)
def test_parse_rate_accepts(text: str, kind: str, expected: float) -> None:
    assert parse_rate(text, kind) == pytest.approx(expected, rel=1e-12)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "kind", "fragment"),
    [
        ("20 GB/s", "flops", "is a bandwidth"),
        ("100 GFLOP/s", "bytes", "is a compute rate"),
        ("20 Gb/s", "bytes", "bits"),
        ("1 GiFLOP/s", "flops", "bytes only"),
        ("0", "flops", "positive"),
        ("-5 GB/s", "bytes", "positive"),
        ("nan", "flops", "cannot read"),
        ("inf", "bytes", "cannot read"),
        ("1e999", "flops", "finite"),
        ("1e300 EFLOP/s", "flops", "finite"),
        ("", "flops", "cannot read"),
        ("fast", "flops", "cannot read"),
        ("10 GB", "bytes", "unknown unit"),
        ("10 G", "flops", "unknown unit"),
        ("10 GFLOP/s/s", "flops", "cannot read"),
        ("1,000 GB/s", "bytes", "cannot read"),
    ],
)
def test_parse_rate_rejects(text: str, kind: str, fragment: str) -> None:
    with pytest.raises(InputError) as info:
        parse_rate(text, kind, what="--peak")  # type: ignore[arg-type]
    message = str(info.value)
    assert fragment in message
    assert message.startswith("--peak: ")
    assert "\n" not in message


def test_wrong_family_names_value_and_expectation() -> None:
    with pytest.raises(InputError, match=r"'20 GB/s'.*expected a compute rate"):
        parse_rate("20 GB/s", "flops")


def test_parse_rate_rejects_non_strings() -> None:
    with pytest.raises(InputError):
        parse_rate(5, "flops")  # type: ignore[arg-type]


def test_parse_rate_bad_kind_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="kind"):
        parse_rate("1", "seconds")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "unit", "expected"),
    [
        (100e9, "FLOP/s", "100 GFLOP/s"),
        (3.35e12, "B/s", "3.35 TB/s"),
        (8192, "FLOP", "8.19 kFLOP"),
        (5632, "B", "5.63 kB"),
        (3584, "B", "3.58 kB"),
        (1.23e-3, "s", "1.23 ms"),
        (4.5e-6, "s", "4.5 µs"),
        (250e-12, "s", "250 ps"),
        (2.0, "s", "2 s"),
        (1500.0, "s", "1500 s"),
        (0.9996, "s", "1 s"),
        (0.9994, "s", "999 ms"),
        (999.96, "B", "1 kB"),
        (0.5, "B", "0.5 B"),
        (0, "FLOP/s", "0 FLOP/s"),
        (0.0, "s", "0 s"),
        (None, "s", "unknown"),
        (math.nan, "B", "unknown"),
        (math.inf, "B", "unknown"),
        (-2048, "B", "-2.05 kB"),
        (1e30, "FLOP/s", "1×10³⁰ FLOP/s"),
        (1e-15, "s", "1×10⁻¹⁵ s"),
        (3.14159e15, "", "3.14 P"),
    ],
)
def test_format_si(value: float | None, unit: str, expected: str) -> None:
    assert format_si(value, unit) == expected


def test_format_si_digits() -> None:
    assert format_si(3.14159e9, "FLOP/s", digits=5) == "3.1416 GFLOP/s"
    assert format_si(3.14159e9, "FLOP/s", digits=1) == "3 GFLOP/s"
    with pytest.raises(ValueError):
        format_si(1.0, "B", digits=0)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (5, "5 FLOP/B"),
        (24 / 7, "3.43 FLOP/B"),
        (85.333, "85.3 FLOP/B"),
        (2731.2, "2731 FLOP/B"),
        (0.0123, "0.0123 FLOP/B"),
        (0, "0 FLOP/B"),
        (None, "unknown"),
        (math.nan, "unknown"),
    ],
)
def test_format_intensity(value: float | None, expected: str) -> None:
    assert format_intensity(value) == expected


_RATES = st.floats(min_value=1e-6, max_value=1e30, allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(value=_RATES, digits=st.integers(min_value=1, max_value=6))
def test_format_parse_round_trip_flops(value: float, digits: int) -> None:
    text = format_si(value, "FLOP/s", digits=digits)
    back = parse_rate(text, "flops")
    # Rounding to `digits` significant digits moves the value by at most half a unit there.
    assert back == pytest.approx(value, rel=0.5 * 10.0 ** (1 - digits) + 1e-12)


@settings(max_examples=300, deadline=None)
@given(value=_RATES)
def test_format_parse_round_trip_bytes(value: float) -> None:
    back = parse_rate(format_si(value, "B/s"), "bytes")
    assert back == pytest.approx(value, rel=5e-3)


_UNITISH = st.sampled_from(
    ["", " ", "k", "M", "G", "Gi", "T", "e", "E", "FLOP/s", "B/s", "b/s", "/s", "ops", "Bps", "."]
)


@settings(max_examples=400, deadline=None)
@given(
    text=st.one_of(
        st.text(max_size=30),
        st.builds(
            lambda number, unit: f"{number}{unit}",
            st.floats(allow_nan=True, allow_infinity=True).map(repr),
            st.lists(_UNITISH, max_size=4).map("".join),
        ),
    ),
    kind=st.sampled_from(["flops", "bytes"]),
)
def test_parse_rate_only_raises_input_error(text: str, kind: str) -> None:
    try:
        value = parse_rate(text, kind)  # type: ignore[arg-type]
    except InputError as exc:
        assert "\n" not in str(exc)
    else:
        assert math.isfinite(value)
        assert value > 0


@settings(max_examples=200, deadline=None)
@given(value=st.floats(max_value=0.0, allow_nan=False) | st.just(math.nan) | st.just(math.inf))
def test_parse_rate_rejects_non_positive_nan_inf(value: float) -> None:
    with pytest.raises(InputError):
        parse_rate(repr(value), "flops")
    with pytest.raises(InputError):
        parse_rate(f"{value!r} GB/s", "bytes")
