"""The calibration loop on a real database, with made-up peaks instead of real runs.

The prior is the bundled AVX-512 AMD EPYC profile's model (its runs and bundled
evaluation); "this machine" is a profile of made-up runs; measuring stores a run whose
peak is a chosen function of the prior's prediction.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from application import sizing
from application import stored as stored_models
from application.calibration_loop import LoopPlan, find_prior, run_loop
from core import database, profiles
from core import store as runs_store
from core.workloads.unet3d import UNetConfig
from modeling import calibration_model
from modeling.features import measured_frame
from profiling import exchange
from tests.conftest import build_record, built_once

GIB = 2**30
HERE = {
    "cpu_vendor": "AMD",
    "cpu_model": "AMD EPYC",
    "cpu_isa": "avx512_bf16",
    "cpu_family": 26,
    "cpu_model_number": 2,
    "steps": 6,
}


def _amd_runs(path: Path) -> None:
    database.ensure_database(path)
    amd = database.DATA_DIR / "unet3d_amd_runs.parquet"
    exchange.import_runs(path, amd, database.DATA_DIR / "unet3d_amd_samples.parquet")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled AVX-512 EPYC runs, imported once for the session (`built_once`)."""
    return built_once(tmp_path_factory, "unet3d_amd_runs.duckdb", _amd_runs)


@pytest.fixture
def db(template: Path, tmp_path: Path) -> Path:
    path = tmp_path / "calib.duckdb"
    path.write_bytes(template.read_bytes())
    return path


def _run(side: int, batch: int, peak: float, **knobs):
    shape = {"depth": side, "height": side, "width": side}
    return build_record(**HERE, **shape, **knobs, batch_size=batch, peak_hwm_bytes=int(peak))


def _plan(db: Path) -> LoopPlan:
    here = profiles.profile_of(_run(32, 1, GIB).row())
    return LoopPlan(db, "unet3d", here, steps=6, memory_limit_bytes=19 * GIB)


def _measuring(db: Path, plan: LoopPlan, peak_of):
    prior = find_prior(db, "unet3d", plan.here).predictor
    measured = []

    def measure(side: int, batch: int) -> None:
        [value] = prior.point_bytes([UNetConfig((side,) * 3, batch)])
        runs_store.insert_run(db, _run(side, batch, peak_of(value, len(measured))))
        measured.append((side, batch))

    return measure, measured, prior


def test_a_machine_whose_peaks_are_a_line_in_the_prior_stops_at_3_points_and_answers(db):
    plan = _plan(db)
    measure, measured, prior = _measuring(db, plan, lambda value, _: 0.2 * GIB + 1.05 * value)

    outcome = run_loop(plan, measure)

    assert outcome.prior.key == "b42ae893fe"
    assert len(measured) == len(outcome.points) == 3
    assert outcome.loo_mape_pct == pytest.approx(0, abs=1e-3)
    assert outcome.stopped.startswith("leave-one-out MAPE 0.00% <= 5% over 3 points")
    widths = [step.width for step in outcome.steps]
    assert widths == sorted(widths, reverse=True)  # each step took the widest left
    stored = stored_models.load_predictor(db, workload="unet3d", machine=plan.here.key)
    assert stored.name == calibration_model.NAME
    config = UNetConfig((160, 160, 160), 2)  # beyond the points: still the same line
    [expected] = 0.2 * GIB + 1.05 * prior.point_bytes([config])
    assert stored.point_bytes([config])[0] == pytest.approx(expected, rel=1e-6)
    assert stored.bound.thin and stored.bound.n_calibration == 3


def test_a_calibrated_profile_answers_sizing_as_any_profile(db):
    plan = _plan(db)
    measure, _, _ = _measuring(db, plan, lambda value, _: 0.2 * GIB + 1.05 * value)
    run_loop(plan, measure)

    models, choice = sizing.load_models(stored_models.read(db, "unet3d"), plan.here.key, {})

    assert choice.key == plan.here.key and models.pick(None).name == calibration_model.NAME


