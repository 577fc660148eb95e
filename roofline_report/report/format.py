"""The report's number formatting: :mod:`roofline_report.text`, under the name the report's
modules import it by."""

from roofline_report.text import (
    KIND_MARKERS,
    Num,
    count,
    decimal,
    miss_text,
    n,
    ordinal,
    percent,
    percent_text,
    plural,
    rate,
    ratio,
    signed_count,
    whole,
)

__all__ = ["KIND_MARKERS", "Num", "count", "decimal", "miss_text", "n", "ordinal", "percent",
           "percent_text", "plural", "rate", "ratio", "signed_count", "whole"]
