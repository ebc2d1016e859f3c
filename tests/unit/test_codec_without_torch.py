"""Reading or writing a stored scikit-learn model never imports torch.

skops, which stores the scikit-learn models, lists scikit-learn's estimators when it is
imported, and that walk imports torch wherever torch is installed (the test set-up
installs it: requirements-torch.txt). `modeling.stored.codec` keeps it out, so `memplan
size` and the dashboard's answers do not pay for torch.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]

# Runs in a fresh interpreter, so nothing another test imported counts.
PROBE = """
import sys
import numpy as np
from sklearn.compose import TransformedTargetRegressor
from sklearn.linear_model import LinearRegression
from modeling.stored import codec
x = np.arange(8.0).reshape(4, 2)
model = TransformedTargetRegressor(LinearRegression()).fit(x, x.sum(axis=1))
again = codec.decode(codec.encode(model))
assert np.allclose(again.predict(x), model.predict(x))
print(sorted(m for m in ("torch", "skops.io") if m in sys.modules))
"""


@pytest.mark.skipif(
    importlib.util.find_spec("torch") is None,
    reason="torch is not installed (requirements-torch.txt): skops cannot load it",
)
def test_a_model_round_trip_through_skops_loads_no_torch() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=REPOSITORY_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout == "['skops.io']\n"
