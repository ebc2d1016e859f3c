"""Issue 27, finding 7: a run's created_at is checked on import (a future date imported before)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from core import database, store
from core.errors import DataFileError
from core.plausibility import MAX_CLOCK_SKEW_S
from core.records import RUN_COLUMNS
from profiling import exchange
from tests.conftest import build_record


def _export(tmp_path: Path, created_at: str) -> Path:
    row = build_record(created_at=created_at).row()
    path = tmp_path / "runs.csv"
    pd.DataFrame([row], columns=list(RUN_COLUMNS)).to_csv(path, index=False)
    return path


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return database.ensure_database(tmp_path / "runs.duckdb")


def _iso(when: str | timedelta) -> str:
    """``when`` as given, or that long from now: computed when the test runs, so the test ids
    stay the same in every pytest-xdist worker (they must agree on what they collected)."""
    if isinstance(when, str):
        return when
    return (datetime.now(UTC) + when).isoformat(timespec="seconds")


@pytest.mark.parametrize(
    ("created_at", "problem"),
    [
        ("2999-01-01T00:00:00+00:00", "is in the future; created_at is when the run was measured"),
        (timedelta(days=2), "is in the future"),
        (timedelta(seconds=MAX_CLOCK_SKEW_S + 120), "is in the future"),
        ("yesterday", "'yesterday' is not an ISO 8601 time"),
        ("2025-13-45T00:00:00", "is not an ISO 8601 time"),
    ],
)
def test_an_implausible_created_at_is_refused(tmp_path, db, created_at, problem) -> None:
    path = _export(tmp_path, _iso(created_at))
    with pytest.raises(DataFileError, match=f"{path}: column created_at, row 1: .*{problem}"):
        exchange.import_runs(db, path)
    assert store.load_runs(db).empty


@pytest.mark.parametrize(
    "created_at",
    ["2025-01-01T00:00:00+00:00", "2025-01-01 00:00:00", timedelta(minutes=5), "2020-02-29"],
)
def test_a_plausible_created_at_imports(tmp_path, db, created_at) -> None:
    assert exchange.import_runs(db, _export(tmp_path, _iso(created_at))) == 1