def test_points_measured_before_count_and_are_not_measured_again(db):
    plan = _plan(db)
    prior = find_prior(db, "unet3d", plan.here).predictor
    for side, batch in ((32, 1), (96, 2)):
        [value] = prior.point_bytes([UNetConfig((side,) * 3, batch)])
        runs_store.insert_run(db, _run(side, batch, 0.2 * GIB + 1.05 * value))
    measure, measured, _ = _measuring(db, plan, lambda value, _: 0.2 * GIB + 1.05 * value)

    outcome = run_loop(plan, measure)

    assert len(measured) == 1 and measured[0] not in {(32, 1), (96, 2)}
    assert {(s, b) for s, b, _ in outcome.points} >= {(32, 1), (96, 2)}
    assert outcome.steps[0].points_before == 2


def test_peaks_no_line_fits_within_5_percent_stop_at_6_points(db):
    plan = _plan(db)
    noisy = lambda value, n: value * (1.25 if n % 2 else 0.8)  # noqa: E731
    measure, measured, _ = _measuring(db, plan, noisy)

    outcome = run_loop(plan, measure)

    assert len(measured) == 6
    assert outcome.stopped.startswith("6 points measured")
    assert outcome.loo_mape_pct > 5


def test_the_command_prints_each_chosen_point_and_why_then_points_minutes_and_mape(
    db, monkeypatch, capsys
):
    from memplan import calibrate_points, cli

    plan = _plan(db)
    monkeypatch.setattr(calibrate_points, "this_profile", lambda framework: plan.here)
    measure, measured, _ = _measuring(db, plan, lambda value, _: 0.2 * GIB + 1.05 * value)
    monkeypatch.setattr(calibrate_points, "one_point_measure", lambda *args: measure)

    code = cli.main(["calibrate", "--db", str(db), "--memory-limit", "19GiB"])

    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"This machine: {plan.here.label} (profile {plan.here.key})"
    chosen = [line for line in lines if line.startswith("  point ")]
    assert len(chosen) == len(measured) == 3
    assert chosen[0].startswith("  point 1: 32^3 batch 1, its bound +")
    assert chosen[0].endswith("of its prediction, the widest of 20 candidates")
    assert lines[-2].startswith("Points used: 3 (")
    assert " min; held-out (leave-one-out) MAPE 0.00%" in lines[-2]


def test_the_command_prints_json_with_the_chosen_points(db, monkeypatch, capsys):
    import json

    from memplan import calibrate_points, cli

    plan = _plan(db)
    monkeypatch.setattr(calibrate_points, "this_profile", lambda framework: plan.here)
    measure, _, _ = _measuring(db, plan, lambda value, _: 0.2 * GIB + 1.05 * value)
    monkeypatch.setattr(calibrate_points, "one_point_measure", lambda *args: measure)

    assert cli.main(["calibrate", "--db", str(db), "--memory-limit", "19GiB", "--json"]) == 0

    out = json.loads(capsys.readouterr().out)
    assert out["points_used"] == 3 and out["prior"]["profile"] == "b42ae893fe"
    assert out["covers"]["precision"] == ["float32"]  # no knob flag: the default only
    assert [step["why"].split(":")[0] for step in out["chosen"]] == [
        "point 1",
        "point 2",
        "point 3",
    ]


@pytest.mark.parametrize(("points", "widened"), [(3, True), (19, False)])
def test_few_points_keep_the_prior_bound_widened_for_another_machine(db, points, widened):
    # Peaks exactly a line in the prior: every leave-one-out ratio is 1, so the bound is the
    # prior's own, widened by the between-profile factor until 19 points make it conformal.
    prior = find_prior(db, "unet3d", _plan(db).here).predictor
    sides, batches = (32, 48, 64, 80, 96, 112), (1, 2, 4, 8)
    configs = [UNetConfig((side,) * 3, batch) for side in sides for batch in batches]
    configs = configs[:points]
    prior_bytes = prior.point_bytes(configs)
    runs = [
        _run(c.image_shape[0], c.batch_size, 0.2 * GIB + 1.05 * value).row()
        for c, value in zip(configs, prior_bytes, strict=True)
    ]
    frame = measured_frame(pd.DataFrame(runs))

    model = calibration_model.calibrated_predictor(prior, frame, prior_bytes, widening=1.2)

    factor = 1.2 if widened else 1.0
    assert model.bound.ratio == pytest.approx(prior.bound.ratio * factor, rel=1e-6)
    assert model.bound.thin is widened
    assert ("x1.200 for another machine (thin evidence)" in model.bound.source) is widened


