"""A Slurm sweep's points as the dashboard shows them: each point's state and job, counted.

`profiling.cluster_sweep` writes each point's label, state and Slurm job into the
sweep lock as it polls; `point_states` reads them back (leaving out anything
another process wrote that is not a point), `cluster_progress` counts them and
`point_table` lists them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

# The states of a cluster sweep's points (`profiling.cluster_sweep`), in the order a
# point passes through them, and how the dashboard names each.
POINT_STATES = {"new": "to submit", "queued": "queued", "running": "running", "done": "done"}
# `profiling.slurm_points.SlurmOptions.describe`: "Slurm partition debug, account a".
SLURM_EXECUTOR_PREFIX = "Slurm "


@dataclass(frozen=True)
class PointState:
    """One point of a cluster sweep: its label (``32 batch 2``), its state, its Slurm job."""

    label: str
    state: str  # a key of POINT_STATES
    job_id: str | None = None


def runs_on_slurm(executor: str | None) -> bool:
    """Whether a sweep lock's ``executor`` (`sweeplock.Holder.executor`) is a Slurm partition."""
    return (executor or "").startswith(SLURM_EXECUTOR_PREFIX)


@dataclass(frozen=True)
class ClusterProgress:
    """How many of a cluster sweep's points are in each state."""

    new: int
    queued: int
    running: int
    done: int

    @property
    def total(self) -> int:
        return self.new + self.queued + self.running + self.done

    @property
    def fraction_done(self) -> float:
        return self.done / self.total if self.total else 0.0

    @property
    def text(self) -> str:
        """``2 queued · 1 running · 3 done of 6``; points not submitted yet only when any are."""
        parts = [f"{self.new} to submit"] if self.new else []
        parts += [f"{self.queued} queued", f"{self.running} running", f"{self.done} done"]
        return " · ".join(parts) + f" of {self.total}"


def point_states(raw: Any) -> tuple[PointState, ...]:
    """A sweep lock's ``point_states`` as `PointState`s; what another process wrote that is
    not a point (no label, an unknown state) is left out rather than trusted."""
    if not isinstance(raw, list):
        return ()
    points = []
    for entry in raw:
        if not isinstance(entry, dict) or entry.get("state") not in POINT_STATES:
            continue
        if not isinstance(entry.get("label"), str):
            continue
        job_id = entry.get("job_id")
        points.append(
            PointState(entry["label"], entry["state"], None if job_id is None else str(job_id))
        )
    return tuple(points)


def cluster_progress(points: tuple[PointState, ...]) -> ClusterProgress:
    """How many of ``points`` are to submit, queued, running and done."""
    count = {state: sum(point.state == state for point in points) for state in POINT_STATES}
    return ClusterProgress(
        new=count["new"], queued=count["queued"], running=count["running"], done=count["done"]
    )


def point_table(points: tuple[PointState, ...]) -> pd.DataFrame:
    """One row per point: ``Point``, ``State`` (as `POINT_STATES` names it), ``Slurm job``."""
    return pd.DataFrame(
        {
            "Point": [point.label for point in points],
            "State": [POINT_STATES[point.state] for point in points],
            "Slurm job": [point.job_id or "" for point in points],
        }
    )
