"""The sidebar: launch a sweep, watch it, cancel it; import runs; read-only mode.

Jobs here are real detached processes. Most run a stand-in command that draws
the sweep's own progress bar and waits, so the panel can be examined while it
"runs"; one test launches a real tiny TensorFlow sweep from the form.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from application import sweep_job
from core import store
from dashboard import sweep_panel
from profiling import exchange, jobstatus, launcher, requests
from profiling.launcher import JobCommand
from profiling.sweep import stable_memory_limit_bytes
from tests.app.helpers import shown
from tests.conftest import build_record

APP = str(Path(__file__).resolve().parents[2] / "app.py")
REFERENCE_RUNS = 46
# The bar `profiling.local_sweep.run_sweep` draws, frozen mid-sweep.
PROGRESS_BAR = (
    "import time\nfrom tqdm import tqdm\n"
    "bar = tqdm(total=100, unit='s', mininterval=0, "
    "bar_format='{desc} {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}]')\n"
    "bar.set_description_str('1/3 points, now 32 batch 2')\nbar.update(30)\ntime.sleep(120)\n"
)


def app() -> AppTest:
    return AppTest.from_file(APP, default_timeout=60).run()


def stand_in_sweep(db: Path, code: str = PROGRESS_BAR, refit: str | None = None):
    commands = [JobCommand(jobstatus.PHASE_SWEEPING, (sys.executable, "-c", code))]
    if refit:
        commands.append(
            JobCommand(jobstatus.PHASE_REFITTING, (sys.executable, "-c", refit), optional=True)
        )
    return launcher.start_job(db, commands, points_total=3)


def wait_for_bar(db: Path, description: str) -> None:
    """Until the stand-in sweep's log holds its bar drawn with ``description`` (up to 120 s).

    The bar itself, ``description`` then its percentage ("3/3 points 100%|"): the log's
    first line echoes the command, whose code holds ``description`` too, and a page read
    before the bar is drawn shows no progress (seen failing at load 4).
    """
    log = jobstatus.state_dir(db) / jobstatus.LOG_FILE
    drawn = re.compile(re.escape(description) + r" +\d+%\|")
    deadline = time.monotonic() + 120  # a loaded machine starts Python and tqdm slowly
    while not drawn.search(log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, "the stand-in sweep drew no bar in 120 s"
        time.sleep(0.2)


def wait_until_ended(db: Path, timeout_s: float = 300) -> jobstatus.JobStatus:
    deadline = time.monotonic() + timeout_s
    while (current := launcher.status(db)).running:
        assert time.monotonic() < deadline, current
        time.sleep(0.2)
    return current


def sidebar_texts(at: AppTest) -> str:
    """Everything the sidebar says, as one text."""
    parts = []
    for kind in ("markdown", "caption", "code", "success", "info", "warning", "error"):
        parts += [str(element.value) for element in at.sidebar.get(kind)]
    parts += [element.proto.text for element in at.sidebar.get("progress")]
    return "\n".join(parts)


def button_labels(at: AppTest) -> list[str]:
    return [button.label for button in at.sidebar.button]


@pytest.fixture(autouse=True)
def _no_job_left_behind(reference_db: Path):
    yield
    if launcher.status(reference_db).running:
        launcher.cancel(reference_db, grace_s=5)


# --- the launcher form -----------------------------------------------------------------


def test_the_form_offers_grid_steps_memory_limit_and_refit_with_sensible_defaults(
    shared_reference_db,
):
    at = app()
    assert not at.exception
    assert [h.value for h in at.sidebar.subheader] == ["Launch a sweep", "Import runs"]
    boxes = {box.label: box.value for box in at.sidebar.text_input}
    assert list(boxes) == ["Image sizes", "Batch sizes", "Base filters", "Memory limit"]
    assert boxes["Base filters"] == "16"
    request = requests.parse_request(
        boxes["Image sizes"], boxes["Batch sizes"], {"base_filters": "16"}, 1, boxes["Memory limit"]
    )
    assert 0 < request.memory_limit_bytes <= stable_memory_limit_bytes()
    assert at.sidebar.number_input(key="launch_steps").label == "Steps"
    refit = at.sidebar.selectbox(key="launch_refit")
    assert refit.label == "Refit models afterwards"
    assert refit.value == "full"  # the default: the settings the answers' models were fit with
    # Each choice with its measured duration: the full evaluation's from the fitting the
    # bundled evaluation recorded (this machine's profile has none here), scaled to 10 seeds;
    # the smoke test's from a refit timed with its command.
    full, fewer, quick, no = refit.options
    assert re.fullmatch(r"full evaluation, 10 seeds \(~\d+ min\)", full), full
    assert re.fullmatch(r"fewer seeds \(3, as a calibration\) \(~\d+ min\)", fewer), fewer
    assert re.fullmatch(r"smoke test \(--quick\) \(~\d+ (s|min)\)", quick), quick
    assert no == "no"
    assert refit.help.startswith("Refits only the machine profile this sweep measures")
    source = "evaluation 6ce9f46d7f98 (39 runs, 2026-11-24, stored in this database) recorded"
    assert source in refit.help
    assert "scaled to 10 seeds, x1.75 for the rest of a refit" in refit.help
    assert "Smoke test (--quick): ~2 min, as measured: `memplan evaluate" in refit.help
    assert "Launch sweep" in button_labels(at) and "Cancel sweep" not in button_labels(at)


def launch_from_form(at: AppTest, sizes: str, limit: str | None = None) -> AppTest:
    at.sidebar.text_input(key="launch_image_sizes").set_value(sizes)
    if limit is not None:
        at.sidebar.text_input(key="launch_memory_limit").set_value(limit)
    return at.sidebar.button[button_labels(at).index("Launch sweep")].click().run()


def test_the_default_refit_is_the_full_evaluation_and_waits_for_new_runs(
    shared_reference_db, monkeypatch
):
    launched = []
    monkeypatch.setattr(
        sweep_job,
        "launch",
        lambda db, request, refit=None, **options: launched.append((refit, options)),
    )
    at = launch_from_form(app(), "32")
    assert not at.exception
    [(refit, options)] = launched
    assert not refit.quick and (refit.seeds, refit.extrapolation_seeds) == (10, 3)
    assert refit.only_changed
    # No profile named: `sweep_job.launch` makes it the profile the sweep measures.
    assert refit.machine is None and refit.workload == "unet3d"
    # A sweep that stores nothing new (all points measured before) is not followed by a refit.
    assert options == {"refit_needs_new_runs": True, "target": None}  # on this machine


def test_a_grid_the_network_cannot_take_is_refused_before_anything_starts(shared_reference_db):
    at = launch_from_form(app(), "32 200")
    [error] = at.sidebar.error
    assert "Nearest valid sizes: 192 or 208" in shown(error.value)
    assert launcher.status(shared_reference_db).phase == jobstatus.PHASE_IDLE
    assert not jobstatus.state_dir(shared_reference_db).exists()


def test_a_memory_limit_that_is_not_a_size_is_refused(shared_reference_db):
    at = launch_from_form(app(), "32", limit="plenty")
    [error] = at.sidebar.error
    assert shown(error.value).startswith("Memory limit: 'plenty' is not a memory size")
    assert launcher.status(shared_reference_db).phase == jobstatus.PHASE_IDLE


def test_choosing_alexnet_hides_base_filters_and_suggests_its_own_sizes(shared_reference_db):
    at = app()
    workload = at.sidebar.selectbox(key="launch_workload")
    assert (workload.label, workload.value) == ("Workload", "unet3d")
    assert workload.options == [
        "3D U-Net (IntelAI/unet)",
        "AlexNet-style 2D CNN (Torres et al. 2021)",
    ]
    at = workload.set_value("alexnet").run()

    assert not at.exception
    boxes = {box.label: box.value for box in at.sidebar.text_input}
    assert list(boxes) == ["Image sizes", "Batch sizes", "Memory limit"]
    assert boxes["Image sizes"] == "128 224"
    assert "Square sides or H x W" in at.sidebar.text_input(key="launch_image_sizes").help
    request = requests.parse_request(
        boxes["Image sizes"], boxes["Batch sizes"], {}, 1, boxes["Memory limit"], workload="alexnet"
    )
    assert request.grid.workload == "alexnet" and request.points == 4

    at = at.sidebar.selectbox(key="launch_workload").set_value("unet3d").run()
    boxes = {box.label: box.value for box in at.sidebar.text_input}
    assert (boxes["Image sizes"], boxes["Base filters"]) == ("32 64", "16")


def test_an_alexnet_grid_is_checked_as_an_alexnet_before_anything_starts(shared_reference_db):
    at = app()
    at = at.sidebar.selectbox(key="launch_workload").set_value("alexnet").run()
    at = launch_from_form(at, "224 32")
    [error] = at.sidebar.error
    assert "too small for AlexNet" in error.value and "smallest valid side is 67" in error.value
    assert launcher.status(shared_reference_db).phase == jobstatus.PHASE_IDLE


def test_the_refit_after_a_sweep_evaluates_only_what_changed_of_the_swept_workload(
    reference_db,
):
    from application.refit import RefitJob
    from dashboard.refit_choice import REFIT_FEWER, REFIT_NO, REFIT_QUICK, refit_job

    refit = refit_job(REFIT_QUICK, reference_db, "alexnet")
    assert refit == RefitJob(reference_db, "alexnet", only_changed=True, quick=True)
    # What its evaluation records as its command, as when the refit ran `memplan evaluate`.
    assert refit.command_text() == (
        f"memplan evaluate --db {reference_db} --only-changed --workload alexnet --quick"
    )
    assert refit_job(REFIT_NO, reference_db, "alexnet") is None
    fewer = refit_job(REFIT_FEWER, reference_db, "alexnet")
    assert (fewer.seeds, fewer.extrapolation_seeds, fewer.quick) == (3, 1, False)


# --- a job running ---------------------------------------------------------------------


def test_a_running_sweep_shows_progress_point_eta_log_and_cancel(reference_db):
    job = stand_in_sweep(reference_db)
    wait_for_bar(reference_db, "1/3 points, now 32 batch 2")
    at = app()
    assert not at.exception
    said = sidebar_texts(at)
    assert "1 / 3 points" in said
    assert "Now measuring **32 batch 2**" in said
    assert "ETA: " in said
    assert "1/3 points, now 32 batch 2" in said  # the log tail
    assert button_labels(at) == ["Cancel sweep", "Import"]  # no second launch offered
    assert launcher.status(reference_db).pid == job.pid

    at.sidebar.button(key="cancel_sweep").click().run()
    assert not launcher.status(reference_db).running
    assert "Last sweep was cancelled at 1 / 3 points" in sidebar_texts(at)
    assert "Launch sweep" in button_labels(at)


def test_reloading_the_page_neither_stops_nor_duplicates_the_sweep(reference_db):
    job = stand_in_sweep(reference_db)
    for _ in range(2):  # a reload, then a second tab: each a new session
        assert "Cancel sweep" in button_labels(app())
    current = launcher.status(reference_db)
    assert current.running and current.pid == job.pid


def test_a_launch_from_a_tab_that_missed_the_running_sweep_is_refused(reference_db):
    stale_tab = app()  # drawn while nothing ran
    job = stand_in_sweep(reference_db)  # then another tab launched one
    at = launch_from_form(stale_tab, "32")
    [error] = at.sidebar.error
    assert shown(error.value).startswith(
        f"a sweep is already running for memplan.duckdb (pid {job.pid}, started {job.started_at})"
    )
    assert launcher.status(reference_db).pid == job.pid


def test_a_finished_sweep_reports_its_outcome_and_why_the_models_were_not_refit(reference_db):
    refit = "import sys; print('error: only 1 distinct measured configuration(s)', file=sys.stderr)"
    stand_in_sweep(reference_db, code="print('measured')", refit=refit + "; sys.exit(2)")
    wait_until_ended(reference_db)
    at = app()
    assert "Done: the last sweep finished" in at.sidebar.success[0].value
    assert shown(at.sidebar.warning[0].value) == (
        "Models not refit: only 1 distinct measured configuration(s)."
    )
    assert "Launch sweep" in button_labels(at)


def test_a_finished_sweep_says_done_and_which_profile_was_refit_with_which_settings(
    reference_db,
):
    said = (
        "outcome: models refit for unet3d on Intel Xeon, 2 cores (profile abc) "
        "(full evaluation settings: 10 random seed(s), 3 extrapolation)"
    )
    stand_in_sweep(reference_db, code="print('measured')", refit=f"print({said!r})")
    wait_until_ended(reference_db)
    at = app()
    done, refit = (shown(box.value) for box in at.sidebar.success)
    assert done.startswith("Done: the last sweep finished, 0 / 3 points (finished ")
    assert refit == (
        "Models refit for unet3d on Intel Xeon, 2 cores (profile abc) (full evaluation "
        "settings: 10 random seed(s), 3 extrapolation): the Models and Sizing pages use them."
    )
    assert "Starting the sweep" not in sidebar_texts(at)


EVERY_POINT_DONE = PROGRESS_BAR.replace("'1/3 points, now 32 batch 2'", "'3/3 points'").replace(
    "update(30)", "update(100)"
)


def test_a_sweep_past_its_last_point_says_so_not_starting(reference_db):
    stand_in_sweep(reference_db, code=EVERY_POINT_DONE)
    wait_for_bar(reference_db, "3/3 points")
    said = sidebar_texts(app())
    assert "3 / 3 points" in said
    assert "Every point measured; finishing the sweep…" in said
    assert "Starting the sweep" not in said


def test_the_log_scrolls_in_a_box_of_its_own_so_the_progress_stays_in_view(
    reference_db, monkeypatch
):
    many_lines = "for n in range(40): print('line', n)\n" + PROGRESS_BAR
    stand_in_sweep(reference_db, code=many_lines)
    wait_for_bar(reference_db, "1/3 points, now 32 batch 2")
    heights = []
    real_code = st.code
    monkeypatch.setattr(
        st,
        "code",
        lambda body, *args, **kw: heights.append(kw.get("height")) or real_code(body, *args, **kw),
    )
    at = app()
    [log_box] = at.sidebar.code
    assert "line 39" in log_box.value  # the whole tail, scrolled inside its box
    # A box of fixed height: the panel stays short, its progress above in view.
    assert sweep_panel.LOG_HEIGHT_PX in heights
    assert "1 / 3 points" in sidebar_texts(at)


@pytest.mark.tensorflow
def test_a_tiny_sweep_launched_from_the_form_runs_and_its_run_is_stored(reference_db):
    at = app()
    for key, value in {
        "launch_image_sizes": "16",
        "launch_batch_sizes": "1",
        "launch_base_filters": "4",
    }.items():
        at.sidebar.text_input(key=key).set_value(value)
    at.sidebar.number_input(key="launch_steps").set_value(2)
    at.sidebar.selectbox(key="launch_refit").set_value("no")
    # torch: the claims are the form's and the job's; its child costs a quarter of a
    # TensorFlow one's CPU (3 against 14 s), and the browser test launches TensorFlow.
    at.sidebar.selectbox(key="launch_framework").set_value("torch")
    at = at.sidebar.button[button_labels(at).index("Launch sweep")].click().run()
    assert not at.sidebar.error
    assert "0 / 1 points" in sidebar_texts(at) and "Cancel sweep" in button_labels(at)

    finished = wait_until_ended(reference_db)
    assert finished.phase == "finished", finished.log_tail
    at.run()
    assert "Done: the last sweep finished, 1 / 1 points" in at.sidebar.success[0].value
    # The form comes back with what was launched, ready to launch (and so resume) again.
    assert at.sidebar.text_input(key="launch_image_sizes").value == "16"
    assert at.sidebar.text_input(key="launch_base_filters").value == "4"
    assert at.sidebar.selectbox(key="launch_refit").value == "no"
    assert at.sidebar.selectbox(key="launch_framework").value == "torch"
    runs = store.load_runs(reference_db)
    assert len(runs) == REFERENCE_RUNS + 1
    [mine] = runs[runs["sweep_id"] == finished.sweep_id].to_dict("records")
    assert (mine["status"], mine["framework"]) == ("ok", "torch")
    assert (mine["depth"], mine["base_filters"], mine["steps"]) == (16, 4, 2)


# --- import ----------------------------------------------------------------------------


def exported_csv(tmp_path: Path, *records) -> tuple[bytes, bytes]:
    source = tmp_path / "other-host.duckdb"
    for record in records:
        store.insert_run(source, record)
    exchange.export_runs(source, tmp_path / "runs.csv", tmp_path / "samples.csv")
    return (tmp_path / "runs.csv").read_bytes(), (tmp_path / "samples.csv").read_bytes()


def upload(at: AppTest, runs: bytes, samples: bytes | None = None) -> AppTest:
    at.sidebar.file_uploader(key="import_runs_file").upload("runs.csv", runs, "text/csv")
    if samples is not None:
        at.sidebar.file_uploader(key="import_timelines_file").upload("samples.csv", samples)
    at.run()
    return at.sidebar.button[button_labels(at).index("Import")].click().run()


def test_the_import_button_waits_for_a_runs_file(shared_reference_db):
    at = app()
    [runs_box, timelines_box] = at.sidebar.file_uploader
    assert runs_box.label == "Runs file (CSV or Parquet)"
    assert timelines_box.label == "Timelines file (optional)"
    assert runs_box.allowed_type == [".csv", ".parquet"]
    assert at.sidebar.button[button_labels(at).index("Import")].disabled


def test_runs_from_another_machine_are_imported_and_counted(reference_db, tmp_path):
    runs, samples = exported_csv(
        tmp_path, build_record(hostname="lab", timeline=4), build_record(hostname="lab", timeline=2)
    )
    at = upload(app(), runs, samples)
    assert not at.exception and not at.sidebar.error
    assert shown(at.sidebar.success[0].value) == "Imported 2 run(s) from runs.csv."
    assert len(store.load_runs(reference_db)) == REFERENCE_RUNS + 2
    assert len(store.load_runs(reference_db, store.RunFilter(hostname="lab"))) == 2


def test_a_bad_upload_shows_what_is_wrong_and_stores_nothing(shared_reference_db, tmp_path):
    runs, _ = exported_csv(tmp_path, build_record(), build_record())
    broken = runs.replace(b",float32,", b",float33,", 1)
    at = upload(app(), broken)
    [error] = at.sidebar.error
    assert shown(error.value).startswith("Nothing was imported. runs.csv: ")
    assert "float33" in error.value
    assert len(store.load_runs(shared_reference_db)) == REFERENCE_RUNS


# --- read-only -------------------------------------------------------------------------


def test_read_only_mode_hides_launcher_and_import_and_says_why(reference_db, monkeypatch):
    monkeypatch.setenv("MEMPLAN_READ_ONLY", "1")
    at = app()
    assert not at.exception
    assert not at.sidebar.subheader and not at.sidebar.file_uploader
    assert not at.sidebar.text_input and not at.sidebar.button
    [note] = at.sidebar.caption
    assert "read-only (MEMPLAN_READ_ONLY is set)" in note.value
