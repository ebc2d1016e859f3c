"""`memplan` through `main(argv)`: evaluate, store, then answer sizing questions."""

import shutil
from pathlib import Path

import pytest

from application import stored
from core import database, profiles, store
from memplan.cli import main
from modeling.stored import tables as results
from tests.conftest import build_record, build_runs, built_once, synthetic_database

# Cheap models only: the full catalogue's symbolic regression takes minutes.
CHEAP = ["--models", "refined", "least_squares", "--seeds", "2"]


@pytest.fixture(scope="module")
def runs_template(tmp_path_factory) -> Path:
    """A database of synthetic runs, built once for the session (a DuckDB connection per
    insert is slow)."""
    return synthetic_database(tmp_path_factory)


@pytest.fixture(scope="module")
def evaluated_template(tmp_path_factory) -> Path:
    """Synthetic runs with a stored evaluation of the cheap models, built once for the session."""
    return synthetic_database(tmp_path_factory, *CHEAP)


@pytest.fixture
def db(tmp_path: Path, runs_template: Path) -> Path:
    return Path(shutil.copy(runs_template, tmp_path / "runs.duckdb"))


@pytest.fixture
def evaluated(tmp_path: Path, evaluated_template: Path, capsys) -> Path:
    capsys.readouterr()
    return Path(shutil.copy(evaluated_template, tmp_path / "runs.duckdb"))


def test_evaluate_prints_the_table_and_stores_the_models(db: Path, capsys) -> None:
    code = main(["evaluate", "--db", str(db), *CHEAP])

    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("unet3d on Intel Test, AVX-512, 8 cores, TensorFlow 2.16 (profile ")
    assert "): 24 ok run(s), 24 configuration(s) at 3 steps from " in out.splitlines()[0]
    assert "| model | random MAPE % | random MAPE sd |" in out
    assert "| refined analytical (closed form) |" in out
    assert "| least squares on analytical terms |" in out
    assert [p.name for p in results.load_predictors(stored.read(db))] == [
        "refined",
        "least_squares",
    ]


def test_evaluate_can_store_into_another_database(db: Path, tmp_path: Path, capsys) -> None:
    other = tmp_path / "results.duckdb"

    assert main(["evaluate", "--db", str(db), *CHEAP, "--store-db", str(other)]) == 0

    assert len(results.load_predictors(stored.read(other))) == 2
    assert stored.load_evaluations(db).empty


def test_no_store_leaves_the_database_without_results(db: Path, capsys) -> None:
    assert main(["evaluate", "--db", str(db), *CHEAP, "--no-store"]) == 0

    assert stored.load_evaluations(db).empty


def test_size_image_answers_with_the_next_size_up(evaluated: Path, capsys) -> None:
    code = main(
        [
            "size",
            "image",
            "--db",
            str(evaluated),
            "--budget",
            "6GiB",
            "--headroom",
            "0",
            "--batch-size",
            "2",
            "--model",
            "least_squares",
        ]
    )

    machine, *lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert machine.startswith(
        "Machine: for Intel Test, AVX-512, 8 cores, TensorFlow 2.16 (profile "
    )
    assert machine.endswith("; the latest evaluation)")
    assert lines[0].startswith("largest image: 128^3 at batch 2 within 6.00 GiB (needs up to ")
    assert lines[1].startswith("next size up, 144^3, would need up to ")
    assert lines[2].startswith("model: least_squares; bound: 90% conformal upper bound (x")
    # 24 configurations, 6 sizes: forward folds test the 3 largest, 12 configurations.
    assert (
        "forward-chaining by image size, 3 folds, 12 distinct configurations; thin evidence: "
        "the bound is the worst of only 12 configurations)"
    ) in lines[2]
    assert lines[3].startswith("WARNING: This answer extrapolates")
    # This machine has no runs in the test database: the answer says so, and what to run.
    assert lines[-1].startswith("note: This machine (")
    assert lines[-1].endswith(
        "`memplan calibrate --workload unet3d` measures them and fits its models."
    )


