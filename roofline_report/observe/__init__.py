"""Measuring: the only part of roofline-report that imports jax. It runs programs,
reads their compiled HLO and profiler traces, measures the machine's ceilings and writes the
observations that results.json holds."""
