"""Profiles captured anywhere, read: a ``jax.profiler`` trace in, the results document of one of
its programs out (no report written here: the entry points, :func:`roofline_report.profile`
and ``roofline-report profile``, are :mod:`roofline_report.profile_cli`'s).

The pieces: :mod:`.discover` (which files), :mod:`.timeline` (which events), :mod:`.pipeline`
(reading), :mod:`.records` (the results document).

Reading a trace needs jaxlib installed (to print the HLO proto the trace holds as text) but not
the trace's backend: a GPU or TPU trace reads on a CPU-only machine.
"""
