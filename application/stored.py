"""The stored models of a database, by path: one snapshot read per call, modeling over it.

Modeling never opens the database (`core.snapshot`); a caller with only a path (a page's
cached loader, a command with one read to make, a test) asks here, and each function
reads the workload's snapshot once and hands it to the `modeling.stored` function of the
same name. A use case that asks several things of one database reads one
`core.snapshot.Snapshot` itself and passes it along (`application.sizing.load_models`).
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence
from pathlib import Path

import pandas as pd

from application import bundles
from application import machines as answered_for
from core import database, frameworks, snapshot
from core.errors import StoreError
from core.profiles import MachineProfile
from core.records import PeakBound
from core.snapshot import Snapshot
from core.workloads import DEFAULT_WORKLOAD
from core.workloads.base import WorkloadConfig
from modeling import guard, machines
from modeling.errors import ModelingError, NoModelsError
from modeling.stored import bundle, evidence, knob_splits
from modeling.stored.evidence import FitEvidence
from modeling.stored.predictor import Predictor
from modeling.stored.tables import BEST
from modeling.unmeasured import KnobEvidence


def read(db_path: Path, workload: str = DEFAULT_WORKLOAD) -> snapshot.Snapshot:
    """``workload``'s snapshot of the database at ``db_path`` (`core.snapshot.read`).

    Remembered per state of the file (`core.database.file_stamp`), with what was worked
    out of it (which bundle applies: `Snapshot.remembered`): the server's warm-up reads
    it for the first visitor's page (`dashboard.serve`), and a caller asking several
    things of one database reads it once.
    """
    path = Path(db_path)
    return _read(path, workload, database.file_stamp(path))


@functools.lru_cache(maxsize=16)
def _read(path: Path, workload: str, stamp: tuple[int, ...]) -> snapshot.Snapshot:
    """`read` for one state of the database file (``stamp``)."""
    return snapshot.read(path, workload)


def read_once(db_path: Path, workload: str) -> snapshot.Snapshot:
    """``workload``'s snapshot of the database at ``db_path``, made ready as a command's
    database is (migrated if older) in the one open of the read where it is ready: a
    question opens it once. A missing one is created filled with the bundled runs, as the
    dashboard creates it (`application.bundles.seed_if_new`)."""
    bundles.seed_if_new(db_path)  # a new database starts from the bundled runs, on every path
    try:
        return snapshot.read(db_path, workload)
    except StoreError:
        # An older schema, which a read-only open refuses: migrated here. Anything else
        # (damaged, newer, missing in read-only mode) raises its own message again.
        database.ensure_database(db_path)
        return snapshot.read(db_path, workload)


def load_scores(
    db_path: Path, workload: str = DEFAULT_WORKLOAD, machine: str | None = None
) -> pd.DataFrame:
    """`modeling.stored.bundle.load_scores` of the database at ``db_path``."""
    return bundle.load_scores(read(db_path, workload), machine)


def load_predictions(
    db_path: Path, workload: str = DEFAULT_WORKLOAD, machine: str | None = None
) -> pd.DataFrame:
    """`modeling.stored.bundle.load_predictions` of the database at ``db_path``."""
    return bundle.load_predictions(read(db_path, workload), machine)


def load_predictors(
    db_path: Path,
    workload: str = DEFAULT_WORKLOAD,
    machine: str | None = None,
    names: Collection[str] | None = None,
    lazy: bool = False,
) -> list[Predictor]:
    """`modeling.stored.bundle.load_predictors` of the database at ``db_path``."""
    return bundle.load_predictors(read(db_path, workload), machine, names, lazy)


def load_predictor(
    db_path: Path, name: str = BEST, workload: str = DEFAULT_WORKLOAD, machine: str | None = None
) -> Predictor:
    """`modeling.stored.bundle.load_predictor` of the database at ``db_path``."""
    return bundle.load_predictor(read(db_path, workload), name, machine)


def load_evidence(
    db_path: Path, workload: str = DEFAULT_WORKLOAD, machine: str | None = None
) -> FitEvidence:
    """`modeling.stored.evidence.load_evidence` of the database at ``db_path``."""
    return evidence.load_evidence(read(db_path, workload), machine)


def load_evaluations(
    db_path: Path, workload: str | None = DEFAULT_WORKLOAD, machine: str | None = None
) -> pd.DataFrame:
    """The stored evaluations of ``workload`` and ``machine`` (None: any), newest first."""
    chosen = {"workload": workload, "machine_profile": machine}
    given = {name: value for name, value in chosen.items() if value is not None}
    where = " AND ".join(f"{name} = ?" for name in given)
    sql = "SELECT * FROM evaluations" + (f" WHERE {where}" if where else "")
    with database.connect(db_path, read_only=True) as con:
        return con.execute(sql + " ORDER BY created_at DESC, rowid DESC", list(given.values())).df()


def load_knob_evidence(db_path: Path, workload: str = DEFAULT_WORKLOAD) -> KnobEvidence:
    """`modeling.stored.knob_splits.load_knob_evidence` of the database at ``db_path``."""
    return knob_splits.load_knob_evidence(read(db_path, workload))


def run_profiles(db_path: Path, workload: str = DEFAULT_WORKLOAD) -> dict[str, MachineProfile]:
    """`modeling.machines.run_profiles` of the database at ``db_path``."""
    return machines.run_profiles(read(db_path, workload))


def run_counts(db_path: Path, workload: str = DEFAULT_WORKLOAD) -> dict[str, int]:
    """`modeling.machines.run_counts` of the database at ``db_path``."""
    return machines.run_counts(read(db_path, workload))


def fitted_machines(db_path: Path, workload: str = DEFAULT_WORKLOAD) -> list[str | None]:
    """`modeling.machines.fitted_machines` of the database at ``db_path``."""
    return machines.fitted_machines(read(db_path, workload))


def choose_machine(
    db_path: Path,
    workload: str = DEFAULT_WORKLOAD,
    requested: str | None = None,
    precision: str = "float32",
    framework: str = frameworks.DEFAULT_FRAMEWORK,
) -> machines.MachineChoice:
    """`application.machines.choose_machine` of the database at ``db_path``."""
    return answered_for.choose_machine(read(db_path, workload), requested, precision, framework)


def stored_bounds(
    db_path: Path, configs: Sequence[WorkloadConfig], profile_key: str
) -> dict[WorkloadConfig, PeakBound]:
    """`modeling.guard.fitted_bounds` of ``configs`` from the default model of each of their
    workloads for ``profile_key`` in the database at ``db_path`` (one read per workload)."""
    best: dict[str, Predictor] = {}
    for workload in sorted({config.workload for config in configs}):
        try:
            best[workload] = bundle.load_predictor(read(db_path, workload), BEST, profile_key)
        except ModelingError:
            continue  # no fitted model here: the closed form is the pre-check
    return guard.fitted_bounds(best, configs, profile_key)


def fit_steps(read: Snapshot, machine: str | None) -> int | None:
    """The training steps of the runs the models of ``machine`` were fitted on; None if unsaid."""
    try:
        return evidence.load_evidence(read, machine).steps
    except NoModelsError:
        return None