BF16 = (("precision", "mixed_bfloat16"),)


def _measuring_knobs(db: Path, plan: LoopPlan, scale_of: dict[str, float]):
    """``measure(side, batch, knobs=None)`` storing a run of the chosen knobs, its peak
    0.2 GiB + scale x the prior's prediction, the scale by precision."""
    prior = find_prior(db, "unet3d", plan.here).predictor
    measured = []

    def measure(side: int, batch: int, knobs: dict | None = None) -> None:
        knobs = knobs or {}
        [value] = prior.point_bytes([UNetConfig((side,) * 3, batch, **knobs)])
        precision = knobs.get("precision", "float32")
        peak = 0.2 * GIB + scale_of[precision] * value
        runs_store.insert_run(db, _run(side, batch, peak, precision=precision))
        measured.append((side, batch, precision))

    return measure, measured


def test_a_plan_covering_bfloat16_measures_it_early_and_its_model_answers_for_it(db):
    plan = dataclasses.replace(_plan(db), also=(BF16,))
    measure, measured = _measuring_knobs(db, plan, {"float32": 1.05, "mixed_bfloat16": 1.05})

    outcome = run_loop(plan, measure)

    precisions = [precision for _, _, precision in measured]
    assert set(precisions[:2]) == {"float32", "mixed_bfloat16"}  # one of each first
    assert len(measured) >= 3 and outcome.stopped.startswith("leave-one-out MAPE 0.00%")
    assert outcome.covers["precision"] == ("float32", "mixed_bfloat16")
    bf16_steps = [step for step in outcome.steps if step.knobs == BF16]
    assert bf16_steps[0].sentence().endswith("first of its knob values measured here")
    assert "precision mixed_bfloat16, its bound" in bf16_steps[0].sentence()
    stored = stored_models.load_predictor(db, workload="unet3d", machine=plan.here.key)
    config = UNetConfig((96,) * 3, 2, precision="mixed_bfloat16")
    assert stored.training_range.unmeasured(config) == []  # answered as measured, not widened


def test_a_line_met_on_float32_alone_does_not_stop_before_bfloat16_is_measured(db):
    # float32 points on a line would stop at 3; the plan covers bfloat16 too, so it goes on.
    plan = dataclasses.replace(_plan(db), also=(BF16,))
    measure, measured = _measuring_knobs(db, plan, {"float32": 1.05, "mixed_bfloat16": 1.25})
    for side, batch in ((32, 1), (64, 1), (96, 2)):
        measure(side, batch)

    outcome = run_loop(plan, measure)

    assert [precision for _, _, precision in measured][3] == "mixed_bfloat16"
    assert "mixed_bfloat16" in outcome.covers["precision"]


def test_the_command_covers_the_knob_values_given_and_says_which_its_answers_cover(
    db, monkeypatch, capsys
):
    from memplan import calibrate_points, cli

    plan = _plan(db)
    monkeypatch.setattr(calibrate_points, "this_profile", lambda framework: plan.here)
    planned = dataclasses.replace(plan, also=(BF16,))
    measure, measured = _measuring_knobs(db, planned, {"float32": 1.05, "mixed_bfloat16": 1.05})
    monkeypatch.setattr(calibrate_points, "one_point_measure", lambda *args: measure)
    asked = ["calibrate", "--db", str(db), "--memory-limit", "19GiB"]

    code = cli.main([*asked, "--precision", "mixed_bfloat16"])

    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if "precision mixed_bfloat16, its bound" in line]
    [covers] = [line for line in lines if line.startswith("Answers cover: ")]
    assert "precision float32, mixed_bfloat16" in covers
    assert {precision for _, _, precision in measured} == {"float32", "mixed_bfloat16"}


def test_the_command_refuses_a_knob_value_the_network_does_not_take(db, capsys):
    from memplan import cli

    code = cli.main(["calibrate", "--db", str(db), "--precision", "float8"])

    assert code == 2
    err = capsys.readouterr().err
    assert "precision 'float8' is not one of float32, mixed_float16, mixed_bfloat16" in err
