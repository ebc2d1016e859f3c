"""Sweeping as a use case: run a `profiling.jobspec.SweepJob` guarded, or launch it detached.

`run` is what `memplan sweep` calls with the job its flags describe: the sweep
of `profiling.sweep_job.run`, guarded by the fitted models' bounds
(`application.sweep_guard`), which profiling cannot give itself. `launch`
starts a checked request as a detached job (`profiling.launcher`), whose
process runs ``python -m application.sweep_job SPEC.json`` (then, if asked, the refit's
``python -m application.refit``): `main` reads the
job, checked field by field, and calls `run` — the same path, in a process of
its own, so neither a page nor its server runs the sweep. No ``memplan``
command line is built on the way.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pandas as pd

from application import refit as refit_job
from application.job_process import run_spec_file, serve
from application.refit import RefitJob
from application.sweep_guard import fitted_precheck
from core import database, profiles, store
from profiling import launcher, sweep_job
from profiling.jobspec import SweepJob
from profiling.jobstatus import JobStatus
from profiling.lifecycle import Precheck
from profiling.requests import SweepRequest
from profiling.slurm_points import SlurmOptions

# The module a launched job's process runs (`main`); `python -m` names it so.
RUNNER = "application.sweep_job"


def precheck_for(job: SweepJob) -> Precheck | None:
    """The fitted bounds that guard ``job``: this machine's models for a sweep here, the
    nodes' (``job.machine``) for a Slurm sweep, none for a Slurm sweep naming no machine."""
    if job.slurm is None and job.device != "cpu":
        return None  # this machine's models bound host RAM, not the GPU's memory
    if job.slurm is None:
        return fitted_precheck(job.db_path, framework=job.framework)
    if job.machine is None:
        return None
    db_path = job.db_path
    runs = (
        store.load_runs(db_path, store.RunFilter(workload=job.grid.workload))
        if db_path.exists()
        else pd.DataFrame()
    )
    known = profiles.profiles_in(runs) if not runs.empty else {}
    return fitted_precheck(db_path, profiles.resolve(job.machine, known).key)


def run(job: SweepJob) -> int:
    """Sweep ``job`` guarded by its fitted bounds; the exit code (`profiling.sweep_job.run`)."""
    return sweep_job.run(job, precheck_for(job))


def launch(
    db_path: Path,
    request: SweepRequest,
    refit: RefitJob | None = None,
    *,
    refit_needs_new_runs: bool = False,
    target: SlurmOptions | None = None,
) -> JobStatus:
    """Start ``request`` on ``db_path`` (here, or on ``target``) as a detached job, then
    ``refit`` if given, in a process of its own (``python -m application.refit``;
    `profiling.launcher.launch` says when). A ``refit`` naming no machine profile refits
    only the profiles this sweep measures (its ``sweep``), never another machine's."""
    job = request.job(Path(db_path).resolve(), target)
    job = dataclasses.replace(job, origin=launcher.new_origin(job))
    if refit is not None and refit.machine is None:
        refit = dataclasses.replace(refit, sweep=job.origin)
    typed = None if refit is None else (refit_job.RUNNER, refit.to_json())
    return launcher.launch(
        db_path, job, RUNNER, refit_needs_new_runs=refit_needs_new_runs, refit=typed
    )


def _run_text(text: str) -> int:
    job = SweepJob.from_json(text)
    database.ensure_database(job.db_path)
    return run(job)


def main(argv: list[str] | None = None) -> int:
    """``python -m application.sweep_job SPEC.json``: run the job the file holds.

    A bad spec or setting is one ``error: ...`` line and exit 2 (the job's log shows
    it as the reason); as a process, SIGTERM (the launcher's cancel) stops it as Ctrl-C does.
    """
    return run_spec_file(sys.argv[1:] if argv is None else argv, RUNNER, "sweep job", _run_text)


if __name__ == "__main__":
    serve(main)
