"""Verifying a sizing answer: what the runs say of it, and the sweep that measures it.

A largest image or batch (`modeling.sizing`) is a prediction until a run measures
it. Verifying it measures two points on this machine, with the answer's budget as
their memory limit: the answer, which should fit, and the next size up, which should
not (the limit stops it). ``memplan size image|batch --verify``, the Sizing page's
button and `application.sizing.answer` use it; `presentation.verification` shows it.

* `Claim` — the answer to check, the next size up, the budget, the machine profile
  (`claim_for`);
* `latest_run` — which run counts: the latest ``ok``, ``oom`` or ``skipped`` run of
  exactly that configuration on the answer's profile; its peak is the kernel's
  high-water mark, as the models' (docs/measurement.md);
* `verify` — the answer in words by what the runs say (`Verdict`), a sampled peak
  beside the high-water mark where the sampler missed a spike (`measured_words`);
* `sweep_request` — the two-point sweep; why it cannot run here (another machine's
  answer, a budget above what this machine can safely give): `application.verify_here`.
"""

from __future__ import annotations

import functools
import math
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import pandas as pd

from core import frameworks, profiles, workloads
from core.dbnames import DB_FLAG
from core.units import GIB, budget_argument, gib_words
from core.workloads.base import WorkloadConfig, format_image_shape
from modeling.decision import PEAK_COLUMN, same_config, sampled_aside, stored_number
from modeling.sizing import BatchAnswer, ImageSizeAnswer
from profiling import sweep
from profiling.requests import SweepRequest
from profiling.runner import DEFAULT_STEPS

# The run statuses that say something about a configuration: it fitted (ok), it
# crossed its memory limit (oom), or the sweep refused to try it (skipped). A run
# killed, timed out or failed says nothing about its memory.
COUNTED_STATUSES = ("ok", "oom", "skipped")
IMAGE, BATCH = "image", "batch"
VERIFY_FLAG = "--verify"
BUTTON = "the Sizing page's Verify button"


@dataclass(frozen=True)
class Claim:
    """A sizing answer to verify: the configuration answered, the next size up, the budget.

    budget_bytes : int, bytes; what the answer had to fit in, and the memory
    limit of the runs that verify it.
    """

    question: str  # IMAGE (largest image at a batch) or BATCH (largest batch at an image)
    answered: WorkloadConfig
    next_up: WorkloadConfig | None  # None: nothing larger is offered
    budget_bytes: int
    machine: str | None  # the machine profile the answer is for; None: several machines' runs
    machine_label: str = ""  # that profile in words ("Intel Xeon, AVX-512, 2 cores, ...")
    model: str = ""  # the model that answered
    # The question as asked, for the command that asks it again: the budget before its
    # headroom (``budget_bytes`` is what is left for training) and the headroom in percent.
    asked_budget_bytes: int | None = None
    headroom_pct: float = 0.0
    # The training steps of the runs that verify it: those its models were fitted at (a
    # peak moves with the steps, so a run at other steps neither verifies nor refutes it);
    # None where the models' evaluation did not say: runs at any steps count, and a
    # verifying sweep trains `DEFAULT_STEPS`.
    steps: int | None = None
    framework: str = frameworks.DEFAULT_FRAMEWORK  # what the runs that verify it train with
    # The machine the answer is for where another profile's models answered for it (this
    # machine's key: `application.machines.asked_profile`), which the command names so that
    # it is answered, and widened, the same; None: ``machine``'s own.
    for_machine: str | None = None

    @property
    def workload(self) -> str:
        return self.answered.workload


