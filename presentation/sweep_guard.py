"""The sweep CLI's pre-check bounds from this machine's fitted models (`modeling.guard`).

profiling and modeling never import each other, so the sweep (`profiling.sweep`)
takes its pre-check as a function, and the CLI gets that function here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path

from core.machine import this_profile
from core.records import PeakBound
from core.workloads.base import WorkloadConfig
from modeling.guard import fitted_bounds


def fitted_precheck(
    db_path: Path, profile_key: str | None = None
) -> Callable[[Sequence[WorkloadConfig]], dict[WorkloadConfig, PeakBound]]:
    """The bounds the fitted models of ``profile_key`` (default: this machine's) give the
    points they cover (a `profiling.sweep.Precheck`)."""
    key = profile_key or this_profile().key
    return functools.partial(fitted_bounds, db_path, profile_key=key)
