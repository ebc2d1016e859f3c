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

    memplan export-results data/reference_results --db results.duckdb

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
(`modeling.stored.readonly`) and ``memplan size`` use only those,
so they never write.
"""

from __future__ import annotations

import functools
from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from core import database, datafiles, exportfile, exportversion, migrations, schema, store
from modeling.errors import ModelingError, NoModelsError
from modeling.evaluation.protocol import data_fingerprint
from modeling.features import measured_frame
from modeling.stored import excess, tables
from modeling.stored.predictor import Predictor
from modeling.stored.tables import (
    BEST,
    DEFAULT_WORKLOAD,
    RESULT_TABLES,
    latest_evaluation_id,
    select_predictor,
)

BUNDLED_RESULTS_DIR = database.DATA_DIR / "reference_results"
# One bundled evaluation per workload and machine profile with bundled runs
# (`core.database.BUNDLED_EXPORTS`), but for the TensorFlow grids of the family 26
# EPYC: runs only, the PyTorch grids' twins that the frameworks are compared on
# (`memplan evaluate --machine 4103` fits them). The first of a workload and
# framework is its "bundled reference", what sizing answers for on a machine
# without models of its own.
BUNDLED_RESULTS_DIRS: tuple[Path, ...] = (
    BUNDLED_RESULTS_DIR,
    *(
        database.DATA_DIR / f"{name}_results"
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


def export_results(
    db_path: Path, directory: Path, workload: str = DEFAULT_WORKLOAD, machine: str | None = None
) -> Path:
    """Write the latest evaluation of ``workload`` (and ``machine``) as Parquet into ``directory``.

    Four files, one per results table.
    """
    directory.mkdir(parents=True, exist_ok=True)
    with database.connect(db_path, read_only=True) as con:
        evaluation_id = latest_evaluation_id(con, workload, machine)
        if evaluation_id is None:
            raise ModelingError(
                f"{db_path} holds no evaluation to export; run "
                f"`memplan evaluate --db {db_path}` first"
            )
        for table in RESULT_TABLES:
            datafiles.write(
                con,
                directory / f"{table}.parquet",
                ".parquet",
                schema.columns_of(con, table),
                f"FROM {table} WHERE evaluation_id = ? ORDER BY rowid",
                [evaluation_id],
            )
    return directory


def _read(directory: Path, table: str) -> pa.Table:
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
    if not (directory / "evaluations.parquet").exists():
        return None
    columns = ["workload", "machine_profile", "data_fingerprint", "steps", "created_at"]
    rows = _read(directory, "evaluations").select(columns).to_pylist()
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


def applies(db_path: Path, directory: Path) -> BundledEvaluation | None:
    """The bundle if ``db_path`` has no evaluation of its workload and profile and holds its runs.

    "Its runs": the usable runs at one step count are exactly the ones it was fit
    on, or those and runs measured after it was fitted (which its models do not
    know); the bundle returned names that step count. Reads the database
    read-only: nothing is written.

    Remembered per state of the file (`core.database.file_stamp`): one answer asks it
    for every bundle several times, and each ask read the profile's runs again
    (0.2-0.6 s each on the 2-core VM).
    """
    return _applies(Path(db_path), Path(directory), database.file_stamp(Path(db_path)))


@functools.lru_cache(maxsize=64)
def _applies(db_path: Path, directory: Path, stamp: tuple[int, ...]) -> BundledEvaluation | None:
    """`applies` for one state of the database file (``stamp``)."""
    bundled = bundled_evaluation(directory)
    if bundled is None:
        return None
    with database.connect(db_path, read_only=True) as con:
        if latest_evaluation_id(con, bundled.workload, bundled.machine) is not None:
            return None
    runs = store.load_runs(db_path, status="ok", workload=bundled.workload, machine=bundled.machine)
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


def install_bundled_results(db_path: Path, directory: Path = BUNDLED_RESULTS_DIR) -> bool:
    """Copy the bundled evaluation into ``db_path`` if it has none and holds the same runs.

    "None" and "the same runs" are of the bundle's workload and machine profile.
    Returns True when it copied. Idempotent and cheap when there is nothing to do,
    so the (writable) dashboard calls it on every start.
    """
    bundled = applies(db_path, directory)
    if bundled is None:
        return False
    rows = {table: _read(directory, table) for table in RESULT_TABLES}
    with database.transaction(db_path) as con:
        if latest_evaluation_id(con, bundled.workload, bundled.machine) is not None:
            return False  # installed meanwhile
        for table, table_rows in rows.items():
            schema.insert_table(con, table, table_rows)
        # A bundle from before schema 3 does not name its profile; its runs do.
        migrations.fill_evaluation_profiles(con)
        # One from before schema 6 does not record its step count: the runs it matched do.
        for evaluation_id in rows["evaluations"].column("evaluation_id").to_pylist():
            con.execute(
                "UPDATE evaluations SET steps = ? WHERE evaluation_id = ? AND steps IS NULL",
                [bundled.steps, evaluation_id],
            )
    return True


def install_every_bundle(db_path: Path) -> int:
    """`install_bundled_results` for each bundled evaluation; how many were copied."""
    return sum(install_bundled_results(db_path, directory) for directory in BUNDLED_RESULTS_DIRS)


# --- reading without installing -------------------------------------------------------


@functools.lru_cache(maxsize=16)
def _bundled_frame(directory: Path, table: str, stamp: tuple[int, int]) -> pd.DataFrame:
    """A bundle's table as the database would return it (same column types), cached per file."""
    rows = _read(directory, table)
    with duckdb.connect() as con:  # in memory: no file
        return con.from_arrow(rows).df()


