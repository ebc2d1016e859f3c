"""One `memplan size` question reads the database once: one open, one connection, one read of
the runs (`core.snapshot`), whatever modeling asks of them.

Before modeling took the runs and models it needs, 29 of its functions took the database's
path and read for themselves: `size buy` opened the file twice, made 22 connections and read
the runs 9 times (in a fresh process; measured on main eef562e).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core import database, store
from memplan import cli

QUESTIONS = {
    "buy": ["size", "buy", "--image-size", "240x240x144", "--batch-size", "16"],
    "image": ["size", "image", "--budget", "12GiB", "--batch-size", "4"],
    "batch": ["size", "batch", "--budget", "12GiB", "--image-size", "112"],
}


@pytest.fixture(scope="module")
def fresh_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new database seeded with the bundled runs, as a fresh checkout creates it."""
    path = tmp_path_factory.mktemp("reads") / "memplan.duckdb"
    assert database.created_seeded(path)
    return path


def _counted(
    monkeypatch: pytest.MonkeyPatch, counts: Counter[str], module: Any, name: str, kind: str
) -> None:
    if not hasattr(module, name):
        return  # an older memplan without it
    real: Callable[..., Any] = getattr(module, name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        counts[kind] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often, from now on, a file is opened, a connection made and the runs read."""
    counts: Counter[str] = Counter()
    _counted(monkeypatch, counts, database, "open_file", "file opens")
    _counted(monkeypatch, counts, database, "connect", "connections")
    _counted(monkeypatch, counts, store, "connect", "connections")  # store's own name for it
    _counted(monkeypatch, counts, store, "load_runs", "runs loads")  # each a read of its own
    _counted(monkeypatch, counts, store, "runs_in", "runs queries")  # the query a read runs
    return counts


@pytest.mark.parametrize("question", sorted(QUESTIONS))
def test_one_size_question_opens_the_database_once_and_reads_the_runs_once(
    fresh_db: Path, reads: Counter[str], question: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*QUESTIONS[question], "--machine", "9b59", "--db", str(fresh_db)]

    assert cli.main(argv) == 0, capsys.readouterr().err

    assert dict(reads) == {"file opens": 1, "connections": 1, "runs queries": 1}
