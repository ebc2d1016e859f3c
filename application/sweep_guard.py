"""A sweep's pre-check bounds from this machine's fitted models (`modeling.guard`).

profiling and modeling never import each other, so the sweep (`profiling.sweep_job`)
takes its pre-check as a function, and `application.sweep_job` gets that function here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path

from application.stored import stored_bounds
from core.frameworks import DEFAULT_FRAMEWORK
from core.machine import this_profile
from core.records import PeakBound
from core.workloads.base import WorkloadConfig


def fitted_precheck(
    db_path: Path, profile_key: str | None = None, framework: str = DEFAULT_FRAMEWORK
) -> Callable[[Sequence[WorkloadConfig]], dict[WorkloadConfig, PeakBound]]:
    """The bounds the fitted models of ``profile_key`` (default: this machine's, training
    with ``framework``) give the points they cover (a `profiling.lifecycle.Precheck`)."""
    if profile_key:
        return functools.partial(stored_bounds, db_path, profile_key=profile_key)
    return functools.partial(_bounds_here, db_path, framework)


def _bounds_here(
    db_path: Path, framework: str, configs: Sequence[WorkloadConfig]
) -> dict[WorkloadConfig, PeakBound]:
    """Each point's bound from this machine's profile for its precision and ``framework``
    (`this_profile`)."""
    bounds: dict[WorkloadConfig, PeakBound] = {}
    for precision in sorted({config.precision for config in configs}):
        group = [config for config in configs if config.precision == precision]
        key = this_profile(precision, framework).key
        bounds |= stored_bounds(db_path, group, profile_key=key)
    return bounds
