"""Calibrating a machine: the grid it measures, the points a profile still lacks
(`profiling.calibration`), and the fit that follows (`fit_job`), for `memplan calibrate`
and the pages' "Launch" of a calibration, which import `application`, never `profiling`."""

from __future__ import annotations

from pathlib import Path

from application.refit import RefitJob
from core import frameworks
from profiling.calibration import (
    CALIBRATION_FILE,
    FIT_EXTRAPOLATION_SEEDS,
    FIT_SEEDS,
    Calibration,
    calibration_for,
    missing_points,
)

__all__ = ["CALIBRATION_FILE", "Calibration", "calibration_for", "fit_job", "missing_points"]


def fit_job(
    workload: str, machine: str, db_path: Path, framework: str = frameworks.DEFAULT_FRAMEWORK
) -> RefitJob:
    """The fit of profile ``machine`` (of ``framework``) after calibrating it: the
    calibration's few seeds (`profiling.calibration.FIT_SEEDS`), every model stored."""
    return RefitJob(
        db_path,
        workload,
        machine,
        framework,
        seeds=FIT_SEEDS,
        extrapolation_seeds=FIT_EXTRAPOLATION_SEEDS,
    )
