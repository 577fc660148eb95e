"""Profiler traces (no jax): the events of a trace, captured here or on any machine, as
per-kernel observations."""
