"""Fixtures the integration tests share."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import database


@pytest.fixture(scope="module")
def every_bundled_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database of every bundled run and no evaluation: answers come from the bundles,
    read in memory. Built once per test module."""
    path = tmp_path_factory.mktemp("bundled-runs") / "memplan.duckdb"
    database.ensure_database(path)
    database.seed_bundled(path)
    return path