def test_size_batch_inside_the_measured_range_says_so(evaluated: Path, capsys) -> None:
    # Asked for by name, the runs' profile answers for itself: its runs are its measured
    # range. (This machine's default, without models, would be another machine's answer.)
    key = profiles.profiles_in(store.load_runs(evaluated)).popitem()[0]
    code = main(
        [
            "size",
            "batch",
            "--machine",
            key,
            "--db",
            str(evaluated),
            "--image-size",
            "64",
            "--budget",
            "2.5GiB",
            "--headroom",
            "0",
            "--model",
            "least_squares",
        ]
    )

    machine, *lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert machine.startswith("Machine: for Intel Test")
    assert lines[0].startswith("largest batch: 5 for 64x64x64 within 2.50 GiB")
    assert "inside the measured range" in lines


def test_size_buy_rounds_up_to_a_purchasable_size(evaluated: Path, capsys) -> None:
    code = main(
        [
            "size",
            "buy",
            "--db",
            str(evaluated),
            "--image-size",
            "240x240x144",
            "--batch-size",
            "16",
            "--headroom",
            "25",
        ]
    )

    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[1].startswith("buy ")
    assert " GB (binary GB = GiB) for 240x240x144 at batch 16" in out
    assert "with 25% headroom" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["size", "image", "--budget", "8GiB", "--batch-size", "1", "--model", "nope"],
            "error: no stored model 'nope' in {db}; known: best, refined, least_squares\n",
        ),
        (
            ["size", "buy", "--image-size", "200", "--batch-size", "1"],
            "error: image side 200 cannot be trained by a 5-level U-Net: each side must be a "
            "multiple of 16 (2^(levels-1)), otherwise pooling floors it and the skip "
            "connections no longer line up. Nearest valid sizes: 192 or 208\n",
        ),
        (
            ["size", "buy", "--image-size", "64", "--batch-size", "1", "--headroom", "-1"],
            "error: headroom must be between 0 and 1000% (20 = 20%), got -1\n",
        ),
        (
            ["evaluate", "--models", "svm"],
            "error: unknown model(s) svm; known: paper, refined, least_squares, "
            "least_squares_workspace, least_squares_batch_of_one, symbolic, hybrid_ratio, "
            "hybrid_terms, xgboost, random_forest, extra_trees, mlp\n",
        ),
    ],
)
def test_bad_input_is_one_error_line_and_exit_code_2(evaluated: Path, capsys, argv, message):
    code = main([*argv, "--db", str(evaluated)])

    assert code == 2
    assert capsys.readouterr().err == message.format(db=evaluated)


def test_sizing_before_any_evaluation_says_what_to_run(db: Path, capsys) -> None:
    code = main(["size", "batch", "--db", str(db), "--image-size", "64", "--budget", "8GiB"])

    assert code == 2
    assert capsys.readouterr().err == (
        f"error: no fitted models in {db} yet; run `memplan evaluate --db {db}` first\n"
    )


def test_evaluate_with_too_few_runs_says_to_measure_more(tmp_path: Path, capsys) -> None:
    db = tmp_path / "few.duckdb"
    database.ensure_database(db)
    store.insert_run(db, build_record())

    code = main(["evaluate", "--db", str(db)])

    assert code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error.startswith(
        "error: unet3d on Intel Test, AVX-512, 8 cores, TensorFlow 2.16 (profile "
    )
    assert (
        "): only 1 distinct measured configuration(s) (1 ok run(s)); the evaluation needs" in error
    )


def test_evaluate_skips_a_workload_with_too_few_runs_and_fits_the_others(db: Path, capsys) -> None:
    store.insert_run(
        db,
        build_record(
            workload="alexnet",
            depth=None,
            height=224,
            width=224,
            base_filters=None,
            levels=None,
            upsampling=None,
            in_channels=3,
            classes=1000,
        ),
    )

    assert main(["evaluate", "--db", str(db), *CHEAP]) == 0

    captured = capsys.readouterr()
    assert (
        "skipped alexnet on Intel Test, AVX-512, 8 cores, TensorFlow 2.16 (profile " in captured.err
    )
    assert "): only 1 distinct measured configuration(s)" in captured.err
    assert "): 24 ok run(s)" in captured.out


@pytest.fixture(scope="module")
def two_workloads(runs_template: Path, tmp_path_factory) -> Path:
    """The U-Net runs plus AlexNet runs of another law, in one database built once for the
    session."""

    def build(path: Path) -> None:
        shutil.copy(runs_template, path)
        alexnet = build_runs(
            sides=(96, 128, 160, 192, 224), batches=(1, 2, 4, 8, 16), workload="alexnet"
        )
        store.insert_runs(path, [build_record(**row) for row in alexnet.to_dict("records")])

    return built_once(tmp_path_factory, "modeling_cli_two_workloads.duckdb", build)


