"""``python -m profiling`` and ``python -m modeling``: aliases of `memplan` for one release.

Each prints one deprecation line on stderr and runs ``python -m memplan`` with the
same arguments in its place (a new program, not an import: profiling and
modeling never import the command line above them).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from core.version import __version__

REPO = Path(__file__).resolve().parents[2]


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", *argv], cwd=REPO, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("package", ["profiling", "modeling"])
def test_the_old_entry_point_says_it_is_memplan_now_and_runs_it(package, tmp_path) -> None:
    db = tmp_path / "runs.duckdb"

    result = _run(package, "list", "--db", str(db))

    assert result.returncode == 0
    assert result.stderr == (
        f"python -m {package} is now 'memplan'; this alias goes in the next release\n"
    )
    assert result.stdout == "no runs match\n"


def test_an_alias_passes_memplans_exit_code_and_error_line_through(tmp_path) -> None:
    missing = tmp_path / "nothing.csv"

    result = _run("profiling", "import", str(missing), "--db", str(tmp_path / "runs.duckdb"))

    assert result.returncode == 2
    deprecation, error = result.stderr.splitlines()
    assert deprecation.startswith("python -m profiling is now 'memplan'")
    assert error.startswith("error: ") and str(missing) in error


def test_python_dash_m_memplan_prints_its_version() -> None:
    result = _run("memplan", "--version")
    assert (result.returncode, result.stdout, result.stderr) == (0, f"memplan {__version__}\n", "")
