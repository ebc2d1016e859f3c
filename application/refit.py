"""A refit as a typed job: the evaluation a launched job runs after its sweep.

The sidebar's "Refit models afterwards" and a page's calibration ("Launch this
sweep", then its fit) both end a sweep job with a `RefitJob`: the database, which
workload and machine profile, the framework, the seeds, whether only what changed
is refit, whether quickly. A sidebar sweep's refit names its ``sweep`` (the command the
sweeps table records for it, `profiling.launcher.new_origin`) instead of a profile: it
refits only the profiles of the runs that sweep stored — the machine it measured, never
another's — and ends its output with one ``outcome: ...`` line saying what was refit
with which settings, or why nothing was (`profiling.job` keeps that line for the
sidebar). It crosses into the job's process as JSON checked
field by field (`RefitJob.to_json` / `from_json`; a wrong key or value is one
`ConfigError` naming the field), and that process, ``python -m application.refit
SPEC.json``, runs it through `application.evaluate.run` — no ``memplan`` command
line is built. `command_text` is what the stored evaluation records as its
command: the `memplan evaluate` line an operator would type for the same fit (a
text shown on the pages and read back for ``--quick``, never run).
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from application import evaluate, readonly
from application.evaluate import DEFAULT_EXTRAPOLATION_SEEDS, DEFAULT_SEEDS, EvaluateRequest
from application.job_process import run_spec_file, serve
from core import database, frameworks, profiles, store, workloads
from core.dbnames import DB_FLAG
from core.errors import ConfigError, ModelingError
from core.jobfields import Check, Fields, optional
from profiling.job import MODELS_REFIT, OUTCOME_PREFIX

# The module a launched job's refit runs (`main`); `python -m` names it so.
RUNNER = "application.refit"
# How a message names the thing it refuses.
WHAT = "refit job"


@dataclass(frozen=True)
class RefitJob:
    """One refit after a sweep; ``workload`` / ``machine`` None: every one's models."""

    db_path: Path
    workload: str | None = None
    machine: str | None = None  # a machine profile key
    framework: str = frameworks.DEFAULT_FRAMEWORK
    seeds: int = DEFAULT_SEEDS
    extrapolation_seeds: int = DEFAULT_EXTRAPOLATION_SEEDS
    # Refit only the profiles whose runs at their fitted step count changed: a 1-step
    # smoke sweep joins no 6-step fit and refits nothing.
    only_changed: bool = False
    quick: bool = False  # tiny symbolic-regression settings
    models: tuple[str, ...] | None = None  # None: the whole catalogue
    # The sweeps-table command of the sweep whose measured profiles alone are refit (the
    # sidebar's); None: ``machine``'s, or every profile's.
    sweep: str | None = None

    def request(self) -> EvaluateRequest:
        """The evaluation this refit is (`application.evaluate.run` runs it)."""
        return EvaluateRequest(
            db_path=self.db_path,
            workload=self.workload,
            machine=self.machine,
            framework=self.framework,
            seeds=self.seeds,
            extrapolation_seeds=self.extrapolation_seeds,
            only_changed=self.only_changed,
            quick=self.quick,
            models=self.models,
            command=self.command_text(),
        )

    def command_text(self) -> str:
        """The `memplan evaluate` line that fits the same models (a text, never run)."""
        words = ["memplan", "evaluate", DB_FLAG, str(self.db_path)]
        words += ["--only-changed"] if self.only_changed else []
        words += ["--workload", self.workload] if self.workload is not None else []
        words += ["--machine", self.machine] if self.machine is not None else []
        if self.seeds != DEFAULT_SEEDS:
            words += ["--seeds", str(self.seeds)]
        if self.extrapolation_seeds != DEFAULT_EXTRAPOLATION_SEEDS:
            words += ["--extrapolation-seeds", str(self.extrapolation_seeds)]
        words += ["--models", *self.models] if self.models is not None else []
        words += frameworks.flag(self.framework)
        return shlex.join(words + (["--quick"] if self.quick else []))

    def to_json(self) -> str:
        values = dataclasses.asdict(self) | {"db_path": str(self.db_path)}
        return json.dumps(values, indent=2)

    @classmethod
    def from_json(cls, text: str) -> RefitJob:
        """The job ``text`` holds; `ConfigError` naming the first field that is wrong."""
        return cls(**FIELDS.checked(FIELDS.read(text), _FIELDS, ("db_path",)))


