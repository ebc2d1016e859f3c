"""The sweep launcher with real detached processes running cheap stand-in commands.

The real sweep (TensorFlow) is in tests/integration/test_launcher.py; here each
job's commands are small Python one-liners, so every behaviour of the job runner
and the launcher's bookkeeping is checked in seconds.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from tqdm import tqdm

from core import database, store
from core.errors import ConfigError
from profiling import job, joblog, jobstatus, launcher, requests
from profiling.launcher import JobCommand, LauncherError

PY = sys.executable


def python(code: str) -> tuple[str, ...]:
    return (PY, "-c", code)


def sweep_step(code: str = "print('sweeping')") -> JobCommand:
    return JobCommand(jobstatus.PHASE_SWEEPING, python(code))


def refit_step(code: str = "print('refit done')") -> JobCommand:
    return JobCommand(jobstatus.PHASE_REFITTING, python(code), optional=True)


def wait_until_ended(db: Path, timeout_s: float = 30) -> jobstatus.JobStatus:
    deadline = time.monotonic() + timeout_s
    while (current := launcher.status(db)).running:
        assert time.monotonic() < deadline, f"the job is still running: {current}"
        time.sleep(0.05)
    return current


def wait_for_phase(db: Path, phase: str, timeout_s: float = 30) -> jobstatus.JobStatus:
    deadline = time.monotonic() + timeout_s
    while (current := launcher.status(db)).phase != phase:
        assert time.monotonic() < deadline, f"never reached {phase}: {current}"
        time.sleep(0.05)
    return current


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs.duckdb"


@pytest.fixture(autouse=True)
def _no_job_left_behind(db: Path):
    yield
    if launcher.status(db).running:
        launcher.cancel(db, grace_s=2)


# --- validating what the form sends ----------------------------------------------------


def test_a_valid_form_becomes_a_request_with_its_points_counted():
    request = requests.parse_request("32, 64 96x96x64", "1 2", {"base_filters": "16"}, 3, "12GiB")
    assert request.points == 3 * 2
    assert request.steps == 3 and request.memory_limit_bytes == 12 * 2**30
    job = request.job(Path("/data/x.duckdb"))
    assert job.grid.to_dict() == {
        "workload": "unet3d",
        "image_sizes": ["32", "64", "96x96x64"],
        "batch_sizes": [1, 2],
        "base_filters": [16],
    }
    assert (job.steps, job.memory_limit_bytes, job.framework) == (3, 12 * 2**30, "tensorflow")
    assert job.slurm is None and not job.run_over_bound


def test_a_size_the_network_cannot_take_is_refused_with_the_nearest_valid_ones():
    with pytest.raises(ConfigError, match="Nearest valid sizes: 192 or 208"):
        requests.parse_request("32 200", "1", {"base_filters": "16"}, 2, "8GiB")


@pytest.mark.parametrize(
    ("sizes", "batches", "filters", "steps", "limit", "message"),
    [
        ("", "1", "16", 2, "8GiB", "Image sizes: give at least one, e.g. 32 64 96x96x64"),
        ("32", "1 two", "16", 2, "8GiB", "Batch sizes: 'two' is not a whole number"),
        ("32", "", "16", 2, "8GiB", "Batch sizes: give at least one, e.g. 1 2 4"),
        ("32", "1", "", 2, "8GiB", "Base filters: give at least one, e.g. 16"),
        ("32", "1", "16", 0, "8GiB", "Steps: must be a whole number of at least 1, got 0"),
        ("32", "1", "16", 2, "lots", "Memory limit: 'lots' is not a memory size"),
        ("32", "1", "16", 2, " ", "Memory limit: give the most one point may use"),
        ("3x2", "1", "16", 2, "8GiB", "image size '3x2' is not understood"),
        ("32", "0", "16", 2, "8GiB", "batch size must be between 1 and"),
    ],
)
def test_a_bad_form_says_what_is_wrong(sizes, batches, filters, steps, limit, message):
    with pytest.raises(ConfigError) as caught:
        requests.parse_request(sizes, batches, {"base_filters": filters}, steps, limit)
    assert message in str(caught.value)


def test_the_default_memory_limit_is_shown_rounded_down_so_it_never_exceeds_the_limit():
    assert requests.memory_limit_text(int(12.99 * 2**30)) == "12.9GiB"
    assert requests.memory_limit_text(12 * 2**30) == "12.0GiB"


def test_a_bad_grid_starts_nothing(db: Path):
    with pytest.raises(ConfigError):
        requests.parse_request("200", "1", {"base_filters": "16"}, 2, "8GiB")
    assert launcher.status(db).phase == jobstatus.PHASE_IDLE
    assert not jobstatus.state_dir(db).exists()


# --- reading the log -------------------------------------------------------------------


def test_the_log_tail_shows_each_progress_bar_line_as_a_terminal_would(tmp_path: Path):
    log = tmp_path / "job.log"
    log.write_bytes(b"== sweeping\n\r0/2 points\r1/2 points\r\n\rdone\rrefit starts\r\nlast\n")
    assert joblog.log_tail(log) == ["== sweeping", "1/2 points", "refit starts", "last"]
    assert joblog.log_tail(log, lines=2) == ["refit starts", "last"]
    assert joblog.log_tail(tmp_path / "missing.log") == []


def test_progress_is_read_from_the_sweeps_own_progress_bar(db: Path):
    # The same bar `profiling.local_sweep.run_sweep` draws, written the way a log receives it.
    out = io.StringIO()
    bar = tqdm(
        total=100,
        file=out,
        unit="s",
        mininterval=0,
        bar_format="{desc} {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}]",
    )
    bar.set_description_str("2/5 points, now 96x96x64 batch 4")
    bar.update(40)
    directory = jobstatus.state_dir(db)
    directory.mkdir()
    (directory / jobstatus.LOG_FILE).write_text("== sweeping: ...\n" + out.getvalue())
    (directory / job.JOB_FILE).write_text(json.dumps({"started_at": job.now_iso()}))
    (directory / job.STATE_FILE).write_text(json.dumps({"phase": "sweeping"}))
    progress = joblog.progress_from_log(joblog.log_tail(directory / jobstatus.LOG_FILE))
    assert progress["done"] == 2 and progress["total"] == 5
    assert progress["point"] == "96x96x64 batch 4"
    assert progress["elapsed"] == "00:00" and progress["remaining"]


def test_tqdm_clocks_are_read_as_seconds():
    assert joblog.clock_seconds("01:23") == 83
    assert joblog.clock_seconds("1:02:03") == 3723
    assert joblog.clock_seconds("?") is None and joblog.clock_seconds(None) is None


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(44.6, "45 s"), (185, "3 min 05 s"), (7440, "2 h 04 min")],
)
def test_durations_read_as_a_person_says_them(seconds, text):
    assert joblog.duration_text(seconds) == text


def test_the_eta_counts_down_between_redraws_of_the_progress_bar(db: Path):
    # The bar is redrawn only when a point starts or ends; a point can take minutes.
    bar = "import sys, time\nsys.stderr.write('\\r1/3 points, now 32 batch 2  33%|###   | "
    bar += "[00:10<00:30]')\nsys.stderr.flush()\ntime.sleep(60)"
    launcher.start_job(db, [sweep_step(bar)])
    log = jobstatus.state_dir(db) / jobstatus.LOG_FILE
    # The bar as drawn, at the start of a line (read_text makes its "\r" a newline): the
    # log's first line echoes the command, whose code holds the same text after a quote.
    deadline = time.monotonic() + 120  # a loaded machine starts Python slowly
    while "\n1/3 points, now 32 batch 2  33%" not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    # The job may still be appending to its log (a clean-clone CI run saw the age read 0 s,
    # ETA 30 s, after the back-dating): back-date it once nothing is written any more.
    settled = log.stat().st_mtime_ns
    while True:
        time.sleep(0.3)
        now = log.stat().st_mtime_ns
        if now == settled:
            break
        assert time.monotonic() < deadline
        settled = now
    written = time.time() - 5
    os.utime(log, (written, written))  # as if drawn five seconds ago
    current = launcher.status(db)
    assert current.eta_s == pytest.approx(25, abs=1)
    assert current.elapsed_s == pytest.approx(15, abs=1)
    assert current.current_point == "32 batch 2"


# --- running jobs ----------------------------------------------------------------------


def test_nothing_launched_reads_as_idle(db: Path):
    assert launcher.status(db) == jobstatus.JobStatus(running=False, phase=jobstatus.PHASE_IDLE)


def test_a_job_runs_its_commands_in_order_and_records_each_exit_code(db: Path):
    started = launcher.start_job(db, [sweep_step(), refit_step()])
    assert started.running and started.pid
    finished = wait_until_ended(db)
    assert finished.phase == job.PHASE_FINISHED
    assert finished.exit_codes == {"sweeping": 0, "refitting": 0}
    assert finished.refit == "models refit"
    assert finished.finished_at >= finished.started_at
    assert "sweeping" in finished.log_tail and "refit done" in finished.log_tail
    # State lives beside the database, in the folder .gitignore covers for data/.
    assert jobstatus.state_dir(db) == db.parent / "runs.launcher"


def test_a_job_survives_the_process_that_launched_it(db: Path, tmp_path: Path):
    # As a browser tab closing or the dashboard restarting: the launching process ends.
    script = (
        "import sys\nfrom pathlib import Path\nfrom profiling import launcher\n"
        "from profiling.launcher import JobCommand\n"
        f"launcher.start_job(Path({str(db)!r}), [JobCommand('sweeping', "
        f"({PY!r}, '-c', 'import time; time.sleep(2); print(\"survived\")'))])\n"
    )
    subprocess.run([PY, "-c", script], cwd=database.REPO_ROOT, check=True, timeout=30)
    assert launcher.status(db).running
    finished = wait_until_ended(db)
    assert finished.phase == job.PHASE_FINISHED and "survived" in finished.log_tail


def test_a_second_launch_while_one_runs_is_refused_naming_the_running_job(db: Path):
    first = launcher.start_job(db, [sweep_step("import time; time.sleep(30)")])
    with pytest.raises(LauncherError) as refused:
        launcher.start_job(db, [sweep_step()])
    message = str(refused.value)
    assert f"a sweep is already running for runs.duckdb (pid {first.pid}, started " in message
    assert first.started_at in message and "cancel it first" in message
    # The first job is untouched by the refusal.
    assert launcher.status(db).pid == first.pid and launcher.status(db).running


def _command_line(pid: int) -> list[str]:
    """``pid``'s command line, or why there is none (it ended, it is a zombie)."""
    try:
        return psutil.Process(pid).cmdline()
    except psutil.Error as error:
        return [type(error).__name__]


