"""Runs (or configurations) -> the feature frame every model reads.

One row per run or configuration. Columns:

* the configuration as the ``runs`` table stores it (`core.workloads.config_columns`):
  ``workload``, the image sides (``depth, height, width``; a 2D workload leaves
  ``depth`` empty), ``batch_size`` and every workload's knobs (those of other
  workloads empty);
* shape terms: ``side`` (the side of the square or cube with as many pixels or
  voxels), ``megavoxels`` (voxels or pixels / 10^6), ``sample_megavoxels``
  (megavoxels x batch), a numeric code of each text knob (`KNOB_CODES`: ``element_bytes``
  of the precision, ``transpose`` of the upsampling);
* architecture terms, GiB, from the closed-form description (`core.analytical`):
  ``activation_gib`` (what the backward pass keeps of a batch, in each tensor's
  dtype with mixed precision's cast copies, with the gradients alive at the
  backward pass's largest step and the input batch) and
  ``state_gib`` (float32 weights, their gradients and the optimizer's slots, plus
  the compute-dtype copy of every weight that mixed precision casts) and
  ``workspace_gib`` (the im2col buffers of TensorFlow's own convolution
  gradients, `core.analytical.backprop_workspace_bytes`, sized by the machine's
  L3 cache, ``l3_cache_bytes``, where the run recorded it: large where oneDNN
  does not run the network, absent where it does, so a model learns its weight
  per machine profile). Every knob moves at least one of them, so a model
  reading them can follow a knob it never saw varied, where side, batch and knob
  codes cannot;
* the analytical terms, bytes: the paper's Eq. 1 / Eq. 2, the refined model's
  terms (`core.analytical.REFINED_TERM_COLUMNS`) and ``workspace_bytes``;
* ``l3_cache_bytes``: the machine's L3 cache as TensorFlow reads it (NaN: unknown,
  the workspace then follows the one-image rule);
* from runs only: ``baseline_bytes`` (measured post-import memory) and the
  target ``peak_bytes`` (the kernel's high-water mark, ``peak_hwm_bytes``).

Measured frames are indexed by ``run_id`` so a split can be checked row by row.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from core import workloads
from core.analytical import (
    PAPER_TERM_COLUMNS,
    REFINED_TERM_COLUMNS,
    backprop_workspace_bytes,
    paper_estimate,
    refined_breakdown,
)
from core.errors import ConfigError
from core.units import GIB
from core.workloads.base import WorkloadConfig
from core.workloads.unet3d import UNetConfig

TARGET_COLUMN = "peak_bytes"
BASELINE_COLUMN = "baseline_bytes"
MEASURED_PEAK_COLUMN = "peak_hwm_bytes"
WORKSPACE_COLUMN = "workspace_bytes"
L3_CACHE_COLUMN = "l3_cache_bytes"
OK_STATUS = "ok"
# Every workload's image and knob columns; a model fitted on one workload sees
# the others' as empty (constant), so only its own can vary.
SHAPE_COLUMNS: tuple[str, ...] = tuple(
    column
    for column in workloads.STORED_COLUMNS
    if any(column in module.SHAPE_COLUMNS for module in workloads.WORKLOADS.values())
)
KNOB_COLUMNS: tuple[str, ...] = tuple(
    column for column in workloads.STORED_COLUMNS if column not in SHAPE_COLUMNS
)
# Numeric stand-ins for the text knobs, so every model can take them: knob -> the
# feature column of its declared code (`core.workloads.knobs.KnobCode`).
KNOB_CODES: dict[str, str] = {
    name: knob.code.column for name, knob in workloads.KNOBS.items() if knob.code
}
MEGA = 10**6
# What the shape-only models (symbolic regression, the ML baselines) see of the shape.
SHAPE_INPUTS: tuple[str, ...] = ("side", "megavoxels", "batch_size")
# ... and of the network (the module docstring says what each holds).
ARCHITECTURE_INPUTS: tuple[str, ...] = ("activation_gib", "state_gib", "workspace_gib")


def config_of(row: pd.Series | dict) -> WorkloadConfig:
    """The configuration of one runs row (raises `ConfigError` if it is not a valid one)."""
    return workloads.config_from_row(row)


def equivalent_side(config: WorkloadConfig) -> float:
    """The side of the square (2D) or cube (3D) with as many pixels or voxels."""
    return config.elements ** (1 / len(config.image_shape))


# Remembered: a page predicts the same configurations with every model (ten frames of the
# same rows per Sizing answer) and again on each rerun; a row is a pure function of a
# frozen configuration and the cache size. Callers only read the dict.
@functools.lru_cache(maxsize=8192)
def _config_row(config: WorkloadConfig, l3_cache_bytes: int | None) -> dict[str, object]:
    paper = paper_estimate(config)
    refined = refined_breakdown(config, framework_bytes=0).parts()
    row: dict[str, object] = {
        **workloads.config_columns(config),
        "side": equivalent_side(config),
        "megavoxels": config.elements / MEGA,
        "sample_megavoxels": config.elements * config.batch_size / MEGA,
        **_knob_codes(config),
        "paper_activation_bytes": paper.activation_bytes,
        "paper_weight_bytes": paper.weight_bytes,
    }
    row.update({name: refined[name] for name in REFINED_TERM_COLUMNS})
    row[WORKSPACE_COLUMN] = backprop_workspace_bytes(config, l3_cache_bytes)
    row[L3_CACHE_COLUMN] = np.nan if l3_cache_bytes is None else float(l3_cache_bytes)
    row.update(_architecture_terms(refined, row[WORKSPACE_COLUMN]))
    return row


def _knob_codes(config: WorkloadConfig) -> dict[str, float]:
    """Each text knob's code (`KNOB_CODES`): ``element_bytes`` 2 for mixed precision; NaN
    where ``config``'s network has no such knob (an AlexNet's ``transpose``)."""
    codes: dict[str, float] = {}
    for name, column in KNOB_CODES.items():
        value = getattr(config, name, None)
        code = workloads.KNOBS[name].code
        codes[column] = np.nan if value is None or code is None else code.number(value)
    return codes


def _architecture_terms(refined: dict[str, int], workspace_bytes: int) -> dict[str, float]:
    kept_bytes = refined["activation_bytes"] + refined["backward_bytes"] + refined["input_bytes"]
    # The refined weights include mixed precision's compute-dtype copies.
    state_bytes = refined["weight_bytes"] + refined["gradient_bytes"] + refined["optimizer_bytes"]
    return {
        "activation_gib": kept_bytes / GIB,
        "state_gib": state_bytes / GIB,
        "workspace_gib": workspace_bytes / GIB,
    }


def config_frame(
    configs: Sequence[WorkloadConfig],
    l3_cache_bytes: int | None | Sequence[int | None] = None,
) -> pd.DataFrame:
    """Feature rows for configurations to predict (no measured columns but a NaN baseline).

    l3_cache_bytes : the L3 cache of the machine they would run on, one for all or
    one per configuration (`core.machine.l3_cache_bytes`; None: unknown).
    """
    caches = (
        tuple(l3_cache_bytes)
        if isinstance(l3_cache_bytes, Sequence)
        else (l3_cache_bytes,) * len(configs)
    )
    return _config_frame(tuple(configs), caches).copy()


# Remembered: every model of an answer predicts the same configurations (a Sizing page's
# first render builds the frame of its ~300 slider configurations once per model, ten
# times); each caller gets its own copy.
@functools.lru_cache(maxsize=16)
def _config_frame(
    configs: tuple[WorkloadConfig, ...], caches: tuple[int | None, ...]
) -> pd.DataFrame:
    frame = pd.DataFrame(
        [_config_row(config, cache) for config, cache in zip(configs, caches, strict=True)]
    )
    if frame.empty:
        empty = _config_row(UNetConfig((16, 16, 16)), None)
        frame = pd.DataFrame(columns=list(empty)).astype(float)
    frame[BASELINE_COLUMN] = np.nan
    return frame


def _known_cache(value: object) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def measured_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """Feature rows of the ``ok`` runs that have a high-water mark, indexed by ``run_id``.

    runs : a frame with the ``runs`` table's columns (`core.store.load_runs`).
    Adds ``baseline_bytes`` and the target ``peak_bytes`` (bytes).
    """
    required = ("run_id", "status", MEASURED_PEAK_COLUMN, BASELINE_COLUMN, "batch_size")
    missing = [name for name in required if name not in runs.columns]
    if missing:
        raise ConfigError(
            f"runs frame lacks column(s) {', '.join(missing)}; load it with core.store.load_runs"
        )
    usable = runs[(runs["status"] == OK_STATUS) & runs[MEASURED_PEAK_COLUMN].notna()]
    configs = [config_of(row) for _, row in usable.iterrows()]
    caches = (
        [_known_cache(value) for value in usable[L3_CACHE_COLUMN]]
        if L3_CACHE_COLUMN in usable
        else None
    )
    frame = config_frame(configs, caches)
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
    """Inputs of the symbolic and ML models: shape, architecture terms, the knobs that vary."""
    return [*SHAPE_INPUTS, *ARCHITECTURE_INPUTS, *varying_knobs(frame)]


def analytical_columns() -> list[str]:
    """Every analytical term column (bytes), paper's first, the workspace last."""
    return [*PAPER_TERM_COLUMNS, *REFINED_TERM_COLUMNS, WORKSPACE_COLUMN]
