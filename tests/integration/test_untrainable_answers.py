"""The CLI's ``size`` and ``report``, and the report itself, on a setting that never trained
on the answering profile: the reason, not a prediction (issue 26, finding 5)."""

from __future__ import annotations

import re
import shutil
from html import unescape
from pathlib import Path

import pandas as pd
import pytest

from application import sizing
from application import stored as stored_models
from application.sizing import SizingQuestion
from core import store
from core.units import GIB
from memplan import cli
from modeling.machines import MachineChoice
from presentation import sizing_report, sizing_report_html
from tests.conftest import built_once, bundled_exports_database

KNOBS = "259d139078"  # the AVX2 AMD knob profile: its 8 mixed_float16 runs ended in error
REASON = "Precision mixed_float16 does not train on this machine profile: all 8 of its runs"
ASKED = ["--machine", KNOBS, "--precision", "mixed_float16"]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every bundled run, no evaluation: the answers come from the bundles read in memory.
    Imported once for the session (`built_once`, shared with test_report_cli's and
    test_sizing_report's); this module reads its own copy."""
    template = built_once(tmp_path_factory, "bundled_exports.duckdb", bundled_exports_database)
    path = tmp_path_factory.mktemp("untrainable") / "memplan.duckdb"
    return Path(shutil.copy(template, path))


@pytest.mark.parametrize(
    "question",
    [
        ["size", "buy", "--image-size", "128", "--batch-size", "2"],
        ["size", "image", "--budget", "64GiB", "--batch-size", "2"],
        ["size", "batch", "--budget", "64GiB", "--image-size", "128"],
    ],
    ids=["buy", "image", "batch"],
)
def test_size_answers_with_the_reason(db: Path, question: list[str], capsys) -> None:
    assert cli.main([*question, *ASKED, "--db", str(db)]) != 0

    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"error: {REASON}")
    assert "No OpKernel was registered to support Op 'MaxPool3D' for DT_HALF" in err


def test_size_still_answers_a_precision_that_trains(db: Path, capsys) -> None:
    question = ["size", "buy", "--image-size", "128", "--batch-size", "2"]
    assert (
        cli.main([*question, "--machine", KNOBS, "--precision", "mixed_bfloat16", "--db", str(db)])
        == 0
    )
    assert "buy 64 GB" in capsys.readouterr().out


def test_the_report_command_refuses_with_the_reason(db: Path, tmp_path: Path, capsys) -> None:
    output = tmp_path / "report.html"
    question = ["report", "--image-size", "128", "--batch-size", "2", "--budget", "64GiB"]

    assert cli.main([*question, *ASKED, "--db", str(db), "--output", str(output)]) != 0

    assert capsys.readouterr().err.startswith(f"error: {REASON}")
    assert not output.exists()


def test_the_report_says_the_reason_instead_of_a_prediction(db: Path) -> None:
    models = stored_models.load_predictors(db, workload="unet3d", machine=KNOBS)
    runs = store.load_runs(db, store.RunFilter(workload="unet3d", machine=KNOBS))
    question = SizingQuestion(
        kind=sizing.BUY,
        workload="unet3d",
        machine=KNOBS,
        knobs=(("precision", "mixed_float16"),),
        budget_bytes=64 * GIB,
        headroom_pct=20,
        model=models[0].name,
        image_shape=(128, 128, 128),
        batch_size=2,
    )
    words = "for AMD EPYC (profile 259d139078)"
    stored = sizing.models_of(
        "unet3d", MachineChoice(KNOBS, None, words), sizing.Loaded(models, pd.DataFrame())
    )
    source = sizing_report.ReportSource(words, version="memplan test")

    built = sizing_report.build_report(question, stored, runs, source)
    html = sizing_report_html.render_html(built)
    shown = " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())

    assert built.headline == "Does not train on this machine profile"
    assert built.bound is None and built.models == ()
    assert REASON in shown
    assert "Predicted to fit" not in shown and "Predicted not to fit" not in shown
    assert "upper bound is" not in shown and "Credible models: none asked" in shown
