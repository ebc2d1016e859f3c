"""`memplan` refuses bad input with one line, on real files.

Probes 5, 10 and 11 of the hardening issue, as a user meets them: an
implausible or overflowing import, a file too large to check, a memory limit
above the machine's RAM, a sweep config of the wrong shape, and a new database
named by ``MEMPLAN_DB`` rather than ``--db``. None of these needs TensorFlow:
each is refused (or answered) before anything is measured. What a refusal prints
and returns is `memplan.cli.main`'s, whichever process runs it, so those run in
this one (a process of its own costs a second of CPU starting); a closed pipe and
signals are the process's, so those tests start a real ``python -m memplan``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import psutil
import pytest

from core import database, store
from core.units import GIB, format_bytes
from profiling import exchange

REPO = Path(__file__).resolve().parents[2]


def python(
    *args: str, env: dict[str, str] | None = None, timeout_s: float = 120
) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in the repository, with no ``MEMPLAN_DB`` but what ``env`` sets."""
    environment = {k: v for k, v in os.environ.items() if k != database.DB_ENV_VAR}
    return subprocess.run(
        [sys.executable, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={**environment, **(env or {})},
    )


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    return line


@pytest.fixture
def exported(tmp_path, make_record) -> tuple[Path, Path]:
    """A real export (runs and timelines) of two ok runs, as CSV."""
    source = tmp_path / "source.duckdb"
    store.insert_run(source, make_record(run_id="r1", timeline=3))
    store.insert_run(source, make_record(run_id="r2", timeline=3))
    runs, samples = tmp_path / "runs.csv", tmp_path / "samples.csv"
    exchange.export_runs(source, runs, samples)
    return runs, samples


def _spoil(path: Path, row: int, column: str, value: str) -> None:
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame.loc[row, column] = value
    frame.to_csv(path, index=False)


# --- probe 5: import ----------------------------------------------------------------------


def test_importing_a_9e18_byte_peak_is_refused_and_summary_is_unchanged(
    tmp_path, exported, memplan_main
):
    runs, samples = exported
    _spoil(runs, 1, "peak_hwm_bytes", "9000000000000000000")
    db = tmp_path / "target.duckdb"

    line = one_error_line(
        memplan_main("import", str(runs), "--timelines", str(samples), "--db", str(db))
    )
    assert line == (
        f"error: {runs}: column peak_hwm_bytes, row 2: 9000000000000000000 is too large; "
        "peak_hwm_bytes must be bytes from 1.00 MiB to 64.00 TiB (1048576 to "
        "70368744177664 bytes)"
    )
    assert store.load_runs(db).empty


def test_importing_10_to_the_30_is_one_line_not_an_overflow_traceback(
    tmp_path, exported, memplan_main
):
    runs, samples = exported
    _spoil(samples, 0, "rss_bytes", str(10**30))
    db = tmp_path / "target.duckdb"

    line = one_error_line(
        memplan_main("import", str(runs), "--timelines", str(samples), "--db", str(db))
    )
    assert line == (
        f"error: {samples}: column rss_bytes, row 1: '{10**30}' is out of range; rss_bytes "
        "takes whole numbers from -2^63 to 2^63 - 1"
    )
    assert store.load_runs(db).empty


def test_importing_a_timeline_above_the_size_limit_is_refused_at_once(
    tmp_path, exported, memplan_main
):
    runs, _ = exported
    huge = tmp_path / "huge.csv"
    with huge.open("wb") as file:  # 1 GiB + 1 byte that takes no disk space
        file.write(b"run_id,t_s,rss_bytes\n")
        file.truncate(GIB + 1)
    db = tmp_path / "target.duckdb"

    line = one_error_line(
        memplan_main("import", str(runs), "--timelines", str(huge), "--db", str(db))
    )
    assert line == (
        f"error: {huge} is 1.00 GiB (1,073,741,825 bytes), more than the 1.00 GiB a samples "
        "file may have; export "
        "and import it in parts, e.g. one sweep at a time (`memplan export "
        "--sweep ID`)"
    )


# --- probe 10: limits and config files -------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ("run", "--image-size", "16"),
        ("sweep", "--image-sizes", "16", "--batch-sizes", "1"),
    ],
)
def test_a_memory_limit_above_physical_ram_is_refused_naming_both(tmp_path, command, memplan_main):
    ram = psutil.virtual_memory().total
    db = tmp_path / "runs.duckdb"
    line = one_error_line(memplan_main(*command, "--memory-limit", "100TiB", "--db", str(db)))
    assert line == (
        f"error: memory limit 100.00 TiB is more than this machine's {format_bytes(ram)} of "
        f"physical RAM; give at most {ram * 10 // GIB / 10:.1f}GiB"
    )
    assert not db.exists(), "refused before anything was opened or measured"


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        (
            "grid.toml",
            "image_sizes = [32]\nbatch_sizes = 1.5\n",
            "batch_sizes = 1.5 is not a whole number or a list of them; give e.g. "
            "batch_sizes = [1, 2, 4]",
        ),
        (
            "grid.toml",
            "image_sizes = [32]\nbatch_sizes = [1, true]\n",
            "batch_sizes[1] = true is not a whole number; give e.g. batch_sizes = [1, 2, 4]",
        ),
        (
            "grid.json",
            json.dumps({"image_sizes": [32.5], "batch_sizes": [1]}),
            "image_sizes[0] = 32.5 is not a whole number or text; give e.g. image_sizes = "
            '[32, 64, "96x96x64"]',
        ),
        (
            "grid.json",
            json.dumps({"workload": ["unet3d"], "image_sizes": [32], "batch_sizes": [1]}),
            'workload = ["unet3d"] is not text; give e.g. workload = "unet3d"',
        ),
    ],
)
def test_a_sweep_config_of_the_wrong_type_names_key_and_type(
    tmp_path, name, text, problem, memplan_main
):
    config = tmp_path / name
    config.write_text(text)
    line = one_error_line(
        memplan_main("sweep", "--config", str(config), "--db", str(tmp_path / "x"))
    )
    assert line == f"error: sweep config {config}: {problem}"


