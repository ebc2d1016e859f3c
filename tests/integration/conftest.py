"""Fixtures the integration tests share."""

from __future__ import annotations

import shutil
import subprocess
import warnings
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from core import database
from memplan import cli
from tests.conftest import built_once

# The warnings Python's default filters do not print outside __main__.
HIDDEN_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


def _every_bundled_run(path: Path) -> None:
    database.ensure_database(path)
    database.seed_bundled(path)


@pytest.fixture(scope="module")
def every_bundled_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database of every bundled run and no evaluation: answers come from the bundles,
    read in memory. Seeded once per session (`built_once`); each test module gets its own
    copy."""
    template = built_once(tmp_path_factory, "every_bundled_run.duckdb", _every_bundled_run)
    path = tmp_path_factory.mktemp("bundled-runs") / "memplan.duckdb"
    return Path(shutil.copy(template, path))


def profiled_children(parent_pid: int) -> list[psutil.Process]:
    """The profiled children (`profiling.child`) among ``parent_pid``'s descendants; a process
    that ended or is a zombie meanwhile is none of them (psutil's ZombieProcess is a
    NoSuchProcess: a child reaped between the listing and the look at its command line)."""
    try:
        family = psutil.Process(parent_pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    found = []
    for process in family:
        try:
            if "profiling.child" in " ".join(process.cmdline()):
                found.append(process)
        except psutil.NoSuchProcess:
            pass
    return found


@pytest.fixture
def memplan_main(
    capsys: pytest.CaptureFixture[str],
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``memplan ARGS`` run by `memplan.cli.main` in this process: its exit status and what it
    printed (with the warnings a user's terminal would show), as a subprocess's. For tests
    whose claim is not the process: a ``python -m memplan`` costs a second of CPU starting."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        capsys.readouterr()  # what came before is not the command's
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            code = cli.main(list(args))
        printed = capsys.readouterr()
        shown = [w for w in caught if not issubclass(w.category, HIDDEN_WARNINGS)]
        stderr = printed.err + "".join(
            warnings.formatwarning(w.message, w.category, w.filename, w.lineno) for w in shown
        )
        return subprocess.CompletedProcess(args, code, printed.out, stderr)

    return run