def bundled_frame(directory: Path, table: str) -> pd.DataFrame:
    """A copy of the bundle's ``table`` in ``directory``, as the database would return it."""
    stat = (directory / f"{table}.parquet").stat()
    return _bundled_frame(directory, table, (stat.st_size, stat.st_mtime_ns)).copy()


def applied_bundle(db_path: Path, workload: str, machine: str | None) -> BundledEvaluation | None:
    """The bundle of ``workload`` and ``machine`` that ``db_path`` answers from, with its steps.

    ``machine`` None: the first bundle of the workload that applies (module docstring).
    """
    for bundled in bundled_evaluations(workload):
        if machine not in (None, bundled.machine):
            continue
        applied = applies(db_path, bundled.directory)
        if applied is not None:
            return applied
    return None


def _bundled(db_path: Path, workload: str, machine: str | None, table: str) -> pd.DataFrame | None:
    """The bundled ``table`` of ``workload`` and ``machine`` when ``db_path`` needs it."""
    bundled = applied_bundle(db_path, workload, machine)
    return None if bundled is None else bundled_frame(bundled.directory, table)


def _stored_or_bundled(
    loader, db_path: Path, workload: str, machine: str | None, table: str
) -> pd.DataFrame:
    try:
        return loader(db_path, workload=workload, machine=machine)
    except NoModelsError:
        bundled = _bundled(db_path, workload, machine, table)
        if bundled is None:
            raise
        return bundled


def load_scores(
    db_path: Path, workload: str = DEFAULT_WORKLOAD, machine: str | None = None
) -> pd.DataFrame:
    """The latest scores of ``workload`` and ``machine``: the database's, else the bundle's."""
    return _stored_or_bundled(tables.load_scores, db_path, workload, machine, "scores")


def load_predictions(
    db_path: Path, workload: str = DEFAULT_WORKLOAD, machine: str | None = None
) -> pd.DataFrame:
    """The latest held-out predictions of ``workload`` and ``machine``: stored, else bundled."""
    return _stored_or_bundled(tables.load_predictions, db_path, workload, machine, "predictions")


def load_predictors(
    db_path: Path,
    workload: str = DEFAULT_WORKLOAD,
    machine: str | None = None,
    names: Collection[str] | None = None,
    lazy: bool = False,
) -> list[Predictor]:
    """The latest fitted models of ``workload`` and ``machine``: the database's, else bundled.

    names : only these models (None: every one); the others are never decoded.
    lazy : decode each when it first predicts (`modeling.stored.codec.Stored`), not now.

    Raises `NoModelsError` when neither has any, and `ModelingError` for a model
    row not stored as data (`modeling.stored.tables.predictor_from_row`).
    """
    applied = None
    try:
        predictors = tables.load_predictors(
            db_path, workload=workload, machine=machine, names=names, lazy=lazy
        )
    except NoModelsError:
        applied = applied_bundle(db_path, workload, machine)
        if applied is None:
            raise
        rows = bundled_frame(applied.directory, "models")
        flags = f"--workload {workload}" + (f" --machine {machine}" if machine else "")
        refit = f"memplan evaluate {flags} --db {db_path}"
        source = f"the bundled results of {workload}"
        records = tables.named(rows.to_dict("records"), names)
        predictors = [tables.predictor_from_row(row, source, refit, lazy) for row in records]
    return _with_closed_form_excess(predictors, db_path, workload, machine, applied)


def _with_closed_form_excess(
    predictors: list[Predictor],
    db_path: Path,
    workload: str,
    machine: str | None,
    applied: BundledEvaluation | None,
) -> list[Predictor]:
    """``predictors``, those stored without it given their closed-form excess (`excess`).

    applied : the bundle they were read from; None: the database's own evaluation.
    """
    if excess.all_known(predictors):
        return predictors
    if applied is not None:
        steps = applied.steps
    else:
        steps = excess.stored_steps(db_path, workload, machine)
    return excess.fill_closed_form_excess(predictors, db_path, workload, machine, steps)


def load_predictor(
    db_path: Path, name: str = BEST, workload: str = DEFAULT_WORKLOAD, machine: str | None = None
) -> Predictor:
    """One of `load_predictors` by name; ``"best"`` picks by `tables.best_model_name`.

    Only that model is decoded: a stored forest takes ~0.3 s to read back on the
    2-core VM, and an answer uses one model. An unknown name reads them all, to
    list the known ones in the error.
    """
    if name == BEST:
        name = tables.best_model_name(load_scores(db_path, workload, machine))
    found = load_predictors(db_path, workload, machine, names=(name,))
    if found:
        return found[0]
    return select_predictor(
        load_predictors(db_path, workload, machine),
        lambda: load_scores(db_path, workload, machine),
        name,
        db_path,
    )
