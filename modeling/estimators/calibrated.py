"""A new machine's model from the nearest profile's: peak = offset + scale * prior(x).

What `memplan calibrate` fits (`modeling.calibration_choice`) and stores
(`modeling.stored.codec`, type ``calibrated``: the two numbers as JSON and the prior's
own stored archive beside them, decoded as data like any stored model).
"""

from __future__ import annotations

from typing import Any

import numpy as np


class CalibratedTransfer:
    """offset (bytes) + scale * the prior estimator's prediction (bytes) of the same rows."""

    def __init__(self, *, offset: float, scale: float, prior: Any) -> None:
        self.offset = offset
        self.scale = scale
        self.prior = prior

    def predict(self, X: Any) -> np.ndarray:
        return self.offset + self.scale * np.asarray(self.prior.predict(X), dtype=float)

    def to_state(self) -> dict[str, float]:
        return {"offset": float(self.offset), "scale": float(self.scale)}
