"""The bundled evaluations: installed into a database holding exactly the bundled runs, only.

Their models are data, not pickles (`modeling.stored.codec`), and their bounds are
counted by configuration.
"""

from __future__ import annotations

import dataclasses
import io
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from application import bundles, stored
from application.stored import read as read_db
from core import database, profiles, store
from core.analytical import refined_breakdown
from core.workloads.unet3d import UNetConfig
from modeling.errors import ModelingError
from modeling.estimators.catalogue import catalogue, spec_names
from modeling.evaluation.splits import knob_split_label
from modeling.features import config_of, measured_frame
from modeling.stored import bundle
from modeling.stored import tables as results
from profiling import exchange
from tests.conftest import built_once, every_bundle_database


def _reference_runs(path: Path) -> None:
    database.ensure_database(path)
    exchange.import_runs(path, database.BUNDLED_RUNS, database.BUNDLED_SAMPLES)


@pytest.fixture(scope="module")
def reference_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled reference runs, no evaluation: imported once for the session
    (`built_once`); each test copies it."""
    return built_once(tmp_path_factory, "reference_runs.duckdb", _reference_runs)


@pytest.fixture
def reference_db(reference_runs: Path, tmp_path: Path) -> Path:
    """A private copy of the bundled reference runs, no evaluation."""
    return Path(shutil.copy(reference_runs, tmp_path / "reference.duckdb"))


def test_the_bundled_models_install_once_and_predict(reference_db: Path) -> None:
    db = reference_db

    assert bundles.install_bundled_results(db)
    assert not bundles.install_bundled_results(db)  # already there: nothing copied twice

    names = [predictor.name for predictor in results.load_predictors(read_db(db))]
    assert {"paper", "refined", "symbolic", "xgboost", "mlp"} <= set(names)
    symbolic = results.load_predictor(read_db(db), "symbolic")
    small, large = symbolic.point_bytes([UNetConfig((64, 64, 64), 2), UNetConfig((128,) * 3, 2)])
    assert 1.2 * 2**30 < small < 1.9 * 2**30  # measured: 1.54 GiB
    assert large > small
    assert len(stored.load_evaluations(db)) == 1


def test_models_stored_before_the_closed_form_excess_was_kept_get_it_from_the_runs(
    reference_db: Path,
) -> None:
    """The bundled reference models predate it: loading them reads it from their runs."""
    db = reference_db
    assert bundles.install_bundled_results(db)
    as_stored = results.load_predictor(read_db(db), "least_squares")
    assert as_stored.training_range.closed_form_excess is None

    loaded = stored.load_predictor(db, "least_squares")

    frame = measured_frame(store.load_runs(db, store.RunFilter(status="ok")))
    framework = int(loaded.training_range.framework_bytes)
    estimates = [
        refined_breakdown(config_of(row), framework).total_bytes for _, row in frame.iterrows()
    ]
    excess = max(frame["peak_bytes"] / estimates)
    assert loaded.training_range.closed_form_excess == pytest.approx(excess)
    assert loaded.training_range.excess_runs == len(frame)
    # Every reference run peaked above the closed form (by 6-29%, `modeling.sizing`).
    assert 1.0 < excess < 1.35


def test_a_database_with_more_runs_of_that_machine_gets_no_bundled_models(
    reference_db: Path, make_record
) -> None:
    db = reference_db
    reference = store.load_runs(db).to_dict("records")[0]
    machine = {name: reference[name] for name in profiles.PROFILE_COLUMNS}
    # At the step count the bundled runs trained for: a run the bundled fit would have used.
    steps = reference["steps"]
    store.insert_run(
        db,
        make_record(depth=32, height=32, width=32, peak_hwm_bytes=2**30, steps=steps, **machine),
    )

    assert not bundles.install_bundled_results(db)  # fitted on other runs than these
    assert stored.load_evaluations(db).empty


def test_runs_of_another_machine_do_not_stop_the_bundled_models(
    reference_db: Path, make_record
) -> None:
    """Models are per machine profile: this machine's runs leave the reference's fit valid."""
    db = reference_db
    store.insert_run(db, make_record(depth=32, height=32, width=32, peak_hwm_bytes=2**30))

    assert bundles.install_bundled_results(db)
    machine = bundle.bundled_evaluation(bundle.BUNDLED_RESULTS_DIR).machine
    assert list(stored.load_evaluations(db)["machine_profile"]) == [machine]


def test_an_export_reinstalls_as_the_same_evaluation(
    reference_runs: Path, reference_db: Path, tmp_path: Path
) -> None:
    db = reference_db
    bundles.install_bundled_results(db)
    exported = bundles.export_results(db, tmp_path / "export")
    copy = Path(shutil.copy(reference_runs, tmp_path / "copy.duckdb"))

    assert bundles.install_bundled_results(copy, exported)
    assert results.load_scores(read_db(copy)).equals(results.load_scores(read_db(db)))


def test_exporting_without_an_evaluation_says_how_to_make_one(tmp_path: Path) -> None:
    db = database.ensure_database(tmp_path / "empty.duckdb")

    with pytest.raises(ModelingError, match="memplan evaluate"):
        bundles.export_results(db, tmp_path / "export")


def test_a_bundle_is_read_once_until_its_file_changes(tmp_path: Path, monkeypatch) -> None:
    folder = Path(shutil.copytree(bundle.BUNDLED_RESULTS_DIR, tmp_path / "bundle"))
    reads = []
    real = bundle.read_export
    monkeypatch.setattr(bundle, "read_export", lambda *args: reads.append(args) or real(*args))

    first = [bundle.bundled_evaluation(folder) for _ in range(3)]
    rows = pq.read_table(folder / "evaluations.parquet")
    changed = rows.set_column(
        rows.schema.get_field_index("data_fingerprint"),
        "data_fingerprint",
        [["another"] * rows.num_rows],
    )
    pq.write_table(changed, folder / "evaluations.parquet")  # a new file state: read again
    second = bundle.bundled_evaluation(folder)

    assert len(reads) == 2
    assert first == [first[0]] * 3 and first[0].fingerprint != "another"
    assert second == dataclasses.replace(first[0], fingerprint="another")
    (folder / "evaluations.parquet").unlink()
    assert bundle.bundled_evaluation(folder) is None


def test_the_bundled_results_hold_no_pickle() -> None:
    for directory in bundle.BUNDLED_RESULTS_DIRS:
        models = pq.read_table(directory / "models.parquet")
        blobs = models.column("estimator").to_pylist()
        # Every model of the catalogue the evaluation ran (the workspace term came later).
        assert set(models.column("name").to_pylist()) <= set(spec_names(catalogue()))
        assert len(blobs) >= 10
        for blob in blobs:
            assert zipfile.is_zipfile(io.BytesIO(blob)) and not blob.startswith(b"\x80")


@pytest.fixture(scope="module")
def every_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What a fresh checkout's default database holds: every bundled run and evaluation.

    Built once for the session (`built_once`, the app tests' template too); the tests of
    this module read their own copy."""
    template = built_once(tmp_path_factory, "every_bundle.duckdb", every_bundle_database)
    return Path(shutil.copy(template, tmp_path_factory.mktemp("bundles") / "memplan.duckdb"))


