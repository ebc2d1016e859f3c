"""The sidebar launches a sweep on a Slurm partition, shows its points' jobs and cancels them.

No Slurm is mocked: the form's checks need none, a launch is caught at
`profiling.launcher.launch` (what it would start is checked against the CLI in
tests/unit/test_launch_target.py), and a stand-in submitter holds the sweep lock
as `profiling.cluster_sweep.run_cluster_sweep` does — where it runs, each
point's state and job — and on SIGTERM takes a moment to "cancel its jobs".
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from application import sweep_job
from core import database, store
from profiling import job, jobstatus, launch_target, launcher, slurm, sweeplock
from profiling.launcher import JobCommand
from profiling.slurm_points import SlurmOptions
from tests.app.helpers import shown

APP = str(Path(__file__).resolve().parents[2] / "app.py")
COMMAND = "memplan sweep --image-sizes 32 64 --executor slurm --partition debug"
SUBMITTER = """
import signal, sys, time
from core import store
from profiling import sweeplock
db, command = sys.argv[1], sys.argv[2]

def stop(signum, frame):
    raise KeyboardInterrupt

signal.signal(signal.SIGTERM, stop)
with sweeplock.hold(db, "onslurm", command, 4) as lock:
    store.create_sweep(db, "onslurm", command, {}, 4)
    lock.update(
        executor="Slurm partition debug",
        points_done=1,
        current_point="1 running, 1 queued on debug",
        point_states=[
            {"label": "32 batch 1", "state": "done", "job_id": "101_0"},
            {"label": "32 batch 2", "state": "running", "job_id": "101_1"},
            {"label": "64 batch 1", "state": "queued", "job_id": "102_0"},
            {"label": "64 batch 2", "state": "new", "job_id": None},
        ],
    )
    print("holding", flush=True)
    try:
        time.sleep(120)
    except KeyboardInterrupt:
        time.sleep(1)  # scancel, then each point recorded interrupted
        store.interrupt_sweeps(db, ["onslurm"])
        sys.exit(130)