def test_evaluate_fits_and_stores_each_workload_on_its_own_runs(
    two_workloads: Path, tmp_path: Path, capsys
) -> None:
    db = Path(shutil.copy(two_workloads, tmp_path / "runs.duckdb"))

    assert main(["evaluate", "--db", str(db), *CHEAP]) == 0

    out = capsys.readouterr().out
    assert "alexnet on Intel Test" in out and "): 25 ok run(s), 25 configuration(s)" in out
    assert "unet3d on Intel Test" in out and "): 24 ok run(s), 24 configuration(s)" in out
    for workload in ("alexnet", "unet3d"):
        names = [p.name for p in results.load_predictors(stored.read(db, workload))]
        assert names == ["refined", "least_squares"]


def test_size_answers_for_the_chosen_workload_with_its_own_knobs(
    two_workloads: Path, tmp_path: Path, capsys
) -> None:
    db = Path(shutil.copy(two_workloads, tmp_path / "runs.duckdb"))
    assert main(["evaluate", "--db", str(db), "--workload", "alexnet", *CHEAP]) == 0
    capsys.readouterr()

    code = main(
        [
            "size",
            "batch",
            "--workload",
            "alexnet",
            "--image-size",
            "224",
            "--budget",
            "16GiB",
            "--classes",
            "1000",
            "--db",
            str(db),
        ]
    )

    assert code == 0
    assert "224" in capsys.readouterr().out
    # A U-Net knob is refused for AlexNet, by name.
    code = main(
        [
            "size",
            "batch",
            "--workload",
            "alexnet",
            "--image-size",
            "224",
            "--budget",
            "16GiB",
            "--levels",
            "4",
            "--db",
            str(db),
        ]
    )
    assert code == 2
    assert "the alexnet workload has no --levels" in capsys.readouterr().err


# A second machine: an AVX2-only AMD EPYC on which every point peaks twice as high, with
# oneDNN off as TensorFlow leaves it there.
AMD = {
    "cpu_vendor": "AMD",
    "cpu_model": "AMD EPYC 7B13",
    "cpu_isa": "avx2",
    "onednn_enabled": False,
}


@pytest.fixture(scope="module")
def two_machines(runs_template: Path, tmp_path_factory) -> Path:
    """The Intel test runs plus the same grid measured on an AMD machine at twice the peak,
    in a database built once for the session."""

    def build(path: Path) -> None:
        shutil.copy(runs_template, path)
        records = []
        for row in build_runs(noise=0.01, seed=1).to_dict("records"):
            row.update(AMD, peak_hwm_bytes=2 * row["peak_hwm_bytes"], run_id=None)
            row.pop("run_id")
            records.append(build_record(**row))
        store.insert_runs(path, records)

    return built_once(tmp_path_factory, "modeling_cli_two_machines.duckdb", build)


@pytest.fixture(scope="module")
def two_machines_evaluated(two_machines: Path, tmp_path_factory) -> Path:
    """Both machines' runs, each profile evaluated on its own runs as
    `test_evaluate_fits_each_machine_profile_on_its_own_runs` shows: built once for the
    session."""

    def build(path: Path) -> None:
        shutil.copy(two_machines, path)
        assert main(["evaluate", "--db", str(path), *CHEAP]) == 0

    return built_once(tmp_path_factory, "modeling_cli_two_machines_evaluated.duckdb", build)


def _keys(db: Path) -> dict[str, str]:
    """Profile label -> key of the database's runs."""
    found = profiles.profiles_in(store.load_runs(db))
    return {profile.label: key for key, profile in found.items()}


def test_evaluate_fits_each_machine_profile_on_its_own_runs(
    two_machines: Path, tmp_path: Path, capsys
) -> None:
    db = Path(shutil.copy(two_machines, tmp_path / "runs.duckdb"))

    assert main(["evaluate", "--db", str(db), *CHEAP]) == 0

    out = capsys.readouterr().out
    keys = _keys(db)
    amd, intel = (
        keys["AMD EPYC 7B13, AVX2, 8 cores, TensorFlow 2.16, oneDNN off"],
        keys["Intel Test, AVX-512, 8 cores, TensorFlow 2.16"],
    )
    assert (
        f"unet3d on AMD EPYC 7B13, AVX2, 8 cores, TensorFlow 2.16, oneDNN off (profile {amd})"
        in out
    )
    assert f"unet3d on Intel Test, AVX-512, 8 cores, TensorFlow 2.16 (profile {intel})" in out
    evaluations = stored.load_evaluations(db)
    assert sorted(evaluations["machine_profile"]) == sorted([amd, intel])
    assert set(evaluations["n_runs"]) == {24}  # never the 48 of both machines together


