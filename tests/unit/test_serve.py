"""The dashboard launcher warms the server up: the stored models' libraries load as it starts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from application import bundles
from core import database
from dashboard import serve

REPO = Path(__file__).resolve().parents[2]


def test_the_launcher_runs_the_app_through_the_warm_up() -> None:
    start = (REPO / "scripts" / "start.sh").read_text()

    assert 'python -m dashboard.serve "$@"' in start
    assert serve.APP == REPO / "app.py"


# The model libraries the warm-up imports, and the heavy ones it must not.
LIBRARIES = ("sklearn", "skops", "xgboost", "gplearn", "sympy", "tensorflow", "torch")


def _warm_up_in(db_path: Path, **more_env: str) -> str:
    """What a fresh process that ran the warm-up on ``db_path`` (as ``$MEMPLAN_DB``) kept:
    how many decoded models, whether it created the database seeded, and which of
    `LIBRARIES` and `dashboard.data` (Streamlit's caches, made at import) it loaded."""
    probe = (
        "import sys; from pathlib import Path; from core import database; "
        "from dashboard import serve; from modeling.stored import codec; serve.warm_up(); "
        "print(codec._decoded.cache_info().currsize, "
        f"database.seeded_by_this_process(Path({str(db_path)!r})), "
        f"','.join(sorted(m for m in {(*LIBRARIES, 'dashboard.data')!r} if m in sys.modules)))"
    )
    env = {"PATH": os.environ["PATH"], "MEMPLAN_DB": str(db_path), **more_env}
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture(scope="module")
def new_database_warmed_up(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A new database (its own, never the repository's) and what a fresh process's warm-up
    of it printed (`_warm_up_in`). One warm-up (~8 CPU s) serves the tests that read what
    it imported and what it made of the database."""
    db_path = tmp_path_factory.mktemp("warm") / "new.duckdb"
    return db_path, _warm_up_in(db_path)


def test_the_warm_up_imports_the_model_libraries_but_not_streamlit_caches_or_tensorflow(
    new_database_warmed_up: tuple[Path, str],
) -> None:
    _, said = new_database_warmed_up

    assert said.split()[2] == "gplearn,sklearn,skops,sympy,xgboost"


def test_the_warm_up_reads_the_default_models_back_without_writing(tmp_path: Path) -> None:
    # What the dashboard's first start makes of a new database: the bundled runs and models.
    db_path = tmp_path / "seeded.duckdb"
    assert database.created_seeded(db_path)
    bundles.install_every_bundle(db_path)
    before = db_path.read_bytes()

    decoded, seeded, _ = _warm_up_in(db_path).split()

    # The default profile's models (ten or eleven per evaluation), trees included.
    assert int(decoded) >= 10 and seeded == "False"
    assert db_path.read_bytes() == before


def test_the_warm_up_prepares_a_new_database_as_the_first_visitor_would(
    new_database_warmed_up: tuple[Path, str], tmp_path: Path
) -> None:
    db_path, said = new_database_warmed_up

    decoded, seeded, _ = said.split()

    # Created from the bundled runs, its bundles installed, its default models read back;
    # the first page still says the database was seeded (`dashboard.data._prepared`).
    assert int(decoded) >= 10 and seeded == "True"
    assert database.seeded_by_this_process(db_path) is False  # another process did
    # Nothing left to install (on a copy: the module's other tests read the warmed-up file).
    assert bundles.install_every_bundle(Path(shutil.copy(db_path, tmp_path / "new.duckdb"))) == 0


def test_a_read_only_warm_up_creates_nothing(tmp_path: Path) -> None:
    db_path = tmp_path / "new.duckdb"

    assert _warm_up_in(db_path, MEMPLAN_READ_ONLY="1").split()[:2] == ["0", "False"]
    assert not db_path.exists()


def test_the_served_app_watches_no_files() -> None:
    # Read as `streamlit run` reads it, from the repository's .streamlit/config.toml.
    probe = (
        "from streamlit import config; config.get_config_options(force_reparse=True); "
        "print(config.get_option('server.fileWatcherType'), "
        "config.get_option('server.runOnSave'))"
    )
    env = {"PATH": os.environ["PATH"], "HOME": "/nonexistent"}

    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True, text=True, check=True
    )

    assert done.stdout.split() == ["none", "False"]