@pytest.mark.parametrize("directory", bundle.BUNDLED_RESULTS_DIRS, ids=lambda path: path.name)
def test_each_bundled_default_model_answers_its_own_runs_as_its_scores_say(
    every_bundle: Path, directory: Path
) -> None:
    """Fit on every run, the default model is on average no further off on them than on held-out
    runs (not its worst single error: fit on every run, it may trade one run for the rest)."""
    fitted_on = bundle.bundled_evaluation(directory)
    scores = results.load_scores(
        read_db(every_bundle, fitted_on.workload), machine=fitted_on.machine
    )
    default = results.load_predictor(
        read_db(every_bundle, fitted_on.workload), results.BEST, machine=fitted_on.machine
    )
    runs = store.load_runs(
        every_bundle,
        store.RunFilter(status="ok", workload=fitted_on.workload, machine=fitted_on.machine),
    )
    frame = measured_frame(runs)
    configs = [config_of(row) for _, row in frame.iterrows()]

    errors = np.abs(default.point_bytes(configs) / frame["peak_bytes"].to_numpy() - 1)

    assert default.name == results.best_model_name(scores)
    held_out = scores[scores["model"] == default.name]
    assert 100 * errors.mean() <= held_out["mape_pct"].max()
    # Bounds counted by configuration, stated with their evidence.
    assert "distinct configurations" in default.bound.evidence
    assert not default.bound.legacy