def claim_for(
    answer: ImageSizeAnswer | BatchAnswer,
    workload: str,
    knobs: Mapping[str, Any],
    machine: str | None,
    machine_label: str = "",
    asked: tuple[int | None, float] = (None, 0.0),
) -> Claim:
    """The claim of a largest-image answer (its side at its batch, and the next side up) or
    of a largest-batch answer (its batch at its image, and the next batch up).

    asked : the question's budget (bytes, before headroom) and headroom (percent).
    """
    make = functools.partial(workloads.get(workload).Config, **dict(knobs))
    if isinstance(answer, ImageSizeAnswer):
        dims, question, following = workloads.get(workload).DIMS, IMAGE, answer.next_side
        answered = make((answer.side,) * dims, answer.batch_size)
        next_up = None if following is None else make((following,) * dims, answer.batch_size)
    else:
        shape, question, following = tuple(answer.image_shape), BATCH, answer.next_batch
        answered = make(shape, answer.batch_size)
        next_up = None if following is None else make(shape, following)
    return Claim(
        question=question,
        answered=answered,
        next_up=next_up,
        budget_bytes=int(answer.budget_bytes),
        machine=machine,
        machine_label=machine_label,
        model=answer.basis.model,
        asked_budget_bytes=asked[0],
        headroom_pct=asked[1],
    )


# --- which run counts ----------------------------------------------------------------------


@dataclass(frozen=True)
class Measured:
    """The run that counts for one configuration (`latest_run`)."""

    run_id: str
    status: str  # one of COUNTED_STATUSES
    peak_bytes: float | None  # the high-water mark of an ok run
    limit_bytes: int  # the memory limit it ran under
    message: str  # why it was skipped, or how it ended
    sampled_bytes: float | None = None  # its largest memory_profiler sample
    interval_s: float | None = None  # how often the sampler read it, seconds


def latest_run(
    config: WorkloadConfig, runs: pd.DataFrame, machine: str | None, steps: int | None = None
) -> Measured | None:
    """The latest ok, oom or skipped run of exactly ``config`` on profile ``machine``, at
    ``steps`` training steps (None: any); None if none.

    runs : a runs table (`core.store.load_runs`), any statuses and machines. An
    ok run without a high-water mark measured nothing and does not count; an
    answer for several machines' runs (``machine`` None) has no run of its own.
    """
    if machine is None or runs.empty:
        return None
    runs = profiles.runs_of(runs, machine)
    if steps is not None:
        runs = runs[runs["steps"] == steps]
    counted = runs[runs["status"].isin(COUNTED_STATUSES) & (runs["workload"] == config.workload)]
    counted = counted[(counted["status"] != "ok") | counted[PEAK_COLUMN].notna()]
    same = counted[[same_config(row, config) for row in counted.to_dict("records")]]
    if same.empty:
        return None
    # Stored times are ISO-8601 in UTC, so they sort as text; the run id breaks a tie.
    row = same.sort_values(["created_at", "run_id"]).iloc[-1]
    return Measured(
        run_id=str(row["run_id"]),
        status=str(row["status"]),
        peak_bytes=stored_number(row, PEAK_COLUMN),
        limit_bytes=int(row["memory_limit_bytes"]),
        message=str(row["message"] or ""),
        sampled_bytes=stored_number(row, "peak_sampled_bytes"),
        interval_s=stored_number(row, "sample_interval_s"),
    )


# --- the answer in words ------------------------------------------------------------------


class Verdict(Enum):
    """What the runs say of an answer."""

    VERIFIED = "verified"  # a run of it fitted the budget
    REFUTED = "refuted"  # a run of it needed more than the budget
    INCONCLUSIVE = "not verified"  # a run of it says neither (skipped, or stopped below the budget)
    PREDICTION = "a prediction"  # no run of it


@dataclass(frozen=True)
class Verification:
    """An answer's verdict in words, and the command that would measure it if nothing did yet."""

    verdict: Verdict
    text: str
    command: str = ""  # ``memplan size ... --verify``; empty once a run counts

    @property
    def line(self) -> str:
        """The verdict as one line of plain text (the CLI's)."""
        if not self.command:
            return self.text
        return f"{self.text}: verify it with `{self.command}` or {BUTTON}"


