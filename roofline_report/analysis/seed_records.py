"""The seed's teaching studies as typed records (no jax): the hypothetical model of its square
matmuls, the experiment that doubles their traffic and the exercise, each computed by
:mod:`roofline_report.analysis.study` from the assumed budgets of one render.

* :class:`SeedModel`: each size's contract, intensity and ceilings, the ridge, and the figure's
  series (:class:`SeedFigure`, :class:`CeilingSeries`).
* :class:`DoubledTraffic`: the same sizes at half their intensity, and what it does to their
  ceilings.
* :class:`SeedExercise`: the work, minimum traffic, intensity and bound of one matmul.
* :class:`SeedStudy`: the three together, as the analysis hands them to the report.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline_report.analysis.seed_model import Contract
from roofline_report.kinds import Kind

__all__ = ["CeilingSeries", "DoubledTraffic", "SeedExercise", "SeedFigure", "SeedModel",
           "SeedStudy"]


@dataclass(frozen=True, slots=True)
class CeilingSeries:
    """One line of the seed's figure: its label and its ceiling at each intensity (GFLOP/s)."""

    label: str
    y: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class SeedFigure:
    """The seed's roofline as drawn: the intensities and the ridge, sorted, and the bandwidth
    budget, the compute budget and their combined ceiling over them."""

    x: tuple[float, ...]
    xlabel: str
    ylabel: str
    series: tuple[CeilingSeries, ...]


@dataclass(frozen=True, slots=True)
class SeedModel:
    """The hypothetical model of square matmuls, one entry per size in each series."""

    kind: Kind
    itemsize: int
    sizes: tuple[int, ...]
    contracts: tuple[Contract, ...]
    intensity: tuple[float, ...]  # FLOP/byte of minimum traffic
    closed_form_intensity: tuple[float, ...]  # n/6 for float32, from the closed form
    memory_ceiling: tuple[float, ...]  # bandwidth × intensity (FLOP/s)
    roofline: tuple[float, ...]  # the attainable rate (FLOP/s)
    bound: tuple[str, ...]  # "memory" or "compute"
    ridge: float  # FLOP/byte
    ridge_square_size: float  # the size n of the square matmul at the ridge
    ridge_square_bytes: float  # the three n × n matrices at the ridge
    figure: SeedFigure


@dataclass(frozen=True, slots=True)
class DoubledTraffic:
    """The seed's experiment: the work unchanged, the traffic doubled, the intensity halved;
    one entry per size in each series."""

    kind: Kind
    sizes: tuple[int, ...]
    intensity: tuple[float, ...]
    reduced_intensity: tuple[float, ...]
    roofline: tuple[float, ...]  # the ceiling at the minimum traffic (FLOP/s)
    revised: tuple[float, ...]  # the ceiling at twice the minimum traffic (FLOP/s)
    ratio: tuple[float, ...]  # revised ÷ roofline
    halved: tuple[bool, ...]  # memory-bound after doubling: the ceiling halves
    unchanged: tuple[bool, ...]  # the compute budget still binds


@dataclass(frozen=True, slots=True)
class SeedExercise:
    """The seed's exercise, an (m, k) × (k, n) matmul under the assumed budgets, solved."""

    kind: Kind
    shapes: tuple[tuple[int, int], tuple[int, int]]
    itemsize: int
    flops: int
    minimum_bytes: int
    intensity: float
    bandwidth_times_intensity: float
    attainable: float
    bound: str
    peak: float
    bandwidth: float


@dataclass(frozen=True, slots=True)
class SeedStudy:
    """The seed's hypothetical model, experiment and exercise under one render's budgets."""

    model: SeedModel
    experiment: DoubledTraffic
    exercise: SeedExercise