FIELDS = Fields(WHAT)


def _models(name: str, value: Any) -> tuple[str, ...]:
    known = evaluate.spec_names(evaluate.catalogue())
    if not isinstance(value, list) or not value or not set(value) <= set(known):
        raise FIELDS.refuse(name, value, f"a list of model names among {', '.join(known)}")
    return tuple(value)


_FIELDS: dict[str, Check] = {
    "db_path": FIELDS.path,
    "workload": optional(FIELDS.choice(lambda: workloads.WORKLOADS)),
    "machine": optional(FIELDS.named),
    "framework": FIELDS.choice(lambda: frameworks.FRAMEWORKS),
    "seeds": FIELDS.whole(1),
    "extrapolation_seeds": FIELDS.whole(1),
    "only_changed": FIELDS.flag,
    "quick": FIELDS.flag,
    "models": optional(_models),
    "sweep": optional(FIELDS.named),
}


def run(job: RefitJob) -> int:
    """Refit ``job``'s models on its database; the exit code (`application.evaluate.run`)."""
    if readonly.read_only():
        raise ConfigError(
            f"{readonly.READ_ONLY_ENV_VAR} is set, so a refit would store nothing; unset it"
        )
    database.ensure_database(job.db_path)
    if job.sweep is None:
        return evaluate.run(job.request())
    return _refit_measured(job)


def measured_profiles(job: RefitJob) -> list[str]:
    """The profile keys of the ok runs of ``job``'s workload and framework that its sweep
    stored (the sweeps-table rows whose command is ``job.sweep``), sorted."""
    sweeps = store.load_sweeps(job.db_path)
    ids = sweeps.loc[sweeps["command"] == job.sweep, "sweep_id"]
    runs = store.load_runs(job.db_path, store.RunFilter(status="ok", workload=job.workload))
    runs = runs[runs["sweep_id"].isin(ids) & (runs["framework"] == job.framework)]
    return sorted(set(profiles.profile_keys(runs)))


def settings_text(job: RefitJob) -> str:
    """The refit's settings in words: ``"full evaluation settings: 10 random seed(s), 3
    extrapolation"``, ``"smoke-test settings (--quick)"``."""
    if job.quick:
        return "smoke-test settings (--quick)"
    full = (job.seeds, job.extrapolation_seeds) == (DEFAULT_SEEDS, DEFAULT_EXTRAPOLATION_SEEDS)
    return (
        f"{'full evaluation' if full else 'fewer'} settings: {job.seeds} random seed(s), "
        f"{job.extrapolation_seeds} extrapolation"
    )


def _refit_measured(job: RefitJob) -> int:
    """Refit each profile ``job.sweep`` measured, only it; say what was refit, as one
    ``outcome:`` line. Nothing refit for a reason other than "unchanged" is a
    `ModelingError` (the job's log and sidebar show it as why)."""
    keys = measured_profiles(job)
    if not keys:
        print(f"{OUTCOME_PREFIX}models not refit: the sweep stored no ok run", flush=True)
        return 0
    outcomes = [
        evaluate.evaluate_pairs(dataclasses.replace(job, machine=key, sweep=None).request())
        for key in keys
    ]
    evaluated = [name for outcome in outcomes for name in outcome.evaluated]
    skipped = [why for outcome in outcomes for why in outcome.skipped]
    unchanged = [why for outcome in outcomes for why in outcome.unchanged]
    if evaluated:
        not_refit = f"; not refit: {'; '.join(skipped)}" if skipped else ""
        print(
            f"{OUTCOME_PREFIX}{MODELS_REFIT} for {'; '.join(evaluated)} "
            f"({settings_text(job)}){not_refit}",
            flush=True,
        )
        return 0
    if skipped:
        raise ModelingError("; ".join(skipped))
    print(f"{OUTCOME_PREFIX}models not refit: {'; '.join(unchanged)}", flush=True)
    return 0


def _run_text(text: str) -> int:
    return run(RefitJob.from_json(text))


def main(argv: list[str] | None = None) -> int:
    """``python -m application.refit SPEC.json``: run the refit the file holds.

    A bad spec or a refit that cannot run is one ``error: ...`` line and exit 2 (the
    job's log shows it as the reason), as `memplan evaluate`'s are.
    """
    return run_spec_file(sys.argv[1:] if argv is None else argv, RUNNER, "refit job", _run_text)


if __name__ == "__main__":
    serve(main)
