"""The mixed-precision section of `python -m benchmarks.accuracy`.

How each model predicts the runs not in float32 (bfloat16 on the bundled knob
profile 259d139078): held out at random, and with their precision left out of
the fit (the knob split of the precision: every model fit on float32 only), and
what the policy changed at the configurations measured under both precisions,
measured against the refined closed form's terms and the convolution workspace.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from core.analytical import REFINED_TERM_COLUMNS
from modeling.estimators.catalogue import ModelSpec
from modeling.evaluation.protocol import Evaluation
from modeling.evaluation.splits import KNOB, RANDOM, knob_split_label
from modeling.features import BASELINE_COLUMN, KNOB_COLUMNS, SHAPE_COLUMNS, WORKSPACE_COLUMN
from presentation.report import markdown_table


def _label(named: dict[str, object]) -> str:
    """``64x64x64 batch 2`` from a configuration's image sides and batch."""
    sides = [str(int(named[c])) for c in SHAPE_COLUMNS if c in named and pd.notna(named[c])]
    return f"{'x'.join(sides)} batch {named['batch_size']}"


def _errors_pct(predictions: pd.DataFrame) -> pd.Series:
    return 100 * (predictions["predicted_bytes"] / predictions["measured_bytes"] - 1)


def precision_section(
    evaluation: Evaluation, frame: pd.DataFrame, specs: Sequence[ModelSpec]
) -> str:
    """Each model's error on the mixed-precision runs, held out at random and with their
    precision left out of the fit, and what the policy changed at configurations measured
    under both; empty without mixed-precision runs."""
    mixed = frame.index[frame["precision"] != "float32"]
    if mixed.empty:
        return ""
    held = evaluation.predictions[evaluation.predictions["run_id"].isin(mixed)]
    knob_seeds = evaluation.seeds.get(KNOB, ())
    left_out = [s for s in knob_seeds if knob_split_label(frame, s).startswith("precision")]
    splits = {
        "random": held[held["split"] == RANDOM],
        "precision left out": held[(held["split"] == KNOB) & held["seed"].isin(left_out)],
    }
    rows = []
    for spec in specs:
        row: dict[str, object] = {"model": spec.title}
        for name, part in splits.items():
            errors = _errors_pct(part[part["model"] == spec.name])
            worst = errors.iloc[errors.abs().argmax()] if len(errors) else float("nan")
            row[f"{name}: MAPE %"] = round(errors.abs().mean(), 2)
            row[f"{name}: worst %"] = round(worst, 2)
            row[f"{name}: predictions"] = len(errors)
        rows.append(row)
    pairs = _precision_pairs(frame)
    return "\n".join(
        [
            "## Mixed precision\n",
            f"Error % (predicted / measured - 1) on the {len(mixed)} runs not in float32: "
            "held out by the random splits, and by the knob split that leaves their precision "
            "out (every model fit on the other precision only). Worst: the largest single "
            "error, with its sign.\n",
            markdown_table(pd.DataFrame(rows)),
            "",
            "What the policy changed, GiB, at the configurations measured in both precisions "
            "(medians): the measured peak, the refined closed form's terms (its framework "
            "baseline aside), the convolution gradients' workspace (`workspace_bytes`, not a "
            "closed-form term) and the measured post-import baseline.\n",
            markdown_table(pairs, decimals=3) if not pairs.empty else "(none measured in both)",
        ]
    )


def _precision_pairs(frame: pd.DataFrame) -> pd.DataFrame:
    """Configurations measured in float32 and another precision: peaks and term changes."""
    keys = [c for c in (*SHAPE_COLUMNS, "batch_size", *KNOB_COLUMNS) if c in frame]
    keys = [c for c in keys if c != "precision" and frame[c].notna().all()]
    values = frame.assign(closed_form=frame[list(REFINED_TERM_COLUMNS)].sum(axis=1))
    changed = {"measured": "peak_bytes", "closed form": "closed_form"}
    changed |= {"workspace": WORKSPACE_COLUMN, "baseline": BASELINE_COLUMN}
    medians = values.groupby([*keys, "precision"])[list(changed.values())].median() / 2**30
    rows = []
    for precision in sorted(set(frame["precision"]) - {"float32"}):
        if "float32" not in set(frame["precision"]):
            break
        mixed = medians.xs(precision, level="precision")
        float32 = medians.xs("float32", level="precision")
        both = mixed.merge(float32, left_index=True, right_index=True, suffixes=("", "_f32"))
        for key, row in both.iterrows():
            named = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
            rows.append(
                {
                    "configuration": _label(named),
                    "precision": precision,
                    "float32 GiB": row["peak_bytes_f32"],
                    "GiB": row["peak_bytes"],
                    **{
                        f"change: {name}": row[column] - row[f"{column}_f32"]
                        for name, column in changed.items()
                    },
                }
            )
    return pd.DataFrame(rows)
