"""bfloat16 predicted from float32 runs on the bundled knob profile (issue 41, point 3).

Profile 259d139078 (AVX2 AMD EPYC, oneDNN off) measured mixed_bfloat16 at 32^3-64^3,
batch 1 and 2, beside float32. Least squares on the closed form's terms, fit on its
float32 runs only, predicts the bfloat16 ones from what the closed form says mixed
precision does to them (`core.kept_tensors`): float32 state and BatchNormalization,
bfloat16 activations elsewhere, and the cast copies the gradients read.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core import profiles
from core.database import DATA_DIR
from modeling.estimators.baselines import AnalyticalLeastSquares
from modeling.features import measured_frame

KNOB_PROFILE = "259d139078"
KNOB_EXPORTS = ("unet3d_knobs", "unet3d_knobs_onednn")


@pytest.fixture(scope="module")
def knob_runs() -> pd.DataFrame:
    """The feature frame of every ok run of the bundled knob profile, both precisions."""
    runs = pd.concat(
        [pd.read_parquet(DATA_DIR / f"{name}_runs.parquet") for name in KNOB_EXPORTS],
        ignore_index=True,
    )
    keyed = profiles.with_keys(runs)
    [key] = {key for key in keyed[profiles.KEY_COLUMN] if key.startswith(KNOB_PROFILE)}
    return measured_frame(profiles.runs_of(keyed, key))


def test_a_float32_fit_predicts_the_bundled_bfloat16_runs_within_10_percent(
    knob_runs: pd.DataFrame,
) -> None:
    float32 = knob_runs[knob_runs["precision"] == "float32"]
    bfloat16 = knob_runs[knob_runs["precision"] == "mixed_bfloat16"]
    model = AnalyticalLeastSquares(workspace=True).fit(float32, float32["peak_bytes"])

    errors = model.predict(bfloat16) / bfloat16["peak_bytes"].to_numpy() - 1

    assert len(bfloat16) == 10
    assert np.abs(errors).mean() < 0.10
    # Before the closed form knew the casts and BatchNormalization's float32 gradients
    # its worst run (64^3 batch 1) was 18.8% low; the profile's float32 runs of that
    # point spread 17% (data/REFERENCE.md), so no closer is asked of it.
    assert np.abs(errors).max() < 0.15
