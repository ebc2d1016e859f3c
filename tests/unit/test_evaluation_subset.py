"""``memplan evaluate --models`` adds to the latest evaluation, never replaces it (issue 38).

Answers and pages read a workload and profile's latest evaluation. An evaluation
of one model used to become it with only that model: ``size`` and the pages lost
every other model of the catalogue until the next full evaluation.
"""

import shutil
from pathlib import Path

import pytest

from application.stored import read
from memplan.cli import main
from modeling.stored import tables as results
from tests.conftest import synthetic_database

CHEAP = ["--seeds", "2", "--extrapolation-seeds", "1"]


def _evaluate(db: Path, *models: str) -> None:
    assert main(["evaluate", "--db", str(db), "--models", *models, *CHEAP]) == 0


@pytest.fixture
def db(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Synthetic runs and their evaluation of refined and least_squares, as `_evaluate` makes
    it: built once for the session (`synthetic_database`), copied for each test."""
    template = synthetic_database(tmp_path_factory, "--models", "refined", "least_squares", *CHEAP)
    return Path(shutil.copy(template, tmp_path / "runs.duckdb"))


def test_an_evaluation_of_some_models_keeps_the_latest_evaluations_others(db: Path, capsys):
    first = results.load_predictors(read(db))

    _evaluate(db, "refined")

    assert "(and kept the latest evaluation's other models)" in capsys.readouterr().out
    latest = results.load_predictors(read(db))
    assert [p.name for p in latest] == ["refined", "least_squares"]
    # The kept model is the one fitted before, its scores and held-out predictions with it.
    assert latest[1].formula == first[1].formula
    assert set(results.load_scores(read(db))["model"]) == {"refined", "least_squares"}
    assert set(results.load_predictions(read(db))["model"]) == {"refined", "least_squares"}
    assert len(results.load_evaluations(read(db))) == 2


def test_a_model_evaluated_again_replaces_its_older_fit_only(db: Path):
    _evaluate(db, "least_squares")
    _evaluate(db, "least_squares")

    names = [p.name for p in results.load_predictors(read(db))]
    assert sorted(names) == ["least_squares", "refined"]
    scores = results.load_scores(read(db))
    assert scores.groupby("model")["seed"].count().to_dict() == {
        name: len(scores) // 2 for name in names
    }
