"""A setting whose every run on a profile ended in error gets the reason, not a prediction
(issue 26, finding 5): mixed_float16 on the AVX2 AMD knob profile, where TensorFlow has no
CPU float16 MaxPool3D kernel."""

from __future__ import annotations

import pandas as pd
import pytest

from core import database, workloads
from core.workloads.unet3d import UNetConfig
from modeling import trainable
from modeling.decision import ModelEstimate, decide, evidence_for
from presentation import sizing_text, sizing_view

GIB = 2**30
KNOB_RUNS = database.BUNDLED_EXPORTS[3][0]  # the knob design, oneDNN off: 259d139078
QUESTION = UNetConfig((128, 128, 128), 2, precision="mixed_float16")


@pytest.fixture(scope="module")
def stored_error() -> str:
    runs = pd.read_parquet(KNOB_RUNS)
    return str(runs.loc[runs["status"] == "error", "message"].iloc[0])


def run(config: UNetConfig, status: str, message: str = "") -> dict:
    peak = None if status != "ok" else 5 * GIB
    return {
        **workloads.config_columns(config),
        "status": status,
        "message": message,
        "peak_hwm_bytes": peak,
        "run_id": f"{config.precision}-{status}",
    }


def runs_with(stored_error: str, *float16_statuses: str) -> pd.DataFrame:
    rows = [run(UNetConfig((64, 64, 64), 1), "ok"), run(UNetConfig((64, 64, 64), 2), "ok")]
    for index, status in enumerate(float16_statuses):
        config = UNetConfig((32 + 16 * index,) * 3, 1, precision="mixed_float16")
        rows.append(run(config, status, stored_error if status == "error" else ""))
    return pd.DataFrame(rows)


def test_the_stored_error_is_summarised_to_its_exception_dtype_and_kernels(
    stored_error: str,
) -> None:
    assert trainable.error_summary(stored_error) == (
        "InvalidArgumentError: No OpKernel was registered to support Op 'MaxPool3D' for "
        "DT_HALF (CPU kernels: DT_BFLOAT16, DT_FLOAT)"
    )
    assert trainable.error_summary("child died of SIGSEGV (signal 11):\n") == (
        "child died of SIGSEGV (signal 11)"
    )


def test_a_value_whose_every_telling_run_failed_is_untrainable(stored_error: str) -> None:
    runs = runs_with(stored_error, "error", "error", "skipped", "interrupted")

    found = trainable.untrainable(runs, "unet3d", {"precision": "mixed_float16"})

    assert found is not None and found.runs == 2
    assert found.reason.startswith(
        "Precision mixed_float16 does not train on this machine profile: all 2 of its runs "
        "there ended in error (InvalidArgumentError: No OpKernel"
    )
    assert trainable.untrainable(runs, "unet3d", {}) is None  # float32 trains
    assert list(trainable.failing_values(runs, "unet3d")) == ["precision"]


@pytest.mark.parametrize("trained", ["ok", "oom", "timeout"])
def test_one_run_that_trained_makes_the_value_trainable(stored_error: str, trained: str) -> None:
    runs = runs_with(stored_error, "error", trained)
    assert trainable.untrainable(runs, "unet3d", {"precision": "mixed_float16"}) is None
    assert trainable.failing_values(runs, "unet3d") == {}


def test_the_decision_is_the_reason_not_a_prediction(stored_error: str) -> None:
    runs = runs_with(stored_error, "error", "error")
    estimate = ModelEstimate("symbolic", "symbolic", 4.1 * GIB, 4.95 * GIB, False, "", 0.5)

    decision = decide([estimate], "symbolic", QUESTION, evidence_for(QUESTION, runs), 64 * GIB, 0.2)

    assert decision.estimate is None and not decision.fits
    assert sizing_text.headline(decision) == "Does not train on this machine profile"
    assert sizing_text.headline_tone(decision) == "error"
    sentence = sizing_text.decision_sentence(decision, "128^3", "for AMD EPYC")
    assert sentence.startswith("Precision mixed_float16 does not train")
    assert "GiB" not in sentence and "fit" not in sizing_text.spread(decision)


def test_the_page_offers_the_value_marked_as_failing(stored_error: str) -> None:
    choices = sizing_view.choices_for("unet3d", ["symbolic"], runs_with(stored_error, "error"))

    assert choices.knob_label("precision", "mixed_float16") == "mixed_float16 (fails here)"
    assert choices.knob_label("precision", "float32") == "float32"
    assert "fails here" in choices.knob_help("precision")
    assert "fails here" not in choices.knob_help("base_filters")
