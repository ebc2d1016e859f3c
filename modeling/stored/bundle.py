"""The bundled evaluations: fitted models and scores shipped beside the bundled runs.

A fresh checkout's default database is built from the bundled runs
(`core.database.BUNDLED_EXPORTS`); the models the dashboard and
``memplan size`` predict with come from a full evaluation of those
same runs (``python -m benchmarks.accuracy --store-db``, which scores them as
``memplan evaluate`` does and prints the tables in `docs/`), which
takes 30-50 minutes per workload and machine profile on a 2-core machine.
Rather than make every new user wait for it, the results of one such
evaluation per workload and profile are exported (one Parquet file per results
table: `data/reference_results/`, `data/alexnet_results/`,
`data/unet3d_amd_results/`, `data/unet3d_knobs_results/`,
`data/unet3d_knobs_onednn_results/`) and copied into the
default database the first time it is read, but only while that database still
holds exactly the runs of that workload and profile they were fit on (same
data fingerprint over the usable runs of one step count: an evaluation fits
runs of one step count, `modeling.evaluation.steps`), or those runs and runs
measured after the bundle was fitted (a "Verify by measuring" sweep's, which
must not take the answer away: issue 26 finding 2): older runs the bundle lacks
need their own evaluation; runs at another step count (a 1-step smoke test) or of
another machine do not affect it. A bundle from before schema 6 does not record
its step count; it is the one whose runs match its fingerprint, and installing
records it.

    memplan export-results data/reference_results   # from the evaluated database

An export is stamped with its schema version like a runs export (Parquet
metadata ``memplan_schema_version``, `core.datafiles`). One without it is from
schema 1: its evaluation has no ``workload`` and is a ``unet3d`` one; one from
before schema 3 names no machine profile, which installing reads from the runs
its predictions name (`core.migrations.fill_evaluation_profiles`). Installing
brings it to the current schema; a newer export is refused, naming both
versions. Its models are stored as data (`modeling.stored.codec`), never as
pickles.

Reading never needs the install: `load_predictors`, `load_scores` and
`load_predictions` answer from the database's latest evaluation of a workload
and profile and, when it has none but holds exactly the runs a bundle was fit
on, from that bundle's files read into memory. Read-only mode
(`application.readonly`) and ``memplan size`` use only those,
so they never write.
"""

from __future__ import annotations

import functools
from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from core import exportfile, exportversion, schema
from core import snapshot as snapshots
from core.database import DATA_DIR
from core.dbnames import DB_FLAG
from core.snapshot import Snapshot
from modeling.errors import ModelingError, NoModelsError
from modeling.evaluation.protocol import data_fingerprint
from modeling.features import measured_frame
from modeling.stored import excess, tables
from modeling.stored.predictor import Predictor
from modeling.stored.tables import (
    BEST,
    select_predictor,
)

BUNDLED_RESULTS_DIR = DATA_DIR / "reference_results"
# One bundled evaluation per workload and machine profile with bundled runs
# (`core.database.BUNDLED_EXPORTS`), but for the TensorFlow grids of the family 26
# EPYC: runs only, the PyTorch grids' twins that the frameworks are compared on
# (`memplan evaluate --machine 4103` fits them). The first of a workload and
# framework is its "bundled reference", what sizing answers for on a machine
# without models of its own.
BUNDLED_RESULTS_DIRS: tuple[Path, ...] = (
    BUNDLED_RESULTS_DIR,
    *(
        DATA_DIR / f"{name}_results"
        for name in (
            "alexnet",
            "unet3d_amd",
            "unet3d_knobs",
            "unet3d_knobs_onednn",
            "unet3d_f26_torch",
            "alexnet_f26_torch",
        )
    ),
)


def read_export(directory: Path, table: str) -> pa.Table:
    """One table of a results export, brought to the current schema."""
    path = directory / f"{table}.parquet"
    try:
        rows = pq.read_table(path)
    except (pa.ArrowException, OSError) as error:
        raise ModelingError(
            f"cannot read {path}: {error}; give a folder written by `memplan export-results`"
        ) from error
    tag = (rows.schema.metadata or {}).get(exportfile.VERSION_METADATA_KEY.encode())
    version, rows = exportversion.export_version(
        path, rows, table, None if tag is None else tag.decode(errors="replace")
    )
    return schema.upgrade_export(table, rows, version)


