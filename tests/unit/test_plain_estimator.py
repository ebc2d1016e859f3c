"""memplan's own regressors keep scikit-learn's protocol without importing scikit-learn, and a
stored model reads back importing only what it needs (cold starts, issue 26)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.compose import TransformedTargetRegressor
from sklearn.ensemble import RandomForestRegressor
from sklearn.exceptions import NotFittedError

from modeling.estimators.analytical import PaperModel
from modeling.estimators.baselines import AnalyticalLeastSquares
from modeling.estimators.hybrid import HybridSymbolicRegression
from modeling.estimators.symbolic import SymbolicRegression
from modeling.stored import codec

REPO = Path(__file__).resolve().parents[2]


def _terms(rows: int = 6) -> tuple[pd.DataFrame, np.ndarray]:
    batch = np.arange(1, rows + 1, dtype=float)
    frame = pd.DataFrame(
        {
            "activation_bytes": batch * 2e9,
            "backward_bytes": batch * 1e9,
            "input_bytes": batch * 1e6,
            "weight_bytes": np.full(rows, 2e7),
            "gradient_bytes": np.full(rows, 2e7),
            "optimizer_bytes": np.full(rows, 4e7),
        }
    )
    return frame, 1e9 + 3.001e9 * batch * 1.1


def test_clone_get_params_and_set_params_follow_scikit_learn() -> None:
    model = HybridSymbolicRegression(mode="terms", generations=3)

    copied = clone(model)

    assert copied is not model and copied.get_params() == model.get_params()
    assert copied.set_params(generations=5).generations == 5
    assert repr(model) == "HybridSymbolicRegression(generations=3, mode='terms')"
    with pytest.raises(ValueError, match="Invalid parameter 'depth'"):
        model.set_params(depth=2)


def test_an_unfitted_model_raises_not_fitted_and_a_fitted_one_scores_r2() -> None:
    X, y = _terms()

    with pytest.raises(NotFittedError, match="AnalyticalLeastSquares instance is not fitted"):
        AnalyticalLeastSquares().predict(X)
    assert PaperModel().get_params() == {}
    assert AnalyticalLeastSquares().fit(X, y).score(X, y) == pytest.approx(1.0)


def _decoded_in_a_fresh_process(tmp_path: Path, estimator: object, modules: list[str]) -> list[str]:
    """Decode ``estimator``'s stored form in a new Python; its first prediction and which
    of ``modules`` got loaded."""
    X, _ = _terms()
    (tmp_path / "model.bin").write_bytes(codec.encode(estimator))
    X.to_csv(tmp_path / "X.csv", index=False)
    probe = (
        "import sys; import pandas as pd; from modeling.stored import codec; "
        f"model = codec.decode(open({str(tmp_path / 'model.bin')!r}, 'rb').read()); "
        f"print(round(float(model.predict(pd.read_csv({str(tmp_path / 'X.csv')!r}))[0]))); "
        f"print(sorted(m for m in {modules!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    return done.stdout.splitlines()


def test_a_stored_least_squares_model_reads_back_without_scikit_learn(tmp_path: Path) -> None:
    # `memplan size` reads one such model; importing scikit-learn cost ~1.6 s of its cold start.
    X, y = _terms()

    said = _decoded_in_a_fresh_process(
        tmp_path, AnalyticalLeastSquares().fit(X, y), ["scipy", "sklearn"]
    )

    assert said == [str(round(float(y[0]))), "[]"]


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs PyTorch installed")
def test_a_stored_forest_reads_back_without_importing_pytorch(tmp_path: Path) -> None:
    # skops' import walks every scikit-learn package, one of which imports PyTorch (~2 s).
    X, y = _terms()
    forest = TransformedTargetRegressor(
        regressor=RandomForestRegressor(n_estimators=3, random_state=0)
    ).fit(X, y)

    said = _decoded_in_a_fresh_process(tmp_path, forest, ["skops", "torch"])

    assert said == [str(round(float(forest.predict(X)[0]))), "['skops']"]


def test_a_stored_formula_model_predicts_without_gplearns_fitness_sympy_or_scipy(
    tmp_path: Path,
) -> None:
    # It predicts from its tokens alone; gplearn's fitness (SciPy's statistics) and SymPy
    # cost ~2.3 s CPU of `memplan size` for a profile whose default is a symbolic or
    # hybrid model (the hybrids read back through the same module).
    X, y = _terms()
    fitted = SymbolicRegression(population_size=50, generations=2).fit(X, y)

    said = _decoded_in_a_fresh_process(
        tmp_path, fitted, ["gplearn.fitness", "gplearn.genetic", "scipy", "sklearn", "sympy"]
    )

    assert said == [str(round(float(fitted.predict(X)[0]))), "[]"]
