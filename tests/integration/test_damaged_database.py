"""A damaged database file: one clear line at once, naming the file and what to do.

Probe 6 of the hardening issue: a truncated file gave a raw traceback; a garbled
block made every command wait 60 s and then blame a lock, because "block" in
DuckDB's checksum message contains "lock". Real DuckDB files, damaged the way a
crash or a bad copy damages them; the CLI runs in a real subprocess.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from core import database, dbopen, store
from core.errors import StoreError
from profiling import exchange

REPO = Path(__file__).resolve().parents[2]
# DuckDB's file layout: three 4 KiB headers, then 256 KiB blocks; the first holds the catalog.
FIRST_BLOCK = 3 * 4096
ADVICE = "; restore it from a backup or point MEMPLAN_DB/--db at another file"
HOLD_LOCK = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
print("locked", flush=True)
time.sleep(30)
"""


@pytest.fixture(scope="module")
def real_db(tmp_path_factory) -> bytes:
    """The bytes of a real database holding both bundled sweeps and their timelines."""
    path = tmp_path_factory.mktemp("real") / "memplan.duckdb"
    database.ensure_database(path)
    for runs_file, samples_file in database.BUNDLED_EXPORTS:
        exchange.import_runs(path, runs_file, samples_file)
    return path.read_bytes()


def truncated(data: bytes) -> bytes:
    """What an interrupted copy leaves: the first third (the runs are no longer all there)."""
    return data[: len(data) // 3]


def garbled_first_block(data: bytes) -> bytes:
    """4 KiB of the block DuckDB reads first overwritten: the catalog fails its checksum."""
    damaged = bytearray(data)
    damaged[FIRST_BLOCK + 100 : FIRST_BLOCK + 100 + 4096] = b"\xab" * 4096
    return bytes(damaged)


def garbled_middle(data: bytes) -> bytes:
    """The middle third of the file overwritten: the timelines' blocks fail their checksums."""
    damaged = bytearray(data)
    third = len(data) // 3
    damaged[third : 2 * third] = b"\x5a" * third
    return bytes(damaged)


DAMAGES = {
    "truncated": truncated,
    "garbled_first_block": garbled_first_block,
    "garbled_middle": garbled_middle,
}
REASONS = {
    # Found on open since issue 27 (before: when a query reached a missing block).
    "truncated": r"the file has \d+ bytes, too few for the \d+ blocks of \d+ bytes its header "
    r"says are in use: it was truncated",
    "garbled_first_block": r"Corrupt database file: computed checksum \d+ does not match stored "
    r"checksum \d+ in block at location \d+",
    "garbled_middle": r"Corrupt database file: computed checksum \d+ does not match stored "
    r"checksum \d+ in block at location \d+",
}


def _damaged(tmp_path: Path, real_db: bytes, damage: str) -> Path:
    path = tmp_path / f"{damage}.duckdb"
    path.write_bytes(DAMAGES[damage](real_db))
    return path


def _read_everything(path: Path) -> None:
    database.ensure_database(path)
    store.load_runs(path)
    store.load_sweeps(path)
    store.load_samples(path)


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_database_is_refused_within_a_second_naming_it(tmp_path, real_db, damage):
    path = _damaged(tmp_path, real_db, damage)
    started = time.monotonic()
    with pytest.raises(StoreError) as refused:
        _read_everything(path)
    assert time.monotonic() - started < 1.0
    assert re.fullmatch(
        f"{re.escape(str(path))} is not a readable DuckDB database \\({REASONS[damage]}\\)"
        + re.escape(ADVICE),
        str(refused.value),
    ), str(refused.value)


def test_writing_to_a_damaged_database_is_refused_the_same_way(tmp_path, real_db, make_record):
    path = _damaged(tmp_path, real_db, "garbled_first_block")
    with pytest.raises(StoreError, match="is not a readable DuckDB database"):
        store.insert_run(path, make_record())


def test_a_checksum_error_in_a_block_is_not_taken_for_a_lock(tmp_path, real_db, monkeypatch):
    # DuckDB's message says "in block at location ..."; "block" holds "lock".
    path = _damaged(tmp_path, real_db, "garbled_first_block")
    with pytest.raises(duckdb.Error) as raw:
        duckdb.connect(str(path), read_only=True)
    assert "block" in str(raw.value)
    assert not dbopen.is_lock_error(raw.value)
    assert dbopen.is_damage_error(raw.value)


def test_duckdbs_own_lock_message_is_still_a_lock(tmp_path):
    path = database.ensure_database(tmp_path / "held.duckdb")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(duckdb.Error) as raw:
            duckdb.connect(str(path), read_only=True)
    finally:
        holder.kill()
        holder.wait()
    assert "Could not set lock on file" in str(raw.value)
    assert dbopen.is_lock_error(raw.value)
    assert not dbopen.is_damage_error(raw.value)


def _profiling(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memplan", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


# The command that reaches each damage: summary and list read the runs, show --timeline
# the samples (of a run from the middle of the timelines).
CLI_CASES = {
    "truncated": ("summary",),
    "garbled_first_block": ("list",),
    "garbled_middle": ("show", "{run}", "--timeline"),
}


@pytest.mark.parametrize("damage", list(CLI_CASES))
def test_the_cli_prints_one_line_for_a_damaged_database(tmp_path, real_db, damage):
    path = _damaged(tmp_path, real_db, damage)
    run = _a_run_with_a_timeline(tmp_path, real_db)
    args = [arg.replace("{run}", run) for arg in CLI_CASES[damage]]
    started = time.monotonic()
    # The default lock timeout (60 s) stays: a damaged file must not be waited on.
    done = _profiling(*args, "--db", str(path), env={"MEMPLAN_LOCK_TIMEOUT_S": "60"})
    elapsed = time.monotonic() - started

    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert re.fullmatch(
        f"error: {re.escape(str(path))} is not a readable DuckDB database "
        f"\\({REASONS[damage]}\\){re.escape(ADVICE)}",
        line,
    ), line
    assert elapsed < 20, f"took {elapsed:.1f} s: waited on the damaged file as if it were locked"


def _a_run_with_a_timeline(tmp_path: Path, real_db: bytes) -> str:
    intact = tmp_path / "intact.duckdb"
    intact.write_bytes(real_db)
    samples = store.load_samples(intact)
    return str(samples["run_id"].iloc[len(samples) // 2])