def test_two_tabs_launching_at_the_same_moment_start_exactly_one_job(db: Path):
    outcomes: list[object] = []
    go = threading.Barrier(4)

    def click() -> None:
        go.wait()
        try:
            outcomes.append(launcher.start_job(db, [sweep_step("import time; time.sleep(30)")]))
        except LauncherError as error:
            outcomes.append(error)

    threads = [threading.Thread(target=click) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    started = [o for o in outcomes if isinstance(o, jobstatus.JobStatus)]
    assert len(started) == 1 and sum(isinstance(o, LauncherError) for o in outcomes) == 3
    runner_tail = ["profiling.job", str(jobstatus.state_dir(db))]
    # The runner is started detached: until it has exec'd Python its command line is still
    # its parent's, so wait (generously: a loaded machine) until it says what it runs.
    deadline = time.monotonic() + 120
    while (said := _command_line(started[0].pid))[-2:] != runner_tail:
        log = jobstatus.state_dir(db) / jobstatus.LOG_FILE
        assert time.monotonic() < deadline, (said, log.read_text() if log.exists() else "")
        time.sleep(0.1)
    runners = [
        p for p in psutil.process_iter(["cmdline"]) if (p.info["cmdline"] or [])[-2:] == runner_tail
    ]
    assert [p.pid for p in runners] == [started[0].pid]


def test_a_refit_that_says_what_it_refit_is_reported_so(db: Path):
    said = "print('evaluating...'); print('outcome: models refit for unet3d on X (profile abc)')"
    launcher.start_job(db, [sweep_step(), refit_step(said + "; print('stored')")])
    finished = wait_until_ended(db)
    assert finished.exit_codes == {"sweeping": 0, "refitting": 0}
    # Its last "outcome:" line, whatever it printed after it.
    assert finished.refit == "models refit for unet3d on X (profile abc)"


def test_a_failed_refit_is_reported_with_its_reason_without_failing_the_sweep(db: Path):
    failing_refit = refit_step(
        "import sys; print('fitting...'); "
        "print('error: only 1 distinct measured configuration(s)', file=sys.stderr); sys.exit(2)"
    )
    finished = launcher.start_job(db, [sweep_step(), failing_refit])
    finished = wait_until_ended(db)
    assert finished.phase == job.PHASE_FINISHED
    assert finished.exit_codes == {"sweeping": 0, "refitting": 2}
    assert finished.refit == "models not refit: only 1 distinct measured configuration(s)"


def test_a_failed_sweep_fails_the_job_and_skips_the_refit(db: Path):
    broken = sweep_step(
        "import sys; print('error: database is locked', file=sys.stderr); sys.exit(2)"
    )
    launcher.start_job(db, [broken, refit_step()])
    finished = wait_until_ended(db)
    assert finished.phase == job.PHASE_FAILED
    assert finished.message == "sweeping failed: database is locked"
    assert finished.exit_codes == {"sweeping": 2}
    assert finished.refit == "models not refit: the sweep did not finish"


def test_the_phase_moves_from_sweeping_to_refitting(db: Path, tmp_path: Path):
    gate = tmp_path / "gate"
    wait_for_gate = f"import os, time\nwhile not os.path.exists({str(gate)!r}): time.sleep(0.05)"
    launcher.start_job(db, [sweep_step(wait_for_gate), refit_step(wait_for_gate)])
    assert wait_for_phase(db, "sweeping").refit == "models will be refit when the sweep ends"
    gate.touch()
    wait_until_ended(db)
    gate.unlink()
    launcher.start_job(db, [sweep_step(), refit_step(wait_for_gate)])
    assert wait_for_phase(db, "refitting").refit == "refitting the models"
    gate.touch()
    assert wait_until_ended(db).phase == job.PHASE_FINISHED


def test_points_done_and_total_come_from_the_jobs_sweep_in_the_sweeps_table(db: Path):
    command = "memplan sweep --image-sizes 16 --db x"
    # An older sweep with the same command line is not this job's.
    store.create_sweep(db, "older", command, {}, 9)
    time.sleep(1.1)  # created_at has one-second resolution
    record = f"from core import store; store.create_sweep({str(db)!r}, 'mine', {command!r}, "
    record += "{}, 3); store.update_sweep(" + f"{str(db)!r}, 'mine', points_done=2)"
    launcher.start_job(db, [sweep_step(record)], sweep_command=command)
    finished = wait_until_ended(db)
    assert (finished.sweep_id, finished.points_done, finished.points_total) == ("mine", 2, 3)
    assert finished.fraction_done == pytest.approx(2 / 3)
    # A cached copy of the sweeps table is used as given, without reading the database.
    cached = store.load_sweeps(db)
    cached.loc[cached["sweep_id"] == "mine", "points_done"] = 3
    assert launcher.status(db, sweeps=cached).points_done == 3


# --- cancelling ------------------------------------------------------------------------


def test_cancel_stops_the_running_command_and_records_cancelled(db: Path):
    launcher.start_job(db, [sweep_step("import time; time.sleep(60)"), refit_step()])
    wait_for_phase(db, "sweeping")
    stopped = launcher.cancel(db, grace_s=10)
    assert not stopped.running and stopped.phase == job.PHASE_CANCELLED
    assert stopped.exit_codes == {"sweeping": -15}  # the command ended by SIGTERM
    assert stopped.refit == "models not refit: the sweep did not finish"


def test_a_command_that_ignores_sigterm_is_killed_after_the_grace_period(db: Path):
    stubborn = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)"
    launcher.start_job(db, [sweep_step(stubborn)])
    wait_for_phase(db, "sweeping")
    time.sleep(0.5)  # let it install its handler
    command_pids = [c.pid for c in psutil.Process(launcher.status(db).pid).children()]
    began = time.monotonic()
    stopped = launcher.cancel(db, grace_s=1)
    assert time.monotonic() - began < 10
    # Killed before it could record anything, it still reads as cancelled, not crashed.
    assert stopped.phase == job.PHASE_CANCELLED and not stopped.running
    assert command_pids and all_gone(command_pids)


