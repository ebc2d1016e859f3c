"""Which step count an evaluation fits: only runs of one step count are fitted together.

A run's peak depends on how many training steps it ran (the first steps allocate
what later ones reuse; a 1-step smoke test is not a 6-step measurement), and the
models do not learn steps: so an evaluation keeps the usable runs of *one* step
count and leaves the others out, saying how many and at which steps. The step
count is the one asked for (``memplan evaluate --steps N``), else the one with
the most distinct configurations among the runs (on a tie the larger step
count: the longer run is the production measurement).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from modeling.errors import ModelingError
from modeling.evaluation.splits import point_ids


@dataclass(frozen=True)
class StepsChoice:
    """The step count an evaluation fits, the runs at it, and the runs it leaves out.

    steps : training steps of every run kept.
    run_ids : the usable runs at ``steps`` (the feature frame's index).
    left_out : other step count -> how many usable runs at it were not fitted.
    """

    steps: int
    run_ids: tuple[str, ...]
    left_out: Mapping[int, int] = field(default_factory=dict)

    @property
    def n_left_out(self) -> int:
        return sum(self.left_out.values())


def _steps_by_run(frame: pd.DataFrame, steps_of: pd.Series) -> pd.Series:
    """Each usable run's step count, aligned with ``frame``; refused where one is unknown."""
    aligned = steps_of.reindex(frame.index)
    unknown = aligned[aligned.isna()].index.tolist()
    if unknown:
        raise ModelingError(f"no step count known for run(s) {', '.join(map(str, unknown[:5]))}")
    return aligned.astype(int)


def configurations_by_steps(frame: pd.DataFrame, steps_of: pd.Series) -> dict[int, int]:
    """Step count -> distinct configurations measured at it, among ``frame``'s runs.

    frame : feature rows indexed by run_id (`modeling.features.measured_frame`).
    steps_of : run_id -> training steps (the ``runs`` table's ``steps``).
    """
    if frame.empty:
        return {}
    steps = _steps_by_run(frame, steps_of)
    points = point_ids(frame)
    counted = pd.DataFrame({"steps": steps.to_numpy(), "point": points.to_numpy()})
    return {int(k): int(v) for k, v in counted.groupby("steps")["point"].nunique().items()}


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def describe_steps(runs_by_steps: Mapping[int, int]) -> str:
    """``{6: 39, 1: 4}`` as "39 runs at 6 steps, 4 runs at 1 step" (most steps first)."""
    return ", ".join(
        f"{_plural(n, 'run')} at {_plural(steps, 'step')}"
        for steps, n in sorted(runs_by_steps.items(), reverse=True)
    )


def choose_steps(
    frame: pd.DataFrame, steps_of: pd.Series, requested: int | None = None
) -> StepsChoice:
    """The step count to fit ``frame``'s runs at, and which runs that keeps and leaves out.

    requested : the step count asked for; None picks the one with the most distinct
        configurations (ties: the larger step count).
    Raises `ModelingError` when there are no runs, or none at ``requested``.
    """
    if frame.empty:
        raise ModelingError("no usable runs to choose a step count from")
    steps = _steps_by_run(frame, steps_of)
    runs_at = {int(k): int(v) for k, v in steps.value_counts().items()}
    if requested is None:
        configurations = configurations_by_steps(frame, steps_of)
        chosen = max(configurations, key=lambda s: (configurations[s], s))
    elif requested in runs_at:
        chosen = requested
    else:
        raise ModelingError(
            f"no usable runs at {requested} steps; the usable runs are "
            f"{describe_steps(runs_at)}: pass one of those to --steps"
        )
    kept = tuple(str(run_id) for run_id in frame.index[steps.to_numpy() == chosen])
    left_out = {s: n for s, n in runs_at.items() if s != chosen}
    return StepsChoice(steps=chosen, run_ids=kept, left_out=left_out)