def test_a_json_sweep_config_that_is_a_list_is_refused(tmp_path, memplan_main):
    config = tmp_path / "grid.json"
    config.write_text("[32, 64]")
    line = one_error_line(memplan_main("sweep", "--config", str(config)))
    assert line == (
        f"error: sweep config {config} holds list [32, 64], not a table of settings; give "
        'keys and values, e.g. {"image_sizes": [32, 64], "batch_sizes": [1, 2]}'
    )


# --- probe 11: MEMPLAN_DB and --db -----------------------------------------------------------


def test_a_new_database_named_by_memplan_db_starts_empty_as_with_db(
    tmp_path, monkeypatch, memplan_main
):
    by_env, by_flag = tmp_path / "by-env.duckdb", tmp_path / "by-flag.duckdb"

    monkeypatch.setenv(database.DB_ENV_VAR, str(by_env))
    via_env = memplan_main("list")
    monkeypatch.delenv(database.DB_ENV_VAR)
    via_flag = memplan_main("list", "--db", str(by_flag))

    assert (via_env.returncode, via_env.stdout, via_env.stderr) == (0, "no runs match\n", "")
    assert (via_flag.returncode, via_flag.stdout, via_flag.stderr) == (0, "no runs match\n", "")
    assert store.load_runs(by_env).empty and store.load_runs(by_flag).empty


def test_a_reader_that_closes_the_pipe_gets_no_traceback(tmp_path):
    # `memplan list | head -1` where head has already left: whatever memplan writes, and
    # however little (the bundled runs' list fits a 64 KiB pipe buffer), the write fails.
    # The reader is closed before memplan starts, so no scheduling makes it succeed.
    db = tmp_path / "bundled.duckdb"
    assert database.created_seeded(db)
    environment = {k: v for k, v in os.environ.items() if k != database.DB_ENV_VAR}
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        lister = subprocess.run(
            [sys.executable, "-m", "memplan", "list", "--db", str(db)],
            cwd=REPO,
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=environment,
            timeout=300,
        )
    finally:
        os.close(write_end)

    stderr = lister.stderr.decode()
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    assert lister.returncode == 141


# A child that runs `memplan export` and sends itself SIGTERM while DuckDB runs a query in
# its place. Where DuckDB checks for signals between its tasks, the signal becomes its
# "Query interrupted" error; where it does not (seen on a loaded 2-core VM: not once in 4
# tries), the handler runs as the query returns. Either way: 130 and one line. The query is
# finite, and the sleep after it waits for a signal that has not arrived yet.
_TERMINATED_INSIDE_A_QUERY = """
import os, signal, sys, threading, time
from core import datafiles
from memplan.cli import main

def write(con, *args, **kwargs):
    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()
    con.execute("SELECT sum(a.range * b.range) FROM range(20000) a, range(20000) b").fetchall()
    time.sleep(120)
    raise AssertionError("no signal in 120 s")

datafiles.write = write
sys.exit(main(sys.argv[1:]))
"""


def test_a_signal_during_a_duckdb_query_is_an_interruption(tmp_path):
    db = tmp_path / "bundled.duckdb"
    assert database.created_seeded(db)
    out = tmp_path / "runs.parquet"

    child = python(
        "-c", _TERMINATED_INSIDE_A_QUERY, "export", str(out), "--db", str(db), timeout_s=300
    )

    assert child.returncode == 130, child.stderr
    assert child.stderr.strip() == "interrupted"
    assert not out.exists() and list(tmp_path.glob(".runs.parquet*")) == []


def test_duckdbs_query_interrupted_after_a_signal_is_exit_130(monkeypatch, capsys):
    # What DuckDB raises when a signal's KeyboardInterrupt lands inside its query.
    from memplan import cli, commands

    def interrupted_inside_duckdb(args):
        cli._Signals.received = True
        raise RuntimeError("Query interrupted")

    monkeypatch.setattr(commands, "run_handler", interrupted_inside_duckdb)

    assert cli.main(["machines"]) == 130
    assert capsys.readouterr().err.strip() == "interrupted"


def test_a_runtime_error_without_a_signal_is_not_called_an_interruption(monkeypatch):
    from memplan import cli, commands

    def broken(args):
        raise RuntimeError("Query interrupted")  # but no signal came: a bug, not a Ctrl-C

    monkeypatch.setattr(commands, "run_handler", broken)

    with pytest.raises(RuntimeError):
        cli.main(["machines"])


def test_a_sigterm_while_memplan_starts_is_an_interruption(tmp_path):
    # The handler is installed before DuckDB and the subcommand are imported: a SIGTERM
    # during those imports still ends memplan with 130, not -15.
    script = (
        "import os, signal, sys\n"
        "import memplan.cli as cli\n"
        "import importlib\n"
        "real = importlib.import_module\n"
        "def slow(name, *a):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    return real(name, *a)\n"
        "cli.importlib.import_module = slow\n"
        "sys.exit(cli.main(sys.argv[1:]))\n"
    )
    child = python("-c", script, "machines", "--db", str(tmp_path / "x.duckdb"), timeout_s=300)

    assert child.returncode == 130, child.stderr
    assert child.stderr.strip() == "interrupted"
