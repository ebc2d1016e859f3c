"""The DuckDB system of record: sweeps, runs and their memory timelines.

Memory is stored in bytes and time in seconds; the UI converts. Every function
opens its own short-lived connection through `core.database` (which owns the
file, its lock and its schema version) and closes it before returning.
"""

from __future__ import annotations

import json
import socket
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa

from core import profiles, schema, targets
from core.database import (
    connect,
    first_line,
    transaction,
)
from core.errors import StoreError
from core.records import RUN_COLUMNS, SAMPLE_COLUMNS, RunRecord

SWEEP_RUNNING = "running"
SWEEP_INTERRUPTED = "interrupted"
# How many candidates an ambiguous run id prefix lists before "...".
AMBIGUOUS_SHOWN = 5

# What identifies a sweep point: the workload, every column a workload's configuration
# is stored in (NULL where it has no such setting), and the step count; not seed or repeat.
POINT_COLUMNS: tuple[str, ...] = RUN_COLUMNS[
    RUN_COLUMNS.index("workload") : RUN_COLUMNS.index("steps") + 1
]
DONE_STATUSES: tuple[str, ...] = ("ok", "oom")
SWEEP_COLUMNS: tuple[str, ...] = (
    "sweep_id",
    "created_at",
    "finished_at",
    "status",
    "command",
    "grid_json",
    "hostname",
    "points_total",
    "points_done",
)

_RUN_SELECT = ", ".join(RUN_COLUMNS)
_SAMPLE_SELECT = ", ".join(SAMPLE_COLUMNS)


def now_iso() -> str:
    """Current UTC time as ISO 8601, the format of every ``*_at`` column."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def samples_table(run_id: str, samples: Any) -> pa.Table:
    """The ``samples`` rows of one run as an Arrow table (fast to insert in bulk)."""
    return pa.table(
        {
            "run_id": pa.array([run_id] * len(samples), pa.string()),
            "t_s": pa.array([sample.t_s for sample in samples], pa.float64()),
            "rss_bytes": pa.array([sample.rss_bytes for sample in samples], pa.int64()),
        },
        schema=schema.SAMPLES_ARROW_SCHEMA,
    )


def insert_run(path: Path, record: RunRecord) -> None:
    """Store one run and its timeline in one transaction."""
    try:
        with transaction(path) as con:
            _insert(con, record)
    except duckdb.ConstraintException as error:
        raise _refused(error, path, record.run_id) from error


def insert_runs(path: Path, records: Sequence[RunRecord]) -> None:
    """Store ``records`` and their timelines in one transaction: every one, or (one refused,
    e.g. a run_id already stored) none. One connection for all, not one a run (~50 ms each
    on the 2-core VM)."""
    record = None
    try:
        with transaction(path) as con:
            for record in records:
                _insert(con, record)
    except duckdb.ConstraintException as error:
        run_id = None if record is None else record.run_id
        raise _refused(error, path, run_id, with_others=len(records)) from error


def _insert(con: duckdb.DuckDBPyConnection, record: RunRecord) -> None:
    row = record.row()
    placeholders = ", ".join("?" for _ in RUN_COLUMNS)
    con.execute(
        f"INSERT INTO runs ({_RUN_SELECT}) VALUES ({placeholders})",
        [row[name] for name in RUN_COLUMNS],
    )
    if record.samples:
        schema.insert_table(con, "samples", samples_table(record.run_id, record.samples))


def _refused(
    error: duckdb.ConstraintException, path: Path, run_id: str | None, with_others: int = 0
) -> StoreError:
    """What a refused insert says: the run, and (``with_others`` runs given together) that
    none of them was stored."""
    if "duplicate key" not in str(error).lower():
        others = f", nor any of the {with_others} with it" if with_others else ""
        return StoreError(f"run {run_id!r} was not stored in {path}{others}: {first_line(error)}")
    others = f", so none of the {with_others} runs given was stored" if with_others else ""
    return StoreError(
        f"run {run_id!r} is already stored in {path}{others}; every run needs a new run_id"
    )


def create_sweep(
    path: Path, sweep_id: str, command: str, grid: dict[str, Any], points_total: int
) -> None:
    """Record a sweep as running, with the grid it will measure."""
    try:
        with transaction(path) as con:
            row = {
                "sweep_id": sweep_id,
                "created_at": now_iso(),
                "finished_at": None,
                "status": SWEEP_RUNNING,
                "command": command,
                "grid_json": json.dumps(grid, sort_keys=True),
                "hostname": socket.gethostname(),
                "points_total": points_total,
                "points_done": 0,
            }
            con.execute(
                f"INSERT INTO sweeps ({', '.join(SWEEP_COLUMNS)})"
                f" VALUES ({', '.join('?' for _ in SWEEP_COLUMNS)})",
                [row[name] for name in SWEEP_COLUMNS],
            )
    except duckdb.ConstraintException as error:
        raise StoreError(
            f"sweep {sweep_id!r} already exists in {path}; every sweep needs a new sweep_id"
        ) from error


def update_sweep(
    path: Path,
    sweep_id: str,
    *,
    status: str | None = None,
    points_done: int | None = None,
    finished: bool = False,
) -> None:
    """Change a sweep's status and/or progress; ``finished`` stamps ``finished_at`` now."""
    assignments: list[str] = []
    values: list[Any] = []
    if status is not None:
        assignments.append("status = ?")
        values.append(status)
    if points_done is not None:
        assignments.append("points_done = ?")
        values.append(points_done)
    if finished:
        assignments.append("finished_at = ?")
        values.append(now_iso())
    with transaction(path) as con:
        exists = con.execute("SELECT 1 FROM sweeps WHERE sweep_id = ?", [sweep_id]).fetchone()
        if exists is None:
            raise StoreError(f"no sweep {sweep_id!r} in {path}; create_sweep it first")
        if assignments:
            con.execute(
                f"UPDATE sweeps SET {', '.join(assignments)} WHERE sweep_id = ?",
                [*values, sweep_id],
            )


