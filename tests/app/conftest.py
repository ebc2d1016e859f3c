"""Fixtures for the dashboard tests: a real DuckDB file with the bundled runs and models."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import store
from modeling.stored import bundle
from profiling import exchange


@pytest.fixture(scope="session")
def reference_db_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database holding the bundled reference runs and the bundled evaluation (built once)."""
    path = tmp_path_factory.mktemp("reference") / "reference.duckdb"
    store.ensure_database(path)
    exchange.import_runs(path, store.BUNDLED_RUNS, store.BUNDLED_SAMPLES)
    assert bundle.install_bundled_results(path)
    return path


@pytest.fixture
def reference_db(
    reference_db_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A private copy of the reference database, made the dashboard's via ``MEMPLAN_DB``."""
    path = tmp_path / "memplan.duckdb"
    path.write_bytes(reference_db_template.read_bytes())
    monkeypatch.setenv(store.DB_ENV_VAR, str(path))
    return path
