"""Where jax's CPU client runs a call: on a worker thread (jax's default) or on the thread
that makes it, as the user asks for a measured build, and which way a run's calls ran.

By default jax's CPU client runs each call of a compiled program on a worker thread
(asynchronous dispatch, the flag ``jax_cpu_enable_async_dispatch``): the calling thread hands
the call over and, when it blocks, waits for the worker to hand it back. Where the two threads
hold a core each, both spin and the handover is cheap; where the scheduler puts them on one
core, each handover waits for a context switch, and it keeps them there for a while. On the
2-core machine this was built on a 4 kB elementwise program's call read 5.0 to 5.5 µs back to
back with the threads on two cores and 8.4 µs with both on one (``taskset -c 0``), 16 µs when
blocking after each call, with one or two context switches a call; within one build, which of
the two a sweep point got changed from point to point (one build in five or six read a
sweep's smallest point at 11.7 µs against 5.4 in the others). With the call run on the calling
thread it read 4.7 µs on one core or two, with no context switch.

A build keeps jax's default, the way your own programs run. In four pairs of builds
(``benchmarks/prediction.py --suite both``, each way in turn), the held-out programs
(milliseconds a call) run on the calling thread read up to 1.7× slower than on the worker
thread in one pair, and their median error ranged from 10 to 27 % against 12 to 14 %; the
catalog, whose smallest programs read steadier that way, 9.6 to 15.6 % against 11.4 to 14.9 %.
The steadier smallest calls did not make up for the less steady large ones.

``JAX_CPU_ENABLE_ASYNC_DISPATCH=false`` in the environment runs a build's calls
on the calling thread (``true`` keeps the worker; jax's flag of that name reads no variable of
its own): :func:`from_environment` sets the flag before jax makes its CPU client (it is read
then, and changing it afterwards changes nothing), and :func:`async_dispatch` says which way the
client runs, for results.json's environment. A process that made the client already (a test's,
or ``analyze()`` in a user's program) keeps what it was made with, and the record says so.
Accelerators dispatch asynchronously whatever the flag, which applies to the CPU client alone.
"""

from __future__ import annotations

import os

import jax
from jax._src import xla_bridge

from roofline_report.errors import InputError

FLAG = "jax_cpu_enable_async_dispatch"
VARIABLE = FLAG.upper()  # the user's own choice, where set


def from_environment() -> bool:
    """Set jax's flag as ``JAX_CPU_ENABLE_ASYNC_DISPATCH`` asks, if it is set and jax's CPU
    client is not made yet; return whether the client runs calls on a worker thread. Raises
    InputError for a value of the variable that is not true or false."""
    asked = os.environ.get(VARIABLE)
    if asked is not None:
        words = {"true": True, "1": True, "false": False, "0": False}
        wanted = words.get(asked.strip().lower())
        if wanted is None:
            raise InputError(f"{VARIABLE}={asked!r}: expected true or false")
        if not xla_bridge.backends_are_initialized():
            jax.config.update(FLAG, wanted)  # type: ignore[no-untyped-call]
    return async_dispatch()


def async_dispatch() -> bool:
    """Whether jax's CPU client runs calls on a worker thread: the flag as it stands, which is
    what the client was made with (this module changes it only before the client exists)."""
    return bool(jax.config.read(FLAG))  # type: ignore[no-untyped-call]