@dataclass(frozen=True)
class BundledEvaluation:
    """Which runs a bundled evaluation was fitted on: a workload, a machine profile, a hash."""

    directory: Path
    workload: str
    machine: str | None  # profile key (`core.profiles`)
    fingerprint: str
    steps: int | None = None  # the step count of the runs it fit; None: not yet matched
    created_at: str = ""  # when it was fitted, ISO-8601 UTC (sorts as text, as the runs')


def fitted_steps(runs: pd.DataFrame, fingerprint: str) -> int | None:
    """The step count whose usable runs in ``runs`` are exactly those ``fingerprint`` hashes.

    runs : one workload and profile's runs (`core.store.load_runs`).
    None when no step count's runs match (runs were added, removed or re-measured).
    """
    frame = measured_frame(runs) if not runs.empty else pd.DataFrame()
    if frame.empty:
        return None
    steps = runs.set_index("run_id")["steps"].reindex(frame.index)
    for count in sorted(steps.dropna().unique(), reverse=True):
        if data_fingerprint(frame[(steps == count).to_numpy()]) == fingerprint:
            return int(count)
    return None


def bundled_evaluation(directory: Path) -> BundledEvaluation | None:
    """What the bundle in ``directory`` was fitted on; None when there is no bundle."""
    path = Path(directory) / "evaluations.parquet"
    if not path.exists():
        return None
    # Read once per file state: one answer asks for every bundle several times (~1.3 ms a
    # read).
    return _bundled_evaluation(Path(directory), _file_state(path))


def _file_state(bundle_file: Path) -> tuple[int, int, int]:
    """The key a bundle file is cached by: a rewritten file has another modification
    time, size or inode."""
    found = bundle_file.stat()
    return found.st_mtime_ns, found.st_size, found.st_ino


@functools.lru_cache(maxsize=256)
def _bundled_evaluation(directory: Path, _stamp: tuple[int, int, int]) -> BundledEvaluation | None:
    columns = ["workload", "machine_profile", "data_fingerprint", "steps", "created_at"]
    rows = read_export(directory, "evaluations").select(columns).to_pylist()
    if not rows:
        return None
    row = rows[0]
    return BundledEvaluation(
        directory,
        str(row["workload"]),
        row["machine_profile"],
        str(row["data_fingerprint"]),
        None if row["steps"] is None else int(row["steps"]),
        str(row["created_at"] or ""),
    )


def bundled_evaluations(workload: str | None = None) -> list[BundledEvaluation]:
    """Every bundled evaluation (of ``workload`` if given), in BUNDLED_RESULTS_DIRS order."""
    found = (bundled_evaluation(directory) for directory in BUNDLED_RESULTS_DIRS)
    return [b for b in found if b is not None and workload in (None, b.workload)]


def applies(snapshot: Snapshot, directory: Path) -> BundledEvaluation | None:
    """The bundle if ``snapshot`` has no evaluation of its workload and profile and holds its
    runs (a bundle of another workload never applies).

    "Its runs": the usable runs at one step count are exactly the ones it was fit
    on, or those and runs measured after it was fitted (which its models do not
    know); the bundle returned names that step count.
    """
    return snapshot.remembered(("applies", Path(directory)), lambda: _applies(snapshot, directory))


def _applies(snapshot: Snapshot, directory: Path) -> BundledEvaluation | None:
    bundled = bundled_evaluation(Path(directory))
    if bundled is None or bundled.workload != snapshot.workload:
        return None
    if snapshot.latest_evaluation_id(bundled.machine) is not None:
        return None
    return matching(bundled, snapshot.ok_runs(bundled.machine))


def matching(bundled: BundledEvaluation, runs: pd.DataFrame) -> BundledEvaluation | None:
    """``bundled`` with its step count if ``runs`` (its workload and profile's ok runs) are
    the ones it was fitted on (`applies`); None if not."""
    if runs.empty:
        return None
    steps = fitted_steps(runs, bundled.fingerprint)
    if steps is None and bundled.created_at:
        # Runs measured since the bundle was fitted (a "Verify by measuring" sweep on this
        # machine, issue 26 finding 2) do not take its models away: it still applies when
        # the runs it was fitted on, those no newer than it, are exactly its runs.
        older = runs[runs["created_at"].astype(str) <= bundled.created_at]
        if 0 < len(older) < len(runs):
            steps = fitted_steps(older, bundled.fingerprint)
    if steps is None or bundled.steps not in (None, steps):
        return None
    return replace(bundled, steps=steps)


# --- reading without installing -------------------------------------------------------


