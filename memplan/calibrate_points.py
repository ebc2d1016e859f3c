"""``memplan calibrate`` (the default): this machine's points chosen one at a time.

Each point is a one-point sweep (resumable, pre-checked, stored like any run); which
point and when to stop is `application.calibration_loop`'s. Prints each chosen point
and why, then the points used, the minutes, the held-out MAPE and the knob values its
answers cover (``--json``: those as JSON on stdout, the progress on stderr). Knob
flags (``--precision mixed_bfloat16``) add values to cover besides the network's
default: one setting per value, each other knob at its default.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from application.calibration_loop import LoopPlan, Outcome, Setting, Step, run_loop
from application.sweeps import KNOB_LISTS, Grid, RunSettings, SweepPlan, run_sweep
from core import database, workloads
from core.machine import this_profile
from memplan import jsonout, options
from memplan.commands import given_knob_values, open_db
from memplan.sweep import stored_command


def one_point_measure(
    plan: LoopPlan, settings: RunSettings, out: TextIO = sys.stdout
) -> Callable[..., None]:
    """``measure(side, batch, knobs=None)``: a one-point sweep of the plan's network (with
    ``knobs`` set: that setting's) into its database."""
    dims = workloads.get(plan.workload).DIMS
    lists = {field: key for key, field in KNOB_LISTS.items()}

    def measure(side: int, batch: int, knobs: Mapping[str, Any] | None = None) -> None:
        setting = dict(plan.knobs) if knobs is None else knobs
        chosen = {lists[name]: (value,) for name, value in setting.items()}
        grid = Grid(((side,) * dims,), (batch,), plan.workload, **chosen)
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
        "covers": {knob: list(values) for knob, values in outcome.covers.items()},
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
        also=cover_settings(given_knob_values(args, args.workload), args.workload),
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
    print(covers_sentence(outcome))
    used = ", ".join(f"{s}^3 batch {b}" for s, b, _ in outcome.points)
    held = "n/a" if outcome.loo_mape_pct is None else f"{outcome.loo_mape_pct:.2f}%"
    print(
        f"Points used: {len(outcome.points)} ({used}); {minutes:.1f} min; "
        f"held-out (leave-one-out) MAPE {held}"
    )
    print(f"Stored as evaluation {outcome.evaluation_id} of profile {here.key} in {db_path}")
    return 0


def cover_settings(given: Mapping[str, list[Any]], workload: str) -> tuple[Setting, ...]:
    """One knob setting per value ``given`` that is not its knob's default (the plan's own
    setting covers those), in the order given."""
    module = workloads.get(workload)
    defaults = {knob.name: knob.default for knob in module.KNOBS}
    return tuple(
        ((knob, value),)
        for knob, values in given.items()
        for value in values
        if value != defaults[knob]
    )


def covers_sentence(outcome: Outcome) -> str:
    """In words, the knob values the calibrated model measured, so answers without widening
    for them, and what other values get."""
    if not outcome.covers:
        return "Covers: no knob values (nothing stored)"
    covered = "; ".join(
        f"{knob} {', '.join(map(str, values))}" for knob, values in outcome.covers.items()
    )
    return (
        f"Answers cover: {covered}. Other knob values are answered with the prior's stored "
        "knob splits widening the bound (a knob flag of `memplan calibrate`, such as "
        "`--precision mixed_bfloat16`, measures one here)"
    )