def interrupt_sweeps(path: Path, sweep_ids: list[str]) -> list[str]:
    """Mark those of ``sweep_ids`` still recorded as running interrupted; the ids it marked.

    A sweep that has recorded another status meanwhile (finished) is left as it is.
    """
    if not sweep_ids:
        return []
    ids = list(sweep_ids)
    with transaction(path) as con:
        rows = con.execute(
            "SELECT sweep_id FROM sweeps"
            " WHERE status = ? AND list_contains(?::VARCHAR[], sweep_id)",
            [SWEEP_RUNNING, ids],
        ).fetchall()
        marked = [row[0] for row in rows]
        if marked:
            con.execute(
                "UPDATE sweeps SET status = ?, finished_at = ?"
                " WHERE status = ? AND list_contains(?::VARCHAR[], sweep_id)",
                [SWEEP_INTERRUPTED, now_iso(), SWEEP_RUNNING, marked],
            )
    return marked


@dataclass(frozen=True)
class RunFilter:
    """Which runs `load_runs` reads: each field None is any, and they combine with AND.

    ``machine`` is a profile key (`core.profiles`): only runs of that machine profile, a
    filter in pandas after the query because a profile is computed from a run's columns,
    never stored. ``target`` is the memory the runs measured (`core.targets`): host RAM
    unless asked, so everything that fits or answers for host RAM reads host-RAM runs
    only; None reads the runs of every target.
    """

    sweep_id: str | None = None
    status: str | None = None
    hostname: str | None = None
    workload: str | None = None
    machine: str | None = None
    target: str | None = targets.DEFAULT_TARGET


def load_runs(path: Path, where: RunFilter | None = None) -> pd.DataFrame:
    """Runs (columns RUN_COLUMNS) ordered by created_at then run_id, those ``where`` picks
    (None: every host-RAM run, `RunFilter`'s defaults)."""
    where = RunFilter() if where is None else where
    filters = {
        "sweep_id": where.sweep_id,
        "status": where.status,
        "hostname": where.hostname,
        "workload": where.workload,
        targets.TARGET_COLUMN: where.target,
    }
    with connect(path, read_only=True) as con:
        runs = runs_in(con, filters)
    if where.machine is None or runs.empty:
        return runs
    keep = [key == where.machine for key in profiles.profile_keys(runs)]
    return runs[keep].reset_index(drop=True)


def runs_in(con: duckdb.DuckDBPyConnection, filters: Mapping[str, str | None]) -> pd.DataFrame:
    """The runs of an open connection whose columns equal ``filters`` (None: any), ordered
    by created_at then run_id: `load_runs`' query, for a reader holding a connection."""
    chosen = {name: value for name, value in filters.items() if value is not None}
    where = " AND ".join(f"{name} = ?" for name in chosen)
    sql = f"SELECT {_RUN_SELECT} FROM runs" + (f" WHERE {where}" if where else "")
    return con.execute(sql + " ORDER BY created_at, run_id", list(chosen.values())).df()


