"""What the pages read, cached: runs, timelines, sweeps, stored models and scores.

Models, scores and held-out predictions are per workload and machine profile
(`core.profiles`): each pair has its own latest evaluation (``python -m
modeling evaluate --workload NAME --machine KEY``). ``machine`` None reads the
latest evaluation of the workload whatever its profile (one from before
profiles, fitted on several machines' runs). Every run carries its profile key
(``machine_profile``), so a page keeps one profile's runs without reading again.

Every loader takes the database's *version* — the size and modification time
of the file and of its write-ahead log, read with ``os.stat`` — as a cache
key. Computing it opens no DuckDB connection, so a slider change never waits on
a lock a running sweep holds; it reuses the cached frames and models. A run a
sweep has just written changes the version, and the next rerun reads it.

Nothing here fits a model: the models come from ``memplan evaluate``
(or the bundled evaluation of the bundled runs, `modeling.stored.bundle`).

Read-only (``MEMPLAN_READ_ONLY``, `application.readonly`), nothing here
writes: the database is only ever opened read-only, a missing one is an error
on the page (not a new file), and the bundled models are read from their files
into memory instead of being installed into the database.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from application import bundles, readonly, stored
from application import machines as machine_choices
from application import models as stored_models
from application.machines import MachineChoice
from application.models import FitEvidence, KnobEvidence, Predictor, load_evidence
from core import frameworks, profiles, store, targets
from core.database import (
    default_db_path,
    ensure_database,
    file_stamp,
    seeded_by_this_process,
)
from core.errors import ModelingError, NoModelsError, StoreError
from core.snapshot import Snapshot
from presentation import text

# Set to 1/true/yes to hide everything that writes (sweep launcher, import) and
# write nothing at all: a dashboard shared with a whole team.
READ_ONLY_ENV_VAR = readonly.READ_ONLY_ENV_VAR
# Cached entries per loader: the current version and the one before it.
MAX_VERSIONS = 2

Version = tuple[int, ...]


def read_only() -> bool:
    """Whether `READ_ONLY_ENV_VAR` asks for a dashboard that never writes."""
    return readonly.read_only()


@st.cache_resource(show_spinner="Preparing the database…")
def _prepared(path: str) -> tuple[Path, bool]:
    """Create the database and install its bundled models; whether it was seeded just now.

    A file that does not exist yet, the default or a new ``$MEMPLAN_DB``, is
    created filled with the bundled runs (`application.bundles.seed_if_new`), so a
    first start has something on every page; an existing one is only migrated.
    """
    # The server's warm-up may have created it a moment before (`dashboard.serve`).
    seeded = bundles.seed_if_new(Path(path)) or seeded_by_this_process(Path(path))
    db_path = ensure_database(Path(path))
    bundles.install_every_bundle(db_path)
    return db_path, seeded


def database() -> Path:
    """The database the dashboard shows: ``$MEMPLAN_DB`` or the default, ready to read.

    Read-only, only an existing file, written to by nothing. A database that
    cannot be opened stops the page with the reason.
    """
    try:
        if read_only():
            return readonly.existing(default_db_path())
        return _prepared(str(default_db_path()))[0]
    except StoreError as error:
        st.error(text.plain(error))
        st.stop()
        raise  # st.stop() raises; this line is for the type checker


def seeded_now(db_path: Path) -> bool:
    """Whether this dashboard created ``db_path`` from the bundled runs when it started."""
    return not read_only() and _prepared(str(db_path))[1]


def load_bundled(db_path: Path) -> int:
    """Fill the empty ``db_path`` with the bundled runs and their models; runs added."""
    return bundles.load_bundled(db_path)


def _stops_on_store_error(load: Callable[..., Any]) -> Callable[..., Any]:
    """``load``, but a StoreError (e.g. a damaged database) stops the page with its message.

    Outside the cache, so a stopped page caches nothing and the next rerun tries again.
    """

    @functools.wraps(load)
    def loading(*args: Any, **kwargs: Any) -> Any:
        try:
            return load(*args, **kwargs)
        except StoreError as error:
            st.error(text.plain(error))
            st.stop()
            raise  # st.stop() raises; this line is for the type checker

    return loading


def version(db_path: Path) -> Version:
    """A cheap fingerprint of the database's contents: stat of the file and its WAL."""
    return file_stamp(db_path)


@_stops_on_store_error
@st.cache_data(show_spinner=False, max_entries=MAX_VERSIONS)
def runs(db_path: Path, db_version: Version) -> pd.DataFrame:
    """Every stored run (`core.store.load_runs`), with its profile key in ``machine_profile``."""
    return profiles.with_keys(store.load_runs(db_path))


@_stops_on_store_error
@st.cache_data(show_spinner=False, max_entries=MAX_VERSIONS)
def gpu_runs(db_path: Path, db_version: Version) -> pd.DataFrame:
    """Every stored run of GPU memory (`core.targets`), as `runs` reads host RAM's."""
    return store.load_runs(db_path, store.RunFilter(target=targets.GPU_MEMORY))


@_stops_on_store_error
@st.cache_data(show_spinner=False, max_entries=MAX_VERSIONS)
def sweeps(db_path: Path, db_version: Version) -> pd.DataFrame:
    """Every sweep, oldest first."""
    return store.load_sweeps(db_path)


