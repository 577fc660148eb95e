"""Default tolerances of the NumPy check, per result dtype (no jax).

The check compares a workload's result with a NumPy reference computed in float64 on the same
(rounded) inputs, element by element: ``|result - reference| <= atol + rtol * |reference|``. How
close a correct result gets depends on its dtype: a float32 result carries about 7 significant
digits, a bfloat16 one fewer than 3. One tolerance for every dtype either lets float32 errors
through or fails correct bfloat16 results, so the default comes from the dtype of the result.

Where the values come from: jax's own test suite compares with per-dtype tolerances, in
``jax._src.public_test_util.default_tolerance``: float16 1e-3, bfloat16 1e-2, float32 1e-6,
float64 1e-15 (complex64 and complex128 as float32 and float64; integers and bool exactly). Those
suit single operations. The workloads checked here are reduction-heavy (matmuls, sums over
thousands of terms, loops of them), whose rounding error grows with the length of the reduction,
so the defaults below are looser by a margin of a few units in the last place at that length:

========== ======= ======= ==========================================================
dtype      rtol    atol    why
========== ======= ======= ==========================================================
float64    1e-12   1e-12   about 4500 ulps (eps 2.2e-16): long float64 reductions
float32    2e-5    2e-5    the seed's tolerance; about 170 ulps (eps 1.2e-7)
float16    1e-2    1e-2    about 10 ulps (eps 9.8e-4): rounding of the result and sums
bfloat16   3e-2    3e-2    about 4 ulps (eps 7.8e-3): 8 significant bits
complex64  2e-5    2e-5    as float32
complex128 1e-12   1e-12   as float64
========== ======= ======= ==========================================================

Integer and bool results are compared exactly (0, 0). Other floating dtypes (8-bit floats)
get :data:`LOOSE`, 1e-1, the value jax's tests use for them. A workload that sets its own
``rtol``/``atol`` (the catalog's, a config's ``rtol =``, ``analyze(..., rtol=)``) keeps it.
"""

from __future__ import annotations

import math
import numbers
import reprlib
from collections.abc import Iterable, Mapping
from typing import NamedTuple


class Tolerance(NamedTuple):
    """Relative and absolute tolerance of the check."""

    rtol: float
    atol: float


EXACT = Tolerance(0.0, 0.0)
#: Floating dtypes not listed in :data:`DEFAULTS` (8-bit and smaller floats).
LOOSE = Tolerance(1e-1, 1e-1)

#: Default tolerance by dtype name (as ``numpy.dtype(...).name`` spells it).
DEFAULTS: Mapping[str, Tolerance] = {
    "float64": Tolerance(1e-12, 1e-12),
    "float32": Tolerance(2e-5, 2e-5),
    "float16": Tolerance(1e-2, 1e-2),
    "bfloat16": Tolerance(3e-2, 3e-2),
    "complex128": Tolerance(1e-12, 1e-12),
    "complex64": Tolerance(2e-5, 2e-5),
}


def _is_exact(name: str) -> bool:
    return name == "bool" or name.startswith(("int", "uint"))


def for_dtype(name: str) -> Tolerance:
    """The default tolerance for a result of dtype ``name`` (such as "float32")."""
    if name in DEFAULTS:
        return DEFAULTS[name]
    if _is_exact(name):
        return EXACT
    return LOOSE


def for_dtypes(names: Iterable[str]) -> Tolerance:
    """The default for several results (a tuple or pytree): the loosest of theirs; float32's
    when there is none."""
    found = [for_dtype(n) for n in names]
    if not found:
        return DEFAULTS["float32"]
    return Tolerance(max(t.rtol for t in found), max(t.atol for t in found))


def problem(value: object) -> str | None:
    """Why ``value`` is not a usable tolerance (a message fragment), or None if it is one: a
    tolerance is a real number (not a bool), finite and not negative."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return f"must be a number, got {type(value).__name__}"
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float
        number = math.inf
    if not math.isfinite(number) or number < 0:
        return f"must be a non-negative finite number, got {reprlib.repr(value)}"
    return None


__all__ = ["DEFAULTS", "EXACT", "LOOSE", "Tolerance", "for_dtype", "for_dtypes", "problem"]
