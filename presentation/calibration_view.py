"""What a calibrated profile's model says of its calibration: each chosen point and why.

`memplan calibrate` keeps the points it chose, with their relative bound widths, in the
calibrated model's settings (`modeling.calibration_model`); the Models and Sizing pages
show them as a table under the machine selector (`dashboard.machine_panel.calibration`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandas as pd

from modeling.calibration_model import NAME
from modeling.stored.predictor import Predictor

COLUMNS = ("point", "image", "batch", "bound width (% of prediction)", "candidates", "why")


def calibrated_model(predictors: Sequence[Predictor]) -> Predictor | None:
    """The calibrated model among ``predictors``; None where the profile was not calibrated."""
    return next((p for p in predictors if p.name == NAME), None)


def chosen_points(predictor: Predictor) -> pd.DataFrame:
    """One row per point the calibration chose, in order (COLUMNS); empty when none is kept."""
    try:
        chosen = json.loads(predictor.params_json).get("chosen", [])
    except (ValueError, AttributeError):
        chosen = []
    rows = [
        {
            "point": int(step["points_before"]) + 1,
            "image": f"{step['side']}^3",
            "batch": int(step["batch"]),
            "bound width (% of prediction)": round(float(step["width"]) * 100, 1),
            "candidates": int(step["among"]),
            "why": str(step["why"]),
        }
        for step in chosen
    ]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def summary(predictor: Predictor) -> str:
    """In words: the line fitted, on how many points, and its prior."""
    params = json.loads(predictor.params_json)
    points = predictor.bound.n_calibration
    return (
        f"Calibrated from the nearest profile's {params.get('prior')} model on {points} "
        f"measured point(s): peak = {predictor.formula}. The table lists the points this "
        "calibration chose, each where the fit's upper bound was widest relative to its "
        "prediction; points measured before it count too."
    )
