"""How well each model predicts held-out runs: the Models page's error table, and its caption.

`error_table` gathers the stored scores (`modeling.stored.tables.load_scores`,
one row per model x split x seed) per model and split kind; `shown_errors` is
that table as the page shows it, headed in words; `errors_text` its cells as
text for an HTML table; `errors_caption` says what each figure is. Nothing here
needs Streamlit.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from modeling.evaluation.splits import EXTRAPOLATION, KNOB, RANDOM
from presentation.report import PAPER_SR_MAPE_PCT
from presentation.text import text_cells

ERROR_COLUMNS = [
    "model",
    "title",
    "random_mape_pct",
    "random_mape_sd",
    "random_r2",
    "random_worst_pct",
    "extrapolation_mape_pct",
    "extrapolation_worst_pct",
    "knob_mape_pct",
    "knob_worst_pct",
    "seeds",
]
# The shown table's headers, in order: header -> `error_table` column.
SHOWN_COLUMNS = {
    "model": "title",
    "MAPE %": "random_mape_pct",
    "sd": "random_mape_sd",
    "R²": "random_r2",
    "worst %": "random_worst_pct",
    "extrap. MAPE %": "extrapolation_mape_pct",
    "extrap. worst %": "extrapolation_worst_pct",
    "knob MAPE %": "knob_mape_pct",
    "knob worst %": "knob_worst_pct",
}
KNOB_MAPE = "knob MAPE %"
# Headers shortened so the table fits beside the sidebar at 1024 px (the caption says
# what "ext." and "knob" are).
SHORT_HEADERS = {
    "extrap. MAPE %": "ext. MAPE",
    "extrap. worst %": "ext. worst",
    "knob MAPE %": "knob MAPE",
    "knob worst %": "knob worst",
}


def _split_row(by_split: pd.DataFrame, name: str, split: str) -> dict[str, float]:
    if (name, split) not in by_split.index:
        return {}
    return {key: float(value) for key, value in by_split.loc[(name, split)].items()}


def _model_row(by_split: pd.DataFrame, name: str, title: str) -> dict[str, object]:
    random = _split_row(by_split, name, RANDOM)
    extrapolation = _split_row(by_split, name, EXTRAPOLATION)
    knob = _split_row(by_split, name, KNOB)
    return {
        "model": name,
        "title": title,
        "random_mape_pct": random.get("mape_pct"),
        "random_mape_sd": random.get("mape_sd"),
        "random_r2": random.get("r2"),
        "random_worst_pct": random.get("worst_pct"),
        "extrapolation_mape_pct": extrapolation.get("mape_pct"),
        "extrapolation_worst_pct": extrapolation.get("worst_pct"),
        "knob_mape_pct": knob.get("mape_pct"),
        "knob_worst_pct": knob.get("worst_pct"),
        "seeds": random.get("seeds"),
    }


def error_table(scores: pd.DataFrame, titles: Mapping[str, str]) -> pd.DataFrame:
    """One row per scored model: random-split MAPE mean and sd, R², worst; extrapolation and
    knob-split MAPE and worst (NaN where the evaluation has no such split).

    scores : the ``scores`` table (`modeling.stored.tables.load_scores`), one row per
    model x split x seed. Rows follow ``titles``' order, then any other model.
    Columns: `ERROR_COLUMNS`.
    """
    if scores.empty:
        return pd.DataFrame(columns=ERROR_COLUMNS)
    by_split = scores.groupby(["model", "split"]).agg(
        mape_pct=("mape_pct", "mean"),
        mape_sd=("mape_pct", "std"),
        r2=("r2", "mean"),
        worst_pct=("max_ape_pct", "max"),
        seeds=("seed", "nunique"),
    )
    names = [name for name in titles if name in by_split.index.get_level_values(0)]
    names += sorted(set(by_split.index.get_level_values(0)) - set(names))
    rows = [_model_row(by_split, name, titles.get(name, name)) for name in names]
    return pd.DataFrame(rows, columns=ERROR_COLUMNS)


def shown_errors(table: pd.DataFrame) -> pd.DataFrame:
    """`error_table` headed as the page shows it (`SHOWN_COLUMNS`), models by their titles.

    The knob split's columns exist only where the runs vary a network knob:
    a column empty for every model is left out.
    """
    shown = pd.DataFrame({header: table[column] for header, column in SHOWN_COLUMNS.items()})
    return shown.dropna(axis="columns", how="all")


def errors_text(shown: pd.DataFrame) -> pd.DataFrame:
    """`shown_errors` as text for an HTML table, which wraps a long model title where the
    canvas grid cut it at 1024 px (issue 26): R² to three decimals, percentages to one,
    a missing figure as MISSING_CELL, titles escaped (they are read from the database),
    headers shortened (`SHORT_HEADERS`)."""
    formats = {header: "{:.3f}" if header == "R²" else "{:.1f}" for header in shown.columns}
    del formats["model"]
    return text_cells(shown, formats).rename(columns=SHORT_HEADERS)


def errors_caption(table: pd.DataFrame, shown: pd.DataFrame) -> str:
    """What `shown_errors`' figures are, with the seeds ``table`` was scored over."""
    knob = (
        ", and, where the runs vary a network knob, the knob split (one knob value left "
        "out at a time, tested on its runs: knob, in %, mean over the values left out)"
        if KNOB_MAPE in shown
        else ""
    )
    return (
        f"MAPE: mean absolute percentage error on held-out points, random 70/30 splits by "
        f"configuration ({table['seeds'].max():.0f} seeds, the paper's protocol; its symbolic "
        f"regression reached {PAPER_SR_MAPE_PCT}%), and the extrapolation split (fit on the "
        f"smaller images, tested on the largest: ext., in %){knob}. sd: spread over seeds. "
        "Worst: the largest single error."
    )
