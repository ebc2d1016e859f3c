"""Issue 27 against the tests' real one-node Slurm (tests/slurm_cluster.py).

Each test reproduces one finding of "Hardening, round two" through the real CLI
with the cluster's environment; see the README's Reliability section.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core import store
from core.errors import ConfigError
from memplan import cli as memplan_cli
from profiling import cluster_sweep, pending, slurm_job
from profiling.slurm_workdir import default_work_dir, prepare_work_dir
from tests.conftest import build_record

REPO_ROOT = Path(__file__).resolve().parents[2]
# The least point a real child can train: the claims are the submitter's, not the figure.
GRID = [
    *("--image-sizes", "16", "--batch-sizes", "1", "--base-filters", "4"),
    *("--levels", "2", "--steps", "1"),
]
NOBODY = 65534


def _sweep_argv(cluster, db: Path, *flags: str) -> list[str]:
    return [
        "sweep", *GRID, "--executor", "slurm", "--partition", cluster.partition,
        "--cpus-per-task", "1", "--poll", "1", "--quiet", "--db", str(db), *flags,
    ]  # fmt: skip


def _jobs(cluster) -> set[str]:
    listed = cluster.command("squeue", "-h", "--states=all", "-o", "%i").stdout
    return {line.strip() for line in listed.splitlines() if line.strip()}


# --- finding 1: the work directory is the submitting user's alone ---------------------


@pytest.mark.parametrize(
    ("owner", "mode", "which"),
    [
        (NOBODY, 0o777, ""),  # another user's directory, world-writable
        (NOBODY, 0o755, ""),  # another user's directory, not writable by us even
        (0, 0o777, ""),  # ours, but world-writable
        (0, 0o775, "logs"),  # ours, but logs/ group-writable
        (NOBODY, 0o700, "points"),  # points/ belongs to someone else
    ],
)
def test_finding1_a_foreign_or_shared_work_directory_is_refused(
    slurm_cluster, tmp_path: Path, capsys, owner: int, mode: int, which: str
) -> None:
    work = tmp_path / "shared.slurm"
    for path in (work, work / "logs", work / "points"):
        path.mkdir()
        os.chmod(path, 0o700)
    target = work / which if which else work
    os.chown(target, owner, owner)
    os.chmod(target, mode)
    before = _jobs(slurm_cluster)

    # The CLI in this process (the refusal is the submitter's, not the process's; the
    # fixture points SLURM_CONF at the cluster): a `python -m memplan` start per case
    # cost about 1 CPU s.
    code = memplan_cli.main(
        _sweep_argv(slurm_cluster, tmp_path / "runs.duckdb", "--work-dir", str(work))
    )

    stderr = capsys.readouterr().err
    assert code == 2, stderr
    line = stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert f"the Slurm work directory {target} " in line
    assert "chmod 700" in line and "--work-dir" in line
    assert _jobs(slurm_cluster) == before  # nothing was submitted
    assert list((work / "logs").iterdir()) == []


def test_finding1_a_new_work_directory_is_private(tmp_path: Path) -> None:
    old = os.umask(0o000)  # the most permissive umask: the mode must not depend on it
    try:
        prepare_work_dir(tmp_path / "deep" / "new.slurm")
    finally:
        os.umask(old)
    for path in ("new.slurm", "new.slurm/logs", "new.slurm/points"):
        assert stat.S_IMODE((tmp_path / "deep" / path).stat().st_mode) == 0o700, path
    prepare_work_dir(tmp_path / "deep" / "new.slurm")  # its own again: accepted


def test_finding1_a_symlinked_work_directory_of_another_user_is_refused(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    prepare_work_dir(mine)
    link = tmp_path / "link.slurm"
    link.symlink_to(mine)
    os.lchown(link, NOBODY, NOBODY)  # another user's link could be pointed elsewhere later
    with pytest.raises(ConfigError, match="symbolic link owned by uid 65534"):
        prepare_work_dir(link)


# --- finding 3: what a job leaves is checked, and a failing submitter cancels its jobs ----


def _manifest(db: Path) -> dict:
    path = default_work_dir(db) / "manifest.json"
    return json.loads(path.read_text())["points"] if path.exists() else {}


def _wait_until(condition, what: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


def test_finding3_a_result_dropped_into_a_running_sweep_is_quarantined(
    slurm_cluster, tmp_path: Path
) -> None:
    db = tmp_path / "runs.duckdb"
    # torch: the claim is the submitter's, and torch's child costs about half a TensorFlow
    # one's CPU.
    argv = _sweep_argv(slurm_cluster, db, "--framework", "torch")
    command = [sys.executable, "-m", "memplan", *argv]
    submitter = subprocess.Popen(
        command, cwd=REPO_ROOT, env=slurm_cluster.env(), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        _wait_until(lambda: len(_manifest(db)) == 1, "the point to be submitted")
        ((point_id, entry),) = _manifest(db).items()
        forged = build_record(peak_hwm_bytes=1, status="ok")  # another run, and 1 byte
        result = slurm_job.result_path(default_work_dir(db) / "points", point_id)
        pending.write_atomically(result, pending.to_json(forged))
        stdout, stderr = submitter.communicate(timeout=240)
    finally:
        if submitter.poll() is None:
            submitter.kill()
    assert submitter.returncode == 0, stderr + slurm_cluster.logs()
    assert f"{result} was refused and moved to {result}.bad" in stderr
    runs = store.load_runs(db)
    # The job's own record, measured after the forged one was moved aside, is what is stored.
    assert runs["run_id"].tolist() == [entry["run_id"]]
    assert runs["status"].tolist() == ["ok"] and forged.run_id not in stdout
    assert Path(f"{result}.bad").exists()


def test_finding3_any_exception_in_the_submitter_cancels_its_jobs(
    slurm_cluster, tmp_path: Path, monkeypatch
) -> None:
    db = tmp_path / "runs.duckdb"

    def fail(self, bar) -> None:  # right after the first submission, as a bug would
        raise RuntimeError("a bug in the submitter")

    monkeypatch.setattr(cluster_sweep.ClusterExecutor, "_report", fail)
    argv = _sweep_argv(slurm_cluster, db)
    with pytest.raises(RuntimeError, match="a bug in the submitter"):
        memplan_cli.main(argv)

    jobs = [job for entry in _manifest(db).values() for job in entry["jobs"]]
    assert len(jobs) == 1

    def cancelled() -> bool:
        listed = slurm_cluster.command("squeue", "-h", "--states=all", "-o", "%i %T").stdout
        states = dict(line.split() for line in listed.splitlines() if line.strip())
        return states.get(jobs[0], states.get(jobs[0].split("_")[0])) == "CANCELLED"

    _wait_until(cancelled, "the job to be cancelled", timeout_s=30)
    runs = store.load_runs(db)
    assert runs["status"].tolist() == ["interrupted"]
    assert store.load_sweeps(db)["status"].tolist() == ["interrupted"]