def measured_words(run: Measured) -> str:
    """A run's measured peak: ``7.78 GiB``, its high-water mark (what the models fit), and
    where its sampled peak differs (`modeling.decision.SAMPLED_GAP_QUOTED`) that too:
    ``7.78 GiB (high-water mark; the 0.1 s sampler saw 7.36 GiB)``."""
    peak = run.peak_bytes or 0.0
    aside = sampled_aside(peak, run.sampled_bytes, run.interval_s)
    return gib_words(peak) + (f" ({aside})" if aside else "")


def shape_words(config: WorkloadConfig) -> str:
    """``208x208x208``: every side, as the runs table lists them."""
    return "x".join(str(side) for side in config.image_shape)


def _answered_words(claim: Claim) -> str:
    return f"{shape_words(claim.answered)} at batch {claim.answered.batch_size}"


def _next_label(claim: Claim, config: WorkloadConfig) -> str:
    return shape_words(config) if claim.question == IMAGE else f"batch {config.batch_size}"


def _next_words(claim: Claim, runs: pd.DataFrame) -> str:
    """What the runs say of the next size up, which the answer says does not fit."""
    if claim.next_up is None:
        return "nothing larger to try" if claim.question == IMAGE else "no larger batch to try"
    label = _next_label(claim, claim.next_up)
    run = latest_run(claim.next_up, runs, claim.machine, claim.steps)
    if run is None:
        return f"{label} not measured"
    if run.status == "oom":
        return f"{label} stopped at the {gib_words(run.limit_bytes)} limit"
    if run.status == "skipped":
        return f"{label} skipped: {run.message}"
    measured = f"{label} measured at {measured_words(run)}"
    if (run.peak_bytes or 0.0) <= claim.budget_bytes:
        return f"{measured}, which fits too: the answer is on the safe side"
    return measured


def verify(claim: Claim, runs: pd.DataFrame, db_path: Path | None = None) -> Verification:
    """What ``runs`` (a runs table, any machines) say of ``claim``, in words.

    Verified: the answer's run fitted the budget; refuted: it needed more (an
    ok run above the budget, or an oom run stopped at a limit no lower than the
    budget); not verified: its run was skipped, or stopped at a limit below the
    budget; a prediction: no run of it, with the command that verifies it
    (``db_path``: the database it names; None: the default).
    """
    subject = _answered_words(claim)
    budget = gib_words(claim.budget_bytes)
    run = latest_run(claim.answered, runs, claim.machine, claim.steps)
    if run is None:
        command = verify_command(claim, db_path)
        return Verification(Verdict.PREDICTION, "a prediction, not verified by a run", command)
    if run.status == "skipped":
        return Verification(
            Verdict.INCONCLUSIVE, f"not verified: the run of {subject} was skipped: {run.message}"
        )
    if run.status == "oom" and run.limit_bytes < claim.budget_bytes:
        # Stopped below the budget by an earlier sweep's smaller limit: it may still fit.
        return Verification(
            Verdict.INCONCLUSIVE,
            f"not verified: {subject} stopped at the {gib_words(run.limit_bytes)} limit of an "
            f"earlier run, below the {budget} budget",
        )
    following = _next_words(claim, runs)
    if run.status == "oom":
        head = (
            f"refuted: {subject} stopped at the {gib_words(run.limit_bytes)} limit: "
            f"it does NOT fit in {budget}"
        )
        return Verification(Verdict.REFUTED, f"{head}; {following}")
    peak = run.peak_bytes or 0.0
    if peak > claim.budget_bytes:
        head = f"refuted: {subject} measured {measured_words(run)}: it does NOT fit in {budget}"
        return Verification(Verdict.REFUTED, f"{head}; {following}")
    aside = sampled_aside(peak, run.sampled_bytes, run.interval_s)
    if aside:
        head = f"verified: {subject} measured {measured_words(run)}, which fits in {budget}"
    else:
        head = f"verified: {subject} fits at {gib_words(peak)} (measured)"
    return Verification(Verdict.VERIFIED, f"{head}; {following}")


# --- the command and the sweep that verify it ---------------------------------------------


