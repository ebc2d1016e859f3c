"""Helpers for the Models and Sizing page tests: charts as frames, a database without models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from streamlit.testing.v1 import AppTest

from core import store
from profiling import exchange

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def open_page(page: str, **query_params: str) -> AppTest:
    """Run the app on ``page`` (e.g. ``dashboard/sizing_page.py``), opened with these URL params."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(query_params)
    at.switch_page(page).run()
    assert not at.exception
    return at


def widget(widgets: Any, label: str) -> Any:
    """The one widget of ``widgets`` (e.g. ``at.select_slider``) labelled ``label``."""
    (found,) = [w for w in widgets if w.label == label]
    return found


def charts(at: AppTest) -> list[dict[str, Any]]:
    """Every Vega-Lite chart on the page, in page order: its spec, with each layer's rows.

    Streamlit sends a chart's data beside its spec, as named Arrow tables; each
    layer of the returned spec gets its rows as a ``rows`` DataFrame.
    """
    found = []
    for element in at.get("vega_lite_chart"):
        proto = element.proto
        datasets = {
            named.name: pa.ipc.open_stream(named.data.data).read_all().to_pandas()
            for named in proto.datasets
        }
        spec = json.loads(proto.spec)
        for layer in spec.get("layer", [spec]):
            name = layer.get("data", {}).get("name")
            layer["rows"] = datasets.get(name, pd.DataFrame())
        found.append(spec)
    return found


def layers(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A layered chart's layers by name (``measured``, ``predicted``, ...)."""
    return {layer["name"]: layer for layer in spec["layer"]}


def database_without_evaluation(path: Path, keep_runs: int | None = None) -> Path:
    """A database at ``path`` with the bundled runs but one (or the first ``keep_runs``).

    Dropping a run changes the data's fingerprint, so the bundled evaluation is
    not installed: what a fresh sweep's database looks like before
    ``python -m modeling evaluate``. ``keep_runs=0`` leaves it without runs.
    """
    store.ensure_database(path)
    runs = pq.read_table(store.BUNDLED_RUNS)
    kept = runs.slice(1) if keep_runs is None else runs.slice(0, keep_runs)
    if kept.num_rows:
        subset = path.with_name("runs_subset.parquet")
        pq.write_table(kept, subset)
        exchange.import_runs(path, subset)
    return path