# The knob design's two sets are in BUNDLED_EXPORTS[3:5]; their runs form two profiles,
# oneDNN off (the first set and the second set's mixed precisions) and on (the second set's
# float32), each with its evaluation and the knob values it left out in turn.
KNOB_EXPORTS = slice(3, 5)
ARCHITECTURE_SPLITS = ["base_filters = 8", "base_filters = 32", "levels = 4"]
KNOB_PROFILES = {
    "onednn_off": (
        "unet3d_knobs_results",
        [*ARCHITECTURE_SPLITS, "precision = mixed_bfloat16", "upsampling = upsample"],
    ),
    "onednn_on": ("unet3d_knobs_onednn_results", [*ARCHITECTURE_SPLITS, "upsampling = upsample"]),
}


def _knob_runs(path: Path) -> None:
    database.ensure_database(path)
    for runs_file, samples_file in database.BUNDLED_EXPORTS[KNOB_EXPORTS]:
        exchange.import_runs(path, runs_file, samples_file)


@pytest.fixture(scope="module")
def knob_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both knob designs' runs, no evaluation: imported once for the session (`built_once`)."""
    return built_once(tmp_path_factory, "knob_runs.duckdb", _knob_runs)


@pytest.mark.parametrize(("results_name", "splits"), KNOB_PROFILES.values(), ids=KNOB_PROFILES)
def test_the_bundled_knob_models_were_scored_leaving_each_knob_value_out(
    knob_runs: Path, tmp_path: Path, results_name: str, splits: list[str]
) -> None:
    """The knob design's evaluations ship too: their models see the network, not only the image."""
    db = Path(shutil.copy(knob_runs, tmp_path / "knobs.duckdb"))
    directory = database.DATA_DIR / results_name
    knobs = bundle.bundled_evaluation(directory)

    assert directory in bundle.BUNDLED_RESULTS_DIRS
    assert bundles.install_bundled_results(db, directory)
    assert list(stored.load_evaluations(db)["machine_profile"]) == [knobs.machine]
    scores = results.load_scores(read_db(db), machine=knobs.machine)
    assert set(scores["split"]) == {"random", "extrapolation", "knob"}
    frame = measured_frame(store.load_runs(db, store.RunFilter(status="ok", machine=knobs.machine)))
    knob_seeds = sorted(scores.loc[scores["split"] == "knob", "seed"].unique())
    assert [knob_split_label(frame, int(seed)) for seed in knob_seeds] == splits
    reference = UNetConfig((64, 64, 64), 2)
    wider = UNetConfig((64, 64, 64), 2, base_filters=32)
    for predictor in results.load_predictors(read_db(db), machine=knobs.machine):
        if predictor.name in {"random_forest", "extra_trees"}:
            continue  # trees split on the inputs they found useful; no promise to move
        narrow_bytes, wide_bytes = predictor.point_bytes([reference, wider])
        assert wide_bytes > narrow_bytes, predictor.name
        assert "distinct configurations" in predictor.bound.evidence, predictor.name


def test_a_bundled_model_without_a_formula_reads_back_without_one(reference_db: Path) -> None:
    # Read from the bundle's Parquet (no evaluation in the database), a model with no
    # formula came back as NaN, which the Models page took for a formula to show.
    db = reference_db

    predictors = stored.load_predictors(db)

    formulas = {predictor.name: predictor.formula for predictor in predictors}
    assert formulas["xgboost"] is None
    assert isinstance(formulas["symbolic"], str) and formulas["symbolic"]
    assert all(formula is None or isinstance(formula, str) for formula in formulas.values())
