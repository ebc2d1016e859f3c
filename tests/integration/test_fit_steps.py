"""Only comparable runs fit together: an evaluation fits the runs of one step count.

Issue 26, finding 1: a sidebar sweep of 32^3 and 48^3 at batch 1 for **1 step**,
refit "quick", re-evaluated all four U-Net profiles (three without a new run),
fitted the 1-step runs among the 6-step ones, and the buy answer for
240x240x144 at batch 16 changed. Here, on real DuckDB files holding the bundled
runs of two U-Net machine profiles (and their bundled evaluations), plus copies
of their runs at 1 step or re-measured at 6 (`tests.fit_runs`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from application import bundles, refit, stored
from application.stored import load_evidence
from core import database
from dashboard.refit_choice import REFIT_QUICK, refit_job
from memplan import cli
from modeling.stored import bundle
from profiling import exchange
from tests.conftest import built_once
from tests.fit_runs import (
    BUNDLED_AMD_MACHINE,
    BUNDLED_UNET_MACHINE,
    PRODUCTION_STEPS,
    SMOKE_STEPS,
    add_copies,
)

# Two cheap models, one seed of each split: the claim is which runs are fitted, not the fit.
CHEAP = ["--quick", "--models", "least_squares", "refined", "--seeds", "1"]
CHEAP += ["--extrapolation-seeds", "1"]
# The purchase question of finding 1.
BUY = ["size", "buy", "--image-size", "240x240x144", "--batch-size", "16", "--json"]
# The smoke sweep of finding 1 measured two configurations (32^3 and 48^3 at batch 1).
SMOKE_RUNS = 2
# The bundled U-Net runs (data/reference_runs.parquet) and the AMD grid's.
U_NET_EXPORTS = database.BUNDLED_EXPORTS[0], database.BUNDLED_EXPORTS[2]


def _bundled_unet_runs(path: Path) -> None:
    database.ensure_database(path)
    for runs_file, samples_file in U_NET_EXPORTS:
        exchange.import_runs(path, runs_file, samples_file)


def _with_bundled_evaluations(path: Path) -> None:
    _bundled_unet_runs(path)
    assert bundles.install_every_bundle(path) == len(U_NET_EXPORTS)


@pytest.fixture(scope="module")
def runs_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled runs of two U-Net machine profiles, no evaluation stored."""
    return built_once(tmp_path_factory, "fit-steps-runs.duckdb", _bundled_unet_runs)


