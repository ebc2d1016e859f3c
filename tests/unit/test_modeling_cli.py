"""`python -m modeling` through `main(argv)`: evaluate, store, then answer sizing questions."""

import shutil
from pathlib import Path

import pytest

from core import database, store
from modeling.cli import main
from modeling.stored import tables as results
from tests.conftest import build_record, build_runs

# Cheap models only: the full catalogue's symbolic regression takes minutes.
CHEAP = ["--models", "refined", "least_squares", "--seeds", "2"]


@pytest.fixture(scope="module")
def runs_template(tmp_path_factory) -> Path:
    """A database of synthetic runs, built once (a DuckDB connection per insert is slow)."""
    path = tmp_path_factory.mktemp("template") / "runs.duckdb"
    database.ensure_database(path)
    for row in build_runs(noise=0.01).to_dict("records"):
        store.insert_run(path, build_record(**row))
    return path


@pytest.fixture(scope="module")
def evaluated_template(runs_template: Path, tmp_path_factory) -> Path:
    """The same runs with a stored evaluation of the cheap models."""
    path = tmp_path_factory.mktemp("evaluated") / "runs.duckdb"
    shutil.copy(runs_template, path)
    assert main(["evaluate", "--db", str(path), *CHEAP]) == 0
    return path


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
    assert out.startswith("unet3d: 24 ok run(s), 24 configuration(s) from ")
    assert "| model | random MAPE % | random MAPE sd |" in out
    assert "| refined analytical (closed form) |" in out
    assert "| least squares on analytical terms |" in out
    assert [p.name for p in results.load_predictors(db)] == ["refined", "least_squares"]


def test_evaluate_can_store_into_another_database(db: Path, tmp_path: Path, capsys) -> None:
    other = tmp_path / "results.duckdb"

    assert main(["evaluate", "--db", str(db), *CHEAP, "--store-db", str(other)]) == 0

    assert len(results.load_predictors(other)) == 2
    assert results.load_evaluations(db).empty


def test_no_store_leaves_the_database_without_results(db: Path, capsys) -> None:
    assert main(["evaluate", "--db", str(db), *CHEAP, "--no-store"]) == 0

    assert results.load_evaluations(db).empty


def test_size_image_answers_with_the_next_size_up(evaluated: Path, capsys) -> None:
    code = main(
        [
            "size",
            "image",
            "--db",
            str(evaluated),
            "--budget",
            "6GiB",
            "--batch-size",
            "2",
            "--model",
            "least_squares",
        ]
    )

    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert lines[0].startswith("largest image: 128^3 at batch 2 within 6.00 GiB (needs up to ")
    assert lines[1].startswith("next size up, 144^3, would need up to ")
    assert lines[2].startswith("model: least_squares; bound: 90% split-conformal upper bound")
    assert lines[3].startswith("WARNING: This answer extrapolates")


def test_size_batch_inside_the_measured_range_says_so(evaluated: Path, capsys) -> None:
    code = main(
        [
            "size",
            "batch",
            "--db",
            str(evaluated),
            "--image-size",
            "64",
            "--budget",
            "2.5GiB",
            "--model",
            "least_squares",
        ]
    )

    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert lines[0].startswith("largest batch: 5 for 64x64x64 within 2.50 GiB")
    assert lines[-1] == "inside the measured range"


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
            "0.25",
        ]
    )

    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("buy ") and " GB (binary GB = GiB) for 240x240x144 at batch 16" in out
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
            "error: headroom must be a fraction between 0 and 10 (0.2 = 20%), got -1.0\n",
        ),
        (
            ["evaluate", "--models", "svm"],
            "error: unknown model(s) svm; known: paper, refined, least_squares, symbolic, "
            "hybrid_ratio, hybrid_terms, xgboost, random_forest, extra_trees, mlp\n",
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
        f"error: no fitted models in {db} yet; run `python -m modeling evaluate --db {db}` first\n"
    )


def test_evaluate_with_too_few_runs_says_to_measure_more(tmp_path: Path, capsys) -> None:
    db = tmp_path / "few.duckdb"
    database.ensure_database(db)
    store.insert_run(db, build_record())

    code = main(["evaluate", "--db", str(db)])

    assert code == 2
    assert (
        capsys.readouterr()
        .err.splitlines()[-1]
        .startswith(
            "error: unet3d: only 1 distinct measured configuration(s) (1 ok run(s)); "
            "the evaluation needs"
        )
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
    assert "skipped alexnet: only 1 distinct measured configuration(s)" in captured.err
    assert "unet3d: 24 ok run(s)" in captured.out


@pytest.fixture(scope="module")
def two_workloads(runs_template: Path, tmp_path_factory) -> Path:
    """The U-Net runs plus AlexNet runs of another law, in one database."""
    path = tmp_path_factory.mktemp("two") / "runs.duckdb"
    shutil.copy(runs_template, path)
    alexnet = build_runs(
        sides=(96, 128, 160, 192, 224), batches=(1, 2, 4, 8, 16), workload="alexnet"
    )
    for row in alexnet.to_dict("records"):
        store.insert_run(path, build_record(**row))
    return path


def test_evaluate_fits_and_stores_each_workload_on_its_own_runs(
    two_workloads: Path, tmp_path: Path, capsys
) -> None:
    db = Path(shutil.copy(two_workloads, tmp_path / "runs.duckdb"))

    assert main(["evaluate", "--db", str(db), *CHEAP]) == 0

    out = capsys.readouterr().out
    assert "alexnet: 25 ok run(s), 25 configuration(s)" in out
    assert "unet3d: 24 ok run(s), 24 configuration(s)" in out
    for workload in ("alexnet", "unet3d"):
        names = [p.name for p in results.load_predictors(db, workload=workload)]
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
