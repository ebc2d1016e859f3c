"""`memplan` end to end: real TensorFlow children on tiny networks.

Each test profiles 16^3 volumes through a 4-filter U-Net (a few seconds of TensorFlow
per point; 2 levels and one step where the claim is the lifecycle, not the figure) into
a temporary DuckDB file, as a user would. The help, the end-to-end run and the SIGTERM
start ``python -m memplan``; the other commands run in this process (`memplan_main`): their
claim is the command's, the same in any process, and a process of its own costs a second of
CPU starting. The children are real processes either way.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from core import machine, profiles, store

pytestmark = pytest.mark.tensorflow

REPO = Path(__file__).resolve().parents[2]
TINY = ["--image-size", "16", "--base-filters", "4", "--levels", "2", "--steps", "2"]
# The least a real child can train (a 2-level U-Net, one step): for the tests whose claim
# is the lifecycle (resume, limits, errors, recorded state), not the figure. A child costs about
# 15 CPU s here instead of 21, most of it importing TensorFlow (scripts/cpu_time.py).
SMALLEST = ["--image-size", "16", "--base-filters", "4", "--levels", "2", "--steps", "1"]
# Resuming and stopping a sweep are the parent's, the same whichever framework the child
# trains: those tests train torch, whose child costs about half a TensorFlow one's CPU
# (mostly TensorFlow's import). The TensorFlow child is every other test's here.
LIFECYCLE_FRAMEWORK = ["--framework", "torch"]
# The tiny point as a grid: a child long enough for a signal to land while it trains.
TINY_POINT_GRID = [
    *LIFECYCLE_FRAMEWORK,
    *("--image-sizes", "16", "--batch-sizes", "1", "--base-filters", "4", "--levels", "2"),
    *("--steps", "2"),
]
TINY_GRID = [
    *("--image-sizes", "16", "--batch-sizes", "1", "--base-filters", "4", "--levels", "2"),
    *("--steps", "1"),
]


def memplan(*args: str, env: dict[str, str] | None = None, check: bool = False):
    return subprocess.run(
        [sys.executable, "-m", "memplan", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=check,
    )


@pytest.fixture
def db(tmp_path) -> Path:
    return tmp_path / "runs.duckdb"


def test_help_lists_every_subcommand_from_a_process_of_its_own():
    # One process shows the entry point works as users start it; each subcommand's own help
    # is read in-process (tests/unit/test_memplan_cli.py), a second of CPU less per command.
    result = memplan("--help", check=True)
    for command in ["run", "sweep", "list", "show", "export", "import"]:
        assert command in result.stdout


def test_a_real_run_is_profiled_end_to_end_into_the_database(db, memplan_main):
    result = memplan("run", *TINY, "--db", str(db))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok: 16 batch 1, sampled peak")

    [run] = store.load_runs(db).to_dict("records")
    assert run["status"] == "ok"
    assert (run["depth"], run["base_filters"], run["steps"]) == (16, 4, 2)
    # TensorFlow alone is hundreds of MiB; the peak is at least the baseline after import.
    assert run["baseline_bytes"] > 200 * 2**20
    assert run["peak_sampled_bytes"] >= run["baseline_bytes"]
    # The kernel's high-water mark cannot miss what the 0.1 s sampler saw (1% for rounding).
    assert run["peak_hwm_bytes"] >= 0.99 * run["peak_sampled_bytes"]
    assert len(json.loads(run["step_times_s"])) == 2
    assert run["tensorflow_version"] and run["cpu_cores"] >= 1 and run["total_ram_bytes"] > 0
    # The framework by default, with the version that trained it.
    assert (run["framework"], run["framework_version"]) == ("tensorflow", run["tensorflow_version"])
    # The CPU generation this machine's /proc/cpuinfo states (None off x86), as the profile has it.
    generation = machine.cpu_generation(Path("/proc/cpuinfo").read_text())
    assert {name: run[name] for name in generation} == generation
    assert profiles.profile_of(run).cpu_family == generation["cpu_family"]
    # Whether it ran on oneDNN is TensorFlow's own answer, as the rule read without it says
    # (the other settings: `test_onednn_state`).
    assert run["onednn_enabled"] is machine.onednn_enabled("float32")

    samples = store.load_samples(db, [run["run_id"]])
    assert len(samples) >= 5 and samples["t_s"].is_monotonic_increasing
    assert samples["rss_bytes"].max() == run["peak_sampled_bytes"]

    listing = memplan_main("list", "--db", str(db)).stdout
    assert run["run_id"][:12] in listing and "1 run(s)" in listing
    shown = memplan_main("show", run["run_id"][:8], "--timeline", "--db", str(db)).stdout
    assert "peak_hwm_bytes" in shown and "t_s,rss_bytes" in shown


def test_the_second_workload_trains_in_the_same_profiled_child(db, memplan_main):
    result = memplan_main(
        "run",
        "--workload",
        "alexnet",
        "--image-size",
        "67",
        "--batch-size",
        "2",
        "--classes",
        "10",
        "--steps",
        "2",
        "--db",
        str(db),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok: 67 batch 2, sampled peak")

    [run] = store.load_runs(db).to_dict("records")
    assert (run["workload"], run["height"], run["width"], run["classes"]) == (
        "alexnet",
        67,
        67,
        10,
    )
    # The U-Net's own columns stay empty for an AlexNet run.
    assert all(run[name] is None or run[name] != run[name] for name in ("depth", "levels"))
    assert run["peak_hwm_bytes"] >= run["baseline_bytes"] > 200 * 2**20
    # A knob the network does not have is refused before anything runs.
    refused = memplan_main(
        "run", "--workload", "alexnet", "--image-size", "67", "--levels", "4", "--db", str(db)
    )
    assert refused.returncode == 2
    assert "the alexnet workload has no --levels" in refused.stderr


def test_a_child_over_the_memory_limit_is_killed_and_recorded_as_oom(db, memplan_main):
    # TensorFlow's import alone crosses 200 MiB.
    result = memplan_main("run", *SMALLEST, "--memory-limit", "200MiB", "--db", str(db))
    assert result.returncode == 1
    [run] = store.load_runs(db).to_dict("records")
    assert run["status"] == "oom"
    assert "crossed the limit of 0.20 GiB" in run["message"]
    assert run["peak_sampled_bytes"] > 200 * 2**20


def test_a_child_past_its_timeout_is_killed_and_recorded_as_timeout(db, memplan_main):
    result = memplan_main("run", *SMALLEST, "--timeout", "1", "--db", str(db))
    assert result.returncode == 1
    [run] = store.load_runs(db).to_dict("records")
    assert run["status"] == "timeout"
    assert run["message"].startswith("still running after the 1 s timeout")


def test_a_child_that_raises_is_recorded_as_error_with_its_stderr(db, memplan_main, monkeypatch):
    monkeypatch.setenv("KERAS_BACKEND", "no-such-backend")  # the child's environment is ours
    result = memplan_main("run", *SMALLEST, "--db", str(db))
    assert result.returncode == 1
    [run] = store.load_runs(db).to_dict("records")
    assert run["status"] == "error"
    assert "Unable to import backend : no-such-backend" in run["message"]


def test_a_sweep_resumes_skipping_points_already_measured(db, memplan_main):
    first = memplan_main("sweep", *LIFECYCLE_FRAMEWORK, *TINY_GRID, "--quiet", "--db", str(db))
    assert first.returncode == 0, first.stderr
    assert "1 ok" in first.stdout

    again = memplan_main(
        "sweep", *LIFECYCLE_FRAMEWORK, *TINY_GRID, "--repeats", "2", "--quiet", "--db", str(db)
    )
    assert "1 ok, 1 already measured" in again.stdout
    assert len(store.load_runs(db, store.RunFilter(status="ok"))) == 2

    forced = memplan_main(
        "sweep", *LIFECYCLE_FRAMEWORK, *TINY_GRID, "--no-resume", "--quiet", "--db", str(db)
    )
    assert "1 ok" in forced.stdout and "already" not in forced.stdout
    assert len(store.load_runs(db, store.RunFilter(status="ok"))) == 3


def test_a_point_that_cannot_fit_is_skipped_with_its_reason_and_never_launched(db, memplan_main):
    result = memplan_main(
        "sweep",
        "--image-sizes",
        "16",
        "64",
        "--batch-sizes",
        "1",
        "64",
        "--base-filters",
        "4",
        "--memory-limit",
        "1GiB",
        "--quiet",
        "--db",
        str(db),
    )
    assert result.returncode == 0, result.stderr
    runs = store.load_runs(db)
    skipped = runs[runs["status"] == "skipped"]
    assert len(skipped) >= 1
    assert skipped["message"].str.contains("exceeds the memory limit 1.00 GiB").all()
    assert skipped["peak_sampled_bytes"].isna().all()  # never launched


def test_an_invalid_grid_is_refused_before_anything_runs(db, memplan_main):
    result = memplan_main(
        "sweep", "--image-sizes", "32", "200", "--batch-sizes", "1", "--db", str(db)
    )
    assert result.returncode == 2
    assert "Nearest valid sizes: 192 or 208" in result.stderr
    assert "Traceback" not in result.stderr
    assert store.load_runs(db).empty


def test_sigterm_stops_a_sweep_cleanly_and_the_next_run_resumes(db, tmp_path, memplan_main):
    log = (tmp_path / "sweep.log").open("w")
    sweep = subprocess.Popen(
        [sys.executable, "-m", "memplan", "sweep", *TINY_POINT_GRID, "--quiet", "--db", str(db)],
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    children: list[psutil.Process] = []
    deadline = time.monotonic() + 60
    while not children and time.monotonic() < deadline:
        time.sleep(0.2)
        children = [
            p
            for p in psutil.process_iter(["cmdline"])
            if "profiling.child" in " ".join(p.info["cmdline"] or []) and p.ppid() == sweep.pid
        ]
    assert children, "the sweep never started its child"
    sweep.send_signal(signal.SIGTERM)
    assert sweep.wait(timeout=30) == 130
    psutil.wait_procs(children, timeout=10)
    assert not any(child.is_running() for child in children), "the child outlived the sweep"

    assert store.load_runs(db).empty  # the point in flight was discarded, not half-written
    assert store.load_sweeps(db)["status"].tolist() == ["interrupted"]
    resumed = memplan_main("sweep", *TINY_POINT_GRID, "--quiet", "--db", str(db))
    assert "1 ok" in resumed.stdout
