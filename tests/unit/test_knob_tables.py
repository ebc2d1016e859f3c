"""A knob declared in its workload module alone shows up in every table of knobs.

docs/workloads.md says what a new knob touches: the workload module (+ a migration when
its ``runs`` column is new). This proves it the way a new knob would arrive: a fresh
interpreter declares a scratch knob on the U-Net module only (its `Knob` in ``KNOBS``,
the ``Config`` field, the Sizing page's offer in ``LABELS``), has the registry read the
declarations again, and only then imports every module that tabulates knobs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]

# The scratch knob: a text knob (the hardest case: it needs a numeric code for the models).
SCRATCH = """
import dataclasses, importlib, json
from dataclasses import dataclass
import core.workloads
from core.workloads import unet3d
from core.workloads.knobs import Knob, KnobCode, SizingOffer

ACTIVATION = Knob(
    "activation", str, "relu", "Activation", "the blocks' activation function",
    choices=("relu", "elu"),
    code=KnobCode("elu", (("relu", 0), ("elu", 1)), "ELU", "1 for ELU, 0 for ReLU"),
)

@dataclass(frozen=True)
class UNetConfig(unet3d.UNetConfig):
    activation: str = "relu"

unet3d.KNOBS = (*unet3d.KNOBS, ACTIVATION)
unet3d.NETWORK_KNOBS = (*unet3d.NETWORK_KNOBS, "activation")
unet3d.Config = unet3d.UNetConfig = UNetConfig
unet3d.LABELS = dataclasses.replace(
    unet3d.LABELS, sizing_knobs=(*unet3d.LABELS.sizing_knobs, SizingOffer("activation"))
)
importlib.reload(core.workloads)  # the registry, as it is built at start-up

# Nothing below was imported before the declaration: each table is built as at start-up.
from core import records, schema, settings
from dashboard import query_state
from memplan import commands, runs
from modeling import features
from modeling.estimators.formula import KNOWN_NAMES
from presentation import browse, formulas, frameworks_compared, sizing_view
from profiling.sweep import KNOB_LISTS

frame = features.config_frame(
    [UNetConfig((32, 32, 32), activation=value) for value in ("relu", "elu")]
)
offer = sizing_view.offered_knobs("unet3d")[-1]
print(json.dumps({
    "flag": commands.KNOB_FLAGS["activation"].__name__,
    "grid list": KNOB_LISTS["activation"],
    "file key": str(settings.SWEEP_FILE_SETTINGS["activation"].types),
    "last runs column": records.RUN_COLUMNS[-1],
    "DDL": schema.DDL["runs"].rsplit(", ", 1)[-1],
    "feature column": "activation" in features.KNOB_COLUMNS,
    "feature code": features.KNOB_CODES["activation"],
    "codes in frame": frame["elu"].tolist(),
    "model inputs": features.varying_knobs(frame),
    "formula name": "elu" in KNOWN_NAMES,
    "formula words": formulas.input_names()["elu"],
    "sizing offer": [offer.knob, offer.param, offer.label, list(offer.options), offer.help],
    "URL parameter": query_state.KNOB_PARAMS["activation"],
    "Sweeps filter": browse.FILTERS["Activation"],
    "runs table heading": browse.RUNS_TABLE["activation"],
    "framework comparison": "activation" in frameworks_compared.CONFIGURATION_FILTERS,
    "memplan list": runs.LIST_COLUMNS[runs.LIST_COLUMNS.index("precision") + 1],
}))
"""


@pytest.fixture(scope="module")
def tables() -> dict:
    result = subprocess.run(
        [sys.executable, "-c", SCRATCH],
        cwd=REPOSITORY_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


def test_a_knob_declared_in_its_workload_module_alone_is_in_every_table(tables):
    assert tables == {
        "flag": "str",
        "grid list": "activation",
        "file key": "(<class 'str'>,)",
        # a knob declared after schema 8: its nullable column appended, as ALTER TABLE does
        "last runs column": "activation",
        "DDL": "activation VARCHAR)",
        "feature column": True,
        "feature code": "elu",
        "codes in frame": [0, 1],
        "model inputs": ["elu"],
        "formula name": True,
        "formula words": "ELU",
        # no values, URL parameter or help of its own: the declaration's choices and words
        "sizing offer": [
            "activation",
            "activation",
            "Activation",
            ["relu", "elu"],
            "The blocks' activation function.",
        ],
        "URL parameter": "activation",
        "Sweeps filter": "activation",
        "runs table heading": "activation",
        "framework comparison": True,
        "memplan list": "activation",
    }
