"""Benchmarks: scripts that print figures and ratios (run as ``python -m benchmarks.NAME``)."""
