"""Helpers for the page tests: charts as frames, databases without models, AlexNet runs,
and AlexNet runs of a second machine profile."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from streamlit.testing.v1 import AppTest

from core import database, store
from core.analytical import refined_breakdown
from core.profiles import MachineProfile, profile_of
from core.workloads.alexnet import AlexNetConfig
from dashboard import machine_panel
from memplan import cli as memplan_cli
from modeling import machines
from presentation.text import WORD_JOINER
from profiling import exchange
from tests.conftest import build_record

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
    ``memplan evaluate``. ``keep_runs=0`` leaves it without runs.
    """
    database.ensure_database(path)
    runs = pq.read_table(database.BUNDLED_RUNS)
    kept = runs.slice(1) if keep_runs is None else runs.slice(0, keep_runs)
    if kept.num_rows:
        subset = path.with_name("runs_subset.parquet")
        pq.write_table(kept, subset)
        exchange.import_runs(path, subset)
    return path


# --- synthetic AlexNet runs -------------------------------------------------------------

# Square sides x batch sizes measured, plus one oblong image and one run out of memory.
ALEXNET_SIDES = (96, 128, 160, 192, 224)
ALEXNET_BATCHES = (1, 2, 4, 8)
ALEXNET_OBLONG = (227, 200)
ALEXNET_HOST = "alexnet-host"
ALEXNET_SAMPLES = 20  # timeline samples per measured run
# What the refined closed form misses on the reference machine, and its framework.
RUNTIME_BYTES, FRAMEWORK_BYTES = 200 * 2**20, 700 * 2**20
# A second kind of machine: an AMD EPYC with AVX2 only and oneDNN off (TensorFlow's default
# there), where the same AlexNet peaks `OTHER_MACHINE_SCALE` times higher (the synthetic
# runs' first machine is build_record's "Test CPU", an Intel with AVX-512, oneDNN on).
OTHER_MACHINE = {
    "cpu_vendor": "AMD",
    "cpu_model": "AMD EPYC 7B13",
    "cpu_isa": "avx2",
    "cpu_cores": 2,
    "usable_cores": 2,
    "intra_op_threads": 2,
    "hostname": "vm",
    "onednn_enabled": False,
}
OTHER_MACHINE_SCALE = 2.5
ALEXNET_COLUMNS = {
    "workload": "alexnet",
    "depth": None,
    "base_filters": None,
    "levels": None,
    "upsampling": None,
    "in_channels": 3,
    "classes": 1000,
}


def alexnet_record(
    height: int, width: int, batch: int, noise: float = 0.0, scale: float = 1.0, **overrides: Any
):
    """A measured AlexNet run: the refined closed form plus a constant, as a real one reads.

    scale : how many times that peak this run's machine reaches (`OTHER_MACHINE_SCALE`).
    """
    config = AlexNetConfig((height, width), batch)
    peak = int(
        (refined_breakdown(config, FRAMEWORK_BYTES).total_bytes + RUNTIME_BYTES)
        * (1 + noise)
        * scale
    )
    values = ALEXNET_COLUMNS | {
        "height": height,
        "width": width,
        "batch_size": batch,
        "peak_hwm_bytes": peak,
        "peak_sampled_bytes": int(peak * 0.995),
        "baseline_bytes": FRAMEWORK_BYTES,
        "hostname": ALEXNET_HOST,
        "timeline": ALEXNET_SAMPLES,
    }
    return build_record(**(values | overrides))


def add_alexnet_runs(path: Path, seed: int = 0, scale: float = 1.0, **machine: Any) -> int:
    """Store synthetic AlexNet runs in ``path`` through the real store; returns how many.

    Every square side x batch, one oblong image and one point that ran out of memory:
    nothing here is a measurement, only realistic numbers for the pages to show.
    ``machine`` overrides the machine columns (`OTHER_MACHINE`), ``scale`` its peaks.
    """
    rng = np.random.default_rng(seed)
    records = [
        alexnet_record(
            side, side, batch, noise=0.01 * rng.standard_normal(), scale=scale, **machine
        )
        for side in ALEXNET_SIDES
        for batch in ALEXNET_BATCHES
    ]
    records.append(alexnet_record(*ALEXNET_OBLONG, 4, scale=scale, **machine))
    records.append(
        alexnet_record(
            224,
            224,
            64,
            status="oom",
            peak_hwm_bytes=None,
            peak_sampled_bytes=None,
            timeline=0,
            **machine,
        )
    )
    store.insert_runs(path, records)  # one transaction: a connection a run was ~25 ms each
    return len(records)


def this_machine_is(monkeypatch: pytest.MonkeyPatch, profile: MachineProfile) -> None:
    """Make ``profile`` this machine's, whatever CPU runs the test, for the sizing default
    (`modeling.machines.choose_machine`) and the pages' machine selector; asked about
    another framework, this machine is the same CPU on that framework (`on_framework`)."""

    def here(precision: str = "float32", framework: str = "tensorflow") -> MachineProfile:
        return profile if framework == profile.framework else on_framework(profile, framework)

    for module in (machines, machine_panel):
        monkeypatch.setattr(module, "this_profile", here)


def on_framework(profile: MachineProfile, framework: str) -> MachineProfile:
    """``profile``'s machine on ``framework``: a torch profile has no TensorFlow, Keras or
    oneDNN fact (`core.profiles.profile_of`)."""
    if framework == "tensorflow":
        return replace(profile, framework=framework, framework_version=None)
    return replace(
        profile,
        framework=framework,
        framework_version="2.13.0+cpu",
        tensorflow_version=None,
        keras_version=None,
        onednn_enabled=None,
    )


def profile_key(**machine: Any) -> str:
    """The machine profile key of a synthetic run with these machine columns."""
    return profile_of(build_record(**machine).row()).key


def profile_label(**machine: Any) -> str:
    """How the pages name the machine profile of a synthetic run with these machine columns."""
    return profile_of(build_record(**machine).row()).label


ALEXNET_MODELS = ("paper", "refined", "least_squares", "symbolic")


def evaluate_alexnet(
    path: Path, machine: str | None = None, models: tuple[str, ...] = ALEXNET_MODELS
) -> None:
    """Fit and store AlexNet models on ``path``'s AlexNet runs, with smoke-test settings.

    Each machine profile with enough runs gets its own evaluation; machine: only that
    profile's (a key). models: which to fit (the symbolic regression is most of the cost,
    ~7 of ~9 CPU s).
    """
    code = memplan_cli.main(
        [
            "evaluate",
            *(["--machine", machine] if machine else []),
            "--db",
            str(path),
            "--workload",
            "alexnet",
            "--quick",
            "--seeds",  # one random split: no page test counts the splits (3: ~2.3 CPU s more)
            "1",
            "--extrapolation-seeds",
            "1",
            "--models",
            *models,
        ]
    )
    assert code == 0


def shown(markdown: str) -> str:
    """What Streamlit shows for ``markdown`` made by `presentation.text.plain`.

    The invisible word joiners that keep addresses from becoming links are left out.
    """
    return re.sub(r"\\(.)", r"\1", markdown).replace(WORD_JOINER, "")