def _knob_flags(config: WorkloadConfig) -> list[str]:
    """The knob flags of ``config``'s network where it differs from the workload's default."""
    module = workloads.get(config.workload)
    default = module.Config(config.image_shape, config.batch_size)
    flags = []
    for knob in module.NETWORK_KNOBS:
        value = getattr(config, knob)
        if value != getattr(default, knob):
            flags += [f"--{knob.replace('_', '-')}", str(value)]
    return flags


def verify_command(claim: Claim, db_path: Path | None = None) -> str:
    """``memplan size image|batch ... --verify``: the same question, measured."""
    answered = claim.answered
    words = ["memplan", "size", claim.question, "--workload", claim.workload]
    if claim.question == IMAGE:
        words += ["--batch-size", str(answered.batch_size)]
    else:
        words += ["--image-size", format_image_shape(answered.image_shape)]
    # As a person types it: the budget asked and its headroom, not what is left of it.
    if claim.asked_budget_bytes is None:
        words += ["--budget", budget_argument(claim.budget_bytes), "--headroom", "0"]
    else:
        words += ["--budget", budget_argument(claim.asked_budget_bytes)]
        words += ["--headroom", f"{claim.headroom_pct:g}"]
    words += _knob_flags(answered) + frameworks.flag(claim.framework)
    if claim.model:
        words += ["--model", claim.model]
    machine = claim.for_machine or claim.machine
    if machine:
        words += ["--machine", machine]
    if db_path is not None:
        words += [DB_FLAG, str(db_path)]
    return shlex.join([*words, VERIFY_FLAG])


def _grid_values(claim: Claim) -> dict[str, Any]:
    """The sweep grid of the two points: the answer and the next size up (one if none)."""
    configs = [claim.answered] + ([claim.next_up] if claim.next_up else [])
    values: dict[str, Any] = {
        "workload": claim.workload,
        "image_sizes": list(dict.fromkeys(format_image_shape(c.image_shape) for c in configs)),
        "batch_sizes": list(dict.fromkeys(c.batch_size for c in configs)),
    }
    # Every knob named, not left to the sweep's defaults: the runs must be this network's.
    own = workloads.get(claim.workload).NETWORK_KNOBS
    for grid_name, knob in sweep.KNOB_LISTS.items():
        if knob in own:
            values[grid_name] = [getattr(claim.answered, knob)]
    return values


def sweep_request(claim: Claim) -> SweepRequest:
    """The sweep that verifies ``claim``: its two points, the budget as their memory limit.

    The answer and the next size up differ in one thing (the side, or the
    batch), so their grid holds exactly those two points.
    """
    grid = sweep.grid_from_mapping(_grid_values(claim))
    points = len(sweep.expand_grid(grid))
    # The next size up is over the budget by the answer's own bound: it runs anyway, and
    # the budget, as the memory limit, stops it.
    return SweepRequest(
        grid=grid,
        steps=DEFAULT_STEPS if claim.steps is None else claim.steps,
        memory_limit_bytes=claim.budget_bytes,
        points=points,
        run_over_bound=True,
        framework=claim.framework,
    )


def slurm_command(claim: Claim) -> str:
    """The same two points as Slurm jobs of the budget's memory (docs/slurm.md).

    A job's memory limit is its ``--mem`` less what the job's own Python takes
    (`profiling.slurm_points.JOB_PROCESS_ALLOWANCE_BYTES`), so ``--mem`` adds it back.
    """
    # Imported here, not with the module: `memplan size buy` never writes a Slurm command.
    from profiling.slurm_points import JOB_PROCESS_ALLOWANCE_BYTES

    words = ["memplan", "sweep"]
    for name, values in _grid_values(claim).items():
        listed = [values] if isinstance(values, str) else values
        words += [f"--{name.replace('_', '-')}", *map(str, listed)]
    words += frameworks.flag(claim.framework)
    mem_gib = math.ceil((claim.budget_bytes + JOB_PROCESS_ALLOWANCE_BYTES) / GIB)
    words += ["--executor", "slurm", "--partition", "P", "--mem", f"{mem_gib}GiB"]
    return shlex.join(words)
