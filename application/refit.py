"""A refit as a typed job: the evaluation a launched job runs after its sweep.

The sidebar's "Refit models afterwards" and a page's calibration ("Launch this
sweep", then its fit) both end a sweep job with a `RefitJob`: the database, which
workload and machine profile, the framework, the seeds, whether only what changed
is refit, whether quickly. It crosses into the job's process as JSON checked
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
from core import database, frameworks, workloads
from core.dbnames import DB_FLAG
from core.errors import ConfigError
from core.jobfields import Check, Fields, optional

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
}


def run(job: RefitJob) -> int:
    """Refit ``job``'s models on its database; the exit code (`application.evaluate.run`)."""
    if readonly.read_only():
        raise ConfigError(
            f"{readonly.READ_ONLY_ENV_VAR} is set, so a refit would store nothing; unset it"
        )
    database.ensure_database(job.db_path)
    return evaluate.run(job.request())


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
