"""How fast the dashboard answers: first render of each page and a slider change on Sizing.

Prints Markdown (and writes it to ``docs/dashboard_speed.md``):

    python -m benchmarks.dashboard_speed [--runs 10000] [--repeats 3] [--output FILE]
        [--busy] [--pages Sizing ...]

Two databases, both built in a temporary folder: the bundled reference data
(46 runs and the bundled evaluation, what a fresh checkout shows), and the same
plus ``--runs`` synthetic runs (`benchmarks.synthetic_runs`: valid
configurations, peaks from the refined analytical model plus noise, a few
timelines, ~100 sweeps on four made-up hosts). The stored evaluation of the
big database is the bundled one: the dashboard never fits, so what a page costs
depends on how many runs it reads, not on which runs the models were fit on.

Every measurement runs the real app (`app.py`, sidebar included) with
`streamlit.testing.v1.AppTest` in a fresh Python process, so Streamlit's caches
are cold and the page's own imports count, as for the first visitor of a
freshly started server (the Streamlit import itself and the server start do
not count, nor Streamlit's scan of the installed packages for components, which
a server does as it starts and `AppTest` in each first run):

* **first render**: the first ``at.run()`` of the page;
* **first render, warmed up**: the same in another fresh process that first ran
  `dashboard.serve.warm_up` (untimed), as ``scripts/start.sh``'s server does before
  it listens: what the first visitor of the dashboard gets;
* **next visitor**: the first ``at.run()`` of a second session in the same process
  (Streamlit's caches warm, as for everyone after the server's first visitor);
* **rerun**: a second ``at.run()`` with nothing changed (caches warm);
* **slider change** (Sizing): set the "Batch size" or "Image side" select-slider
  to a neighbouring value and time ``at.run()``; the "Predicted peak" metric
  must change with it;
* **typed change** (Sizing): type the batch slider's neighbour into the number box
  beside it ("Or type the batch size") and time ``at.run()``;
* **slider change under a DuckDB lock**: the same while another process holds a
  write transaction open on the database (`core.database.transaction`), as a
  sweep does while it stores a point. Before timing, a direct read-only DuckDB
  connection is tried and must be refused, which proves the lock is held.

Figures are medians over ``--repeats`` processes (slider changes: over every
change in them). ``--runs 0`` times the bundled database only; ``--pages`` some pages.

``--busy`` times everything with a CPU-bound load on every core beside it
(`benchmarks.cpu_load`: one busy Python loop per core, at the same priority), as
when a sweep trains on the same machine; the targets are then issue 42's busy
ones. The report gives the load average at the start and the end either way: on
a shared machine "at rest" is whatever the others leave.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks import cpu_load
from benchmarks.dashboard_speed_worker import (
    CHANGES_PER_SLIDER,
    PAGES,
    SIZING,
    SLIDERS,
    TYPED,
    hold_lock,
    worker,
)
from core import database as db_file
from core import store
from core.machine import machine_info
from core.units import GIB

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = REPO_ROOT / "docs" / "dashboard_speed.md"
# What a user should not notice waiting for (targets, not measurements; issues 26 and 42):
# (first render, an input change) at rest, and beside a CPU-bound load on every core.
FIRST_RENDER_TARGET_S = 2.0
SLIDER_TARGET_S = 0.3
BUSY_FIRST_RENDER_TARGET_S = 5.0
BUSY_SLIDER_TARGET_S = 1.0
SIZE_TARGET_S = 2.0
# The purchase question the issue timed: `memplan size buy` in a fresh process.
SIZE_COMMAND = (
    "size",
    "buy",
    "--image-size",
    "240x240x144",
    "--batch-size",
    "16",
    "--machine",
    "9b59",
)
DEFAULT_SYNTHETIC_RUNS = 10_000
SYNTHETIC_TIMELINES = 20
DEFAULT_REPEATS = 3
WORKER_TIMEOUT_S = 600.0
# A locked slider change slower than this many unlocked ones (and than the target) waited.
LOCK_WAIT_FACTOR = 3.0


# What each worker process measured, by (database label, page).
Timings = dict[tuple[str, str], list[dict[str, Any]]]

# --- the driver ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Database:
    """A database the pages are timed on, and how the report names it."""

    label: str
    path: Path


def build_databases(directory: Path, synthetic_runs: int) -> tuple[list[Database], float]:
    """The bundled-data database and the big one; returns them and the big one's build time."""
    from application import bundles
    from benchmarks.synthetic_runs import add_synthetic_runs
    from profiling import exchange

    bundled = directory / "bundled.duckdb"
    db_file.ensure_database(bundled)
    exchange.import_runs(bundled, db_file.BUNDLED_RUNS, db_file.BUNDLED_SAMPLES)
    if not bundles.install_bundled_results(bundled):
        raise RuntimeError(
            f"the bundled evaluation ({bundles.BUNDLED_RESULTS_DIR}) did not install"
        )
    count = len(store.load_runs(bundled))
    only = Database(f"bundled data ({count} runs)", bundled)
    if synthetic_runs == 0:
        return [only], 0.0
    big = directory / "synthetic.duckdb"
    shutil.copyfile(bundled, big)
    started = time.perf_counter()
    add_synthetic_runs(big, synthetic_runs, SYNTHETIC_TIMELINES)
    build_s = time.perf_counter() - started
    return [
        only,
        Database(f"{count} bundled + {synthetic_runs:,} synthetic runs", big),
    ], build_s