@functools.lru_cache(maxsize=16)
def _bundled_frame(directory: Path, table: str, _stamp: tuple[int, int, int]) -> pd.DataFrame:
    """A bundle's table as the database would return it (same column types), cached per file."""
    return snapshots.as_read(read_export(directory, table))


def bundled_frame(directory: Path, table: str) -> pd.DataFrame:
    """A copy of the bundle's ``table`` in ``directory``, as the database would return it."""
    stamp = _file_state(directory / f"{table}.parquet")
    return _bundled_frame(directory, table, stamp).copy()


def applied_bundle(snapshot: Snapshot, machine: str | None) -> BundledEvaluation | None:
    """The bundle of the snapshot's workload and ``machine`` it answers from, with its steps.

    ``machine`` None: the first bundle of the workload that applies (module docstring).
    """
    for bundled in bundled_evaluations(snapshot.workload):
        if machine not in (None, bundled.machine):
            continue
        applied = applies(snapshot, bundled.directory)
        if applied is not None:
            return applied
    return None


def _stored_or_bundled(snapshot: Snapshot, machine: str | None, table: str) -> pd.DataFrame:
    loader = tables.load_scores if table == "scores" else tables.load_predictions
    try:
        return loader(snapshot, machine=machine)
    except NoModelsError:
        bundled = applied_bundle(snapshot, machine)
        if bundled is None:
            raise
        return bundled_frame(bundled.directory, table)


def load_scores(snapshot: Snapshot, machine: str | None = None) -> pd.DataFrame:
    """The latest scores of ``machine``: the snapshot's, else the bundle's."""
    return _stored_or_bundled(snapshot, machine, "scores")


def load_predictions(snapshot: Snapshot, machine: str | None = None) -> pd.DataFrame:
    """The latest held-out predictions of ``machine``: stored, else bundled."""
    return _stored_or_bundled(snapshot, machine, "predictions")


def load_predictors(
    snapshot: Snapshot,
    machine: str | None = None,
    names: Collection[str] | None = None,
    lazy: bool = False,
) -> list[Predictor]:
    """The latest fitted models of the snapshot's workload and ``machine``: stored, else
    bundled.

    names : only these models (None: every one); the others are never decoded.
    lazy : decode each when it first predicts (`modeling.stored.codec.Stored`), not now.

    Raises `NoModelsError` when neither has any, and `ModelingError` for a model
    row not stored as data (`modeling.stored.tables.predictor_from_row`).
    """
    applied = None
    workload = snapshot.workload
    try:
        predictors = tables.load_predictors(snapshot, machine=machine, names=names, lazy=lazy)
    except NoModelsError:
        applied = applied_bundle(snapshot, machine)
        if applied is None:
            raise
        rows = bundled_frame(applied.directory, "models")
        flags = f"--workload {workload}" + (f" --machine {machine}" if machine else "")
        refit = f"memplan evaluate {flags} {DB_FLAG} {snapshot.source}"
        source = f"the bundled results of {workload}"
        records = tables.named(rows.to_dict("records"), names)
        predictors = [tables.predictor_from_row(row, source, refit, lazy) for row in records]
    return _with_closed_form_excess(predictors, snapshot, machine, applied)


def _with_closed_form_excess(
    predictors: list[Predictor],
    snapshot: Snapshot,
    machine: str | None,
    applied: BundledEvaluation | None,
) -> list[Predictor]:
    """``predictors``, those stored without it given their closed-form excess (`excess`).

    applied : the bundle they were read from; None: the snapshot's own evaluation.
    """
    if excess.all_known(predictors):
        return predictors
    steps = applied.steps if applied is not None else excess.stored_steps(snapshot, machine)
    return excess.fill_closed_form_excess(predictors, snapshot.ok_runs(machine), steps)


def load_predictor(snapshot: Snapshot, name: str = BEST, machine: str | None = None) -> Predictor:
    """One of `load_predictors` by name; ``"best"`` picks by `tables.best_model_name`.

    Only that model is decoded: a stored forest takes ~0.3 s to read back on the
    2-core VM, and an answer uses one model. An unknown name reads them all, to
    list the known ones in the error.
    """
    if name == BEST:
        name = tables.best_model_name(load_scores(snapshot, machine))
    found = load_predictors(snapshot, machine, names=(name,))
    if found:
        return found[0]
    return select_predictor(
        load_predictors(snapshot, machine),
        lambda: load_scores(snapshot, machine),
        name,
        snapshot.source,
    )
