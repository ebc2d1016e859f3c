"""Issue 27, finding 4 (and 7's memory-limit floor): a sweep has limits, checked before it starts.

Before, ``--image-sizes $(seq 16 16 4096) --batch-sizes $(seq 1 512)`` (131,072
points) started measuring, ``--repeats 1000000000`` grew to 3 GB in 30 s (the
whole point list was built in memory) and a 107-byte memory limit was taken.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from core import store
from core.errors import ConfigError
from core.units import MIN_MEMORY_LIMIT_BYTES, check_memory_limit
from memplan import cli
from profiling.local_sweep import Points
from profiling.sweep import MAX_REPEATS, MAX_SWEEP_POINTS, Grid, check_sweep_size

REPO_ROOT = Path(__file__).resolve().parents[2]
HUGE_GRID = [
    "--image-sizes", *map(str, range(16, 4097, 16)), "--batch-sizes", *map(str, range(1, 513)),
]  # fmt: skip


def _error(capsys, *argv: str) -> str:
    assert cli.main(list(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    return err


def test_a_grid_of_131072_points_is_refused_before_anything_runs(tmp_path, capsys) -> None:
    db = tmp_path / "runs.duckdb"
    said = _error(capsys, "sweep", *HUGE_GRID, "--db", str(db))
    assert "the sweep has 131,072 points (256 x 512 combinations x 1 repeat(s))" in said
    assert f"at most {MAX_SWEEP_POINTS:,}" in said and "split the grid" in said
    assert not db.exists() or store.load_sweeps(db).empty  # no sweep started


# Runs a command and writes the peak RSS (KiB) of its process tree to argv[1]. A small
# process of its own, because ru_maxrss over RUSAGE_CHILDREN is the largest child a
# process ever reaped, and Linux carries the forking process's size across exec: read in
# a pytest(-xdist) worker it reported an earlier TensorFlow child, or the worker itself.
PEAK_OF = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[2:]).returncode\n"
    "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "open(sys.argv[1], 'w').write(str(peak))\n"
    "sys.exit(code)\n"
)


def test_a_billion_repeats_are_refused_at_once_in_little_memory(tmp_path) -> None:
    command = [
        sys.executable, "-m", "memplan", "sweep", "--image-sizes", "16", "--batch-sizes",
        "1", "--repeats", "1000000000", "--db", str(tmp_path / "runs.duckdb"),
    ]  # fmt: skip
    peak_file = tmp_path / "peak_kib"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", PEAK_OF, str(peak_file), *command],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    seconds = time.monotonic() - started
    assert done.returncode == 2, done.stderr
    assert f"--repeats must be from 1 to {MAX_REPEATS}, got 1000000000" in done.stderr
    # Before: 3 GB after 30 s and still growing. Now the CLI's imports are all it takes.
    peak_kib = int(peak_file.read_text())
    assert peak_kib < 1024 * 1024, peak_kib
    assert seconds < 110  # the CLI's imports: ~30 s on the loaded 2-core VM


def test_a_slurm_sweep_has_the_same_limits(capsys) -> None:
    said = _error(capsys, "sweep", *HUGE_GRID, "--executor", "slurm", "--partition", "debug")
    assert "the sweep has 131,072 points" in said


def test_the_limits_are_counted_without_building_the_points() -> None:
    grid = Grid(image_sizes=((16, 16, 16),) * 100, batch_sizes=tuple(range(1, 101)))
    assert check_sweep_size(Grid(image_sizes=((16, 16, 16),), batch_sizes=(1, 2)), 3) == 6
    with pytest.raises(ConfigError, match="the sweep has 1,000,000 points"):
        check_sweep_size(grid, MAX_REPEATS)
    points = Points(configs=("a", "b"), repeats=3)  # made one at a time, as asked
    assert len(points) == 6
    assert list(points) == [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1), ("b", 2)]


@pytest.mark.parametrize("limit", ["107", "1MiB", "63MiB"])
def test_a_memory_limit_no_child_can_start_in_is_refused(tmp_path, capsys, limit: str) -> None:
    said = _error(
        capsys, "sweep", "--image-sizes", "16", "--batch-sizes", "1", "--memory-limit", limit,
        "--db", str(tmp_path / "runs.duckdb"),
    )  # fmt: skip
    assert "is too small for any point" in said and "give at least 64MiB" in said
    assert check_memory_limit(MIN_MEMORY_LIMIT_BYTES, 2**40) == MIN_MEMORY_LIMIT_BYTES


def test_a_slurm_mem_below_the_jobs_own_python_is_refused(capsys) -> None:
    said = _error(
        capsys, "sweep", "--image-sizes", "16", "--batch-sizes", "1", "--executor", "slurm",
        "--partition", "debug", "--mem", "200M",
    )  # fmt: skip
    assert "--mem 200.00 MiB is too small" in said and "give at least 320MiB" in said