def run_worker(page: str, db_path: Path, warm: bool = False) -> dict[str, Any]:
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in {"MEMPLAN_READ_ONLY", db_file.LOCK_TIMEOUT_ENV_VAR}
    }
    env[db_file.DB_ENV_VAR] = str(db_path)
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.dashboard_speed", "--worker", page, str(db_path)]
        + (["--warm"] if warm else []),
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=WORKER_TIMEOUT_S,
    )
    if done.returncode != 0:
        raise RuntimeError(f"timing {page} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def time_size(db_path: Path) -> float:
    """Wall-clock seconds of `SIZE_COMMAND` in a fresh ``python -m memplan`` (imports included)."""
    env = {name: value for name, value in os.environ.items() if name != "MEMPLAN_READ_ONLY"}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "memplan", *SIZE_COMMAND, "--db", str(db_path)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=WORKER_TIMEOUT_S,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"memplan size failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return seconds


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _versions() -> str:
    names = ("streamlit", "duckdb", "pandas", "altair")
    return ", ".join(f"{name} {metadata.version(name)}" for name in names)


def _machine() -> str:
    info = machine_info()
    ram_gib = int(info["total_ram_bytes"]) / GIB  # type: ignore[call-overload]
    return (
        f"{info['cpu_model']}, {info['cpu_cores']} cores, {ram_gib:.1f} GiB RAM, "
        f"{platform.system()}; Python {platform.python_version()}, {_versions()}"
    )


def _ratio(seconds: float, target_s: float) -> str:
    verdict = "within" if seconds <= target_s else "OVER"
    return f"{seconds / target_s:.2f} ({verdict})"


def report(
    command: str,
    databases: list[Database],
    results: dict[tuple[str, str], list[dict[str, Any]]],
    warmed: dict[tuple[str, str], list[dict[str, Any]]],
    build_s: float,
    repeats: int,
    loads: tuple[tuple[float, ...], tuple[float, ...]],
    size_s: list[float],
    busy: int = 0,
) -> str:
    """The Markdown report; ``busy``: how many busy loops ran beside (0: none)."""
    first_target = BUSY_FIRST_RENDER_TARGET_S if busy else FIRST_RENDER_TARGET_S
    slider_target = BUSY_SLIDER_TARGET_S if busy else SLIDER_TARGET_S
    condition = (
        f"**busy**: one CPU-bound Python loop on each of the {busy} cores beside the app for "
        "the whole run (`benchmarks/cpu_load.py`), as a sweep training here would be"
        if busy
        else "**at rest**: nothing started beside the app by the benchmark (what else ran "
        "on the machine shows in the load average)"
    )
    lines = [
        "# Dashboard speed",
        "",
        f"Produced by `{command}` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC.",
        "",
        f"- Machine: {_machine()}.",
        f"- Condition: {condition}.",
        f"- Method: each page of the real app (`app.py`, sidebar included) run with "
        f"`streamlit.testing.v1.AppTest` in a fresh Python process (cold Streamlit caches, "
        f"the page's imports included; the Streamlit import, the server start and its scan "
        f"for components are not; *its CPU*: the CPU seconds the app's process spent on it, "
        f"all threads, which other work on the machine does not inflate as it does wall "
        f"clock; "
        f"*warmed up*: a fresh process that first ran `dashboard.serve.warm_up`, untimed, as "
        f"the server that `scripts/start.sh` starts does before its first visitor); "
        f"median over {repeats} processes. A slider change sets the Sizing page's "
        f"select-slider to a neighbouring value and times the rerun ({CHANGES_PER_SLIDER} "
        f"changes per slider per process). See `benchmarks/dashboard_speed.py`.",
        f"- Targets (issues 26 and 42, {'busy' if busy else 'at rest'}): first render under "
        f"{first_target:g} s, an input change (slider or typed) under {slider_target:g} s, "
        f"`memplan size` cold under {SIZE_TARGET_S:g} s; "
        f"*ratio* = measured / target (below 1 meets it).",
        f"- The synthetic runs (`benchmarks/synthetic_runs.py`) took {build_s:.1f} s to "
        f"generate and store in bulk.",
        f"- Load average (1, 5, 15 min) at start {_loads(loads[0])}, at end {_loads(loads[1])}: "
        f"on 2 cores any other work inflates wall clock, so single figures are noisy; the "
        f"medians and ratios are what to read.",
        "",
        "## First render of each page",
        "",
        "| database | page | first render, no warm-up (s) | ratio | first render, warmed up as "
        "`scripts/start.sh` serves it (s) | ratio | its CPU (s) | next visitor (s) | ratio "
        "| rerun, nothing changed (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    problems: list[str] = []
    for database in databases:
        for page in PAGES:
            if (database.label, page) not in results:
                continue  # not asked (--pages)
            runs = results[(database.label, page)]
            first = _median([run["first_render_s"] for run in runs])
            warm = _median([run["first_render_s"] for run in warmed[(database.label, page)]])
            warm_cpu = _median(
                [run["first_render_cpu_s"] for run in warmed[(database.label, page)]]
            )
            rerun = _median([run["rerun_s"] for run in runs])
            following = _median([run["next_session_s"] for run in runs])
            lines.append(
                f"| {database.label} | {page} | {first:.2f} | "
                f"{_ratio(first, first_target)} | {warm:.2f} | "
                f"{_ratio(warm, first_target)} | {warm_cpu:.2f} | {following:.2f} | "
                f"{_ratio(following, first_target)} | {rerun:.2f} |"
            )
            problems += [
                f"{database.label}, {page}: {error}" for run in runs for error in run["errors"]
            ]
    lines += [
        "",
        "## An input change on the Sizing page (a slider, or the number typed beside it)",
        "",
        "| database | input | change (s) | ratio | its CPU (s) | same, DuckDB write-locked by "
        "another process (s) | ratio | prediction changed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    refused: list[bool] = []
    waited: list[str] = []
    for database in databases:
        runs = results.get((database.label, SIZING), [])
        refused += [run["lock_refused_reader"] for run in runs]
        for slider in (*SLIDERS, TYPED):
            free = [c for run in runs for c in run["changes"] if c["slider"] == slider]
            held = [c for run in runs for c in run["locked_changes"] if c["slider"] == slider]
            free_s = _median([c["seconds"] for c in free])
            held_s = _median([c["seconds"] for c in held])
            free_cpu = _median([c["cpu_s"] for c in free])
            changed = sum(c["changed"] for c in free + held)
            lines.append(
                f"| {database.label} | {slider} | {free_s:.3f} | "
                f"{_ratio(free_s, slider_target)} | {free_cpu:.3f} | {held_s:.3f} | "
                f"{_ratio(held_s, slider_target)} | {changed} of {len(free + held)} |"
            )
            if held_s > max(LOCK_WAIT_FACTOR * free_s, slider_target):
                waited.append(f"{database.label}, {slider}")
            problems += [
                f"{database.label}, {slider} change: {error}"
                for c in free + held
                for error in c["errors"]
            ]
    verdict = (
        "The slider changes did not wait on it: a rerun reads the cached frames and models "
        "(keyed by `dashboard.data.version`, an `os.stat` of the file) and opens no "
        "connection. (The holder writes nothing, so the version stays the same; after a "
        "sweep stores a point, the next rerun reads the new runs once, and a sweep holds the "
        "write lock only for that one insert.)"
        if not waited
        else f"The slider changes WAITED on it ({'; '.join(waited)}): the page opens a "
        f"connection on a rerun."
    )
    lines += [
        "",
        f"While the lock was held, a direct read-only DuckDB connection to the database was "
        f"refused in {sum(refused)} of {len(refused)} processes, so the lock was really held. "
        + verdict,
        "",
    ]
    size_median = _median(size_s)
    lines += [
        "## `memplan size` cold",
        "",
        "| command | wall clock, fresh process (s) | ratio | each run (s) |",
        "|---|---|---|---|",
        f"| `python -m memplan {' '.join(SIZE_COMMAND)}` on the bundled data | "
        f"{size_median:.2f} | {_ratio(size_median, SIZE_TARGET_S)} | "
        f"{', '.join(f'{value:.2f}' for value in size_s)} |",
        "",
    ]
    if problems:
        lines += ["## Errors shown by the pages", ""] + [f"- {p}" for p in problems] + [""]
    return "\n".join(lines)


def _loads(values: tuple[float, ...]) -> str:
    return ", ".join(f"{value:.2f}" for value in values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs",
        type=int,
        default=DEFAULT_SYNTHETIC_RUNS,
        help="synthetic runs in the big database (default %(default)s)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=DEFAULT_REPEATS,
        help="fresh processes per page and database (default %(default)s)",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=DEFAULT_OUTPUT,
        help="where to write the Markdown too (default docs/dashboard_speed.md)",
    )
    parser.add_argument(
        "--busy",
        action="store_true",
        help="time it all with a CPU-bound loop on every core beside the app (as a sweep)",
    )
    parser.add_argument(
        "--pages",
        nargs="+",
        choices=list(PAGES),
        default=list(PAGES),
        help="the pages to time (default: all)",
    )
    parser.add_argument("--worker", nargs=2, metavar=("PAGE", "DB"), help=argparse.SUPPRESS)
    parser.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--hold-lock", metavar="DB", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker[0], Path(args.worker[1]), args.warm)))
        return 0
    if args.hold_lock:
        hold_lock(Path(args.hold_lock))
        return 0
    if args.runs < 0 or args.repeats < 1:
        parser.error(
            f"--runs must be 0 or more and --repeats 1 or more, got {args.runs}, {args.repeats}"
        )
    command = (
        "python -m benchmarks.dashboard_speed"
        + "".join(
            f" {flag} {value}"
            for flag, value, default in (
                ("--runs", args.runs, DEFAULT_SYNTHETIC_RUNS),
                ("--repeats", args.repeats, DEFAULT_REPEATS),
                ("--pages", " ".join(args.pages), " ".join(PAGES)),
            )
            if value != default
        )
        + (" --busy" if args.busy else "")
    )
    with contextlib.ExitStack() as stack:
        busy = stack.enter_context(cpu_load.busy_cores()) if args.busy else 0
        start_load = os.getloadavg()
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="memplan-speed-"))
        databases, build_s = build_databases(Path(tmp), args.runs)
        results, warmed = time_pages(databases, args.pages, args.repeats)
        size_s = [time_size(databases[0].path) for _ in range(args.repeats)]
        loads = (start_load, os.getloadavg())
    text = report(command, databases, results, warmed, build_s, args.repeats, loads, size_s, busy)
    print(text)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    return 0


def time_pages(
    databases: list[Database], pages: list[str], repeats: int
) -> tuple[Timings, Timings]:
    """Each page on each database, ``repeats`` fresh processes cold and as many warmed up."""
    results: Timings = {}
    warmed: Timings = {}
    for database in databases:
        for page in pages:
            results[(database.label, page)] = [
                run_worker(page, database.path) for _ in range(repeats)
            ]
            warmed[(database.label, page)] = [
                run_worker(page, database.path, warm=True) for _ in range(repeats)
            ]
            print(f"timed {page} on {database.label}", file=sys.stderr)
    return results, warmed


if __name__ == "__main__":
    sys.exit(main())
