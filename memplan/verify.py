"""``memplan size image|batch --verify``: measure a sizing answer here, then say what it shows.

The two points (the answer and the next size up, under the budget as their
memory limit: `application.verify.sweep_request`) are swept in this
process by `memplan.sweep.sweep_here`, the use case ``memplan sweep`` runs.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pandas as pd

from application import readonly, verify_here
from application import verify as verification
from application.sweeps import RunSettings, SweepPlan
from application.verify import Claim, Verdict, Verification
from core import store
from core.errors import ModelingError
from core.machine import this_profile
from memplan.exitcodes import FAILED_EXIT_CODE, SUCCESS_EXIT_CODE
from memplan.sweep import command_of, sweep_here

# `size ... --verify`'s exit codes: a run verified the answer, or refuted it (2: cannot tell).
VERIFIED_EXIT_CODE, REFUTED_EXIT_CODE = SUCCESS_EXIT_CODE, FAILED_EXIT_CODE


def runs_for(db_path: Path, claim: Claim) -> pd.DataFrame:
    return store.load_runs(db_path, store.RunFilter(workload=claim.workload))


class SweepStopped(Exception):
    """The verifying sweep ended early (interrupted); ``code`` is its exit code."""

    def __init__(self, code: int) -> None:
        super().__init__(f"the verifying sweep exited {code}")
        self.code = code


def measure(claim: Claim, db_path: Path, quiet_stdout: bool = False) -> Verification:
    """Sweep ``claim``'s two points into ``db_path``; what they say.

    Skips a point already measured, so verifying twice measures nothing twice;
    ``quiet_stdout`` sends the sweep's words to stderr (stdout then holds JSON).
    Raises `ModelingError` when the answer cannot be verified here, `SweepStopped`
    when the sweep did not finish.
    """
    here = this_profile(claim.answered.precision, claim.framework).key
    problem = verify_here.refusal(claim, here, verify_here.safe_limit_bytes())
    if problem:
        raise ModelingError(f"cannot verify here: {problem}")
    if readonly.read_only():
        raise ModelingError(
            f"cannot verify here: {readonly.READ_ONLY_ENV_VAR} is set, so nothing is measured "
            "or stored; unset it to verify"
        )
    request = verification.sweep_request(claim)
    command = command_of(request.job(db_path.resolve()))
    out = sys.stderr if quiet_stdout else sys.stdout
    print(f"verifying: {command}", file=out, flush=True)
    settings = RunSettings(
        memory_limit_bytes=request.memory_limit_bytes,
        steps=request.steps,
        framework=request.framework,
    )
    with contextlib.redirect_stdout(out):
        plan = SweepPlan(db_path, request.grid, settings, command=command)
        code = sweep_here(plan, run_over_bound=request.run_over_bound)
    # Points all killed (FAILED_EXIT_CODE) are no verdict, and exit 1 would read as refuted:
    # the runs below say what they can.
    if code not in (SUCCESS_EXIT_CODE, FAILED_EXIT_CODE):
        raise SweepStopped(code)
    return verification.verify(claim, runs_for(db_path, claim))


def exit_code(said: Verification) -> int:
    """0 for a verified answer, 1 for a refuted one; `ModelingError` when the runs cannot tell."""
    if said.verdict is Verdict.VERIFIED:
        return VERIFIED_EXIT_CODE
    if said.verdict is Verdict.REFUTED:
        return REFUTED_EXIT_CODE
    raise ModelingError(said.line)
