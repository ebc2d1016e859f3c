"""The measurement floor the Models page shows: how far repeats of one configuration
spread, and what the sampler can miss between two samples (`profiling.floor`)."""

from __future__ import annotations

from profiling.floor import (
    RepeatSpread,
    SamplingGap,
    largest_spread_pct,
    repeat_spreads,
    sampling_gap,
)

__all__ = ["RepeatSpread", "SamplingGap", "largest_spread_pct", "repeat_spreads", "sampling_gap"]
