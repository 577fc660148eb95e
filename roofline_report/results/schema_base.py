"""The building blocks of the results document's records (:mod:`roofline_report.results.schema`):
closed and open records, the record of a measurement that was not available and the choice
between the two (:func:`maybe`), checked number types, and a timing's samples.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

NonNeg = Annotated[float, Field(ge=0)]
Pos = Annotated[float, Field(gt=0)]
Count = Annotated[int, Field(ge=0)]
PosInt = Annotated[int, Field(gt=0)]  # a size: elements, bytes, a dimension
AtLeastOne = Annotated[int, Field(ge=1)]  # repetitions, samples, trips, a level


class Record(BaseModel):
    """A closed record: unknown keys are refused, so a misspelt key is an error."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Unavailable(Record):
    """A measurement that could not be made, with the reason (shown in the report)."""

    available: Literal[False]
    reason: str
    ran: bool | None = None  # for checks: the workload ran but could not be compared


def available_tag(value: Any) -> str:
    if isinstance(value, dict):
        return "yes" if value.get("available", True) is not False else "no"
    return "yes" if getattr(value, "available", True) is not False else "no"


def maybe(model: type[BaseModel]) -> Any:
    """``model | Unavailable``, told apart by the ``available`` key (errors name one branch)."""
    return Annotated[
        Annotated[model, Tag("yes")] | Annotated[Unavailable, Tag("no")],
        Discriminator(available_tag),
    ]


# ----------------------------------------------------------------------------- timing


class Timing(Record):
    """A timed executable: the per-call time of each sample (a sample enqueues ``inner_reps``
    calls and blocks once), in the order taken, and how it was timed. Statistics are derived
    (:class:`roofline_report.analysis.stats.Stats`)."""

    available: Literal[True] = True
    inner_reps: AtLeastOne
    method: str
    min_sample_s: NonNeg
    per_call_s: Annotated[list[Pos], Field(min_length=1)]
    resolution_s: NonNeg
    # Minor page faults the process took per call while the samples ran; absent where not
    # counted (records written before they were, kernels not timed by the jax harness).
    page_faults_per_call: NonNeg | None = None
