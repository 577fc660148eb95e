"""The stats of one line's events as columns, as the XSpace reader keeps them
(:mod:`roofline_report.traces.xspace`): dicts are built only for the events read, and one stat
can be read for many events as a column, without building any dict."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import islice
from typing import Any

import numpy as np

from roofline_report.traces.wire_columns import DOUBLE, INT64, REF, UINT64

__all__ = ["NO_STATS", "LineStats"]


class LineStats:
    """The stats of one line's events as columns: each event's own stats are the rows
    ``bounds[i]:bounds[i + 1]`` of the stat columns (metadata id, value kind and bits, in wire
    order; a string's or an exactly decoded value's bits index ``objects``), under the stats
    of its metadata (``inherited``); an event decoded exactly keeps its dict (``exact``). Dicts
    are built only for the events read: a 100 MB trace holds millions of stats, few read."""

    __slots__ = ("_present", "_tables", "bits", "bounds", "exact", "inherited", "key", "kind",
                 "objects", "stat_names")

    def __init__(self, stat_names: Mapping[int, str], inherited: dict[int, dict[str, Any]],
                 bounds: np.ndarray, key: np.ndarray, kind: np.ndarray, bits: np.ndarray,
                 objects: list[Any], exact: dict[int, dict[str, Any]]) -> None:
        self.stat_names = stat_names
        self.inherited = inherited
        self.bounds = bounds
        self.key = key
        self.kind = kind
        self.bits = bits
        self.objects = objects
        self.exact = exact
        self._tables: dict[str, np.ndarray] = {}
        self._present: np.ndarray | None = None  # the stat ids of the own stats, once

    def _named(self, ids: np.ndarray, what: str) -> list[Any]:
        """The stat names (``what`` "name") or ref values ("ref") of stat metadata ``ids``."""
        names = self.stat_names

        def one(k: int) -> str:
            return names.get(k, f"stat {k}") if what == "name" else names.get(k, "")

        if not ids.size:
            return []
        low, high = int(ids.min()), int(ids.max())
        if low >= 0 and high < _TABLE_IDS:
            table = self._tables.get(what)
            if table is None or len(table) <= high:
                table = np.empty(max(high + 1, 256), dtype=object)
                table[:] = [one(k) for k in range(len(table))]
                self._tables[what] = table
            out: list[Any] = table[ids].tolist()
            return out
        unique, inverse = np.unique(ids, return_inverse=True)
        found = np.empty(len(unique), dtype=object)
        found[:] = [one(k) for k in unique.tolist()]
        listed: list[Any] = found[inverse].tolist()
        return listed

    def _values(self, rows: np.ndarray) -> list[Any]:
        kind, bits = self.kind[rows], self.bits[rows]
        out = np.empty(len(rows), dtype=object)
        for tag, read in ((UINT64, bits), (INT64, bits.view(np.int64)),
                          (DOUBLE, bits.view(np.float64))):
            pick = kind == tag
            if pick.any():
                out[pick] = read[pick].tolist()
        pick = kind == REF
        if pick.any():
            refs = bits[pick]
            big = refs >= np.uint64(2**63)  # no stat id (an int64) is that large
            named = self._named(np.where(big, np.uint64(0), refs).view(np.int64), "ref")
            if big.any():
                named = [("" if b else n) for n, b in zip(named, big.tolist(), strict=True)]
            out[pick] = named
        pick = kind == 0
        if pick.any():
            objects = self.objects
            out[pick] = [objects[i] for i in bits[pick].tolist()]
        values: list[Any] = out.tolist()
        return values

    def dicts(self, meta: list[int], indices: np.ndarray) -> list[dict[str, Any]]:
        """The stats of the events ``indices`` (whose metadata ids are ``meta``)."""
        lo, hi = self.bounds[indices], self.bounds[indices + 1]
        counts = hi - lo
        total = int(counts.sum())
        names: list[Any] = []
        values: list[Any] = []
        if total:
            rows = np.repeat(lo - (np.cumsum(counts) - counts), counts) + np.arange(total)
            names = self._named(self.key[rows], "name")
            values = self._values(rows)
        pairs = zip(names, values, strict=True)  # each event takes its count of them
        out: list[dict[str, Any]] = [dict(islice(pairs, c)) for c in counts.tolist()]
        inherited = self.inherited
        for j in np.flatnonzero(counts == 0).tolist():
            out[j] = inherited.get(meta[j], NO_STATS)
        if inherited:
            with_base = np.isin(np.array(meta, dtype=np.int64),
                                np.array(list(inherited), dtype=np.int64)) & (counts > 0)
            for j in np.flatnonzero(with_base).tolist():
                out[j] = {**inherited[meta[j]], **out[j]}
        if self.exact:
            exact = self.exact
            for j, i in enumerate(indices.tolist()):
                if i in exact:
                    out[j] = exact[i]
        return out

    def _ids_named(self, stat: str) -> list[int]:
        """The stat metadata ids of the own stats named ``stat``."""
        if not self.key.size:
            return []
        if self._present is None:
            key = self.key
            low, high = int(key.min()), int(key.max())
            # Stat ids are small (numbered from 1 per plane): counted, not sorted.
            self._present = (np.flatnonzero(np.bincount(key)) if low >= 0 and high < _TABLE_IDS
                             else np.unique(key))
        present = self._present
        return [k for k, name in zip(present.tolist(), self._named(present, "name"),
                                     strict=True) if name == stat]

    def column(self, meta: list[int] | np.ndarray, indices: np.ndarray, stat: str
               ) -> list[Any]:
        """The value of ``stat`` in the stats of each event ``indices`` (whose metadata ids are
        ``meta``), None where it has none: what ``dicts(meta, indices)[j].get(stat)`` gives,
        without building a dict (an event's own stat over its metadata's, the last of a name
        it holds twice, and an exactly decoded event's own dict)."""
        column: list[Any] = self.columns(meta, indices, (stat,))[stat].tolist()
        return column

    def columns(self, meta: list[int] | np.ndarray, indices: np.ndarray,
                stats: Sequence[str]) -> dict[str, np.ndarray]:
        """:meth:`column` of each of ``stats``, as object arrays, the events' own stats
        gathered once for all of them."""
        n = len(indices)
        out = {stat: np.full(n, None, dtype=object) for stat in stats}
        inherited = self.inherited
        if inherited:
            metas = np.asarray(meta, dtype=np.int64)
            for m, base in inherited.items():
                held = [stat for stat in stats if stat in base]
                if held:
                    mine = metas == m
                    for stat in held:
                        out[stat][mine] = base[stat]
        ids = {stat: self._ids_named(stat) for stat in stats}
        if n and any(ids.values()):
            lo, hi = self.bounds[indices], self.bounds[indices + 1]
            counts = hi - lo
            total = int(counts.sum())
            if total:
                rows = np.repeat(lo - (np.cumsum(counts) - counts), counts) + np.arange(total)
                keys = self.key[rows]
                owners = np.repeat(np.arange(n), counts)
                for stat, named in ids.items():
                    if not named:
                        continue
                    hit = (keys == named[0] if len(named) == 1
                           else np.isin(keys, np.array(named, dtype=np.int64)))
                    if not hit.any():
                        continue
                    owner = owners[hit]
                    values = self._values(rows[hit])
                    into = out[stat]
                    if len(owner) > 1 and not bool(np.all(np.diff(owner) > 0)):
                        for j, value in zip(owner.tolist(), values, strict=True):
                            into[j] = value  # in wire order: the last of a name stands
                    else:
                        _place(into, owner, values)
        if self.exact:
            exact = self.exact
            for j, i in enumerate(indices.tolist()):
                if i in exact:
                    for stat in stats:
                        out[stat][j] = exact[i].get(stat)
        return out

    def integers(self, events: int, stat: str) -> tuple[np.ndarray, np.ndarray]:
        """The value of the own stat ``stat`` of each of the line's ``events`` where it is a
        whole number (int64; an event's last of that name), and which events hold one: read
        from the columns as numbers, no value built (a TPU's ops line holds a device offset
        and duration on each of its events)."""
        values = np.zeros(events, dtype=np.int64)
        held = np.zeros(events, dtype=bool)
        ids = self._ids_named(stat)
        if ids:
            rows = np.flatnonzero((self.key == ids[0] if len(ids) == 1
                                   else np.isin(self.key, np.array(ids, dtype=np.int64)))
                                  & ((self.kind == UINT64) | (self.kind == INT64)))
            owner = np.searchsorted(self.bounds, rows, side="right") - 1
            values[owner] = self.bits[rows].view(np.int64)  # in wire order: the last stands
            held[owner] = True
        for i, st in self.exact.items():
            value = st.get(stat)
            held[i] = False
            if isinstance(value, int) and not isinstance(value, bool) \
                    and -2**63 <= value < 2**63:
                held[i] = True
                values[i] = value
        return values, held

    def having(self, meta: np.ndarray, stat: str) -> np.ndarray:
        """Per event: whether its stats hold ``stat``."""
        n = len(meta)
        mask = np.zeros(n, dtype=bool)
        ids = self._ids_named(stat)
        if ids:
            rows = np.flatnonzero(self.key == ids[0] if len(ids) == 1
                                  else np.isin(self.key, np.array(ids, dtype=np.int64)))
            mask[np.searchsorted(self.bounds, rows, side="right") - 1] = True
        metas = [m for m, st in self.inherited.items() if stat in st]
        if metas:
            mask |= np.isin(meta, np.array(metas, dtype=np.int64))
        for i, st in self.exact.items():
            mask[i] = stat in st
        return mask


def _place(out: np.ndarray, at: np.ndarray, values: list[Any]) -> None:
    """``out[at[k]] = values[k]`` for each k (``at`` without repeats; a stat's value is a
    number, a string or bytes, never a sequence numpy would spread)."""
    held = np.empty(len(values), dtype=object)
    held[:] = values
    out[at] = held


# Stat ids below this are named through a table (ids are small, numbered from 1 per plane).
_TABLE_IDS = 1 << 16
NO_STATS: dict[str, Any] = {}  # shared: the stats of events without any (read-only)