def test_size_answers_for_the_machine_asked_and_names_it(
    two_machines_evaluated: Path, tmp_path: Path, capsys
) -> None:
    db = Path(shutil.copy(two_machines_evaluated, tmp_path / "runs.duckdb"))
    capsys.readouterr()
    keys = _keys(db)
    amd = keys["AMD EPYC 7B13, AVX2, 8 cores, TensorFlow 2.16, oneDNN off"]
    intel = keys["Intel Test, AVX-512, 8 cores, TensorFlow 2.16"]
    question = ["size", "buy", "--db", str(db), "--image-size", "96", "--batch-size", "4"]
    question += ["--model", "least_squares"]

    answers = {}
    for key in (amd, intel):
        assert main([*question, "--machine", key[:4]]) == 0  # a unique prefix is enough
        answers[key] = capsys.readouterr().out.splitlines()

    assert answers[amd][0].startswith(
        f"Machine: for AMD EPYC 7B13, AVX2, 8 cores, TensorFlow 2.16, oneDNN off "
        f"(profile {amd}; as asked)"
    )
    # Its answer says that one variable would change it; the Xeon's has nothing to add.
    assert f"note: {profiles.ONEDNN_OFF_NOTE}" in answers[amd]
    assert not any(line.startswith("note:") for line in answers[intel])
    assert answers[intel][0].startswith(
        f"Machine: for Intel Test, AVX-512, 8 cores, TensorFlow 2.16 (profile {intel}; as asked)"
    )
    assert answers[amd][1:] != answers[intel][1:]  # twice the peak: another answer
    # At mixed_bfloat16 oneDNN would not run on that AVX2 CPU: the note says so instead.
    assert main([*question, "--machine", amd, "--precision", "mixed_bfloat16"]) == 0
    half = capsys.readouterr().out.splitlines()
    assert f"note: {profiles.HALF_WITHOUT_ONEDNN.format(precision='mixed_bfloat16')}" in half
    assert f"note: {profiles.ONEDNN_OFF_NOTE}" not in half


def test_an_unknown_machine_lists_the_known_profiles(two_machines: Path, capsys) -> None:
    code = main(
        ["size", "batch", "--db", str(two_machines), "--image-size", "64"]
        + ["--budget", "8GiB", "--machine", "zz"]
    )

    assert code == 2
    error = capsys.readouterr().err
    assert error.startswith("error: no machine profile 'zz'; the known profiles are: ")
    for label, key in _keys(two_machines).items():
        assert f"{key} ({label})" in error


def test_runs_that_did_not_record_their_cpu_are_never_fitted_with_others(db: Path, capsys) -> None:
    unknown = {"cpu_model": "unknown", "cpu_vendor": None}
    rows = build_runs(sides=(32, 48, 64)).drop(columns="run_id").to_dict("records")
    store.insert_runs(db, [build_record(**{**row, **unknown}) for row in rows])

    assert main(["evaluate", "--db", str(db), *CHEAP]) == 0

    captured = capsys.readouterr()
    assert "skipped unet3d on unknown machine (its runs did not record the CPU)" in captured.err
    assert "): 24 ok run(s)" in captured.out


def test_a_split_too_small_for_a_model_is_one_error_line(tmp_path: Path, capsys) -> None:
    """Ten configurations over five sides: the extrapolation split leaves too few to fit."""
    db = tmp_path / "five_sides.duckdb"
    database.ensure_database(db)
    rows = build_runs(sides=(32, 48, 64, 80, 96), batches=(1, 2)).drop(columns="run_id")
    store.insert_runs(db, [build_record(**row) for row in rows.to_dict("records")])

    argv = ["--models", "symbolic", "--seeds", "1", "--extrapolation-seeds", "1"]
    code = main(["evaluate", "--db", str(db), *argv, "--no-store"])

    assert code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error.startswith("error: unet3d on Intel Test, AVX-512, 8 cores, TensorFlow 2.16")
    assert "symbolic cannot be fitted on the extrapolation split, seed 0 (" in error
    assert "need at least 5 samples to fit a formula, got 4; measure more configurations" in error
