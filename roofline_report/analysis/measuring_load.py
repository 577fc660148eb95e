"""The load a machine was under while its ceilings were measured, and when that load is too much
for a ceiling to be believed (pure; no jax, no clock).

A ceiling is the fastest rate a kernel reaches. Other processes that hold the cores while it is
timed make it slower, and a roof measured that way is too low for every program held to it:
on a shared two-core machine, float32 matmul once read 16.6 GFLOP/s under load against 168
quiet. So the measurement records the machine's load over each round of the compute and
streaming ceilings and over the whole measurement (``ceilings.conditions`` and each entry's
``round_loads`` in results.json): the wall time, the CPU time other processes took over it
(all cores' busy time less this process's own) and the number of cores, with the 1-minute load
average at its start and end.

The other processes' *share* of the machine is their CPU time over (wall time × cores); a span
is **under load** when that share reaches :data:`LOADED_SHARE`. Only the CPU time is judged:
the load average counts this process's own threads and lags by a minute, so it is shown, not
judged. A span whose others' CPU time is unknown (no ``/proc/stat``) is not judged either.

A compute or streaming ceiling was measured under load when the round its value comes from
was (the fastest of its rounds not under load, else its fastest); the whole measurement, when
its own span was. The measuring side takes a round under load again within a time budget (see
``observe/ceilings/load.py``), the ceilings cache refuses ceilings measured under load, and the
report says which were.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic

from roofline_report.results import schema

#: Other processes holding this share of the machine's cores (their CPU time over wall time ×
#: cores) make a span "under load". A fifth: on two cores, other work that keeps 0.4 of a core
#: busy takes a fifth of what a kernel running on both could use.
LOADED_SHARE = 0.2

#: The groups of ceilings whose rounds record their load.
ROUND_GROUPS = ("compute", "bandwidth")


@dataclass(frozen=True, slots=True)
class Load:
    """The machine's load over one span: ``wall_s`` long, ``others_cpu_s`` of CPU time taken
    by other processes (None: unknown), on ``cores`` cores (None: unknown), and the 1-minute
    load average at the span's start and end (as many as were read)."""

    wall_s: float
    others_cpu_s: float | None
    cores: int | None
    loadavg: tuple[float, ...] = ()

    @property
    def others_share(self) -> float | None:
        """Other processes' share of the machine over the span (0 to 1), or None unknown."""
        if self.others_cpu_s is None or not self.cores or self.wall_s <= 0:
            return None
        return min(1.0, max(0.0, self.others_cpu_s / (self.wall_s * self.cores)))

    @property
    def loaded(self) -> bool:
        """Whether other processes held :data:`LOADED_SHARE` of the machine or more."""
        share = self.others_share
        return share is not None and share >= LOADED_SHARE

    @staticmethod
    def from_json(data: Mapping[str, Any] | None) -> Load | None:
        """A plain ``LoadReading`` record (as the measuring side builds it) as a :class:`Load`,
        validated by the schema's record; None for anything that is not one."""
        if data is None:
            return None
        try:
            return load_of(schema.LoadReading.model_validate(data))
        except pydantic.ValidationError:
            return None


#: A ceiling whose rounds record their load.
RoundCeiling = schema.ComputeCeiling | schema.BandwidthCeiling


def best_round(entry: RoundCeiling) -> int | None:
    """The index of the round a ceiling's value comes from (the first whose rate is the value;
    else its fastest, as in runs where the value was the fastest round), or None where the
    rounds do not say."""
    value = entry.value
    if value is None:
        return None
    usable = [(r, i) for i, r in enumerate(entry.rounds) if r is not None]
    if not usable:
        return None
    exact = next((i for r, i in usable if r == value), None)
    if exact is not None:
        return exact
    best = max(r for r, _ in usable)
    return next(i for r, i in usable if r == best)


def ceiling_load(entry: RoundCeiling) -> Load | None:
    """The load during the round a ceiling's value comes from, or None where not recorded."""
    i = best_round(entry)
    loads = entry.round_loads
    if i is None or i >= len(loads):
        return None
    return load_of(loads[i])


@dataclass(frozen=True, slots=True)
class Conditions:
    """How a set of ceilings was measured: the load over the whole measurement (None: not
    recorded, as in runs saved before it was), the ceilings whose value comes from a round
    under load (by name), the rounds taken again for load, and the rounds whose load was
    recorded."""

    whole: Load | None
    loaded_ceilings: tuple[str, ...]
    repeated: int
    rounds_recorded: int

    @property
    def loaded(self) -> bool:
        """Measured under load: the whole measurement was, or a roof's best round was."""
        return bool(self.loaded_ceilings) or (self.whole is not None and self.whole.loaded)

    @property
    def recorded(self) -> bool:
        return self.whole is not None or self.rounds_recorded > 0


def conditions(ceilings: schema.Ceilings) -> Conditions:
    """The measuring conditions of a ``ceilings`` record of results.json (or a cache entry's)."""
    names: list[str] = []
    repeated = recorded = 0
    groups: tuple[Sequence[RoundCeiling], ...] = (ceilings.compute, ceilings.bandwidth)
    for group in groups:
        for entry in group:
            repeated += entry.repeated
            recorded += sum(1 for r in entry.round_loads if r is not None)
            load = ceiling_load(entry)
            if entry.available and load is not None and load.loaded:
                names.append(entry.name)
    return Conditions(whole=load_of(ceilings.conditions),
                      loaded_ceilings=tuple(names), repeated=repeated, rounds_recorded=recorded)


__all__ = ["LOADED_SHARE", "ROUND_GROUPS", "Conditions", "Load", "best_round", "ceiling_load",
           "conditions"]


def load_of(record: schema.LoadReading | None) -> Load | None:
    """A typed ``LoadReading`` record (a program's timing's, say) as a :class:`Load`; None
    for none."""
    if record is None:
        return None
    return Load(wall_s=record.wall_s, others_cpu_s=record.others_cpu_s, cores=record.cores,
                loadavg=tuple(record.loadavg))
