"""Which memory a run measured, declared once: host RAM or a GPU's device memory.

A run says its target in ``runs.memory_target`` (schema 9; ``'host_ram'`` for every
older run). Each `MemoryTarget` declares what measuring, storing, checking, fitting
and showing read of it: its name and plain label, its figures (the ``runs`` columns
that hold them, with labels), the one figure answers are about (`MemoryTarget.peak_column`),
what an ``ok`` run must have, the facts a run of it must record, and its plausibility
limit (host RAM: `core.plausibility.MAX_MEMORY_BYTES`; a GPU: the device's own total
bytes, ``gpu_total_bytes``).

Host facts of a device run
--------------------------
A GPU run measured by an outside script (`core.device_runs`: the bundled H200 runs)
never measured host memory and did not record the host: its host figures
(``peak_hwm_bytes``, ``peak_sampled_bytes``, ``baseline_bytes``) are NULL, and so are
the host facts and the child's protocol settings (HOST_FACT_COLUMNS: hostname, CPU
model and cores, RAM, OS, Python and library versions, oneDNN, sampling interval,
timeout, memory limit). They are nullable since schema 9 rather than filled with
placeholders because a placeholder is a guess that every reader of a host column
would have to know to ignore (a 1-core "unknown" machine would be a CPU profile of
its own; a 0-byte memory limit an impossible run). NULL says "not recorded", as it has
for every fact older runs lacked; `core.plausibility` requires those facts of every
host-RAM run, so every host-RAM run still has them all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.units import TIB

HOST_RAM = "host_ram"
GPU_MEMORY = "gpu_memory"
# The runs column that says a run's target.
TARGET_COLUMN = "memory_target"
# The largest host memory a run may report: as `core.plausibility.MAX_MEMORY_BYTES`.
MAX_HOST_BYTES = 64 * TIB
# A GPU of 2026 has at most 288 GB (AMD MI355X); ten times that is not a GPU.
MAX_DEVICE_BYTES = 10 * 288 * 10**9

# The device facts a GPU run records (schema 9), beside ``framework`` and ``framework_version``:
# what a GPU profile is keyed by (`core.profiles`), in `core.device_runs.GpuDevice` order.
DEVICE_FACT_COLUMNS: tuple[str, ...] = (
    "gpu_name",
    "gpu_total_bytes",  # usable memory as the framework reports it, not the marketing size
    "gpu_compute_capability",
    "gpu_driver",
    "cuda_version",
    "cudnn_version",  # dotted: "9.19.0"
    "alloc_conf",  # PYTORCH_CUDA_ALLOC_CONF; "" is the allocator's default
)
# The device figures a GPU run records (schema 9), smallest first, then the context alone.
DEVICE_FIGURE_COLUMNS: tuple[str, ...] = (
    "allocated_peak_bytes",
    "reserved_peak_bytes",
    "nvml_used_peak_bytes",
    "context_bytes",
)
# The host facts and protocol settings only memplan's own child records: NULL for a run
# measured by an outside script on a GPU, required of every host-RAM run.
HOST_FACT_COLUMNS: tuple[str, ...] = (
    "sample_interval_s",
    "timeout_s",
    "memory_limit_bytes",
    "hostname",
    "cpu_model",
    "cpu_cores",
    "total_ram_bytes",
    "os",
    "python_version",
    "tensorflow_version",
    "keras_version",
    "numpy_version",
    "onednn_enabled",
)


@dataclass(frozen=True)
class Figure:
    """One measured figure: the ``runs`` column that holds it (bytes) and its label."""

    column: str
    label: str


@dataclass(frozen=True)
class MemoryTarget:
    """One kind of memory a run can measure, and what every layer reads of it."""

    name: str  # the runs.memory_target value
    label: str  # in plain words, for a first-time visitor: "host RAM", "GPU memory"
    figures: tuple[Figure, ...]
    peak_column: str  # the figure a model fits and an answer bounds
    ok_needs: tuple[str, ...]  # what an ``ok`` run must have (not NULL)
    facts: tuple[str, ...]  # the facts every run of this target records (not NULL)
    limit_column: str | None  # the run's own limit on every figure (None: MAX_HOST_BYTES only)
    limit_words: str

    @property
    def columns(self) -> tuple[str, ...]:
        """The runs columns of this target's figures, in order."""
        return tuple(figure.column for figure in self.figures)

    def limit_bytes(self, row: dict[str, Any]) -> int:
        """The most any figure of ``row`` (a run of this target) may be."""
        if self.limit_column is None:
            return MAX_HOST_BYTES
        return int(row[self.limit_column])


HOST_RAM_TARGET = MemoryTarget(
    name=HOST_RAM,
    label="host RAM",
    figures=(
        Figure("peak_hwm_bytes", "peak resident memory (the child's high-water mark)"),
        Figure("peak_sampled_bytes", "peak sampled resident memory"),
        Figure("baseline_bytes", "resident memory after the framework import"),
    ),
    peak_column="peak_hwm_bytes",
    ok_needs=("peak_sampled_bytes", "peak_hwm_bytes", "baseline_bytes"),
    facts=HOST_FACT_COLUMNS,
    limit_column=None,
    limit_words="64 TiB, the most memory a machine may report",
)
GPU_MEMORY_TARGET = MemoryTarget(
    name=GPU_MEMORY,
    label="GPU memory",
    figures=(
        Figure("allocated_peak_bytes", "allocated peak (what the tensors needed)"),
        Figure("reserved_peak_bytes", "reserved peak (what the caching allocator held)"),
        Figure("nvml_used_peak_bytes", "device memory used at its peak (NVML, as nvidia-smi)"),
        Figure("context_bytes", "CUDA context"),
    ),
    # What the device had in use, context and cached blocks included: no configuration
    # that trained needed more. The GPU model (`modeling.gpu_memory`) predicts the
    # allocated peak and bounds the fit need by this figure (docs/predictions.md).
    peak_column="nvml_used_peak_bytes",
    ok_needs=DEVICE_FIGURE_COLUMNS,
    facts=(*DEVICE_FACT_COLUMNS, "context_bytes"),
    limit_column="gpu_total_bytes",
    limit_words="the device's own total (gpu_total_bytes)",
)
TARGETS: dict[str, MemoryTarget] = {t.name: t for t in (HOST_RAM_TARGET, GPU_MEMORY_TARGET)}
DEFAULT_TARGET = HOST_RAM


def target(name: str | None) -> MemoryTarget:
    """The declared target called ``name`` (None: the default, host RAM)."""
    return TARGETS[DEFAULT_TARGET if name is None else name]


def all_figure_columns() -> tuple[str, ...]:
    """Every target's figure columns, host RAM's first."""
    return tuple(column for t in TARGETS.values() for column in t.columns)
