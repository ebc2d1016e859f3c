"""A sweep whose every point was killed exits as a failure (issue 38, item 8).

It used to print ``sweep ...: 2 killed`` and exit 0, so a script or CI job that
ran it took a sweep that measured nothing for a success.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memplan import exitcodes
from profiling import sweep_job
from profiling.lifecycle import SweepPlan, SweepSummary


@pytest.mark.parametrize(
    ("counts", "code"),
    [
        ({"killed": 2}, exitcodes.FAILED_EXIT_CODE),
        ({"killed": 1, "ok": 1}, exitcodes.SUCCESS_EXIT_CODE),
        ({"oom": 2}, exitcodes.SUCCESS_EXIT_CODE),  # an oom is a measurement
        ({}, exitcodes.SUCCESS_EXIT_CODE),  # everything already measured
    ],
)
def test_a_sweep_exits_as_failed_only_when_every_point_was_killed(
    tmp_path: Path, monkeypatch, capsys, counts: dict[str, int], code: int
) -> None:
    summary = SweepSummary("s1", counts=counts)
    monkeypatch.setattr(sweep_job, "run_sweep", lambda plan, run_over_bound: summary)
    plan = SweepPlan(tmp_path / "memplan.duckdb", grid=None, settings=None, precheck=object())

    assert sweep_job.run_here(plan) == code

    err = capsys.readouterr().err
    killed_only = code == exitcodes.FAILED_EXIT_CODE
    assert ("every point was killed from outside memplan" in err) == killed_only


def test_the_job_says_the_code_memplan_documents():
    assert sweep_job.ALL_KILLED_EXIT_CODE == exitcodes.FAILED_EXIT_CODE


def test_the_exit_table_says_so():
    assert "`sweep`: every point killed" in exitcodes.TABLE
    docs = (Path(__file__).parents[2] / "docs" / "commands.md").read_text()
    assert "| 1 | `run` measured no ok point; `sweep`: every point was killed" in docs