@pytest.fixture(scope="module")
def evaluated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same runs with their bundled evaluations installed."""
    return built_once(tmp_path_factory, "fit-steps-evaluated.duckdb", _with_bundled_evaluations)


def _copy(template: Path, tmp_path: Path) -> Path:
    return Path(shutil.copy(template, tmp_path / "memplan.duckdb"))


def _evaluations(db: Path) -> list[dict]:
    with duckdb.connect(str(db), read_only=True) as con:
        cursor = con.execute("SELECT * FROM evaluations ORDER BY created_at, rowid")
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _buy(db: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    capsys.readouterr()
    assert cli.main([*BUY, "--db", str(db), "--machine", BUNDLED_UNET_MACHINE]) == 0
    return json.loads(capsys.readouterr().out)["answer"]


def _closed_form_excess(db: Path) -> list[tuple[float | None, int | None]]:
    predictors = stored.load_predictors(db, "unet3d", BUNDLED_UNET_MACHINE)
    return [(p.training_range.closed_form_excess, p.training_range.excess_runs) for p in predictors]


def test_an_evaluation_fits_only_the_six_step_runs_and_records_the_steps(
    evaluated_template: Path, tmp_path: Path
) -> None:
    db = _copy(evaluated_template, tmp_path)
    bundled = bundle.bundled_evaluation(bundle.BUNDLED_RESULTS_DIR)
    add_copies(db, BUNDLED_UNET_MACHINE, SMOKE_STEPS, SMOKE_RUNS)

    assert cli.main(["evaluate", "--db", str(db), "--machine", BUNDLED_UNET_MACHINE, *CHEAP]) == 0

    latest = _evaluations(db)[-1]
    assert latest["machine_profile"] == BUNDLED_UNET_MACHINE
    assert latest["steps"] == PRODUCTION_STEPS
    assert json.loads(latest["other_steps_json"]) == {str(SMOKE_STEPS): SMOKE_RUNS}
    # Exactly the runs the bundled evaluation fitted: the 1-step copies joined nothing.
    assert latest["data_fingerprint"] == bundled.fingerprint
    assert latest["n_runs"] == 39


def test_one_step_runs_leave_the_buy_answer_as_it_was(
    runs_template: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _copy(runs_template, tmp_path)
    before = _buy(db, capsys)  # from the bundled evaluation, read without installing it
    excess_before = _closed_form_excess(db)
    # Peaks above the 6-step runs': a 1-step run that joined the fit would raise the bound.
    add_copies(db, BUNDLED_UNET_MACHINE, SMOKE_STEPS, SMOKE_RUNS, peak_scale=1.5)

    assert _buy(db, capsys) == before
    # The bundled models' measured excess over the closed form (read from the runs they
    # fit, `bundle._with_closed_form_excess`) counts the 6-step runs only.
    assert _closed_form_excess(db) == excess_before
    evidence = load_evidence(db, "unet3d", BUNDLED_UNET_MACHINE)
    assert (evidence.bundled, evidence.steps, evidence.n_runs) == (True, PRODUCTION_STEPS, 39)


def test_a_question_about_other_steps_than_the_fit_is_refused(runs_template: Path) -> None:
    from modeling.errors import ModelingError
    from modeling.stored.evidence import check_steps

    evidence = load_evidence(runs_template, "unet3d", BUNDLED_UNET_MACHINE)
    check_steps(evidence, None)
    check_steps(evidence, PRODUCTION_STEPS)
    with pytest.raises(ModelingError, match="fitted on runs of 6 training steps, not 1"):
        check_steps(evidence, SMOKE_STEPS)


def test_the_refit_after_a_smoke_sweep_re_evaluates_no_profile(
    evaluated_template: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _copy(evaluated_template, tmp_path)
    add_copies(db, BUNDLED_UNET_MACHINE, SMOKE_STEPS, SMOKE_RUNS)
    before = _evaluations(db)
    # The sidebar's quick refit, over every profile (no sweep named: as the CLI's).
    job = refit_job(REFIT_QUICK, db, "unet3d")
    assert job is not None and job.only_changed
    capsys.readouterr()

    assert refit.run(job) == 0

    assert _evaluations(db) == before
    log = capsys.readouterr().err
    assert "re-evaluated nothing: 2 workload and profile pair(s) unchanged" in log
    assert f"not fitted with them: {SMOKE_RUNS} runs at 1 step" in log


def test_new_six_step_runs_re_evaluate_only_their_profile(
    evaluated_template: Path, tmp_path: Path
) -> None:
    db = _copy(evaluated_template, tmp_path)
    add_copies(db, BUNDLED_UNET_MACHINE, SMOKE_STEPS, SMOKE_RUNS)
    add_copies(db, BUNDLED_AMD_MACHINE, PRODUCTION_STEPS, 3, peak_scale=1.02)
    before = _evaluations(db)

    assert cli.main(["evaluate", "--db", str(db), "--only-changed", *CHEAP]) == 0

    after = _evaluations(db)
    assert after[: len(before)] == before
    [new] = after[len(before) :]
    assert (new["machine_profile"], new["steps"], new["n_runs"]) == (
        BUNDLED_AMD_MACHINE,
        PRODUCTION_STEPS,
        40 + 3,
    )
    assert new["other_steps_json"] == "{}"


def test_evaluate_fits_the_step_count_asked_for_and_refuses_one_without_runs(
    evaluated_template: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _copy(evaluated_template, tmp_path)
    machine = ["--machine", BUNDLED_UNET_MACHINE]

    assert cli.main(["evaluate", "--db", str(db), *machine, *CHEAP, "--steps", "3"]) == 2
    assert "no usable runs at 3 steps; the usable runs are 39 runs at 6 steps" in (
        capsys.readouterr().err
    )
