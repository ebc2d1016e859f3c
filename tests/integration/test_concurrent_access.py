"""A sweep writing while the dashboard reads: two real processes sharing one DuckDB file.

DuckDB lets one process write or many read, never both at once, so this only
works because every store call holds its connection for one operation and waits
out the other side's lock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from core import database, store

RUNS = 40
SAMPLES_PER_RUN = 200
TESTS_DIR = Path(__file__).resolve().parent.parent
REPO_ROOT = TESTS_DIR.parent
# Generous: the whole exchange takes a few seconds; this only stops a hang.
PROCESS_TIMEOUT_S = 60
# A real sweep spends seconds measuring between two writes; a short pause stands in for that.
MEASURE_PAUSE_S = 0.05
# Far faster than a dashboard polls, to give the two processes every chance to collide.
POLL_S = 0.02
CREATORS = 4

WRITER = f"""
import sys, time
from conftest import build_record
from core import store
for index in range({RUNS}):
    record = build_record(run_id=f"run-{{index:03d}}", timeline={SAMPLES_PER_RUN})
    store.insert_run(sys.argv[1], record)
    time.sleep({MEASURE_PAUSE_S})
"""

# Reads like a polling dashboard until the writer's last run is visible (or the
# writer is gone), then prints what it saw as JSON.
READER = """
import json, sys, time
from pathlib import Path
from core import store
database, done_flag, expected = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
seen = []
while True:
    runs = len(store.load_runs(database))
    samples = len(store.load_samples(database))
    seen.append([runs, samples])
    if runs == expected or done_flag.exists():
        break
    time.sleep(float(sys.argv[4]))
print(json.dumps(seen))
"""


def _environment() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("MEMPLAN_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), str(TESTS_DIR)])
    return env


def test_a_sweep_writing_and_a_dashboard_reading_at_once_both_succeed(tmp_path):
    db = tmp_path / "memplan.duckdb"
    database.ensure_database(db)
    done_flag = tmp_path / "writer-done"
    env = _environment()

    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(db), str(done_flag), str(RUNS), str(POLL_S)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        writer_out, writer_err = writer.communicate(timeout=PROCESS_TIMEOUT_S)
        done_flag.touch()
        reader_out, reader_err = reader.communicate(timeout=PROCESS_TIMEOUT_S)
    finally:
        for process in (writer, reader):
            if process.poll() is None:
                process.kill()
                process.wait()

    assert (writer.returncode, writer_err) == (0, "")
    assert (reader.returncode, reader_err) == (0, "")
    seen = json.loads(reader_out)
    run_counts = [runs for runs, _ in seen]
    assert run_counts == sorted(run_counts), "the reader saw runs disappear"
    assert any(0 < runs < RUNS for runs in run_counts), "the reader never saw the sweep midway"
    # Each run and its timeline are one transaction: a reader never sees half a timeline.
    assert all(samples % SAMPLES_PER_RUN == 0 for _, samples in seen)
    assert len(store.load_runs(db)) == RUNS
    assert len(store.load_samples(db)) == RUNS * SAMPLES_PER_RUN


def test_processes_creating_the_same_new_database_at_once_all_succeed(tmp_path):
    new_db = tmp_path / "new.duckdb"
    write_one = (
        "import sys\nfrom conftest import build_record\nfrom core import store\n"
        "store.insert_run(sys.argv[1], build_record(timeline=10))\n"
    )
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", write_one, str(new_db)],
            env=_environment(),
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(CREATORS)
    ]
    errors = [writer.communicate(timeout=PROCESS_TIMEOUT_S)[1] for writer in writers]

    assert [writer.returncode for writer in writers] == [0] * CREATORS, errors
    assert errors == [""] * CREATORS
    assert len(store.load_runs(new_db)) == CREATORS
    assert len(store.load_samples(new_db)) == CREATORS * 10
    assert sorted(path.name for path in tmp_path.iterdir()) == ["new.duckdb"]
