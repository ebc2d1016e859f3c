"""Runs (or configurations) -> the feature frame every model reads.

One row per run or configuration. Columns:

* the configuration: ``depth, height, width, batch_size`` and the knobs
  (``base_filters, levels, in_channels, classes, precision, upsampling``);
* shape terms: ``side`` (cube root of the voxel count, the side of the cube
  with as many voxels), ``megavoxels`` (voxels / 10^6), ``sample_megavoxels``
  (megavoxels x batch), numeric knob codes ``element_bytes`` and ``transpose``;
* the analytical terms, bytes: the paper's Eq. 1 / Eq. 2 and the refined model's
  terms (`core.analytical.REFINED_TERM_COLUMNS`);
* from runs only: ``baseline_bytes`` (measured post-import memory) and the
  target ``peak_bytes`` (the kernel's high-water mark, ``peak_hwm_bytes``).

Measured frames are indexed by ``run_id`` so a split can be checked row by row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from core.analytical import (
    PAPER_TERM_COLUMNS,
    REFINED_TERM_COLUMNS,
    paper_estimate,
    refined_breakdown,
)
from core.errors import ConfigError
from core.workloads.base import BYTES_PER_ELEMENT
from core.workloads.unet3d import NETWORK_KNOBS, SHAPE_COLUMNS, UNetConfig, config_columns

TARGET_COLUMN = "peak_bytes"
BASELINE_COLUMN = "baseline_bytes"
MEASURED_PEAK_COLUMN = "peak_hwm_bytes"
OK_STATUS = "ok"
KNOB_COLUMNS = NETWORK_KNOBS
# Numeric stand-ins for the two text knobs, so every model can take them.
KNOB_CODES: dict[str, str] = {"precision": "element_bytes", "upsampling": "transpose"}
MEGA = 10**6
# What the shape-only models (symbolic regression, the ML baselines) see.
SHAPE_INPUTS: tuple[str, ...] = ("side", "megavoxels", "batch_size")


def config_of(row: pd.Series | dict) -> UNetConfig:
    """The `UNetConfig` of one runs row (raises `ConfigError` if it is not a valid one)."""
    return UNetConfig(
        image_shape=(int(row["depth"]), int(row["height"]), int(row["width"])),
        batch_size=int(row["batch_size"]),
        base_filters=int(row["base_filters"]),
        levels=int(row["levels"]),
        in_channels=int(row["in_channels"]),
        classes=int(row["classes"]),
        precision=str(row["precision"]),
        upsampling=str(row["upsampling"]),
    )


def _config_row(config: UNetConfig) -> dict[str, object]:
    paper = paper_estimate(config)
    refined = refined_breakdown(config, framework_bytes=0).parts()
    row: dict[str, object] = {
        **config_columns(config),
        "side": config.elements ** (1 / 3),
        "megavoxels": config.elements / MEGA,
        "sample_megavoxels": config.elements * config.batch_size / MEGA,
        "element_bytes": BYTES_PER_ELEMENT[config.precision],
        "transpose": int(config.upsampling == "transpose"),
        "paper_activation_bytes": paper.activation_bytes,
        "paper_weight_bytes": paper.weight_bytes,
    }
    row.update({name: refined[name] for name in REFINED_TERM_COLUMNS})
    return row


def config_frame(configs: Sequence[UNetConfig]) -> pd.DataFrame:
    """Feature rows for configurations to predict (no measured columns but a NaN baseline)."""
    frame = pd.DataFrame([_config_row(config) for config in configs])
    if frame.empty:
        frame = pd.DataFrame(columns=list(_config_row(UNetConfig((16, 16, 16))))).astype(float)
    frame[BASELINE_COLUMN] = np.nan
    return frame


def measured_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """Feature rows of the ``ok`` runs that have a high-water mark, indexed by ``run_id``.

    runs : a frame with the ``runs`` table's columns (`core.store.load_runs`).
    Adds ``baseline_bytes`` and the target ``peak_bytes`` (bytes).
    """
    required = ("run_id", "status", MEASURED_PEAK_COLUMN, BASELINE_COLUMN, *SHAPE_COLUMNS,
                "batch_size", *KNOB_COLUMNS)  # fmt: skip
    missing = [name for name in required if name not in runs.columns]
    if missing:
        raise ConfigError(
            f"runs frame lacks column(s) {', '.join(missing)}; load it with "
            "core.store.load_runs"
        )
    usable = runs[(runs["status"] == OK_STATUS) & runs[MEASURED_PEAK_COLUMN].notna()]
    configs = [config_of(row) for _, row in usable.iterrows()]
    frame = config_frame(configs)
    frame.index = pd.Index(usable["run_id"].to_numpy(), name="run_id")
    frame[BASELINE_COLUMN] = usable[BASELINE_COLUMN].to_numpy(dtype=float)
    frame[TARGET_COLUMN] = usable[MEASURED_PEAK_COLUMN].to_numpy(dtype=float)
    return frame


def varying_knobs(frame: pd.DataFrame) -> list[str]:
    """Numeric columns of the knobs that take more than one value in ``frame``."""
    varying = []
    for knob in KNOB_COLUMNS:
        if knob in frame and frame[knob].nunique() > 1:
            varying.append(KNOB_CODES.get(knob, knob))
    return varying


def model_inputs(frame: pd.DataFrame) -> list[str]:
    """Inputs of the shape-only models: side, megavoxels, batch and the knobs that vary."""
    return [*SHAPE_INPUTS, *varying_knobs(frame)]


def analytical_columns() -> list[str]:
    """Every analytical term column (bytes), paper's first."""
    return [*PAPER_TERM_COLUMNS, *REFINED_TERM_COLUMNS]
