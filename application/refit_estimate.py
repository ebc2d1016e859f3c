"""How long a refit will take, measured, and what the figure is from.

The sidebar offers the refit after a sweep at several settings (`application.refit`:
the full evaluation's seeds, fewer, the smoke test's ``--quick``) and says how long
each takes. The figure is never a constant: it is the model fitting a stored
evaluation of the same workload recorded (the ``fit_seconds`` of its scores and final
models), scaled to the seeds asked, times `WALL_PER_FIT` for the rest of a refit
(measured), from the best evidence there is:

1. an evaluation of the profile to be refit, in this database;
2. else one of another profile of the workload, in this database (its machine named);
3. else, for the smoke test (whose catalogue differs, so no full evaluation speaks for
   it), `MEASURED_QUICK`: a refit timed here, with its command.

`RefitEstimate.source` says which, in words a person can check.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd

from core import database
from core.errors import StoreError
from modeling.evaluation.splits import EXTRAPOLATION, RANDOM

# A smoke-test refit timed on the 2-core Intel Xeon (family 6, model 207) VM, 2026-11-28:
# `memplan evaluate --workload unet3d --machine 9b59349f74 --quick` on the bundled
# database (39 ok runs of that profile) used 113 s of CPU (user 112 s, system 1 s); its
# wall clock was 11 min 48 s because five other sessions kept the load at 12.
MEASURED_QUICK_S = 113.0
MEASURED_QUICK = (
    "`memplan evaluate --workload unet3d --machine 9b59349f74 --quick` on the bundled "
    "runs used 113 s of CPU on a 2-core Intel Xeon (11 min 48 s of wall clock at load 12)"
)
# A refit takes longer than the fits its evaluation records: splitting, predicting, the
# bounds' evidence and storing. Measured on that same quick refit: 708 s of wall clock over
# 405 s of recorded fitting.
WALL_PER_FIT = 1.75

_EVALUATIONS_SQL = """
SELECT e.evaluation_id, e.machine_profile, e.created_at, e.command, e.n_runs, e.seeds_json,
    (SELECT sum(s.fit_seconds) FROM scores s WHERE s.evaluation_id = e.evaluation_id)
        AS scoring_s,
    (SELECT sum(m.fit_seconds) FROM models m WHERE m.evaluation_id = e.evaluation_id)
        AS final_s
FROM evaluations e WHERE e.workload = ? ORDER BY e.created_at DESC
"""


@dataclass(frozen=True)
class RefitEstimate:
    """A refit's expected duration (None: nothing to go by) and what it is from."""

    seconds: float | None
    source: str

    def text(self) -> str:
        """``"~25 min, from ..."``: what the sidebar's refit choice says."""
        if self.seconds is None:
            return f"duration unknown: {self.source}"
        return f"~{duration_text(self.seconds)}, {self.source}"


def duration_text(seconds: float) -> str:
    """``"40 s"``, ``"3 min"``, ``"1 h 5 min"``: a duration rounded for a person."""
    if seconds < 90:
        return f"{max(1, round(seconds / 10) * 10) if seconds >= 10 else round(seconds)} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def stored_fits(db_path: Path, workload: str) -> pd.DataFrame:
    """The evaluations of ``workload`` in ``db_path``, newest first, with the seconds their
    scoring fits (``scoring_s``) and final models (``final_s``) took; empty when none."""
    try:
        with database.connect(db_path, read_only=True) as con:
            return con.execute(_EVALUATIONS_SQL, [workload]).df()
    except (StoreError, duckdb.Error):
        return pd.DataFrame()  # no results tables to read: nothing to go by


def fits_scale(seeds_json: str, seeds: int, extrapolation_seeds: int) -> float:
    """How many more (or fewer) scoring fits ``seeds`` random and ``extrapolation_seeds``
    extrapolation seeds make than the evaluation whose seeds are ``seeds_json``.

    The random kind takes ``seeds``, extrapolation its own; the others do not follow the
    seeds (the bounds' cross-validation and forward folds, one knob split per value).
    """
    recorded: dict[str, list[int]] = json.loads(seeds_json)
    before = after = 0
    for kind, values in recorded.items():
        before += len(values)
        if kind == RANDOM:
            after += seeds
        elif kind == EXTRAPOLATION:
            after += extrapolation_seeds
        else:
            after += len(values)
    return after / before if before else 1.0


def estimate(
    db_path: Path, workload: str, profile: str | None, settings: tuple[int, int, bool]
) -> RefitEstimate:
    """How long refitting ``workload`` on ``profile`` (None: not known yet) takes at
    ``settings`` (random seeds, extrapolation seeds, quick), from what ``db_path`` stored."""
    return estimate_from(stored_fits(db_path, workload), workload, profile, settings)


def estimates(
    db_path: Path,
    workload: str,
    profile: str | None,
    settings: dict[str, tuple[int, int, bool]],
) -> dict[str, RefitEstimate]:
    """`estimate` of each of ``settings`` (choice -> settings), from one read of ``db_path``:
    the sidebar asks for three, and each read opened the file (~25 ms CPU on the 2-core VM)."""
    fits = stored_fits(db_path, workload)
    return {
        choice: estimate_from(fits, workload, profile, chosen)
        for choice, chosen in settings.items()
    }


def estimate_from(
    fits: pd.DataFrame, workload: str, profile: str | None, settings: tuple[int, int, bool]
) -> RefitEstimate:
    """`estimate` from the evaluations `stored_fits` read."""
    seeds, extrapolation_seeds, quick = settings
    if not fits.empty:
        commands = fits["command"].fillna("")
        usable = fits[
            (commands.str.contains("--quick") == quick)
            & ~commands.str.contains("--models")
            & fits["scoring_s"].notna()
        ]
        own = usable[usable["machine_profile"] == profile]
        chosen = own if not own.empty else usable
        if not chosen.empty:
            return _scaled(chosen.iloc[0], seeds, extrapolation_seeds, own=not own.empty)
    if quick:
        return RefitEstimate(MEASURED_QUICK_S, f"as measured: {MEASURED_QUICK}")
    return RefitEstimate(None, f"no evaluation of {workload} at these settings is stored here")


def _scaled(row: pd.Series, seeds: int, extrapolation_seeds: int, own: bool) -> RefitEstimate:
    """The fitting ``row`` (a `stored_fits` row) recorded, scaled to ``seeds``, and the rest
    of an evaluation (`WALL_PER_FIT`)."""
    scale = fits_scale(row["seeds_json"], seeds, extrapolation_seeds)
    scoring_s, final_s = float(row["scoring_s"]), float(row["final_s"] or 0)
    whose = "this profile's" if own else f"profile {row['machine_profile']}'s"
    when = str(row["created_at"])[:10]
    scaled = f", scaled to {seeds} seeds" if abs(scale - 1) > 0.01 else ""
    return RefitEstimate(
        (scoring_s * scale + final_s) * WALL_PER_FIT,
        f"from the {duration_text(scoring_s + final_s)} of model fitting that {whose} "
        f"evaluation {str(row['evaluation_id'])[:12]} ({int(row['n_runs'])} runs, {when}, "
        f"stored in this database) recorded{scaled}, x{WALL_PER_FIT:g} for the rest of a refit",
    )
