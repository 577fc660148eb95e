"""Memory levels from a working-set sweep (no jax): one bandwidth roof per level.

The rule, stated so that a reader can check it against the sweep's figure:

* **When the cache sizes are known** (CPU, from the operating system): level k holds the working
  sets larger than level k−1's capacity and at most half its own capacity (the upper half is a
  transition: part of the data already spill to the next level); main memory holds those of at
  least four times the last-level cache (beyond that, caches cannot keep a useful share). A
  level's bandwidth is the fastest rate measured inside its window, as every ceiling here reports
  the best rate (noise only slows a kernel). A level with no point in its window is not found.
* **Otherwise** (accelerators): rates are walked from the smallest working set up; a new level
  starts where two consecutive points fall below :data:`DROP` times the best rate of the current
  level. Each level with at least two points is kept, from its first size to the next level's
  first size; the last is main memory (HBM on an accelerator, DRAM on a CPU).

Each kernel of the sweep gives its own levels; a level's roof is the fastest kernel's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DROP = 0.6  # a point under 60% of the level's best rate leaves the level
RULE = ("A cache level holds the working sets larger than the level below it and at most half "
        "its own capacity; main memory those of at least four times the last-level cache. "
        "Without cache sizes, a level ends where two consecutive points fall under 60% of its "
        "best rate. A level's roof is the fastest rate inside it.")
MAIN_MEMORY_MULTIPLE = 4  # working sets of at least this many last-level caches are DRAM's


@dataclass(frozen=True, slots=True)
class Level:
    """A memory level found in the sweep: its bandwidth and the working sets it holds for."""

    name: str
    kernel: str
    value: float  # B/s
    min_bytes: int | None
    max_bytes: int | None
    points: int
    rule: str


DISPATCH_MARGIN = 1.5  # a write-new call under 1.5 dispatches is mostly dispatch: not used


def _points(kernel: Mapping[str, Any], dispatch: float | None) -> list[tuple[int, float]]:
    """(working set, B/s) of a kernel's available points. A ``write-new`` point is one call
    with its dispatch: the dispatch floor is taken off its time, and a point whose call is
    mostly dispatch is left out."""
    out = []
    fresh = kernel.get("name") == "write-new"
    for p in kernel.get("points", []):
        value = p.get("value")
        if not (p.get("available") and isinstance(value, int | float) and value > 0):
            continue
        if fresh:
            seconds = float(p["bytes_per_call"]) / float(value)
            if not dispatch or seconds < DISPATCH_MARGIN * dispatch:
                continue
            value = float(p["bytes_per_call"]) / (seconds - dispatch)
        out.append((int(p["bytes"]), float(value)))
    return sorted(out)


def _by_caches(points: list[tuple[int, float]], caches: Sequence[Mapping[str, Any]],
               kernel: str, main: str) -> list[Level]:
    levels = []
    lower = 0
    for cache in caches:
        size = int(cache["size"])
        inside = [v for b, v in points if lower < b <= size // 2]
        if inside:
            levels.append(Level(f"L{cache['level']}", kernel, max(inside), lower or None, size,
                                len(inside), f"working sets in ({lower} B, {size // 2} B]"))
        lower = size
    if caches:
        start = MAIN_MEMORY_MULTIPLE * int(caches[-1]["size"])
        beyond = [(b, v) for b, v in points if b >= start]
        if beyond:
            # A fresh output's cost depends on how the allocator serves its size (mapping new
            # pages past a threshold), so that roof holds only from where it was measured.
            low = beyond[0][0] if kernel == "write-new" else lower
            levels.append(Level(main, kernel, max(v for _, v in beyond), low, None,
                                len(beyond), f"working sets of at least {start} B"))
    return levels


def _by_drops(points: list[tuple[int, float]], kernel: str, main: str) -> list[Level]:
    groups: list[list[tuple[int, float]]] = []
    current: list[tuple[int, float]] = []
    for i, (size, value) in enumerate(points):
        best = max((v for _, v in current), default=0.0)
        nxt = points[i + 1][1] if i + 1 < len(points) else value
        if current and value < DROP * best and nxt < DROP * best:
            groups.append(current)
            current = []
        current.append((size, value))
    if current:
        groups.append(current)
    kept = [g for g in groups if len(g) >= 2]
    levels = []
    for i, g in enumerate(kept):
        last = i == len(kept) - 1
        upper = kept[i + 1][0][0] if not last else None
        name = main if last else f"level {i + 1}"
        levels.append(Level(name, kernel, max(v for _, v in g), g[0][0] if i else None, upper,
                            len(g), f"a plateau of {len(g)} sizes (drops under {DROP:.0%})"))
    return levels


def find_levels(sweep: Mapping[str, Any] | None, caches: Sequence[Mapping[str, Any]],
                backend: str, dispatch: float | None = None) -> list[Level]:
    """The levels of every kernel of ``sweep`` (the ``working_set`` record), innermost first;
    [] when the sweep is missing or unavailable. ``dispatch``: the per-call floor, taken off the
    calls of the ``write-new`` kernel (without it, that kernel gives no level)."""
    if not sweep or not sweep.get("available"):
        return []
    main = "DRAM" if backend == "cpu" else "HBM"
    levels: list[Level] = []
    for kernel in sweep.get("kernels", []):
        points = _points(kernel, dispatch)
        name = str(kernel.get("name", ""))
        found = (_by_caches(points, caches, name, main) if caches
                 else _by_drops(points, name, main))
        levels.extend(found)
    return sorted(levels, key=lambda lv: (lv.min_bytes or 0, -lv.value))