def run_statuses(path: Path, run_ids: list[str]) -> dict[str, str]:
    """The status of each of ``run_ids`` the database holds (absent: not stored)."""
    if not run_ids:
        return {}
    with connect(path, read_only=True) as con:
        rows = con.execute(
            "SELECT run_id, status FROM runs WHERE list_contains(?::VARCHAR[], run_id)",
            [list(run_ids)],
        ).fetchall()
    return dict(rows)


def load_samples(path: Path, run_ids: list[str] | None = None) -> pd.DataFrame:
    """Timeline rows (run_id, t_s, rss_bytes) ordered by run and time; all runs if None."""
    sql = f"SELECT {_SAMPLE_SELECT} FROM samples"
    params: list[Any] = []
    if run_ids is not None:
        sql += " WHERE list_contains(?::VARCHAR[], run_id)"
        params.append(list(run_ids))
    with connect(path, read_only=True) as con:
        return con.execute(sql + " ORDER BY run_id, t_s", params).df()


def load_sweeps(path: Path) -> pd.DataFrame:
    """All sweeps, oldest first."""
    with connect(path, read_only=True) as con:
        return con.execute("SELECT * FROM sweeps ORDER BY created_at, sweep_id").df()


def get_run(path: Path, run_id_prefix: str) -> dict[str, Any]:
    """The one run whose run_id starts with the prefix, as a dict usable as ``RunRecord(**row)``."""
    if not run_id_prefix:
        raise StoreError("run id prefix is empty; give the first characters of a run_id")
    with connect(path, read_only=True) as con:
        result = con.execute(
            f"SELECT {_RUN_SELECT} FROM runs WHERE starts_with(run_id, ?) ORDER BY run_id"
            f" LIMIT {AMBIGUOUS_SHOWN + 1}",
            [run_id_prefix],
        )
        rows = result.fetchall()
    if not rows:
        raise StoreError(f"no run id starts with {run_id_prefix!r} in {path}")
    if len(rows) > 1:
        shown = [row[0] for row in rows[:AMBIGUOUS_SHOWN]]
        more = ", ..." if len(rows) > AMBIGUOUS_SHOWN else ""
        raise StoreError(
            f"run id prefix {run_id_prefix!r} is ambiguous: it matches {', '.join(shown)}{more}; "
            "give more characters"
        )
    return dict(zip(RUN_COLUMNS, rows[0], strict=True))


def point_key(row: RunRecord | Mapping[str, Any]) -> tuple[Any, ...]:
    """What identifies a sweep point (POINT_COLUMNS): workload, configuration, step count."""
    if isinstance(row, RunRecord):
        return tuple(getattr(row, name) for name in POINT_COLUMNS)
    return tuple(row[name] for name in POINT_COLUMNS)


def completed_points(
    path: Path,
    profile_key: str,
    statuses: tuple[str, ...] = DONE_STATUSES,
    oom_limit_at_least: int = 0,
) -> Counter[tuple[Any, ...]]:
    """How many runs with ``statuses`` each point already has on machine profile ``profile_key``.

    A sweep resumes by skipping points whose count already reaches its repeats.
    It matches on the profile (`core.profiles`: CPU, instruction set, cores,
    RAM, framework versions, oneDNN), never the hostname: two different VMs are
    both called ``vm``, and a point measured on one is not measured on the other.
    An ``oom`` under a memory limit below ``oom_limit_at_least`` is not counted: it
    says nothing of a higher limit.
    """
    if not statuses:
        return Counter()
    point_columns = ", ".join(POINT_COLUMNS)
    profile_columns = ", ".join(profiles.PROFILE_COLUMNS)
    sql = (
        f"SELECT {point_columns}, {profile_columns} FROM runs"
        " WHERE list_contains(?::VARCHAR[], status)"
        " AND NOT (status = 'oom' AND memory_limit_bytes < ?)"
    )
    with connect(path, read_only=True) as con:
        cursor = con.execute(sql, [list(statuses), oom_limit_at_least])
        names = [column[0] for column in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    return Counter(point_key(row) for row in rows if profiles.profile_of(row).key == profile_key)
