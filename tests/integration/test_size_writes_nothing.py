"""``memplan size`` writes nothing: never the bundle, and in read-only mode not at all.

With ``MEMPLAN_READ_ONLY=1`` a missing database is a message (no file), an
existing one is opened read-only only, and the bundled models of the bundled
runs are read from their files into memory instead of being installed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from application import bundles, readonly, stored
from core import database
from memplan import cli
from modeling.stored import tables as results
from profiling import exchange

SIZE_BUY = ["size", "buy", "--image-size", "128", "--batch-size", "4"]
SIZE_ALEXNET = ["size", "batch", "--image-size", "224", "--budget", "8GiB", "--workload", "alexnet"]


@pytest.fixture(scope="module")
def runs_only_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both bundled sweeps' runs, no evaluation: what the bundled results were fit on."""
    path = tmp_path_factory.mktemp("runs-only") / "memplan.duckdb"
    database.ensure_database(path)
    exchange.import_runs(path, database.BUNDLED_RUNS, database.BUNDLED_SAMPLES)
    alexnet_runs, alexnet_samples = database.BUNDLED_EXPORTS[1]
    exchange.import_runs(path, alexnet_runs, alexnet_samples)
    return path


@pytest.fixture
def runs_only(runs_only_template: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "shared"
    folder.mkdir()
    return Path(shutil.copy(runs_only_template, folder / "memplan.duckdb"))


def _state(db: Path) -> tuple[bytes, int, list[str]]:
    """The file's bytes and mtime, and every name in its folder."""
    return db.read_bytes(), db.stat().st_mtime_ns, sorted(p.name for p in db.parent.iterdir())


def _evaluations(db: Path) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT count(*) FROM evaluations").fetchone()[0]


@pytest.mark.parametrize("read_only", [True, False])
def test_size_answers_from_the_bundle_in_memory_and_writes_nothing(
    runs_only: Path, read_only: bool, monkeypatch, capsys
) -> None:
    if read_only:
        monkeypatch.setenv(readonly.READ_ONLY_ENV_VAR, "1")
    before = _state(runs_only)

    assert cli.main([*SIZE_BUY, "--db", str(runs_only)]) == 0
    assert cli.main([*SIZE_ALEXNET, "--db", str(runs_only), "--model", "symbolic"]) == 0

    out = capsys.readouterr().out
    assert "buy " in out and "largest batch: " in out
    assert _state(runs_only) == before
    assert _evaluations(runs_only) == 0


def test_read_only_size_of_a_missing_database_says_so_and_creates_nothing(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.setenv(readonly.READ_ONLY_ENV_VAR, "1")
    missing = tmp_path / "nowhere" / "memplan.duckdb"

    assert cli.main([*SIZE_BUY, "--db", str(missing)]) == 2

    assert capsys.readouterr().err.startswith(
        f"error: database {missing} does not exist, and MEMPLAN_READ_ONLY is set, so none is "
        "created"
    )
    assert not missing.parent.exists()


def test_read_only_size_never_migrates_an_older_database(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setenv(readonly.READ_ONLY_ENV_VAR, "1")
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "schema1" / "memplan.duckdb"
    old = Path(shutil.copy(fixture, tmp_path / "memplan.duckdb"))
    before = _state(old)

    assert cli.main([*SIZE_BUY, "--db", str(old)]) == 2

    assert "a read-only open never migrates it" in capsys.readouterr().err
    assert _state(old) == before


def test_read_only_evaluate_stores_nothing(runs_only: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv(readonly.READ_ONLY_ENV_VAR, "yes")
    before = _state(runs_only)

    assert cli.main(["evaluate", "--db", str(runs_only), "--quick", "--seeds", "1"]) == 2

    assert "MEMPLAN_READ_ONLY is set, so nothing is stored" in capsys.readouterr().err
    assert _state(runs_only) == before


def test_the_in_memory_bundle_is_the_installed_one(runs_only: Path) -> None:
    in_memory = stored.load_scores(runs_only, workload="alexnet")
    names = [p.name for p in stored.load_predictors(runs_only, workload="alexnet")]
    assert _evaluations(runs_only) == 0

    assert bundles.install_every_bundle(runs_only) == 2

    installed = results.load_scores(stored.read(runs_only, "alexnet"))
    assert in_memory.equals(installed)
    assert names == [p.name for p in results.load_predictors(stored.read(runs_only, "alexnet"))]


@pytest.mark.parametrize(
    "question", [SIZE_BUY, ["size", "image", "--budget", "12GiB", "--batch-size", "4"]]
)
def test_size_opens_the_database_once_for_one_answer(
    runs_only: Path, question: list[str], database_opens: list[bool], capsys
) -> None:
    # One read of everything the answer needs (`core.snapshot`), which checks the schema on
    # the way: it was 16 opens (~40 ms CPU each on the 2-core VM), then two.
    assert cli.main([*question, "--db", str(runs_only)]) == 0
    assert "rests on" in capsys.readouterr().out.lower()
    assert database_opens == [True]
