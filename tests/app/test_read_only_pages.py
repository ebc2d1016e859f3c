"""The read-only dashboard writes nothing; stored models cannot run code; stored text is escaped.

``MEMPLAN_READ_ONLY=1`` (a dashboard shared with a team): the database is only
opened read-only, a missing one is an error on the page and no new file, and the
bundled models are read from their files into memory rather than installed into
the database. A ``models`` row that is not stored as data (a pickle that would
run code) is refused with a message on the Models and Sizing pages. A model
title from the database that holds Markdown is shown as text.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import duckdb
import pytest

from application import readonly
from core import database
from core.machine import this_profile
from dashboard import query_state
from profiling import exchange
from tests.app.helpers import open_page, shown

MODELS_PAGE, SIZING_PAGE, SWEEPS_PAGE = (
    "dashboard/models_page.py",
    "dashboard/sizing_page.py",
    "dashboard/sweeps_page.py",
)
HOSTILE_TITLE = (
    "[re-authenticate here](https://evil.example) ![x](https://evil.example/x.png) "
    "<img src=https://evil.example/y.png>"
)


@pytest.fixture(scope="module")
def runs_only_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled U-Net runs and no evaluation: the bundled models are fit on exactly these."""
    path = tmp_path_factory.mktemp("runs-only") / "memplan.duckdb"
    database.ensure_database(path)
    exchange.import_runs(path, database.BUNDLED_RUNS, database.BUNDLED_SAMPLES)
    return path


@pytest.fixture
def shared_db(runs_only_template: Path, tmp_path: Path, monkeypatch) -> Path:
    """A private copy of it in a folder of its own, the dashboard's, in read-only mode."""
    folder = tmp_path / "shared"
    folder.mkdir()
    path = folder / "memplan.duckdb"
    path.write_bytes(runs_only_template.read_bytes())
    monkeypatch.setenv(database.DB_ENV_VAR, str(path))
    monkeypatch.setenv(readonly.READ_ONLY_ENV_VAR, "1")
    return path


def _state(db: Path) -> tuple[bytes, int, list[str]]:
    """The file's bytes and mtime, and every name in its folder."""
    return db.read_bytes(), db.stat().st_mtime_ns, sorted(p.name for p in db.parent.iterdir())


def test_the_read_only_dashboard_shows_the_bundled_models_and_writes_nothing(shared_db) -> None:
    before = _state(shared_db)

    models = open_page(MODELS_PAGE)
    sizing = open_page(SIZING_PAGE)
    open_page(SWEEPS_PAGE)

    [chosen] = [w for w in models.button_group if w.label == "Models"]
    assert "symbolic regression (gplearn)" in chosen.options
    # No "no stored evaluation": the bundled one is read in memory. (The one note says why
    # the page answers for the bundled machine, not this one.)
    assert [shown(info.value)[:13] for info in models.info] == ["This machine "]
    assert not [c for c in models.code if c.language == "bash"]  # no command: it has models
    # The buyer's figure first (issue 26 finding 6), then the bound behind the verdict.
    assert [m.label for m in sizing.metric][:2] == ["Memory to buy", "Upper bound"]
    assert _state(shared_db) == before
    with duckdb.connect(str(shared_db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM models").fetchone() == (0,)


def test_a_read_only_dashboard_shows_what_this_machine_lacks_but_launches_nothing(
    shared_db,
) -> None:
    at = open_page(MODELS_PAGE)
    [machine] = [w for w in at.main.selectbox if w.label == "Machine"]
    at = machine.set_value(this_profile().key).run()

    assert [c.value for c in at.code if c.language == "bash"][0].startswith(
        "memplan sweep --workload unet3d"
    )
    assert not at.main.button
    assert any("read-only: run the command" in caption.value for caption in at.caption)


@pytest.mark.parametrize("page", [MODELS_PAGE, SIZING_PAGE, SWEEPS_PAGE])
def test_a_read_only_dashboard_without_its_database_says_so_and_creates_nothing(
    page: str, tmp_path: Path, monkeypatch
) -> None:
    missing = tmp_path / "nowhere" / "memplan.duckdb"
    monkeypatch.setenv(database.DB_ENV_VAR, str(missing))
    monkeypatch.setenv(readonly.READ_ONLY_ENV_VAR, "1")

    at = open_page(page)

    errors = [shown(error.value) for error in [*at.error, *at.sidebar.error]]
    assert errors and errors[0].startswith(f"database {missing} does not exist, and ")
    assert not missing.parent.exists()


class _RunsCode:
    """Unpickling it creates ``marker``: what a hostile models row would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


@pytest.mark.parametrize("read_only", [True, False])
def test_a_model_row_that_would_run_code_is_refused_on_the_models_and_sizing_pages(
    reference_db: Path, tmp_path: Path, monkeypatch, read_only: bool
) -> None:
    if read_only:
        monkeypatch.setenv(readonly.READ_ONLY_ENV_VAR, "1")
    marker = tmp_path / "pickle-ran"
    with duckdb.connect(str(reference_db)) as con:
        con.execute(
            "UPDATE models SET estimator = ? WHERE name = 'xgboost'",
            [pickle.dumps(_RunsCode(marker))],
        )

    for page in (MODELS_PAGE, SIZING_PAGE):
        at = open_page(page)
        [error] = at.error
        assert shown(error.value).startswith(
            f"stored model 'xgboost' in {reference_db} is refused, nothing of it was run: it is "
            "a pickle"
        )
        assert "memplan evaluate --db" in shown(error.value)
    assert not marker.exists()


def _escaped(markdown: str) -> None:
    """``markdown`` shows the hostile title as text: every character Markdown reads is escaped."""
    assert query_state.plain(HOSTILE_TITLE) in markdown, markdown
    assert HOSTILE_TITLE in shown(markdown)


def test_a_model_title_from_the_database_is_shown_as_text(reference_db: Path) -> None:
    with duckdb.connect(str(reference_db)) as con:
        con.execute("UPDATE models SET title = ? || ' ' || name", [HOSTILE_TITLE])

    sizing = open_page(SIZING_PAGE)
    models = open_page(MODELS_PAGE)

    # The verdict names the chosen model by its title.
    texts = [*sizing.success, *sizing.error, *sizing.warning, *sizing.caption, *sizing.markdown]
    naming = [element.value for element in texts if "evil" in element.value]
    assert naming
    for markdown in naming:
        _escaped(markdown)
    titles = [m.value for m in models.markdown if "evil" in m.value]
    assert titles  # the other models' formulas, each under its title
    for title in titles:
        _escaped(title)