def all_gone(pids: list[int], timeout_s: float = 5.0) -> bool:
    """Whether every pid has died within ``timeout_s`` (SIGKILL is not instantaneous)."""
    deadline = time.monotonic() + timeout_s
    while any(is_alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def is_alive(pid: int) -> bool:
    """Running, that is: a killed process whose parent died waits as a zombie until init
    reaps it, which a container's init may never do."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_cancel_with_nothing_running_says_so(db: Path):
    with pytest.raises(LauncherError, match="no sweep is running for runs.duckdb"):
        launcher.cancel(db)


# --- stale state -----------------------------------------------------------------------


def write_stale_job(db: Path, pid: int, create_time: float, phase: str | None) -> None:
    directory = jobstatus.state_dir(db)
    directory.mkdir(exist_ok=True)
    plan = {
        "started_at": job.now_iso(),
        "commands": [],
        "log": str(directory / "job.log"),
        "pid": pid,
        "pgid": pid,
        "create_time": create_time,
    }
    (directory / job.JOB_FILE).write_text(json.dumps(plan))
    if phase:
        (directory / job.STATE_FILE).write_text(json.dumps({"phase": phase}))


def test_a_job_whose_process_died_without_an_outcome_reads_as_crashed(db: Path):
    dead = subprocess.Popen([PY, "-c", "pass"])
    create_time = psutil.Process(dead.pid).create_time()
    dead.wait()
    write_stale_job(db, dead.pid, create_time, "sweeping")
    current = launcher.status(db)
    assert not current.running and current.phase == jobstatus.PHASE_CRASHED
    assert "ended without recording an outcome" in current.message
    # ...and does not block the next launch.
    launcher.start_job(db, [sweep_step()])
    assert wait_until_ended(db).phase == job.PHASE_FINISHED


def test_a_recycled_pid_is_not_mistaken_for_the_job(db: Path):
    # This test's own process is alive, but it is not the process that started then.
    me = psutil.Process()
    write_stale_job(db, me.pid, me.create_time() - 3600, "sweeping")
    assert launcher.status(db).phase == jobstatus.PHASE_CRASHED
    write_stale_job(db, me.pid, me.create_time(), "sweeping")
    assert launcher.status(db).running  # the same pid *and* start time: that is the job
    # Never let the clean-up fixture "cancel" this test's own process.
    write_stale_job(db, me.pid, me.create_time(), job.PHASE_FINISHED)


def test_a_job_that_recorded_its_end_reads_as_ended_even_if_its_pid_is_reused(db: Path):
    me = psutil.Process()
    write_stale_job(db, me.pid, me.create_time(), job.PHASE_FINISHED)
    assert launcher.status(db).phase == job.PHASE_FINISHED
    assert not launcher.status(db).running


def test_failure_reason_prefers_the_clis_error_line():
    assert job.failure_reason("x\nerror: too few runs\nTraceback...\n", 2) == "too few runs"
    assert job.failure_reason("Killed\n", 137) == "Killed (exit code 137)"
    assert job.failure_reason("", 1) == "exit code 1"


# --- telling the truth about time ------------------------------------------------------


def test_a_point_running_past_its_estimate_never_reads_as_zero_seconds_left():
    # The bar said 5 s left when drawn 30 s ago: the countdown has run out, the point runs on.
    overrun = joblog.live_clock("00:05", log_age_s=30, running=True, sign=-1)
    assert overrun == 0
    last = joblog.eta_text(overrun, points_left=1)
    assert "0 s" not in last and last.startswith("finishing the current point")
    more = joblog.eta_text(0.4, points_left=3)
    assert "0 s" not in more and "finishing the current point, then 2 more" in more
    assert joblog.eta_text(42, points_left=3) == "42 s left"
    assert joblog.eta_text(None, points_left=3) == "estimating…"


def test_a_sweep_still_starting_shows_no_time_left_beside_starting():
    # Seen in the sidebar: "Starting the sweep…" above "ETA: finishing the current point".
    assert joblog.eta_caption(0.0, elapsed_s=12, points_left=2, in_flight=False) is None
    shown = joblog.eta_caption(42, elapsed_s=12, points_left=2, in_flight=True)
    assert shown == "ETA: 42 s left (12 s elapsed)"


def test_a_launched_sweeps_refit_waits_for_new_runs_only_when_asked(db, monkeypatch):
    started: list[list[JobCommand]] = []
    monkeypatch.setattr(
        launcher, "start_job", lambda db, commands, *a, **k: started.append(commands)
    )
    request = requests.parse_request("32", "1", {"base_filters": "16"}, 1, "8GiB")
    launcher.launch(db, request.job(db), "runner", ["refit"], refit_needs_new_runs=True)
    launcher.launch(db, request.job(db), "runner", ["fit"])  # a calibration's fit: always
    assert [commands[-1].needs_new_runs for commands in started] == [True, False]
    assert not started[0][0].needs_new_runs  # the sweep itself always runs


SWEEP_COMMAND = "memplan sweep --image-sizes 32 --db x"


def refit_after_gated_sweep(db: Path, gate: Path) -> None:
    wait_for_gate = f"import pathlib, time\nwhile not pathlib.Path({str(gate)!r}).exists(): "
    wait_for_gate += "time.sleep(0.02)"
    refit = JobCommand(
        jobstatus.PHASE_REFITTING, python("print('refit done')"), optional=True, needs_new_runs=True
    )
    launcher.start_job(db, [sweep_step(wait_for_gate), refit], sweep_command=SWEEP_COMMAND)
    wait_for_phase(db, "sweeping")


def test_a_sweep_that_measured_nothing_new_is_not_followed_by_a_refit(db, tmp_path, make_record):
    gate = tmp_path / "gate"
    refit_after_gated_sweep(db, gate)
    # The job's sweep: every point already measured or skipped, so only a skipped run is new.
    store.create_sweep(db, "mine", SWEEP_COMMAND, {}, 2)
    store.insert_run(db, make_record(sweep_id="mine", status="skipped"))
    gate.touch()
    finished = wait_until_ended(db)
    assert finished.phase == job.PHASE_FINISHED
    assert finished.refit == "nothing new measured: models not refit"
    assert finished.exit_codes == {"sweeping": 0}
    assert "refit done" not in finished.log_tail
    assert "== refitting skipped: nothing new measured" in finished.log_tail


def test_a_sweep_that_stored_a_new_run_is_followed_by_the_refit(db, tmp_path, make_record):
    gate = tmp_path / "gate"
    refit_after_gated_sweep(db, gate)
    store.create_sweep(db, "mine", SWEEP_COMMAND, {}, 2)
    store.insert_run(db, make_record(sweep_id="mine", status="oom"))
    gate.touch()
    finished = wait_until_ended(db)
    assert finished.refit == "models refit"
    assert finished.exit_codes == {"sweeping": 0, "refitting": 0}
    assert "refit done" in finished.log_tail


def test_the_sweeps_table_is_read_again_once_the_database_changes(db: Path):
    database.ensure_database(db)
    assert jobstatus._load_sweeps(db, None).empty
    kept = jobstatus._load_sweeps(db, None)
    kept["status"] = "changed by its caller"  # each caller gets its own copy

    store.create_sweep(db, "s1", "memplan sweep", {}, points_total=3)

    [row] = jobstatus._load_sweeps(db, None).to_dict("records")
    assert (row["sweep_id"], row["status"], row["points_total"]) == ("s1", "running", 3)
