"""No internal name reaches a reader: the Models and Sweeps pages name models, inputs and
columns by their display names (issue 26: ``hybrid_terms``, ``activation_gib`` beside them).

What a page shows is gathered from its elements: text, widget labels and options, table
headers as shown (a column's label where the page gives one) and text cells, and each
chart's axis, legend and tooltip titles (a tooltip without a title shows its field's
name) and legend entries. Commands (code that starts with ``memplan``, and Markdown code
spans) are typed, not read, and may name flags as they are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

from application import stored
from core import store
from modeling.estimators.catalogue import catalogue
from modeling.estimators.formula import KNOWN_NAMES
from modeling.features import measured_frame
from tests.app.helpers import charts, open_page, widget

CODE_SPAN = re.compile(r"`+[^`]*`+")
ENCODINGS_WITH_LEGENDS = ("color", "shape", "strokeDash", "fill")


def internal_names(db: Path) -> set[str]:
    """Every model's key and every column a frame or formula holds, as the code spells them.

    Only those with an underscore: a one-word name (``side``, ``image``) is also its word.
    """
    runs = store.load_runs(db)
    names = {spec.name for spec in catalogue()}
    names |= set(KNOWN_NAMES) | set(runs.columns) | set(measured_frame(runs).columns)
    names |= {"peak_gib", "predicted_gib", "measured_gib", "upper_gib", "error_pct", "gib"}
    return {name for name in names if "_" in name}


def _unescaped(text: str) -> str:
    """Markdown text as read: code spans out, backslash escapes and word joiners undone."""
    return re.sub(r"\\(.)", r"\1", CODE_SPAN.sub(" ", text)).replace("\u2060", "")


def _chart_words(spec: dict[str, Any]) -> Iterator[str]:
    for layer in spec.get("layer", [spec]):
        rows = layer.get("rows")
        for channel, encoding in layer.get("encoding", {}).items():
            for one in encoding if isinstance(encoding, list) else [encoding]:
                if not isinstance(one, dict):
                    continue
                if channel == "tooltip" or "title" in one:
                    title = one.get("title", one.get("field"))
                    yield from title if isinstance(title, list) else [str(title or "")]
                field = one.get("field")
                if channel in ENCODINGS_WITH_LEGENDS and field and rows is not None:
                    if field in rows:
                        yield from map(str, rows[field].dropna().unique())
                    yield from map(str, one.get("scale", {}).get("domain", []))


def shown_words(at: AppTest) -> Iterator[str]:
    """Every piece of text ``at``'s page shows a reader (see the module docstring)."""
    for kind in ("title", "subheader", "markdown", "caption", "info", "warning", "error"):
        yield from (_unescaped(element.value) for element in at.get(kind))
    yield from (element.value for element in at.get("latex"))
    yield from (code.value for code in at.get("code") if not code.value.startswith("memplan "))
    for kind in ("selectbox", "multiselect", "button_group", "radio", "select_slider"):
        for choice in at.get(kind):
            yield choice.label
            yield from map(str, choice.options)
    for table in at.dataframe:
        labels = json.loads(table.proto.columns or "{}")
        frame = table.value
        yield from (labels.get(str(column), {}).get("label", str(column)) for column in frame)
        for column in frame.select_dtypes(include="object"):
            yield from map(str, frame[column].dropna().unique())
    for table in at.table:  # HTML tables: their cells are escaped Markdown
        frame = table.value
        yield from map(str, frame.columns)
        for column in frame:
            yield from (_unescaped(str(cell)) for cell in frame[column].unique())
    for spec in charts(at):
        yield from _chart_words(spec)


def raw_names(at: AppTest, db: Path) -> dict[str, str]:
    """Internal names the page shows, each with the first text it was found in."""
    pattern = re.compile(r"(?<![\w-])(" + "|".join(sorted(internal_names(db))) + r")(?![\w-])")
    found: dict[str, str] = {}
    for text in shown_words(at):
        for name in pattern.findall(text):
            found.setdefault(name, text[:160])
    return found


def test_the_models_page_shows_no_internal_name(shared_reference_db: Path) -> None:
    at = open_page("dashboard/models_page.py", workload="unet3d")
    # Every model of the evaluation, so each one's title, curve and formula is on the page.
    every = [model.name for model in stored.load_predictors(shared_reference_db, workload="unet3d")]
    widget(at.button_group, "Models").set_value(every).run()
    assert not at.exception

    assert raw_names(at, shared_reference_db) == {}
    # The walk reaches each kind of text: a chart's axis title and legend, a table's header.
    words = set(shown_words(at))
    assert {"peak memory (GiB)", "hybrid: SR given analytical terms", "MAPE %"} <= words


def test_the_sweeps_page_shows_no_internal_name(shared_reference_db: Path) -> None:
    at = open_page("dashboard/sweeps_page.py")

    assert raw_names(at, shared_reference_db) == {}
    assert {"resident memory (GiB)", "kernel high-water mark", "HWM (GiB)"} <= set(shown_words(at))
