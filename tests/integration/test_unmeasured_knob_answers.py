"""A precision the answering profile never measured: BEYOND the measured range on every path,
the value named, the bound widened by the knob splits of the profiles that measured it
(issue 28, point 3).

Profile cac47eeb1b (AVX2 AMD, oneDNN on) has float32 runs only; profile 259d139078
(the same CPU, oneDNN off) measured mixed_bfloat16 and its stored knob split left it out.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from collections.abc import Callable
from html import unescape
from pathlib import Path

import pytest

from application import sizing, stored, widening
from application.calibration_loop import LoopPlan, find_prior, run_loop
from application.sizing import SizingQuestion
from core import profiles, store
from core.units import GIB
from core.workloads.unet3d import UNetConfig
from modeling import calibration_model
from modeling.decision import Confidence
from modeling.unmeasured import KnobEvidence
from presentation import sizing_report, sizing_report_html
from tests.conftest import build_record

FLOAT32_ONLY = "cac47eeb1b"
BF16 = {"precision": "mixed_bfloat16"}
NAMED = "precision mixed_bfloat16 was never measured on this profile (measured: float32)"
# 259d139078's knob split of least_squares_workspace (data/unet3d_knobs_results): the largest
# measured / predicted bfloat16 peak of the model fitted on float32 only.
KNOB_FACTOR = 1.17
WIDENED = f"mixed_bfloat16: {KNOB_FACTOR:.2f} over 10 runs"


@pytest.fixture
def db(every_bundled_run: Path) -> Path:
    return every_bundled_run


def _question(models: sizing.Models) -> SizingQuestion:
    return SizingQuestion(
        kind=sizing.BUY,
        workload="unet3d",
        machine=models.machine,
        knobs=tuple(BF16.items()),
        budget_bytes=64 * GIB,
        model=models.default_model,
        image_shape=(96, 96, 96),
        batch_size=1,
    )


def test_the_decision_and_the_answer_read_beyond_and_widen_the_bound(db: Path) -> None:
    models, _ = sizing.load_models(stored.read(db, "unet3d"), FLOAT32_ONLY, BF16)
    question = _question(models)
    runs = store.load_runs(db, store.RunFilter(workload="unet3d", machine=FLOAT32_ONLY))
    # The same models with no knob split stored anywhere: the bound before widening.
    nothing = widening.with_knob_evidence(models.predictors, KnobEvidence())
    plain = dataclasses.replace(models, predictors=tuple(nothing))

    decided = sizing.decide(question, models, runs)
    said = sizing.answer(question, models)
    unwidened = sizing.answer(question, plain)

    assert decided.confidence is Confidence.BEYOND
    assert decided.estimate is not None and NAMED in decided.estimate.beyond
    assert WIDENED in decided.estimate.beyond
    assert NAMED in said.found.basis.warning and f"widened x{KNOB_FACTOR:.2f}" in said.bound
    assert said.found.bound_bytes >= unwidened.found.bound_bytes * (KNOB_FACTOR - 0.01)


def test_the_report_names_the_unmeasured_value(db: Path) -> None:
    models, _ = sizing.load_models(stored.read(db, "unet3d"), FLOAT32_ONLY, BF16)
    runs = store.load_runs(db, store.RunFilter(workload="unet3d", machine=FLOAT32_ONLY))
    source = sizing_report.ReportSource("profile cac47eeb1b", version="memplan test")

    built = sizing_report.build_report(_question(models), models, runs, source)
    html = sizing_report_html.render_html(built)
    shown = " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())

    assert NAMED in shown and WIDENED in shown


def test_memplan_size_buy_says_why_and_carries_the_widened_bound(
    db: Path, memplan_main: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    asked = ["size", "buy", "--image-size", "96", "--batch-size", "1", "--db", str(db)]
    asked += ["--machine", FLOAT32_ONLY, "--precision", "mixed_bfloat16"]

    said = memplan_main(*asked)
    as_json = memplan_main(*asked, "--json")

    assert (said.returncode, as_json.returncode) == (0, 0), said.stderr + as_json.stderr
    assert NAMED in said.stdout and WIDENED in said.stdout
    assert f"widened x{KNOB_FACTOR:.2f} for knob values never measured" in said.stdout
    assert NAMED in json.loads(as_json.stdout)["answer"]["basis"]["warning"]


def _calibrated_on_float32(source: Path, tmp_path: Path) -> tuple[Path, str, str]:
    """A copy of ``source`` where a machine no bundled run measured (Intel, family 6 model
    207) calibrated on float32 points only, each peak 1.05 x its prior's prediction + 0.2 GiB;
    the database, the machine's profile key and the prior's model name."""
    path = tmp_path / "calibrated.duckdb"
    path.write_bytes(source.read_bytes())
    facts = {"cpu_vendor": "Intel", "cpu_model": "Intel Xeon", "cpu_isa": "amx"}
    facts |= {"cpu_family": 6, "cpu_model_number": 207, "steps": 6}

    def run(side: int, batch: int, peak: float):
        shape = {"depth": side, "height": side, "width": side}
        return build_record(**facts, **shape, batch_size=batch, peak_hwm_bytes=int(peak))

    here = profiles.profile_of(run(32, 1, GIB).row())
    plan = LoopPlan(path, "unet3d", here, steps=6, memory_limit_bytes=19 * GIB)
    prior = find_prior(path, "unet3d", here)

    def measure(side: int, batch: int) -> None:
        [value] = prior.predictor.point_bytes([UNetConfig((side,) * 3, batch)])
        store.insert_run(path, run(side, batch, 0.2 * GIB + 1.05 * value))

    run_loop(plan, measure, prior=prior)
    return path, here.key, prior.predictor.name


def test_a_profile_calibrated_on_float32_widens_bfloat16_by_its_priors_stored_split(
    db: Path, tmp_path: Path
) -> None:
    path, key, prior_model = _calibrated_on_float32(db, tmp_path)
    models, _ = sizing.load_models(stored.read(path, "unet3d"), key, BF16)
    split = (
        stored.load_knob_evidence(path).of_model(prior_model).widening(*next(iter(BF16.items())))
    )
    nothing = widening.with_knob_evidence(models.predictors, KnobEvidence())
    plain = dataclasses.replace(models, predictors=tuple(nothing))

    said = sizing.answer(_question(models), models)
    unwidened = sizing.answer(_question(models), plain)

    assert models.default_model == calibration_model.NAME
    assert split.factor == pytest.approx(KNOB_FACTOR, abs=0.005)
    assert "not widened" not in said.found.basis.warning
    assert NAMED in said.found.basis.warning and split.words in said.found.basis.warning
    assert f"widened x{split.factor:.2f}" in said.bound
    assert said.found.bound_bytes == pytest.approx(
        unwidened.found.bound_bytes * split.factor, rel=1e-6
    )
