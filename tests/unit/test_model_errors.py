"""How well each model predicts held-out runs, as the Models page tabulates it."""

from typing import Any

import numpy as np
import pandas as pd
import pytest

from presentation import model_errors
from presentation.text import MISSING_CELL, plain


def _score(model: str, split: str, seed: int, mape: float, worst: float) -> dict[str, Any]:
    return {
        "model": model,
        "split": split,
        "seed": seed,
        "mape_pct": mape,
        "r2": 0.9,
        "max_ape_pct": worst,
    }


def test_the_error_table_summarises_scores_per_model_and_split() -> None:
    scores = pd.DataFrame(
        [
            _score("symbolic", "random", 0, 2.0, 5.0),
            _score("symbolic", "random", 1, 4.0, 9.0),
            _score("symbolic", "extrapolation", 0, 3.0, 6.0),
            _score("symbolic", "knob", 0, 7.0, 12.0),
            _score("symbolic", "knob", 1, 9.0, 20.0),
            _score("paper", "random", 0, 60.0, 90.0),
            _score("mystery", "random", 0, 1.0, 1.0),
        ]
    )
    table = model_errors.error_table(scores, {"paper": "Paper", "symbolic": "SR"})

    assert table["model"].tolist() == ["paper", "symbolic", "mystery"]
    symbolic = table.set_index("model").loc["symbolic"]
    assert symbolic["title"] == "SR"
    assert symbolic["random_mape_pct"] == pytest.approx(3.0)
    assert symbolic["random_mape_sd"] == pytest.approx(np.std([2.0, 4.0], ddof=1))
    assert symbolic["random_worst_pct"] == pytest.approx(9.0)
    assert symbolic["extrapolation_mape_pct"] == pytest.approx(3.0)
    assert symbolic["seeds"] == 2
    # Mean over the knob values left out, and the worst of them.
    assert symbolic["knob_mape_pct"] == pytest.approx(8.0)
    assert symbolic["knob_worst_pct"] == pytest.approx(20.0)
    assert np.isnan(table.set_index("model").loc["paper", "extrapolation_mape_pct"])
    assert model_errors.error_table(scores.iloc[:0], {}).empty


def test_the_shown_table_is_headed_in_words_and_leaves_out_a_split_never_scored() -> None:
    scores = pd.DataFrame(
        [
            _score("symbolic", "random", 0, 2.0, 5.0),
            _score("symbolic", "random", 1, 4.0, 9.0),
            _score("symbolic", "extrapolation", 0, 3.0, 6.0),
        ]
    )
    table = model_errors.error_table(scores, {"symbolic": "symbolic regression (gplearn)"})
    shown = model_errors.shown_errors(table)

    assert list(shown.columns) == [
        "model",
        "MAPE %",
        "sd",
        "R²",
        "worst %",
        "extrap. MAPE %",
        "extrap. worst %",
    ]
    assert shown["model"].tolist() == ["symbolic regression (gplearn)"]
    caption = model_errors.errors_caption(table, shown)
    assert "(2 seeds, the paper's protocol" in caption and "knob split" not in caption


def test_the_shown_table_is_text_that_wraps_with_short_headers_and_escaped_titles() -> None:
    scores = pd.DataFrame(
        [
            _score("symbolic", "random", 0, 2.04, 5.0),
            _score("symbolic", "extrapolation", 0, 3.0, 6.0),
            _score("paper", "random", 0, 60.0, 90.0),
        ]
    )
    table = model_errors.error_table(scores, {"paper": "*Paper* (Eq. 1)", "symbolic": "SR"})

    text = model_errors.errors_text(model_errors.shown_errors(table))

    # One seed: no spread, so no sd column.
    assert text.columns.tolist() == ["model", "MAPE %", "R²", "worst %", "ext. MAPE", "ext. worst"]
    paper, symbolic = text.to_dict("records")
    # A title from the database shows as written, never as Markdown.
    assert paper["model"] == plain("*Paper* (Eq. 1)") == r"\*Paper\* \(Eq\. 1\)"
    assert paper["ext. MAPE"] == MISSING_CELL
    assert symbolic["MAPE %"] == "2.0" and symbolic["R²"] == "0.900"
