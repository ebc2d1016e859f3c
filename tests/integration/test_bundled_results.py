"""The bundled evaluation: installed into a database holding exactly the bundled runs, only."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import database, store
from core.workloads.unet3d import UNetConfig
from modeling.errors import ModelingError
from modeling.stored import bundle
from modeling.stored import tables as results
from profiling import exchange


def _reference_db(path: Path) -> Path:
    database.ensure_database(path)
    exchange.import_runs(path, database.BUNDLED_RUNS, database.BUNDLED_SAMPLES)
    return path


def test_the_bundled_models_install_once_and_predict(tmp_path: Path) -> None:
    db = _reference_db(tmp_path / "reference.duckdb")

    assert bundle.install_bundled_results(db)
    assert not bundle.install_bundled_results(db)  # already there: nothing copied twice

    names = [predictor.name for predictor in results.load_predictors(db)]
    assert {"paper", "refined", "symbolic", "xgboost", "mlp"} <= set(names)
    symbolic = results.load_predictor(db, "symbolic")
    small, large = symbolic.point_bytes([UNetConfig((64, 64, 64), 2), UNetConfig((128,) * 3, 2)])
    assert 1.2 * 2**30 < small < 1.9 * 2**30  # measured: 1.54 GiB
    assert large > small
    assert len(results.load_evaluations(db)) == 1


def test_a_database_with_other_runs_gets_no_bundled_models(tmp_path: Path, make_record) -> None:
    db = _reference_db(tmp_path / "more.duckdb")
    store.insert_run(db, make_record(depth=32, height=32, width=32, peak_hwm_bytes=2**30))

    assert not bundle.install_bundled_results(db)
    assert results.load_evaluations(db).empty


def test_an_export_reinstalls_as_the_same_evaluation(tmp_path: Path) -> None:
    db = _reference_db(tmp_path / "reference.duckdb")
    bundle.install_bundled_results(db)
    exported = bundle.export_results(db, tmp_path / "export")
    copy = _reference_db(tmp_path / "copy.duckdb")

    assert bundle.install_bundled_results(copy, exported)
    assert results.load_scores(copy).equals(results.load_scores(db))


def test_exporting_without_an_evaluation_says_how_to_make_one(tmp_path: Path) -> None:
    db = database.ensure_database(tmp_path / "empty.duckdb")

    with pytest.raises(ModelingError, match="python -m modeling evaluate"):
        bundle.export_results(db, tmp_path / "export")