"""
EMPTY_PARTITION = "Partition: name the Slurm partition to run on (sinfo lists them)"


def app() -> AppTest:
    return AppTest.from_file(APP, default_timeout=60).run()


def on_slurm(at: AppTest) -> AppTest:
    return at.sidebar.radio(key="launch_run_on").set_value("Slurm partition").run()


def sidebar_texts(at: AppTest) -> str:
    parts = []
    for kind in ("markdown", "caption", "info", "warning", "error"):
        parts += [shown(str(element.value)) for element in at.sidebar.get(kind)]
    parts += [element.proto.text for element in at.sidebar.get("progress")]
    return "\n".join(parts)


def button_labels(at: AppTest) -> list[str]:
    return [button.label for button in at.sidebar.button]


def launch_button(at: AppTest):
    return at.sidebar.button[button_labels(at).index("Launch sweep")]


@pytest.fixture(autouse=True)
def _no_sweep_left_behind(reference_db: Path):
    yield
    if launcher.status(reference_db).running:
        launcher.cancel(reference_db, grace_s=5)


@pytest.fixture
def slurm_on_path():
    if launch_target.slurm_missing():
        pytest.skip(slurm.INSTALL_HINT)


# --- the form --------------------------------------------------------------------------


def test_this_machine_is_the_default_and_slurm_brings_its_own_boxes(shared_reference_db):
    at = app()
    run_on = at.sidebar.radio(key="launch_run_on")
    assert (run_on.label, run_on.value) == ("Run on", "This machine")
    assert run_on.options == ["This machine", "Slurm partition"]
    assert "Partition" not in [box.label for box in at.sidebar.text_input]

    at = on_slurm(at)
    assert not at.exception
    boxes = [box.label for box in at.sidebar.text_input]
    assert boxes[:3] == ["Partition", "Account (optional)", "Work directory (optional)"]
    assert "Memory limit" not in boxes  # each job's --mem is its point's limit
    numbers = {box.label: box.value for box in at.sidebar.number_input}
    assert (numbers["Max parallel jobs"], numbers["CPUs per job"]) == (8, 2)
    work_dir = at.sidebar.text_input(key="launch_work_dir")
    assert work_dir.value == "" and work_dir.placeholder == str(
        shared_reference_db.with_name("memplan.slurm")
    )
    assert "each job asks Slurm for its point's estimate plus 10%" in sidebar_texts(at)


def test_an_empty_partition_is_named_beside_its_box_and_nothing_launches(shared_reference_db):
    at = on_slurm(app())
    [error] = at.sidebar.error
    assert shown(error.value) == EMPTY_PARTITION
    assert launch_button(at).disabled  # AppTest, like a browser, cannot click it
    at = at.sidebar.text_input(key="launch_partition").set_value("  ").run()
    assert [shown(error.value) for error in at.sidebar.error] == [EMPTY_PARTITION]
    assert launch_button(at).disabled
    assert launcher.status(shared_reference_db).phase == jobstatus.PHASE_IDLE
    assert not jobstatus.state_dir(shared_reference_db).exists()


def test_without_slurms_commands_the_choice_says_how_to_get_them(
    shared_reference_db, tmp_path, monkeypatch
):
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch, squeue, sinfo here
    at = on_slurm(app())
    at = at.sidebar.text_input(key="launch_partition").set_value("debug").run()
    assert not at.sidebar.error
    [warning] = at.sidebar.warning
    assert shown(warning.value) == slurm.INSTALL_HINT
    assert launch_button(at).disabled


def test_a_named_partition_launches_the_sweep_there(
    shared_reference_db, monkeypatch, slurm_on_path
):
    launched = []
    monkeypatch.setattr(
        sweep_job,
        "launch",
        lambda db, request, refit=None, **options: launched.append((request, options)),
    )
    at = on_slurm(app())
    at.sidebar.text_input(key="launch_partition").set_value("debug")
    at.sidebar.text_input(key="launch_account").set_value("lab")
    at = at.sidebar.number_input(key="launch_max_parallel").set_value(3).run()
    assert not at.sidebar.error and not launch_button(at).disabled
    at = launch_button(at).click().run()
    assert not at.exception and not at.sidebar.error
    [(request, options)] = launched
    assert options["target"] == SlurmOptions(
        partition="debug", account="lab", max_parallel=3, cpus_per_task=2
    )
    assert request.points == 4  # the form's default grid, 32 64 x 1 2


def test_the_slurm_boxes_come_back_after_a_while_on_this_machine(shared_reference_db):
    at = on_slurm(app())
    at = at.sidebar.text_input(key="launch_partition").set_value("debug").run()
    at = at.sidebar.radio(key="launch_run_on").set_value("This machine").run()
    assert "Memory limit" in [box.label for box in at.sidebar.text_input]
    at = on_slurm(at)
    assert at.sidebar.text_input(key="launch_partition").value == "debug"
    assert not at.sidebar.error
    at = at.sidebar.radio(key="launch_run_on").set_value("This machine").run()
    at = at.run()  # a rerun while hidden (a point done, another widget) forgets nothing
    at = on_slurm(at)
    assert at.sidebar.text_input(key="launch_partition").value == "debug"


# --- a Slurm sweep running -------------------------------------------------------------


def submitter(db: Path) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-c", SUBMITTER, str(db), COMMAND],
        cwd=database.REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline().strip() == "holding"
    return process


def test_a_slurm_sweep_shows_each_points_state_and_job_and_cancel_cancels_it(reference_db):
    other = submitter(reference_db)
    try:
        at = app()
        assert not at.exception
        said = sidebar_texts(at)
        assert "1 to submit · 1 queued · 1 running · 1 done of 4" in said
        assert "On Slurm partition debug: each point is one Slurm job." in said
        assert "ETA" not in said and "Now measuring" not in said
        [table] = at.sidebar.dataframe
        assert table.value.to_dict("list") == {
            "Point": ["32 batch 1", "32 batch 2", "64 batch 1", "64 batch 2"],
            "State": ["done", "running", "queued", "to submit"],
            "Slurm job": ["101_0", "101_1", "102_0", ""],
        }
        at = at.sidebar.button(key="cancel_sweep").click().run()
        assert other.wait(timeout=10) == 130  # it had the time to cancel its jobs
        assert "Launch sweep" in button_labels(at)
        sweeps = store.load_sweeps(reference_db)
        assert sweeps.loc[sweeps["sweep_id"] == "onslurm", "status"].tolist() == ["interrupted"]
    finally:
        other.kill()
        other.wait()


def test_while_its_jobs_are_being_cancelled_the_panel_says_so_and_offers_no_second_cancel(
    reference_db,
):
    sweep = (sys.executable, "-c", SUBMITTER, str(reference_db), COMMAND)
    launcher.start_job(
        reference_db,
        [JobCommand(jobstatus.PHASE_SWEEPING, sweep)],
        COMMAND,
        points_total=4,
        executor="Slurm partition debug",
    )
    deadline = time.monotonic() + 30
    while sweeplock.holder(reference_db) is None:
        assert time.monotonic() < deadline, "the submitter never took the lock"
        time.sleep(0.05)
    # What Cancel writes first, before its SIGTERM: another tab sees it.
    (jobstatus.state_dir(reference_db) / jobstatus.CANCEL_FILE).write_text(job.now_iso())
    at = app()
    assert "Cancelling the Slurm jobs…" in sidebar_texts(at)
    assert "Cancel sweep" not in button_labels(at)
