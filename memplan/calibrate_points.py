"""``memplan calibrate`` (the default): this machine's points chosen one at a time.

Each point is a one-point sweep (resumable, pre-checked, stored like any run); which
point and when to stop is `application.calibration_loop`'s. Prints each chosen point
and why, then the points used, the minutes and the held-out MAPE (``--json``: those
as JSON on stdout, the progress on stderr).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from application.calibration_loop import LoopPlan, Outcome, Step, run_loop
from application.sweeps import KNOB_LISTS, Grid, RunSettings, SweepPlan, run_sweep
from core import database, workloads
from core.machine import this_profile
from memplan import jsonout, options
from memplan.commands import open_db
from memplan.sweep import stored_command


def one_point_measure(
    plan: LoopPlan, settings: RunSettings, out: TextIO = sys.stdout
) -> Callable[[int, int], None]:
    """``measure(side, batch)``: a one-point sweep of the plan's network into its database."""
    dims = workloads.get(plan.workload).DIMS
    lists = {field: key for key, field in KNOB_LISTS.items()}
    knobs = {lists[name]: (value,) for name, value in plan.knobs}

    def measure(side: int, batch: int) -> None:
        grid = Grid(((side,) * dims,), (batch,), plan.workload, **knobs)
        sweep = SweepPlan(plan.db_path, grid, settings, command=plan.command, show_progress=False)
        summary = run_sweep(sweep)
        counts = ", ".join(f"{n} {status}" for status, n in sorted(summary.counts.items()))
        print(f"    measured: {counts or 'nothing new'}", file=out, flush=True)

    return measure


def _summary(outcome: Outcome, minutes: float, db_path: Path) -> dict:
    prior = outcome.prior
    return {
        "prior": {
            "profile": prior.key,
            "label": prior.label,
            "model": prior.predictor.name,
            "widening": prior.widening,
        },
        "chosen": [step.record() for step in outcome.steps],
        "points": [{"side": s, "batch": b, "peak_bytes": p} for s, b, p in outcome.points],
        "points_used": len(outcome.points),
        "stopped": outcome.stopped,
        "minutes": round(minutes, 2),
        "loo_mape_pct": outcome.loo_mape_pct,
        "evaluation_id": outcome.evaluation_id,
        "db": str(db_path),
    }


def run_points(args: argparse.Namespace) -> int:
    settings = options.settings(args)
    # Read-only mode refuses before anything is chosen, as a sweep does before it measures.
    db_path = database.check_writable(open_db(args), "a calibration")
    here = this_profile(framework=settings.framework)
    out = sys.stderr if args.json else sys.stdout
    started = time.perf_counter()
    print(f"This machine: {here.label} (profile {here.key})", file=out)
    plan = LoopPlan(
        db_path,
        args.workload,
        here,
        settings.steps,
        settings.memory_limit_bytes or None,
        stored_command(sys.argv[1:]),
    )

    def report(step: Step) -> None:
        print(f"  {step.sentence()}", file=out, flush=True)

    outcome = run_loop(plan, one_point_measure(plan, settings, out), report)
    minutes = (time.perf_counter() - started) / 60
    summary = _summary(outcome, minutes, db_path)
    if args.json:
        return jsonout.emit(summary)
    prior = outcome.prior
    print(f"Prior: profile {prior.key} ({prior.label}), model {prior.predictor.name}")
    print(f"Stopped: {outcome.stopped}")
    used = ", ".join(f"{s}^3 batch {b}" for s, b, _ in outcome.points)
    held = "n/a" if outcome.loo_mape_pct is None else f"{outcome.loo_mape_pct:.2f}%"
    print(
        f"Points used: {len(outcome.points)} ({used}); {minutes:.1f} min; "
        f"held-out (leave-one-out) MAPE {held}"
    )
    print(f"Stored as evaluation {outcome.evaluation_id} of profile {here.key} in {db_path}")
    return 0
