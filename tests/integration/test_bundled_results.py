"""The bundled evaluation: installed into a database holding exactly the bundled runs, only.

Its models are data, not pickles (`modeling.stored.codec`): they were converted
once by `scripts/convert_bundled_models.py` and predict exactly what the pickles did.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from core import database, profiles, store, workloads
from core.workloads.unet3d import UNetConfig
from modeling.errors import ModelingError
from modeling.evaluation.splits import knob_split_label
from modeling.features import measured_frame
from modeling.stored import bundle
from modeling.stored import tables as results
from profiling import exchange

# What the bundled models predicted (bytes) while they were still pickles, computed
# with the pickle loader just before `scripts/convert_bundled_models.py` converted
# them: the converted models must predict the same.
CHECKED_CONFIGS = {
    "alexnet": [((224, 224), 32), ((128, 128), 1), ((256, 256), 8), ((320, 320), 64)],
}
PICKLED_PREDICTIONS = {
    "alexnet": {
        "paper": [316389792.0, 116375872.0, 286925472.0, 844246432.0],
        "refined": [1486501344.0, 1001212040.0, 1475313184.0, 2687642336.0],
        "least_squares": [
            1819073236.1679096,
            1232304071.781686,
            1908133242.7715964,
            3155462498.647513,
        ],
        "symbolic": [1771424986.870924, 1234775167.782741, 1906639701.5562735, 3161404230.0612535],
        "hybrid_ratio": [
            1841081357.566353,
            1227488945.7988188,
            1908908420.083491,
            3341757614.4748306,
        ],
        "hybrid_terms": [
            1818113725.3802946,
            1231499943.7611508,
            1919319739.6095426,
            3132985348.119029,
        ],
        "xgboost": [1847249664.0, 1210190208.0, 1973571072.0, 2284488448.0],
        "random_forest": [
            1836723828.1607416,
            1217336789.8933678,
            1992694473.7065403,
            2240687047.619532,
        ],
        "extra_trees": [
            1887715327.9999561,
            1213587455.999852,
            1960316927.9997983,
            2630886558.558051,
        ],
        "mlp": [1910600354.6003122, 1261966961.2833984, 1967222557.9302158, 2675486955.1544704],
    },
}
BUNDLES = {"alexnet": database.DATA_DIR / "alexnet_results"}


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


def test_a_database_with_more_runs_of_that_machine_gets_no_bundled_models(
    tmp_path: Path, make_record
) -> None:
    db = _reference_db(tmp_path / "more.duckdb")
    reference = store.load_runs(db).to_dict("records")[0]
    machine = {name: reference[name] for name in profiles.PROFILE_COLUMNS}
    store.insert_run(
        db, make_record(depth=32, height=32, width=32, peak_hwm_bytes=2**30, **machine)
    )

    assert not bundle.install_bundled_results(db)  # fitted on other runs than these
    assert results.load_evaluations(db).empty


def test_runs_of_another_machine_do_not_stop_the_bundled_models(
    tmp_path: Path, make_record
) -> None:
    """Models are per machine profile: this machine's runs leave the reference's fit valid."""
    db = _reference_db(tmp_path / "more.duckdb")
    store.insert_run(db, make_record(depth=32, height=32, width=32, peak_hwm_bytes=2**30))

    assert bundle.install_bundled_results(db)
    machine = bundle.bundled_evaluation(bundle.BUNDLED_RESULTS_DIR).machine
    assert list(results.load_evaluations(db)["machine_profile"]) == [machine]


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


def test_the_bundled_results_hold_no_pickle() -> None:
    for directory in bundle.BUNDLED_RESULTS_DIRS:
        blobs = pq.read_table(directory / "models.parquet").column("estimator").to_pylist()
        assert len(blobs) == 10
        for blob in blobs:
            assert zipfile.is_zipfile(io.BytesIO(blob)) and not blob.startswith(b"\x80")


@pytest.mark.parametrize("workload", sorted(PICKLED_PREDICTIONS))
def test_the_converted_bundled_models_predict_what_the_pickles_did(workload: str) -> None:
    rows = bundle._read(BUNDLES[workload], "models").to_pylist()
    module = workloads.get(workload)
    configs = [module.Config(shape, batch) for shape, batch in CHECKED_CONFIGS[workload]]

    predictors = [results.predictor_from_row(row, "bundle", "refit") for row in rows]

    assert [p.name for p in predictors] == list(PICKLED_PREDICTIONS[workload])
    for predictor in predictors:
        np.testing.assert_allclose(
            predictor.point_bytes(configs),
            PICKLED_PREDICTIONS[workload][predictor.name],
            rtol=1e-9,
            err_msg=predictor.name,
        )


def test_the_bundled_knob_models_were_scored_leaving_each_knob_value_out(tmp_path: Path) -> None:
    """The knob design's evaluation ships too: its models see the network, not only the image."""
    db = database.ensure_database(tmp_path / "knobs.duckdb")
    runs_file, samples_file = database.BUNDLED_EXPORTS[3]
    exchange.import_runs(db, runs_file, samples_file)
    directory = database.DATA_DIR / "unet3d_knobs_results"
    knobs = bundle.bundled_evaluation(directory)

    assert directory in bundle.BUNDLED_RESULTS_DIRS
    assert bundle.install_bundled_results(db, directory)
    assert list(results.load_evaluations(db)["machine_profile"]) == [knobs.machine]
    scores = results.load_scores(db, machine=knobs.machine)
    assert set(scores["split"]) == {"random", "extrapolation", "knob"}
    frame = measured_frame(store.load_runs(db, status="ok"))
    knob_seeds = sorted(scores.loc[scores["split"] == "knob", "seed"].unique())
    assert [knob_split_label(frame, int(seed)) for seed in knob_seeds] == [
        "base_filters = 8",
        "base_filters = 32",
        "levels = 4",
        "precision = mixed_bfloat16",
        "upsampling = upsample",
    ]
    reference = UNetConfig((64, 64, 64), 2)
    wider = UNetConfig((64, 64, 64), 2, base_filters=32)
    for predictor in results.load_predictors(db, machine=knobs.machine):
        if predictor.name in {"random_forest", "extra_trees"}:
            continue  # trees split on the inputs they found useful; no promise to move
        narrow_bytes, wide_bytes = predictor.point_bytes([reference, wider])
        assert wide_bytes > narrow_bytes, predictor.name
        assert "distinct configurations" in predictor.bound.evidence, predictor.name