@_stops_on_store_error
@st.cache_data(show_spinner=False, max_entries=16)
def samples(db_path: Path, run_ids: tuple[str, ...], db_version: Version) -> pd.DataFrame:
    """The memory timelines of ``run_ids``."""
    return store.load_samples(db_path, list(run_ids))


@st.cache_resource(show_spinner=False, max_entries=MAX_VERSIONS * 4)
def _snapshot(db_path: Path, db_version: Version, workload: str) -> Snapshot:
    """``workload``'s runs and stored models as the database held them (`core.snapshot`):
    read once per state of the file, shared by the loaders below (none changes it)."""
    return stored.read(db_path, workload)


@_stops_on_store_error
@st.cache_resource(show_spinner=False, max_entries=MAX_VERSIONS * 8)
def _stored_models(
    db_path: Path, db_version: Version, workload: str, machine: str | None, decoded: bool
) -> tuple[list[Predictor], str | None]:
    """The models (`application.models.load_predictors`, each decoded now or, if not
    ``decoded``, when it first predicts) and why they were refused, if so."""
    try:
        read = _snapshot(db_path, db_version, workload)
        return stored_models.load_predictors(read, machine, lazy=not decoded), None
    except NoModelsError:
        return [], None
    except ModelingError as error:  # a row not stored as data: refused, nothing of it ran
        return [], str(error)


def predictors(
    db_path: Path,
    db_version: Version,
    workload: str,
    machine: str | None = None,
    decoded: bool = True,
) -> list[Predictor]:
    """The latest fitted models of ``workload`` on ``machine``; empty when none was stored yet.

    The database's, or the bundled ones of its runs; empty too when they were
    refused (`refused_models` says why). decoded : each read back now, so a malformed
    one is refused here; False: when it first predicts (`Predictor.read_back`), for a
    page that draws a few of them (the trees took ~3.7 s CPU to read back).
    """
    return _stored_models(db_path, db_version, workload, machine, decoded)[0]


def refused_models(
    db_path: Path,
    db_version: Version,
    workload: str,
    machine: str | None = None,
    decoded: bool = True,
) -> str | None:
    """Why the models of ``workload`` on ``machine`` could not be loaded; None if they could.

    decoded : as `predictors`; False: only what is checked before a model's first use.
    """
    return _stored_models(db_path, db_version, workload, machine, decoded)[1]


@_stops_on_store_error
@st.cache_data(show_spinner=False, max_entries=MAX_VERSIONS * 8)
def fit_evidence(
    db_path: Path, db_version: Version, workload: str, machine: str | None = None
) -> FitEvidence | None:
    """What the models of ``workload`` on ``machine`` rest on (`load_evidence`); None if none."""
    try:
        return load_evidence(_snapshot(db_path, db_version, workload), machine)
    except NoModelsError:
        return None


@_stops_on_store_error
@st.cache_data(show_spinner=False, max_entries=MAX_VERSIONS * 8)
def scores(
    db_path: Path, db_version: Version, workload: str, machine: str | None = None
) -> pd.DataFrame:
    """The latest scores of ``workload`` on ``machine``; empty when none was stored yet."""
    try:
        return stored_models.load_scores(_snapshot(db_path, db_version, workload), machine)
    except NoModelsError:
        return pd.DataFrame()


@_stops_on_store_error
@st.cache_data(show_spinner=False, max_entries=MAX_VERSIONS * 8)
def held_out_predictions(
    db_path: Path, db_version: Version, workload: str, machine: str | None = None
) -> pd.DataFrame:
    """The latest held-out predictions of ``workload`` on ``machine``; empty when none yet."""
    try:
        return stored_models.load_predictions(_snapshot(db_path, db_version, workload), machine)
    except NoModelsError:
        return pd.DataFrame()


@_stops_on_store_error
@st.cache_data(show_spinner=False, max_entries=MAX_VERSIONS * 4)
def fitted_default(
    db_path: Path,
    db_version: Version,
    workload: str,
    framework: str = frameworks.DEFAULT_FRAMEWORK,
) -> MachineChoice | None:
    """The profile of ``framework`` `modeling.machines.choose_machine` answers for; None when
    none has models.

    None too when the bundled evaluations cannot be read: the models' loaders say why.
    """
    try:
        read = _snapshot(db_path, db_version, workload)
        return machine_choices.choose_machine(read, framework=framework)
    except ModelingError:  # NoModelsError among them
        return None


@_stops_on_store_error
@st.cache_data(show_spinner=False, max_entries=MAX_VERSIONS * 4)
def run_counts(db_path: Path, db_version: Version, workload: str) -> dict[str, int]:
    """Distinct measured configurations of ``workload`` per profile key (what a fit counts)."""
    return machine_choices.run_counts(_snapshot(db_path, db_version, workload))


@_stops_on_store_error
@st.cache_data(show_spinner=False, max_entries=MAX_VERSIONS * 4)
def knob_evidence(db_path: Path, db_version: Version, workload: str) -> KnobEvidence:
    """Every fitted profile's knob split results for ``workload`` (`load_knob_evidence`)."""
    return stored_models.load_knob_evidence(_snapshot(db_path, db_version, workload))
