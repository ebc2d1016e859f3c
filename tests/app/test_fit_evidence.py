"""The Sizing page and ``memplan size`` say which models and runs an answer rests on.

Issue 26, finding 1: after a 1-step smoke sweep and its refit the buy answer
changed and nothing said it now rested on smoke-test models, nor on which runs.
Here the bundled reference database gets the smoke sweep's two 1-step runs; the
page's answer names the model, the evaluation, its runs, its step count and its
date, in the same words ``memplan size`` prints.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memplan import cli
from tests.app.helpers import open_page, shown
from tests.fit_runs import BUNDLED_UNET_MACHINE, SMOKE_STEPS, add_copies

PAGE = "dashboard/sizing_page.py"
# The bundled reference evaluation (data/reference_results/), installed in reference_db.
RESTS_ON = (
    "Rests on the model “least squares on analytical terms”, from evaluation 6ce9f46d7f98, "
    "fitted 2026-11-24 02:43 UTC on 39 runs, 33 configurations, at 6 training steps."
)


def test_the_answer_names_the_models_runs_steps_and_date_it_rests_on(
    reference_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    add_copies(reference_db, BUNDLED_UNET_MACHINE, SMOKE_STEPS, 2)

    at = open_page(PAGE, workload="unet3d", machine=BUNDLED_UNET_MACHINE, model="least_squares")

    captions = [shown(c.value) for c in at.caption]
    assert RESTS_ON in captions
    question = ["--image-size", "128", "--batch-size", "4", "--model", "least_squares"]
    assert cli.main(["size", "buy", "--db", str(reference_db), *question]) == 0
    assert RESTS_ON in capsys.readouterr().out.splitlines()
