"""What the pages read, cached: runs, timelines, sweeps, stored models and scores.

Models, scores and held-out predictions are per workload: each workload has its
own latest evaluation (``python -m modeling evaluate --workload NAME``).

Every loader takes the database's *version* — the size and modification time
of the file and of its write-ahead log, read with ``os.stat`` — as a cache
key. Computing it opens no DuckDB connection, so a slider change never waits on
a lock a running sweep holds; it reuses the cached frames and models. A run a
sweep has just written changes the version, and the next rerun reads it.

Nothing here fits a model: the models come from ``python -m modeling evaluate``
(or the bundled evaluation of the bundled runs, `modeling.stored.bundle`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import streamlit as st

from core import store
from core.database import default_db_path, ensure_database
from modeling.errors import NoModelsError
from modeling.stored import bundle
from modeling.stored import tables as results
from modeling.stored.predictor import Predictor

# Set to 1/true/yes to hide everything that writes (sweep launcher, import): a
# dashboard shared with a whole team.
READ_ONLY_ENV_VAR = "MEMPLAN_READ_ONLY"
# Cached entries per loader: the current version and the one before it.
MAX_VERSIONS = 2

Version = tuple[int, ...]


def read_only() -> bool:
    """Whether `READ_ONLY_ENV_VAR` asks for a dashboard that never writes."""
    return os.environ.get(READ_ONLY_ENV_VAR, "").strip().lower() in {"1", "true", "yes", "on"}


@st.cache_resource(show_spinner="Preparing the database…")
def _prepared(path: str) -> Path:
    """Create the database (a fresh default one from the bundled runs) and its bundled models."""
    db_path = ensure_database(Path(path))
    bundle.install_every_bundle(db_path)
    return db_path


def database() -> Path:
    """The database the dashboard shows: ``$MEMPLAN_DB`` or the default, ready to read."""
    return _prepared(str(default_db_path()))


def version(db_path: Path) -> Version:
    """A cheap fingerprint of the database's contents: stat of the file and its WAL."""
    stamp: list[int] = []
    for candidate in (db_path, db_path.with_name(db_path.name + ".wal")):
        try:
            info = candidate.stat()
        except FileNotFoundError:
            stamp += [0, 0]
        else:
            stamp += [info.st_size, info.st_mtime_ns]
    return tuple(stamp)


@st.cache_data(show_spinner=False, max_entries=MAX_VERSIONS)
def runs(db_path: Path, db_version: Version) -> pd.DataFrame:
    """Every stored run (`core.store.load_runs`)."""
    return store.load_runs(db_path)


@st.cache_data(show_spinner=False, max_entries=MAX_VERSIONS)
def sweeps(db_path: Path, db_version: Version) -> pd.DataFrame:
    """Every sweep, oldest first."""
    return store.load_sweeps(db_path)


@st.cache_data(show_spinner=False, max_entries=16)
def samples(db_path: Path, run_ids: tuple[str, ...], db_version: Version) -> pd.DataFrame:
    """The memory timelines of ``run_ids``."""
    return store.load_samples(db_path, list(run_ids))


@st.cache_resource(show_spinner=False, max_entries=MAX_VERSIONS * 4)
def predictors(db_path: Path, db_version: Version, workload: str) -> list[Predictor]:
    """``workload``'s latest evaluation's fitted models; empty when none was stored yet."""
    try:
        return results.load_predictors(db_path, workload=workload)
    except NoModelsError:
        return []


@st.cache_data(show_spinner=False, max_entries=MAX_VERSIONS * 4)
def scores(db_path: Path, db_version: Version, workload: str) -> pd.DataFrame:
    """``workload``'s latest evaluation's scores; empty when none was stored yet."""
    try:
        return results.load_scores(db_path, workload=workload)
    except NoModelsError:
        return pd.DataFrame()


@st.cache_data(show_spinner=False, max_entries=MAX_VERSIONS * 4)
def held_out_predictions(db_path: Path, db_version: Version, workload: str) -> pd.DataFrame:
    """``workload``'s latest evaluation's held-out predictions; empty when none was stored yet."""
    try:
        return results.load_predictions(db_path, workload=workload)
    except NoModelsError:
        return pd.DataFrame()
