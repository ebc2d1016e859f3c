"""What a first start says about the bundled measurements: plain words, no Streamlit.

A dashboard pointed at a database that does not exist yet creates it filled
with the runs memplan ships (`core.database.BUNDLED_EXPORTS`, described in
``data/REFERENCE.md``) and says so in one line; one pointed at an existing
database without runs offers to load them (`dashboard.first_start`).
"""

from __future__ import annotations

import pandas as pd

from core import profiles
from presentation import workload_labels

REFERENCE_DOC = "data/REFERENCE.md"


def _per_workload(runs: pd.DataFrame) -> str:
    """``3D U-Net (IntelAI/unet) 1,000, AlexNet 234``: how many runs of each workload."""
    per_workload = workload_labels.with_workload(runs)[workload_labels.WORKLOAD_COLUMN]
    counts = per_workload.value_counts()
    return ", ".join(f"{workload_labels.title(name)} {count:,}" for name, count in counts.items())


def bundled_summary(runs: pd.DataFrame) -> str:
    """``1,234 runs: 3D U-Net (IntelAI/unet) 1,000, AlexNet 234, on 4 machines``."""
    parts = _per_workload(runs)
    machine_count = len(profiles.profiles_in(runs)) if "machine_profile" in runs else 0
    where = f", on {machine_count} machine profiles" if machine_count > 1 else ""
    return f"{len(runs):,} runs: {parts}{where}"


def gpu_summary(gpu_runs: pd.DataFrame) -> str:
    """``50 runs of GPU memory: 3D U-Net (IntelAI/unet) 42, AlexNet 8, on NVIDIA H200``."""
    parts = _per_workload(gpu_runs)
    devices = " and ".join(sorted(gpu_runs["gpu_name"].dropna().astype(str).unique()))
    return f"{len(gpu_runs):,} runs of GPU memory: {parts}" + (f", on {devices}" if devices else "")


def seeded_note(db_path: str, runs: pd.DataFrame, gpu_runs: pd.DataFrame | None = None) -> str:
    """The one line a page shows when the dashboard just created ``db_path`` from the bundle:
    its host-RAM runs and, where it holds any, its GPU-memory runs (``gpu_runs``)."""
    gpu = f"; {gpu_summary(gpu_runs)}" if gpu_runs is not None and not gpu_runs.empty else ""
    return (
        f"New database {db_path}: seeded from the bundled measurements "
        f"({bundled_summary(runs)}{gpu}; how each was measured: {REFERENCE_DOC})."
    )


def empty_offer(db_path: str) -> str:
    """What a page says about an existing database that holds no runs."""
    return (
        f"Database {db_path} holds no runs yet: load the bundled measurements (the runs "
        f"memplan ships, described in {REFERENCE_DOC}) to see every page with data, launch "
        "a sweep from the sidebar, or import runs measured elsewhere."
    )
