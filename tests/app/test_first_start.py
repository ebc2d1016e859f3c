"""A first start (issue 26, finding 8): a new ``$MEMPLAN_DB`` is seeded, an empty one offered.

Before, a database named by ``MEMPLAN_DB`` that did not exist yet was created
empty and every page was a dead end: no runs, no models, nothing pointing at
the bundled measurements. Now the dashboard creates it filled with them, as
the default database is, and says so in one line; an existing database
without runs gets one button that loads them (not on a read-only dashboard).
Real DuckDB files, the real bundled exports, the real pages through AppTest.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from application import readonly, stored
from core import database, store
from core.bundled_gpu import BUNDLED_GPU_RUNS
from dashboard import first_start
from tests.app.helpers import open_page, shown

MODELS_PAGE, SWEEPS_PAGE = "dashboard/models_page.py", "dashboard/sweeps_page.py"


def bundled_run_count() -> int:
    """How many runs the bundled exports hold, read from their files."""
    return sum(pq.read_metadata(runs).num_rows for runs, _ in database.BUNDLED_EXPORTS)


def bundled_torch_run_count() -> int:
    """How many of them PyTorch trained (an export without the column is TensorFlow's)."""
    return sum(
        pq.read_table(runs, columns=["framework"])[0].to_pylist().count("torch")
        for runs, _ in database.BUNDLED_EXPORTS
        if "framework" in pq.read_schema(runs).names
    )


def test_a_new_memplan_db_starts_with_the_bundled_runs_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    new = tmp_path / "team" / "new.duckdb"
    monkeypatch.setenv(database.DB_ENV_VAR, str(new))

    at = open_page(MODELS_PAGE)

    assert len(store.load_runs(new)) == bundled_run_count()
    [note] = [shown(c.value) for c in at.main.caption if "seeded from the bundled" in c.value]
    assert note.startswith(f"New database {new}: seeded from the bundled measurements (")
    assert f"{bundled_run_count():,} runs: 3D U-Net (IntelAI/unet) " in note
    # The bundled GPU runs too, named as the GPU Sizing page's evidence names them.
    gpu_lines = sum(len(path.read_text().splitlines()) for path, _ in BUNDLED_GPU_RUNS)
    assert f"; {gpu_lines:,} runs of GPU memory: 3D U-Net (IntelAI/unet) " in note
    assert ", on NVIDIA H200; how each was measured: data/REFERENCE.md)." in note
    # Its models are the bundled ones, as on the default database: no "fit them first" dead end.
    assert not any("Only the analytical models" in info.value for info in at.main.info)
    assert not [b for b in at.main.button if b.label == first_start.LOAD_BUTTON]


def test_the_seeded_note_is_said_once_a_session_not_on_every_rerun_or_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seen in issue 42: the note still headed every page 30 minutes later.
    monkeypatch.setenv(database.DB_ENV_VAR, str(tmp_path / "new.duckdb"))
    at = open_page(SWEEPS_PAGE)
    assert [c for c in at.main.caption if "seeded from the bundled" in c.value]

    at.run()
    assert not at.exception
    assert not [c for c in at.main.caption if "seeded from the bundled" in c.value]
    at.switch_page(MODELS_PAGE).run()
    assert not [c for c in at.main.caption if "seeded from the bundled" in c.value]


def test_a_database_the_servers_warm_up_seeded_is_still_said_to_be_seeded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `python -m dashboard.serve` creates a new database before its first visitor comes.
    new = tmp_path / "warmed.duckdb"
    monkeypatch.setenv(database.DB_ENV_VAR, str(new))
    assert database.created_seeded(new)

    at = open_page(MODELS_PAGE)

    assert [c for c in at.main.caption if "seeded from the bundled" in c.value]


def test_an_existing_empty_database_offers_the_bundled_runs_in_one_click(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Created empty elsewhere, e.g. by `memplan list` on a new $MEMPLAN_DB.
    empty = database.ensure_database(tmp_path / "empty.duckdb")
    monkeypatch.setenv(database.DB_ENV_VAR, str(empty))

    at = open_page(SWEEPS_PAGE)
    offer = shown(at.main.info[0].value)
    assert offer.startswith(f"Database {empty} holds no runs yet: load the bundled measurements")
    assert "seeded" not in " ".join(c.value for c in at.main.caption)

    at = at.main.button(key="first_start_load").click().run()

    assert not at.exception
    assert len(store.load_runs(empty)) == bundled_run_count()
    assert any(
        # The host-RAM runs and the 50 bundled GPU runs (`core.bundled_gpu`).
        shown(c.value) == f"Loaded {bundled_run_count() + 50:,} bundled runs into {empty} "
        "(data/REFERENCE.md)."
        for c in at.main.caption
    )
    assert not [b for b in at.main.button if b.label == first_start.LOAD_BUTTON]
    # The Sweeps page lists the framework it shows: TensorFlow, unless asked.
    assert len(at.main.dataframe[0].value) == bundled_run_count() - bundled_torch_run_count()
    # The bundled evaluations apply to exactly these runs, so they were installed too.
    assert stored.load_predictors(empty, workload="unet3d")


def test_a_read_only_dashboard_offers_nothing_to_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = database.ensure_database(tmp_path / "empty.duckdb")
    monkeypatch.setenv(database.DB_ENV_VAR, str(empty))
    monkeypatch.setenv(readonly.READ_ONLY_ENV_VAR, "1")

    at = open_page(SWEEPS_PAGE)

    assert not [b for b in at.main.button if b.label == first_start.LOAD_BUTTON]
    assert store.load_runs(empty).empty
